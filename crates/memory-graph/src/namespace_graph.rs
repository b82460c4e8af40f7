//! One namespace's graph: a petgraph `StableGraph` with each entity's relations also kept
//! grouped by node, contiguous and in traversal order, with id, name, type and tag indexes,
//! and the native traversals. Everything here is synchronous; `PetGraph` wraps it in locks.
//!
//! Layout. The `StableGraph<Node, Edge>` (`u32` indices) stores the entities and relations:
//! its node and edge indices are the slots everything else refers to, and petgraph owns
//! their allocation, removal and stability (removing an entity or a relation never moves
//! another). Each node weight holds the shared entity and its adjacency: one `Vec` of
//! half-edges, outgoing first, then incoming (a self loop only once, as outgoing), each
//! group ordered by relation type then the other endpoint's id: the order of
//! [`KnowledgeGraph::relations_of`](memory_core::KnowledgeGraph::relations_of) and so the
//! order every traversal expands a node in. petgraph keeps its own linked lists of edges
//! up to date, but a traversal step reads the one contiguous array of the expanded entity
//! instead of chasing those lists, and never sorts. Adding a relation is petgraph's `O(1)`
//! link plus an insertion into two sorted arrays (`O(degree)` moves).
//!
//! A relation's public form (`Arc<GraphRelation>`) is built the first time a traversal
//! puts it in a path, kept on the half-edge the traversal crossed, and shared by every
//! later result crossing it that way (so at most two copies of a relation, one per
//! direction, are ever built).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};

use memory_core::{AccessTally, GraphEntity, GraphRelation, MemoryError, Namespace, Result, Tag};
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableGraph};
use petgraph::visit::{EdgeRef, IntoEdgeReferences, NodeIndexable};

/// A node or edge index of the `StableGraph`, as the number the indexes and half-edges
/// store.
type Slot = u32;

/// The petgraph index of the entity in `slot`.
fn node_index(slot: Slot) -> NodeIndex<Slot> {
    NodeIndex::new(slot as usize)
}

/// The petgraph index of the relation in `slot`.
fn edge_index(slot: Slot) -> EdgeIndex<Slot> {
    EdgeIndex::new(slot as usize)
}

/// The slot of a petgraph index (always representable: the indices are `u32`).
fn slot_of(index: usize) -> Slot {
    Slot::try_from(index).unwrap_or(Slot::MAX)
}

/// The top bit of [`HalfEdge::kind`]: the relation has a `valid_until` (it may be closed).
const CLOSES: u32 = 1 << 31;

/// The first eight bytes of a string, big-endian, zero-padded: `key(a) < key(b)` implies
/// `a < b`, so most comparisons of ids or names are one integer comparison.
fn prefix_key(text: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let len = text.len().min(8);
    bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
    u64::from_be_bytes(bytes)
}

/// The [`prefix_key`] of an id.
fn id_key(id: &str) -> u64 {
    prefix_key(id)
}

/// A node weight: an entity and its relations in traversal order.
///
/// Kept to 48 bytes (the id is read through `entity`), so with petgraph's two edge links
/// a node slot takes 56 bytes and most slots a traversal reads sit in one cache line.
#[derive(Debug)]
struct Node {
    /// [`id_key`] of the entity's id.
    key: u64,
    entity: Arc<GraphEntity>,
    /// The node's relations in traversal order (see the module docs).
    adjacency: Vec<HalfEdge>,
    /// How many of `adjacency` are outgoing (they come first).
    outgoing: u32,
}

impl Node {
    /// The entity's id.
    fn id(&self) -> &str {
        &self.entity.id
    }

    fn outgoing(&self) -> &[HalfEdge] {
        &self.adjacency[..self.outgoing as usize]
    }

    #[cfg(test)]
    fn incoming(&self) -> &[HalfEdge] {
        &self.adjacency[self.outgoing as usize..]
    }
}

/// One end's view of a relation: the entity at the other end, the relation's slot, its
/// interned type (with [`CLOSES`] set when it has a `valid_until`), and the relation's
/// public form once a traversal has put it in a path through this end. The cache lives
/// here rather than in the relation's slot: a traversal reads the half-edge anyway when it
/// expands an entity, so handing out the relation costs no extra memory access.
#[derive(Debug)]
struct HalfEdge {
    other: Slot,
    edge: Slot,
    kind: u32,
    /// The relation's weight (it fits the padding), so scores need no other read.
    weight: f32,
    shared: OnceLock<Arc<GraphRelation>>,
}

