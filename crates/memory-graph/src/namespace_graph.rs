//! One namespace's graph: a petgraph `StableGraph` with its id, name, type and tag indexes,
//! and the native traversals. Everything here is synchronous; `PetGraph` wraps it in locks.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use memory_core::{AccessTally, GraphEntity, GraphRelation, MemoryError, Namespace, Result, Tag};
use petgraph::Direction;
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableGraph};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};

/// A node: the stored entity, with its id shared by the indexes.
#[derive(Debug)]
struct Node {
    id: Arc<str>,
    entity: GraphEntity,
    /// Outgoing and incoming relation counts, to pick the shorter list when looking a
    /// relation up between two hubs.
    outgoing: usize,
    incoming: usize,
}

/// An edge: the relation type (interned per namespace) and its weight.
#[derive(Debug)]
struct Edge {
    relation_type: Arc<str>,
    weight: f32,
    valid_from: Option<DateTime<Utc>>,
    valid_until: Option<DateTime<Utc>>,
}

impl Edge {
    /// Whether a traversal at `now` follows the edge ([`GraphRelation::is_current_at`]).
    fn is_current_at(&self, now: DateTime<Utc>) -> bool {
        self.valid_until.is_none_or(|until| until > now)
    }
}

/// One step of a traversal from a node: a relation and the entity at its other end, in the
/// order of [`KnowledgeGraph::relations_of`](memory_core::KnowledgeGraph::relations_of).
#[derive(Clone, Copy, Debug)]
struct Step {
    edge: EdgeIndex,
    other: NodeIndex,
}

/// The index keys of an entity: lowercased name and type, tags.
#[derive(Debug)]
struct IndexKeys {
    name: String,
    entity_type: String,
    tags: Vec<String>,
}

impl IndexKeys {
    fn of(entity: &GraphEntity) -> Self {
        Self {
            name: entity.name.to_lowercase(),
            entity_type: entity.entity_type.to_lowercase(),
            tags: entity
                .tags
                .iter()
                .map(|tag| tag.as_str().to_owned())
                .collect(),
        }
    }
}

/// A keyword prepared once for every namespace it is matched in.
#[derive(Debug)]
pub(crate) struct PreparedKeyword {
    /// The trimmed, lowercased keyword (name prefix and entity type).
    lower: String,
    /// The keyword normalised as a tag, when it is a valid tag.
    tag: Option<Tag>,
}

impl PreparedKeyword {
    /// Prepares `keywords`, dropping blank ones (they match nothing).
    pub(crate) fn prepare_all(keywords: &[String]) -> Vec<Self> {
        keywords
            .iter()
            .filter_map(|keyword| {
                let trimmed = keyword.trim();
                if trimmed.is_empty() {
                    return None;
                }
                Some(Self {
                    lower: trimmed.to_lowercase(),
                    tag: Tag::new(trimmed).ok(),
                })
            })
            .collect()
    }
}

/// The graph of one namespace with its indexes.
///
/// Invariants: `ids`, `names`, `entity_types` and `tags` list exactly the nodes of `graph`;
/// no index keeps an empty set; `Node::outgoing`/`incoming` count the node's edges.
#[derive(Debug)]
pub(crate) struct NamespaceGraph {
    namespace: Namespace,
    graph: StableGraph<Node, Edge>,
    ids: HashMap<Arc<str>, NodeIndex>,
    /// Lowercased name -> ids, sorted so a name prefix is a range scan.
    names: BTreeMap<String, BTreeSet<Arc<str>>>,
    /// Lowercased entity type -> ids.
    entity_types: HashMap<String, BTreeSet<Arc<str>>>,
    /// Tag -> ids, sorted so a tag prefix is a range scan.
    tags: BTreeMap<String, BTreeSet<Arc<str>>>,
    /// Interned relation types, so a million relations share a few strings.
    relation_types: HashSet<Arc<str>>,
    /// Set when the graph was cleared and dropped from the namespace map: writers that
    /// still hold it must look the namespace up again.
    pub(crate) retired: bool,
}

fn not_found(id: &str, namespace: &Namespace) -> MemoryError {
    MemoryError::not_found("entity", namespace, id)
}

fn index_insert<K: Ord>(index: &mut BTreeMap<K, BTreeSet<Arc<str>>>, key: K, id: &Arc<str>) {
    index.entry(key).or_default().insert(Arc::clone(id));
}

