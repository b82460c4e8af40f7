//! Relations: adding and removing them (each kept on petgraph and on both endpoints'
//! sorted adjacency), their relation types, and reading them back.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use memory_core::{GraphRelation, MemoryError, Namespace, Result};
use petgraph::stable_graph::EdgeIndex;

use super::{CLOSES, Edge, HalfEdge, NamespaceGraph, Slot, edge_index, node_index, slot_of};

impl NamespaceGraph {
    pub(super) fn intern_relation_type(&mut self, relation_type: &str) -> Result<u32> {
        if let Some(&existing) = self.relation_type_ids.get(relation_type) {
            return Ok(existing);
        }
        let id = u32::try_from(self.relation_types.len())
            .ok()
            .filter(|id| id & CLOSES == 0)
            .ok_or_else(|| {
                MemoryError::LimitExceeded(format!(
                    "relation type {relation_type} in {}: too many relation types",
                    self.namespace
                ))
            })?;
        let interned: Arc<str> = Arc::from(relation_type);
        self.relation_types.push(Arc::clone(&interned));
        self.relation_type_ids.insert(interned, id);
        Ok(id)
    }

    /// The edge `source -relation_type-> target`: a binary search of the source's outgoing
    /// half-edges, which are ordered by type then target.
    pub(super) fn find_edge(
        &self,
        source: Slot,
        target: Slot,
        relation_type: &str,
    ) -> Option<Slot> {
        let relation_type = *self.relation_type_ids.get(relation_type)?;
        let outgoing = self.node(source)?.outgoing();
        let probe = HalfEdge::new(target, 0, relation_type, 0.0);
        let start =
            outgoing.partition_point(|half| self.cmp_half_edges(half, &probe) == Ordering::Less);
        outgoing[start..]
            .iter()
            .take_while(|half| half.other == target && half.relation_type() == relation_type)
            .map(|half| half.edge)
            .next()
    }

    /// Inserts `half` into `slot`'s outgoing or incoming half-edges, in order.
    pub(super) fn attach(&mut self, slot: Slot, half: HalfEdge, outgoing: bool) {
        let Some(node) = self.node(slot) else {
            return;
        };
        let range = if outgoing {
            0..node.outgoing as usize
        } else {
            node.outgoing as usize..node.adjacency.len()
        };
        let position = range.start
            + node.adjacency[range]
                .partition_point(|other| self.cmp_half_edges(other, &half) == Ordering::Less);
        if let Some(node) = self.node_mut(slot) {
            node.adjacency.insert(position, half);
            if outgoing {
                node.outgoing += 1;
            }
        }
    }

    /// Adds a validated relation or updates the weight and validity of the existing one.
    pub(crate) fn add_relation(&mut self, relation: &GraphRelation) -> Result<()> {
        let endpoint = |id: &str| {
            self.slot(id)
                .ok_or_else(|| MemoryError::not_found("entity", &self.namespace, id))
        };
        let source = endpoint(&relation.source_id)?;
        let target = endpoint(&relation.target_id)?;
        let closes = if relation.valid_until.is_some() {
            CLOSES
        } else {
            0
        };
        if let Some(slot) = self.find_edge(source, target, &relation.relation_type) {
            let Some(edge) = self.graph.edge_weight_mut(edge_index(slot)) else {
                return Ok(());
            };
            edge.weight = relation.weight;
            edge.valid_from = relation.valid_from;
            edge.valid_until = relation.valid_until;
            edge.attributes = boxed_attributes(relation);
            let kind = edge.relation_type | closes;
            let weight = relation.weight;
            let mut retag = |node: Slot| {
                if let Some(node) = self.node_mut(node) {
                    for half in node.adjacency.iter_mut().filter(|half| half.edge == slot) {
                        half.kind = kind;
                        half.weight = weight;
                        half.shared = OnceLock::new();
                    }
                }
            };
            retag(source);
            retag(target);
            return Ok(());
        }
        let too_many = |namespace: &Namespace| {
            MemoryError::LimitExceeded(format!(
                "add relation {} -{}-> {} in {namespace}: too many relations",
                relation.source_id, relation.relation_type, relation.target_id
            ))
        };
        // As for entities: below this count adding cannot fail.
        if self.graph.edge_count() >= EdgeIndex::<Slot>::end().index() {
            return Err(too_many(&self.namespace));
        }
        let relation_type = self.intern_relation_type(&relation.relation_type)?;
        let edge = Edge {
            relation_type,
            weight: relation.weight,
            valid_from: relation.valid_from,
            valid_until: relation.valid_until,
            attributes: boxed_attributes(relation),
        };
        // Both endpoints are live (found in `ids`) and the count is below the limit.
        let slot = self
            .graph
            .try_add_edge(node_index(source), node_index(target), edge)
            .map_err(|_| too_many(&self.namespace))?;
        let slot = slot_of(slot.index());
        let kind = relation_type | closes;
        self.attach(
            source,
            HalfEdge::new(target, slot, kind, relation.weight),
            true,
        );
        if source != target {
            self.attach(
                target,
                HalfEdge::new(source, slot, kind, relation.weight),
                false,
            );
        }
        Ok(())
    }