impl HalfEdge {
    fn new(other: Slot, edge: Slot, kind: u32, weight: f32) -> Self {
        Self {
            other,
            edge,
            kind,
            weight,
            shared: OnceLock::new(),
        }
    }

    fn relation_type(&self) -> u32 {
        self.kind & !CLOSES
    }
}

/// An edge weight: a relation (petgraph holds its endpoints).
#[derive(Debug)]
struct Edge {
    relation_type: u32,
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

/// The entities of one index key, as `(id key, slot)`: in id order but for ids that share
/// their first eight bytes, and read without touching the entities.
type Posting = BTreeSet<(u64, Slot)>;

/// The graph of one namespace with its indexes.
///
/// Invariants: `ids`, `names`, `entity_types` and `tags` list exactly the nodes of
/// `graph`; no index keeps an empty set; every edge of `graph` appears once in its
/// source's outgoing half-edges and, unless it is a self loop, once in its target's
/// incoming half-edges, in traversal order, and no half-edge names another.
#[derive(Debug)]
pub(crate) struct NamespaceGraph {
    namespace: Namespace,
    /// The entities and relations; node and edge indices are the slots.
    graph: StableGraph<Node, Edge, petgraph::Directed, Slot>,
    ids: HashMap<Arc<str>, Slot>,
    /// `(name key, lowercased name, id key, slot)` of every entity, the name key being the
    /// [`prefix_key`] of the lowercased name (so the order is the names' order): a name
    /// prefix is one range scan of one tree (most names are unique, so a set per name would
    /// cost a tree per entity), comparing integers rather than strings.
    names: BTreeSet<(u64, String, u64, Slot)>,
    /// Lowercased entity type -> entities.
    entity_types: HashMap<String, Posting>,
    /// Tag -> entities, sorted so a tag prefix is a range scan.
    tags: BTreeMap<String, Posting>,
    /// Interned relation types: a million relations share a few strings, and a half-edge
    /// carries its type as a number.
    relation_types: Vec<Arc<str>>,
    relation_type_ids: HashMap<Arc<str>, u32>,
    /// Set when the graph was cleared and dropped from the namespace map: writers that
    /// still hold it must look the namespace up again.
    pub(crate) retired: bool,
}

fn not_found(id: &str, namespace: &Namespace) -> MemoryError {
    MemoryError::not_found("entity", namespace, id)
}

fn index_insert<K: Ord>(index: &mut BTreeMap<K, Posting>, key: K, entry: (u64, Slot)) {
    index.entry(key).or_default().insert(entry);
}

fn index_remove(index: &mut BTreeMap<String, Posting>, key: &str, entry: (u64, Slot)) {
    if let Some(set) = index.get_mut(key) {
        set.remove(&entry);
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
            graph: StableGraph::default(),
            ids: HashMap::new(),
            names: BTreeSet::new(),
            entity_types: HashMap::new(),
            tags: BTreeMap::new(),
            relation_types: Vec::new(),
            relation_type_ids: HashMap::new(),
            retired: false,
        }
    }

    /// How many entities the namespace holds.
    pub(crate) fn entity_count(&self) -> usize {
        self.ids.len()
    }

    /// How many relations the namespace holds.
    pub(crate) fn relation_count(&self) -> usize {
        self.graph.edge_count()
    }

    fn slot(&self, id: &str) -> Option<Slot> {
        self.ids.get(id).copied()
    }

    fn node(&self, slot: Slot) -> Option<&Node> {
        self.graph.node_weight(node_index(slot))
    }

    fn node_mut(&mut self, slot: Slot) -> Option<&mut Node> {
        self.graph.node_weight_mut(node_index(slot))
    }

    fn edge(&self, slot: Slot) -> Option<&Edge> {
        self.graph.edge_weight(edge_index(slot))
    }

    /// The source and target slots of an edge.
    fn endpoints(&self, slot: Slot) -> Option<(Slot, Slot)> {
        self.graph
            .edge_endpoints(edge_index(slot))
            .map(|(source, target)| (slot_of(source.index()), slot_of(target.index())))
    }

    /// One more than the highest slot of a live entity: a bound for per-slot tables.
    fn node_bound(&self) -> usize {
        self.graph.node_bound()
    }

    fn node_id(&self, slot: Slot) -> &str {
        self.node(slot).map_or("", Node::id)
    }

    /// Compares two live nodes by id.
    fn cmp_ids(&self, a: Slot, b: Slot) -> Ordering {
        match (self.node(a), self.node(b)) {
            (Some(a), Some(b)) => a.key.cmp(&b.key).then_with(|| a.id().cmp(b.id())),
            _ => a.cmp(&b),
        }
    }

