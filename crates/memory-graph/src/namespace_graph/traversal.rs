//! The native traversals of one namespace's graph: related entities by breadth-first
//! search (hops, paths, scores), multi-hop relation chains and shortest paths, each bounded
//! by `MAX_TRAVERSAL_DEPTH` and `MAX_TRAVERSAL_VISITED`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use chrono::Utc;
use memory_core::backend::{distance_score, sort_scored};
use memory_core::{
    GraphRelation, MAX_TRAVERSAL_DEPTH, MAX_TRAVERSAL_VISITED, MultiHopResult, Result, ScoredEntity,
};
use petgraph::Direction;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use super::{NamespaceGraph, not_found};

impl NamespaceGraph {
    /// The relations from the start to `node`, following the BFS parent pointers.
    fn path_to(
        &self,
        mut node: NodeIndex,
        parents: &HashMap<NodeIndex, (NodeIndex, EdgeIndex)>,
    ) -> Vec<GraphRelation> {
        let mut edges = Vec::new();
        while let Some(&(previous, edge)) = parents.get(&node) {
            edges.push(edge);
            node = previous;
        }
        edges.reverse();
        self.relations(edges)
    }

    /// Breadth-first traversal, as the trait's default `get_related` but over node indexes.
    pub(crate) fn related(&self, id: &str, depth: usize) -> Result<Vec<ScoredEntity>> {
        let now = Utc::now();
        let start = self
            .node(id)
            .ok_or_else(|| not_found(id, &self.namespace))?;
        let depth = depth.min(MAX_TRAVERSAL_DEPTH);
        let mut visited: HashSet<NodeIndex> = HashSet::from([start]);
        let mut parents: HashMap<NodeIndex, (NodeIndex, EdgeIndex)> = HashMap::new();
        let mut reached: Vec<(NodeIndex, usize)> = Vec::new();
        let mut frontier = vec![start];
        'levels: for hops in 1..=depth {
            let mut next = Vec::new();
            for &current in &frontier {
                for step in self.steps_at(current, Some(now)) {
                    if !visited.insert(step.other) {
                        continue;
                    }
                    parents.insert(step.other, (current, step.edge));
                    next.push(step.other);
                    reached.push((step.other, hops));
                    if visited.len() > MAX_TRAVERSAL_VISITED {
                        break 'levels;
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let mut out: Vec<ScoredEntity> = reached
            .into_iter()
            .filter_map(|(node, hops)| {
                let entity = self.graph.node_weight(node)?.entity.clone();
                let path = self.path_to(node, &parents);
                let score = distance_score(hops, &path);
                Some(ScoredEntity {
                    entity,
                    hops,
                    path,
                    score,
                })
            })
            .collect();
        sort_scored(&mut out);
        Ok(out)
    }

    /// The multi-hop query (follow relation types in order), as the trait's default `multi_hop` but over node indexes.
    /// The caller checks the chain's length.
    pub(crate) fn multi_hop(
        &self,
        start: &str,
        relation_types: &[String],
    ) -> Result<MultiHopResult> {
        let now = Utc::now();
        let start_node = self
            .node(start)
            .ok_or_else(|| not_found(start, &self.namespace))?;
        type States<'a> = BTreeMap<&'a str, (NodeIndex, Vec<Vec<EdgeIndex>>)>;
        let mut states: States<'_> =
            BTreeMap::from([(self.node_id(start_node), (start_node, vec![Vec::new()]))]);
        for relation_type in relation_types {
            let mut next: States<'_> = BTreeMap::new();
            let mut path_count = 0usize;
            for (node, node_paths) in states.values() {
                let mut edges: Vec<(&str, NodeIndex, EdgeIndex)> = self
                    .graph
                    .edges_directed(*node, Direction::Outgoing)
                    .filter(|edge| {
                        *edge.weight().relation_type == **relation_type
                            && edge.weight().is_current_at(now)
                    })
                    .map(|edge| (self.node_id(edge.target()), edge.target(), edge.id()))
                    .collect();
                edges.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (target_id, target, edge) in edges {
                    let entry = next
                        .entry(target_id)
                        .or_insert_with(|| (target, Vec::new()));
                    for path in node_paths {
                        if path_count >= MAX_TRAVERSAL_VISITED {
                            break;
                        }
                        let mut extended = Vec::with_capacity(path.len() + 1);
                        extended.extend_from_slice(path);
                        extended.push(edge);
                        entry.1.push(extended);
                        path_count += 1;
                    }
                }
            }
            states = next;
            if states.is_empty() {
                break;
            }
        }
        let results = states.keys().map(|id| (*id).to_owned()).collect();
        let paths = states
            .into_values()
            .flat_map(|(_, paths)| paths)
            .map(|path| self.relations(path))
            .collect();
        Ok(MultiHopResult { results, paths })
    }

    /// A shortest path, as the trait's default `shortest_path` but over node indexes.
    pub(crate) fn shortest_path(&self, from: &str, to: &str) -> Result<Option<Vec<GraphRelation>>> {
        let now = Utc::now();
        let from_node = self
            .node(from)
            .ok_or_else(|| not_found(from, &self.namespace))?;
        let to_node = self
            .node(to)
            .ok_or_else(|| not_found(to, &self.namespace))?;
        if from_node == to_node {
            return Ok(Some(Vec::new()));
        }
        let mut parents: HashMap<NodeIndex, (NodeIndex, EdgeIndex)> = HashMap::new();
        let mut visited: HashSet<NodeIndex> = HashSet::from([from_node]);
        let mut queue = VecDeque::from([(from_node, 0usize)]);
        while let Some((current, hops)) = queue.pop_front() {
            if hops >= MAX_TRAVERSAL_DEPTH || visited.len() > MAX_TRAVERSAL_VISITED {
                break;
            }
            for step in self.steps_at(current, Some(now)) {
                if !visited.insert(step.other) {
                    continue;
                }
                parents.insert(step.other, (current, step.edge));
                if step.other == to_node {
                    return Ok(Some(self.path_to(to_node, &parents)));
                }
                queue.push_back((step.other, hops + 1));
            }
        }
        Ok(None)
    }
}
