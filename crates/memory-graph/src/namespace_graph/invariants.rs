//! The invariants of a namespace's graph (indexes, adjacency, petgraph agreeing with
//! both), checked by the tests after every change.

use std::cmp::Ordering;

use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use super::{CLOSES, NamespaceGraph, Posting, Slot, id_key, prefix_key, slot_of};

impl NamespaceGraph {
    /// Checks every invariant of the indexes and the adjacency.
    pub(crate) fn check_invariants(&self) -> std::result::Result<(), String> {
        if self.sorted_ids.len() != self.ids.len()
            || self
                .sorted_ids
                .iter()
                .any(|(id, slot)| self.ids.get(id) != Some(slot))
        {
            return Err("the ordered ids differ from the ids".to_owned());
        }
        if self.ids.len() != self.graph.node_count() {
            return Err(format!(
                "{} ids, {} nodes",
                self.ids.len(),
                self.graph.node_count()
            ));
        }
        let mut names = 0;
        let mut types = 0;
        let mut tags = 0;
        let mut half_edges = 0;
        for index in self.graph.node_indices() {
            let Some(node) = self.graph.node_weight(index) else {
                return Err(format!("node {} has no weight", index.index()));
            };
            let slot = slot_of(index.index());
            let id = node.id();
            if self.ids.get(id) != Some(&slot) || node.key != id_key(id) {
                return Err(format!("id index wrong for {id}"));
            }
            let in_index =
                |set: Option<&Posting>| set.is_some_and(|s| s.contains(&(node.key, slot)));
            let name = node.entity.name.to_lowercase();
            if !self
                .names
                .contains(&(prefix_key(&name), name, node.key, slot))
            {
                return Err(format!("name index misses {id}"));
            }
            if !in_index(
                self.entity_types
                    .get(&node.entity.entity_type.to_lowercase()),
            ) {
                return Err(format!("type index misses {id}"));
            }
            for tag in &node.entity.tags {
                if !in_index(self.tags.get(tag.as_str())) {
                    return Err(format!("tag index misses {id}/{tag}"));
                }
            }
            names += 1;
            types += 1;
            tags += node.entity.tags.len();
            for (group, outgoing) in [(node.outgoing(), true), (node.incoming(), false)] {
                if group
                    .windows(2)
                    .any(|pair| self.cmp_half_edges(&pair[0], &pair[1]) != Ordering::Less)
                {
                    return Err(format!("half-edges of {id} out of order"));
                }
                // petgraph's own edge list of the direction (a self loop is outgoing only).
                let direction = if outgoing {
                    petgraph::Direction::Outgoing
                } else {
                    petgraph::Direction::Incoming
                };
                let mut listed: Vec<Slot> = self
                    .graph
                    .edges_directed(index, direction)
                    .filter(|edge| outgoing || edge.source() != edge.target())
                    .map(|edge| slot_of(edge.id().index()))
                    .collect();
                let mut grouped: Vec<Slot> = group.iter().map(|half| half.edge).collect();
                listed.sort_unstable();
                grouped.sort_unstable();
                if listed != grouped {
                    return Err(format!("half-edges of {id} disagree with petgraph's edges"));
                }
                for half in group {
                    let (Some(edge), Some((source, target))) =
                        (self.edge(half.edge), self.endpoints(half.edge))
                    else {
                        return Err(format!("{id} names a removed edge"));
                    };
                    let (this, other) = if outgoing {
                        (source, target)
                    } else {
                        (target, source)
                    };
                    let closes = if edge.valid_until.is_some() {
                        CLOSES
                    } else {
                        0
                    };
                    if this != slot
                        || other != half.other
                        || half.weight.to_bits() != edge.weight.to_bits()
                        || half.kind != edge.relation_type | closes
                        || (!outgoing && source == target)
                    {
                        return Err(format!("a half-edge of {id} disagrees with its edge"));
                    }
                }
                half_edges += group.len();
            }
        }
        let self_loops = self
            .graph
            .edge_references()
            .filter(|edge| edge.source() == edge.target())
            .count();
        if half_edges != 2 * self.graph.edge_count() - self_loops {
            return Err(format!(
                "{half_edges} half-edges for {} edges",
                self.graph.edge_count()
            ));
        }
        let count = |sets: &mut dyn Iterator<Item = &Posting>| {
            let mut total = 0;
            for set in sets {
                if set.is_empty() {
                    return None;
                }
                total += set.len();
            }
            Some(total)
        };
        if self.names.len() != names
            || count(&mut self.entity_types.values()) != Some(types)
            || count(&mut self.tags.values()) != Some(tags)
        {
            return Err("an index holds stale or empty entries".into());
        }
        Ok(())
    }
}