    /// The traversal order of two half-edges of one direction: relation type, then the
    /// other endpoint's id.
    fn cmp_half_edges(&self, a: &HalfEdge, b: &HalfEdge) -> Ordering {
        let (type_a, type_b) = (a.relation_type(), b.relation_type());
        let by_type = if type_a == type_b {
            Ordering::Equal
        } else {
            self.relation_types[type_a as usize].cmp(&self.relation_types[type_b as usize])
        };
        by_type
            .then_with(|| self.cmp_ids(a.other, b.other))
            .then(a.edge.cmp(&b.edge))
    }

    /// The stored entity.
    pub(crate) fn entity(&self, id: &str) -> Option<&Arc<GraphEntity>> {
        let slot = self.slot(id)?;
        self.node(slot).map(|node| &node.entity)
    }

    fn index_keys(&mut self, slot: Slot, keys: IndexKeys) {
        let entry = (self.node(slot).map_or(0, |node| node.key), slot);
        self.names
            .insert((prefix_key(&keys.name), keys.name, entry.0, entry.1));
        self.entity_types
            .entry(keys.entity_type)
            .or_default()
            .insert(entry);
        for tag in keys.tags {
            index_insert(&mut self.tags, tag, entry);
        }
    }

    fn unindex_keys(&mut self, slot: Slot, key: u64, keys: &IndexKeys) {
        let entry = (key, slot);
        self.names
            .remove(&(prefix_key(&keys.name), keys.name.clone(), entry.0, entry.1));
        if let Some(set) = self.entity_types.get_mut(&keys.entity_type) {
            set.remove(&entry);
            if set.is_empty() {
                self.entity_types.remove(&keys.entity_type);
            }
        }
        for tag in &keys.tags {
            index_remove(&mut self.tags, tag, entry);
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
        let too_many = || {
            MemoryError::LimitExceeded(format!(
                "add entity {} in {}: too many entities",
                entity.id, self.namespace
            ))
        };
        // Below this count petgraph has a vacant slot or room for a new one, so adding
        // cannot fail (and a failed add would leave its count off by one).
        if self.graph.node_count() >= NodeIndex::<Slot>::end().index() {
            return Err(too_many());
        }
        let id: Arc<str> = Arc::from(entity.id.as_str());
        let keys = IndexKeys::of(&entity);
        let node = Node {
            key: id_key(&id),
            entity: Arc::new(entity),
            adjacency: Vec::new(),
            outgoing: 0,
        };
        let slot = slot_of(self.graph.add_node(node).index());
        self.ids.insert(id, slot);
        self.index_keys(slot, keys);
        Ok(())
    }

    /// Replaces an entity's fields (tags already limited), keeping its relations, its access
    /// statistics and its creation time (unless unknown).
    pub(crate) fn update_entity(&mut self, mut entity: GraphEntity) -> Result<()> {
        let slot = self
            .slot(&entity.id)
            .ok_or_else(|| not_found(&entity.id, &self.namespace))?;
        let namespace = self.namespace.clone();
        let Some(node) = self.node_mut(slot) else {
            return Err(not_found(&entity.id, &namespace));
        };
        entity.created_at = node.entity.created_at.or(entity.created_at);
        entity.access_count = node.entity.access_count;
        entity.last_accessed = node.entity.last_accessed;
        let new_keys = IndexKeys::of(&entity);
        let key = node.key;
        let old = std::mem::replace(&mut node.entity, Arc::new(entity));
        self.unindex_keys(slot, key, &IndexKeys::of(&old));
        self.index_keys(slot, new_keys);
        Ok(())
    }

    /// Counts a batch's accesses to entity `id` ([`AccessTally::apply`]); an unknown id is
    /// ignored.
    pub(crate) fn record_access(&mut self, tally: &AccessTally<'_>) {
        let Some(slot) = self.slot(tally.id) else {
            return;
        };
        if let Some(node) = self.node_mut(slot) {
            // Results already handed out keep the entity as it was when they were made.
            let entity = Arc::make_mut(&mut node.entity);
            tally.apply(&mut entity.access_count, &mut entity.last_accessed);
        }
    }

    /// Replaces an entity's tags (already normalised and limited).
    pub(crate) fn set_tags(&mut self, id: &str, tags: Vec<Tag>) -> Result<()> {
        let slot = self
            .slot(id)
            .ok_or_else(|| not_found(id, &self.namespace))?;
        let namespace = self.namespace.clone();
        let Some(node) = self.node_mut(slot) else {
            return Err(not_found(id, &namespace));
        };
        let entry = (node.key, slot);
        let old = std::mem::replace(&mut Arc::make_mut(&mut node.entity).tags, tags.clone());
        for tag in &old {
            index_remove(&mut self.tags, tag.as_str(), entry);
        }
        for tag in &tags {
            index_insert(&mut self.tags, tag.as_str().to_owned(), entry);
        }
        Ok(())
    }

    /// Removes an entity, its relations and its index entries.
    pub(crate) fn remove_entity(&mut self, id: &str) -> bool {
        let Some(slot) = self.ids.remove(id) else {
            return false;
        };
        // petgraph removes the node's edges with it; the other ends' half-edges go here.
        let Some(node) = self.graph.remove_node(node_index(slot)) else {
            return true;
        };
        for (position, half) in node.adjacency.iter().enumerate() {
            let outgoing = position < node.outgoing as usize;
            if half.other != slot {
                self.detach(half.other, half.edge, !outgoing);
            }
        }
        self.unindex_keys(slot, node.key, &IndexKeys::of(&node.entity));
        true
    }

    /// Removes the half-edge of `edge` from `slot`'s outgoing (`outgoing`) or incoming list.
    fn detach(&mut self, slot: Slot, edge: Slot, outgoing: bool) {
        let Some(node) = self.node_mut(slot) else {
            return;
        };
        let range = if outgoing {
            0..node.outgoing as usize
        } else {
            node.outgoing as usize..node.adjacency.len()
        };
        if let Some(position) = node.adjacency[range.clone()]
            .iter()
            .position(|half| half.edge == edge)
        {
            node.adjacency.remove(range.start + position);
            if outgoing {
                node.outgoing -= 1;
            }
        }
    }

    /// Removes everything; returns how many entities there were.
    pub(crate) fn clear(&mut self) -> usize {
        let count = self.ids.len();
        self.graph.clear();
        self.ids.clear();
        self.names.clear();
        self.entity_types.clear();
        self.tags.clear();
        self.relation_types.clear();
        self.relation_type_ids.clear();
        count
    }

    fn intern_relation_type(&mut self, relation_type: &str) -> Result<u32> {
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
    fn find_edge(&self, source: Slot, target: Slot, relation_type: &str) -> Option<Slot> {
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
    fn attach(&mut self, slot: Slot, half: HalfEdge, outgoing: bool) {
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
    fn relation(&self, slot: Slot) -> Option<GraphRelation> {
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
        })
    }

    /// The public form of the relation of `half`, shared: built once per half-edge, then
    /// handed out by reference count.
    fn shared_relation(&self, half: &HalfEdge) -> Option<Arc<GraphRelation>> {
        if let Some(shared) = half.shared.get() {
            return Some(Arc::clone(shared));
        }
        let built = Arc::new(self.relation(half.edge)?);
        Some(Arc::clone(half.shared.get_or_init(|| built)))
    }

    fn relations(&self, edges: impl IntoIterator<Item = Slot>) -> Vec<GraphRelation> {
        edges
            .into_iter()
            .filter_map(|edge| self.relation(edge))
            .collect()
    }

    /// Every relation with `id` as source or target, in the trait's order.
    pub(crate) fn relations_of(&self, id: &str) -> Vec<GraphRelation> {
        match self.slot(id).and_then(|slot| self.node(slot)) {
            Some(node) => self.relations(node.adjacency.iter().map(|half| half.edge)),
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

    /// Every entity, ordered by id.
    pub(crate) fn sorted_entities(&self) -> Vec<GraphEntity> {
        let mut entities: Vec<&Node> = self.graph.node_weights().collect();
        entities.sort_unstable_by(|a, b| a.id().cmp(b.id()));
        entities
            .into_iter()
            .map(|node| GraphEntity::clone(&node.entity))
            .collect()
    }

    /// Every relation, ordered by source, type, target.
    pub(crate) fn sorted_relations(&self) -> Vec<GraphRelation> {
        let mut edges: Vec<(&str, &str, &str, Slot)> = self
            .graph
            .edge_references()
            .map(|edge| {
                (
                    self.node_id(slot_of(edge.source().index())),
                    &*self.relation_types[edge.weight().relation_type as usize],
                    self.node_id(slot_of(edge.target().index())),
                    slot_of(edge.id().index()),
                )
            })
            .collect();
        edges.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        self.relations(edges.into_iter().map(|(_, _, _, edge)| edge))
    }

    /// Checks every invariant of the indexes and the adjacency; for tests.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> std::result::Result<(), String> {
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

mod lookup;
mod traversal;

pub(crate) use self::lookup::PreparedKeyword;

#[cfg(test)]
mod tests;