    /// Removes a relation; returns whether it existed.
    pub(crate) fn remove_relation(
        &mut self,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> bool {
        let (Some(source), Some(target)) = (self.slot(source_id), self.slot(target_id)) else {
            return false;
        };
        let Some(edge) = self.find_edge(source, target, relation_type) else {
            return false;
        };
        self.detach(source, edge, true);
        if source != target {
            self.detach(target, edge, false);
        }
        self.graph.remove_edge(edge_index(edge));
        true
    }

    /// The public form of an edge, built anew.
    pub(super) fn relation(&self, slot: Slot) -> Option<GraphRelation> {
        let edge = self.edge(slot)?;
        let (source, target) = self.endpoints(slot)?;
        Some(GraphRelation {
            namespace: self.namespace.clone(),
            source_id: self.node_id(source).to_owned(),
            target_id: self.node_id(target).to_owned(),
            relation_type: self.relation_types[edge.relation_type as usize].to_string(),
            weight: edge.weight,
            valid_from: edge.valid_from,
            valid_until: edge.valid_until,
            attributes: edge.attributes.as_deref().cloned().unwrap_or_default(),
        })
    }

    /// The public form of the relation of `half`, shared: built once per half-edge, then
    /// handed out by reference count.
    pub(super) fn shared_relation(&self, half: &HalfEdge) -> Option<Arc<GraphRelation>> {
        if let Some(shared) = half.shared.get() {
            return Some(Arc::clone(shared));
        }
        let built = Arc::new(self.relation(half.edge)?);
        Some(Arc::clone(half.shared.get_or_init(|| built)))
    }

    pub(super) fn relations(&self, edges: impl IntoIterator<Item = Slot>) -> Vec<GraphRelation> {
        edges
            .into_iter()
            .filter_map(|edge| self.relation(edge))
            .collect()
    }

    /// Every relation with `id` as source or target, in the trait's order.
    pub(crate) fn relations_of(&self, id: &str) -> Vec<GraphRelation> {
        self.relations_of_at_most(id, usize::MAX)
    }

    /// The first `limit` relations of [`relations_of`](Self::relations_of): the adjacency is
    /// kept in the trait's order, so only those are read.
    pub(crate) fn relations_of_at_most(&self, id: &str, limit: usize) -> Vec<GraphRelation> {
        match self.slot(id).and_then(|slot| self.node(slot)) {
            Some(node) => node
                .adjacency
                .iter()
                .filter_map(|half| self.relation(half.edge))
                .take(limit)
                .collect(),
            None => Vec::new(),
        }
    }

    /// How many relations touch `id` (a self loop counts once).
    pub(crate) fn degree(&self, id: &str) -> usize {
        self.slot(id)
            .and_then(|slot| self.node(slot))
            .map_or(0, |node| node.adjacency.len())
    }

    /// How many distinct other entities `id` is related to, `None` for a missing entity.
    pub(crate) fn neighbour_count(&self, id: &str) -> Option<usize> {
        let slot = self.slot(id)?;
        let node = self.node(slot)?;
        let neighbours: HashSet<Slot> = node
            .adjacency
            .iter()
            .map(|half| half.other)
            .filter(|other| *other != slot)
            .collect();
        Some(neighbours.len())
    }
}

/// A relation's attributes as an edge keeps them: boxed, `None` when empty.
fn boxed_attributes(relation: &GraphRelation) -> Option<Box<memory_core::Attributes>> {
    (!relation.attributes.is_empty()).then(|| Box::new(relation.attributes.clone()))
}