fn index_remove(index: &mut BTreeMap<String, BTreeSet<Arc<str>>>, key: &str, id: &str) {
    if let Some(set) = index.get_mut(key) {
        set.remove(id);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

/// Drops duplicate tags (keeping the first) and keeps at most `max_tags`: the shared rule
/// of [`TagConstraints::limit`](memory_core::TagConstraints::limit).
pub(crate) fn limit_tags(tags: Vec<Tag>, max_tags: usize) -> Vec<Tag> {
    memory_core::TagConstraints {
        max_tags_per_entity: max_tags,
    }
    .limit(&tags)
}

impl NamespaceGraph {
    /// An empty graph for `namespace`.
    pub(crate) fn new(namespace: Namespace) -> Self {
        Self {
            namespace,
            graph: StableGraph::new(),
            ids: HashMap::new(),
            names: BTreeMap::new(),
            entity_types: HashMap::new(),
            tags: BTreeMap::new(),
            relation_types: HashSet::new(),
            retired: false,
        }
    }

    /// How many entities the namespace holds.
    pub(crate) fn entity_count(&self) -> usize {
        self.graph.node_count()
    }

    /// How many relations the namespace holds.
    pub(crate) fn relation_count(&self) -> usize {
        self.graph.edge_count()
    }

    fn node(&self, id: &str) -> Option<NodeIndex> {
        self.ids.get(id).copied()
    }

    fn node_id(&self, node: NodeIndex) -> &str {
        self.graph.node_weight(node).map_or("", |n| &n.id)
    }

    /// The stored entity.
    pub(crate) fn entity(&self, id: &str) -> Option<&GraphEntity> {
        let node = self.node(id)?;
        self.graph.node_weight(node).map(|n| &n.entity)
    }

    fn index_keys(&mut self, id: &Arc<str>, keys: IndexKeys) {
        index_insert(&mut self.names, keys.name, id);
        self.entity_types
            .entry(keys.entity_type)
            .or_default()
            .insert(Arc::clone(id));
        for tag in keys.tags {
            index_insert(&mut self.tags, tag, id);
        }
    }

    fn unindex_keys(&mut self, id: &str, keys: &IndexKeys) {
        index_remove(&mut self.names, &keys.name, id);
        if let Some(set) = self.entity_types.get_mut(&keys.entity_type) {
            set.remove(id);
            if set.is_empty() {
                self.entity_types.remove(&keys.entity_type);
            }
        }
        for tag in &keys.tags {
            index_remove(&mut self.tags, tag, id);
        }
    }

    /// Adds an entity whose tags are already limited.
    pub(crate) fn insert_entity(&mut self, entity: GraphEntity) -> Result<()> {
        if self.ids.contains_key(entity.id.as_str()) {
            return Err(MemoryError::AlreadyExists(format!(
                "entity {} in {}",
                entity.id, self.namespace
            )));
        }
        let id: Arc<str> = Arc::from(entity.id.as_str());
        let keys = IndexKeys::of(&entity);
        let node = Node {
            id: Arc::clone(&id),
            entity,
            outgoing: 0,
            incoming: 0,
        };
        let index = self.graph.try_add_node(node).map_err(|error| {
            MemoryError::LimitExceeded(format!("add entity {id} in {}: {error}", self.namespace))
        })?;
        self.ids.insert(Arc::clone(&id), index);
        self.index_keys(&id, keys);
        Ok(())
    }

    /// Replaces an entity's fields (tags already limited), keeping its relations, its access
    /// statistics and its creation time (unless unknown).
    pub(crate) fn update_entity(&mut self, mut entity: GraphEntity) -> Result<()> {
        let node = self
            .node(&entity.id)
            .ok_or_else(|| not_found(&entity.id, &self.namespace))?;
        let Some(slot) = self.graph.node_weight_mut(node) else {
            return Err(not_found(&entity.id, &self.namespace));
        };
        entity.created_at = slot.entity.created_at.or(entity.created_at);
        entity.access_count = slot.entity.access_count;
        entity.last_accessed = slot.entity.last_accessed;
        let id = Arc::clone(&slot.id);
        let new_keys = IndexKeys::of(&entity);
        let old = std::mem::replace(&mut slot.entity, entity);
        self.unindex_keys(&id, &IndexKeys::of(&old));
        self.index_keys(&id, new_keys);
        Ok(())
    }

    /// Counts a batch's accesses to entity `id` ([`AccessTally::apply`]); an unknown id is
    /// ignored.
    pub(crate) fn record_access(&mut self, tally: &AccessTally<'_>) {
        if let Some(slot) = self
            .node(tally.id)
            .and_then(|node| self.graph.node_weight_mut(node))
        {
            tally.apply(
                &mut slot.entity.access_count,
                &mut slot.entity.last_accessed,
            );
        }
    }

    /// Replaces an entity's tags (already normalised and limited).
    pub(crate) fn set_tags(&mut self, id: &str, tags: Vec<Tag>) -> Result<()> {
        let node = self
            .node(id)
            .ok_or_else(|| not_found(id, &self.namespace))?;
        let Some(slot) = self.graph.node_weight_mut(node) else {
            return Err(not_found(id, &self.namespace));
        };
        let shared_id = Arc::clone(&slot.id);
        let old = std::mem::replace(&mut slot.entity.tags, tags.clone());
        for tag in &old {
            index_remove(&mut self.tags, tag.as_str(), id);
        }
        for tag in &tags {
            index_insert(&mut self.tags, tag.as_str().to_owned(), &shared_id);
        }
        Ok(())
    }

    /// Removes an entity, its relations and its index entries.
    pub(crate) fn remove_entity(&mut self, id: &str) -> bool {
        let Some(node) = self.ids.remove(id) else {
            return false;
        };
        let neighbours: Vec<(NodeIndex, Direction)> = self
            .graph
            .edges_directed(node, Direction::Outgoing)
            .map(|edge| (edge.target(), Direction::Incoming))
            .chain(
                self.graph
                    .edges_directed(node, Direction::Incoming)
                    .map(|edge| (edge.source(), Direction::Outgoing)),
            )
            .filter(|(other, _)| *other != node)
            .collect();
        for (other, direction) in neighbours {
            if let Some(weight) = self.graph.node_weight_mut(other) {
                match direction {
                    Direction::Outgoing => weight.outgoing = weight.outgoing.saturating_sub(1),
                    Direction::Incoming => weight.incoming = weight.incoming.saturating_sub(1),
                }
            }
        }
        if let Some(removed) = self.graph.remove_node(node) {
            self.unindex_keys(id, &IndexKeys::of(&removed.entity));
        }
        true
    }

    /// Removes everything; returns how many entities there were.
    pub(crate) fn clear(&mut self) -> usize {
        let count = self.graph.node_count();
        self.graph.clear();
        self.ids.clear();
        self.names.clear();
        self.entity_types.clear();
        self.tags.clear();
        self.relation_types.clear();
        count
    }

    fn intern_relation_type(&mut self, relation_type: &str) -> Arc<str> {
        if let Some(existing) = self.relation_types.get(relation_type) {
            return Arc::clone(existing);
        }
        let interned: Arc<str> = Arc::from(relation_type);
        self.relation_types.insert(Arc::clone(&interned));
        interned
    }

    /// The edge `source -relation_type-> target`, scanning the shorter of the source's
    /// outgoing and the target's incoming lists.
    fn find_edge(
        &self,
        source: NodeIndex,
        target: NodeIndex,
        relation_type: &str,
    ) -> Option<EdgeIndex> {
        let outgoing = self.graph.node_weight(source).map_or(0, |n| n.outgoing);
        let incoming = self.graph.node_weight(target).map_or(0, |n| n.incoming);
        if outgoing <= incoming {
            self.graph
                .edges_directed(source, Direction::Outgoing)
                .find(|edge| {
                    edge.target() == target && &*edge.weight().relation_type == relation_type
                })
                .map(|edge| edge.id())
        } else {
            self.graph
                .edges_directed(target, Direction::Incoming)
                .find(|edge| {
                    edge.source() == source && &*edge.weight().relation_type == relation_type
                })
                .map(|edge| edge.id())
        }
    }

    /// Adds a validated relation or updates the weight of the existing one.
    pub(crate) fn add_relation(&mut self, relation: &GraphRelation) -> Result<()> {
        let endpoint = |id: &str, _role: &str| {
            self.node(id)
                .ok_or_else(|| MemoryError::not_found("entity", &self.namespace, id))
        };
        let source = endpoint(&relation.source_id, "source")?;
        let target = endpoint(&relation.target_id, "target")?;
        if let Some(edge) = self.find_edge(source, target, &relation.relation_type) {
            if let Some(weight) = self.graph.edge_weight_mut(edge) {
                weight.weight = relation.weight;
                weight.valid_from = relation.valid_from;
                weight.valid_until = relation.valid_until;
            }
            return Ok(());
        }
        let relation_type = self.intern_relation_type(&relation.relation_type);
        let edge = Edge {
            relation_type,
            weight: relation.weight,
            valid_from: relation.valid_from,
            valid_until: relation.valid_until,
        };
        self.graph
            .try_add_edge(source, target, edge)
            .map_err(|error| {
                MemoryError::LimitExceeded(format!(
                    "add relation {} -{}-> {} in {}: {error}",
                    relation.source_id, relation.relation_type, relation.target_id, self.namespace
                ))
            })?;
        if let Some(weight) = self.graph.node_weight_mut(source) {
            weight.outgoing += 1;
        }
        if let Some(weight) = self.graph.node_weight_mut(target) {
            weight.incoming += 1;
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
        let (Some(source), Some(target)) = (self.node(source_id), self.node(target_id)) else {
            return false;
        };
        let Some(edge) = self.find_edge(source, target, relation_type) else {
            return false;
        };
        self.graph.remove_edge(edge);
        if let Some(weight) = self.graph.node_weight_mut(source) {
            weight.outgoing = weight.outgoing.saturating_sub(1);
        }
        if let Some(weight) = self.graph.node_weight_mut(target) {
            weight.incoming = weight.incoming.saturating_sub(1);
        }
        true
    }

    /// The public form of an edge.
    fn relation(&self, edge: EdgeIndex) -> Option<GraphRelation> {
        let (source, target) = self.graph.edge_endpoints(edge)?;
        let weight = self.graph.edge_weight(edge)?;
        Some(GraphRelation {
            namespace: self.namespace.clone(),
            source_id: self.node_id(source).to_owned(),
            target_id: self.node_id(target).to_owned(),
            relation_type: weight.relation_type.to_string(),
            weight: weight.weight,
            valid_from: weight.valid_from,
            valid_until: weight.valid_until,
        })
    }

    fn relations(&self, edges: impl IntoIterator<Item = EdgeIndex>) -> Vec<GraphRelation> {
        edges
            .into_iter()
            .filter_map(|edge| self.relation(edge))
            .collect()
    }

    /// The relations of `node` in `relations_of` order: outgoing first, then incoming (self
    /// loops once, as outgoing), each group by relation type then the other endpoint's id.
    fn steps(&self, node: NodeIndex) -> Vec<Step> {
        self.steps_at(node, None)
    }

    /// [`steps`](Self::steps) over the relations current at `now` only (all when `None`).
    fn steps_at(&self, node: NodeIndex, now: Option<DateTime<Utc>>) -> Vec<Step> {
        let follows = |edge: &Edge| now.is_none_or(|now| edge.is_current_at(now));
        let mut keyed: Vec<(bool, &str, &str, Step)> = Vec::new();
        for edge in self.graph.edges_directed(node, Direction::Outgoing) {
            if !follows(edge.weight()) {
                continue;
            }
            let other = edge.target();
            keyed.push((
                false,
                &edge.weight().relation_type,
                self.node_id(other),
                Step {
                    edge: edge.id(),
                    other,
                },
            ));
        }
        for edge in self.graph.edges_directed(node, Direction::Incoming) {
            let other = edge.source();
            if other == node || !follows(edge.weight()) {
                continue;
            }
            keyed.push((
                true,
                &edge.weight().relation_type,
                self.node_id(other),
                Step {
                    edge: edge.id(),
                    other,
                },
            ));
        }
        keyed.sort_unstable_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| {
                    // Relation types are interned: the same pointer is the same type.
                    if std::ptr::eq(a.1, b.1) {
                        std::cmp::Ordering::Equal
                    } else {
                        a.1.cmp(b.1)
                    }
                })
                .then_with(|| a.2.cmp(b.2))
        });
        keyed.into_iter().map(|(_, _, _, step)| step).collect()
    }

    /// Every relation with `id` as source or target, in the trait's order.
    pub(crate) fn relations_of(&self, id: &str) -> Vec<GraphRelation> {
        match self.node(id) {
            Some(node) => self.relations(self.steps(node).into_iter().map(|step| step.edge)),
            None => Vec::new(),
        }
    }

    /// How many relations touch `id` (a self loop counts once).
    pub(crate) fn degree(&self, id: &str) -> usize {
        let Some(node) = self.node(id) else {
            return 0;
        };
        let outgoing = self.graph.edges_directed(node, Direction::Outgoing).count();
        let incoming = self
            .graph
            .edges_directed(node, Direction::Incoming)
            .filter(|edge| edge.source() != node)
            .count();
        outgoing + incoming
    }

    /// How many distinct other entities `id` is related to, `None` for a missing entity.
    pub(crate) fn neighbour_count(&self, id: &str) -> Option<usize> {
        let node = self.node(id)?;
        let neighbours: HashSet<NodeIndex> = self
            .graph
            .neighbors_undirected(node)
            .filter(|other| *other != node)
            .collect();
        Some(neighbours.len())
    }

    /// The ids of the entities matching any keyword, sorted.
    pub(crate) fn matching_ids(&self, keywords: &[PreparedKeyword]) -> BTreeSet<Arc<str>> {
        let mut out = BTreeSet::new();
        for keyword in keywords {
            for (name, ids) in self.names.range(keyword.lower.clone()..) {
                if !name.starts_with(&keyword.lower) {
                    break;
                }
                out.extend(ids.iter().cloned());
            }
            if let Some(ids) = self.entity_types.get(&keyword.lower) {
                out.extend(ids.iter().cloned());
            }
            if let Some(tag) = &keyword.tag
                && let Some(ids) = self.tags.get(tag.as_str())
            {
                out.extend(ids.iter().cloned());
            }
        }
        out
    }

    /// The entities with these ids, in the given order.
    pub(crate) fn entities(&self, ids: &BTreeSet<Arc<str>>) -> Vec<GraphEntity> {
        ids.iter()
            .filter_map(|id| self.entity(id).cloned())
            .collect()
    }

    /// Adds the tags starting with `prefix` (already lowercased) to `out`.
    pub(crate) fn tags_with_prefix(&self, prefix: &str, out: &mut BTreeSet<String>) {
        for tag in self.tags.range(prefix.to_owned()..).map(|(tag, _)| tag) {
            if !tag.starts_with(prefix) {
                break;
            }
            out.insert(tag.clone());
        }
    }

    /// How many entities carry `tag`.
    pub(crate) fn tag_count(&self, tag: &Tag) -> usize {
        self.tags.get(tag.as_str()).map_or(0, BTreeSet::len)
    }

    /// Every entity, ordered by id.
    pub(crate) fn sorted_entities(&self) -> Vec<GraphEntity> {
        let mut entities: Vec<&Node> = self.graph.node_weights().collect();
        entities.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        entities.into_iter().map(|n| n.entity.clone()).collect()
    }

    /// Every relation, ordered by source, type, target.
    pub(crate) fn sorted_relations(&self) -> Vec<GraphRelation> {
        let mut edges: Vec<(&str, &str, &str, EdgeIndex)> = self
            .graph
            .edge_references()
            .map(|edge| {
                (
                    self.node_id(edge.source()),
                    &*edge.weight().relation_type,
                    self.node_id(edge.target()),
                    edge.id(),
                )
            })
            .collect();
        edges.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        self.relations(edges.into_iter().map(|(_, _, _, edge)| edge))
    }

    /// Checks every invariant of the indexes; for tests.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> std::result::Result<(), String> {
        if self.ids.len() != self.graph.node_count() {
            return Err(format!(
                "{} ids for {} nodes",
                self.ids.len(),
                self.graph.node_count()
            ));
        }
        let mut names = 0;
        let mut types = 0;
        let mut tags = 0;
        for node in self.graph.node_indices() {
            let Some(weight) = self.graph.node_weight(node) else {
                return Err("missing node weight".into());
            };
            let id = &*weight.id;
            if self.ids.get(id) != Some(&node) || weight.entity.id != id {
                return Err(format!("id index wrong for {id}"));
            }
            let in_index = |set: Option<&BTreeSet<Arc<str>>>| set.is_some_and(|s| s.contains(id));
            if !in_index(self.names.get(&weight.entity.name.to_lowercase())) {
                return Err(format!("name index misses {id}"));
            }
            if !in_index(
                self.entity_types
                    .get(&weight.entity.entity_type.to_lowercase()),
            ) {
                return Err(format!("type index misses {id}"));
            }
            for tag in &weight.entity.tags {
                if !in_index(self.tags.get(tag.as_str())) {
                    return Err(format!("tag index misses {id}/{tag}"));
                }
            }
            names += 1;
            types += 1;
            tags += weight.entity.tags.len();
            let outgoing = self.graph.edges_directed(node, Direction::Outgoing).count();
            let incoming = self.graph.edges_directed(node, Direction::Incoming).count();
            if outgoing != weight.outgoing || incoming != weight.incoming {
                return Err(format!("degree counts wrong for {id}"));
            }
        }
        let count = |sets: &mut dyn Iterator<Item = &BTreeSet<Arc<str>>>| {
            let mut total = 0;
            for set in sets {
                if set.is_empty() {
                    return None;
                }
                total += set.len();
            }
            Some(total)
        };
        if count(&mut self.names.values()) != Some(names)
            || count(&mut self.entity_types.values()) != Some(types)
            || count(&mut self.tags.values()) != Some(tags)
        {
            return Err("an index holds stale or empty entries".into());
        }
        Ok(())
    }
}

mod traversal;

#[cfg(test)]
mod tests;
