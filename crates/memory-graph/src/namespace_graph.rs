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
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};

use memory_core::{AccessTally, GraphEntity, GraphRelation, MemoryError, Namespace, Result, Tag};
use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableGraph};
use petgraph::visit::NodeIndexable;

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
    /// The relation's attributes; `None` when it has none (most relations), so an edge
    /// without them costs one pointer.
    attributes: Option<Box<memory_core::Attributes>>,
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
    /// The same ids in order, so a page of a listing seeks to its position instead of
    /// reading every entity (an export reads the graph a page at a time).
    sorted_ids: BTreeMap<Arc<str>, Slot>,
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
            sorted_ids: BTreeMap::new(),
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
        self.sorted_ids.insert(Arc::clone(&id), slot);
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
        self.sorted_ids.remove(id);
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
        self.sorted_ids.clear();
        self.names.clear();
        self.entity_types.clear();
        self.tags.clear();
        self.relation_types.clear();
        self.relation_type_ids.clear();
        count
    }

    /// Every entity, ordered by id.
    pub(crate) fn sorted_entities(&self) -> Vec<GraphEntity> {
        self.entities_after(None, usize::MAX)
    }

    /// The namespace this graph holds.
    pub(crate) fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// At most `limit` entities whose id comes after `after` (every one with `None`),
    /// ordered by id: the ordered ids seek to `after`, so a page costs its own entities.
    pub(crate) fn entities_after(&self, after: Option<&str>, limit: usize) -> Vec<GraphEntity> {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.sorted_ids
            .range::<str, _>((from, Bound::Unbounded))
            .filter_map(|(_, slot)| self.node(*slot))
            .take(limit)
            .map(|node| GraphEntity::clone(&node.entity))
            .collect()
    }

    /// At most `limit` relations whose `(source, type, target)` comes after `after` (every
    /// one with `None`), in that order: the sources are read in id order from `after`'s, each
    /// one's outgoing half-edges already in that order (a binary search finds `after`'s place
    /// among its source's), until the page is full. A page costs its relations and a search
    /// of one source's relations, so paging through a hub with many relations reads each
    /// once, not all of them at every page.
    pub(crate) fn relations_after(
        &self,
        after: Option<(&str, &str, &str)>,
        limit: usize,
    ) -> Vec<GraphRelation> {
        let from = after.map_or(Bound::Unbounded, |(source, _, _)| Bound::Included(source));
        let mut page: Vec<Slot> = Vec::new();
        for (source, slot) in self.sorted_ids.range::<str, _>((from, Bound::Unbounded)) {
            if page.len() >= limit {
                break;
            }
            let Some(node) = self.node(*slot) else {
                continue;
            };
            let outgoing = node.outgoing();
            let start = match after {
                Some((after_source, kind, target)) if &**source == after_source => outgoing
                    .partition_point(|half| {
                        (
                            &*self.relation_types[half.relation_type() as usize],
                            self.node_id(half.other),
                        ) <= (kind, target)
                    }),
                _ => 0,
            };
            page.extend(
                outgoing[start..]
                    .iter()
                    .take(limit - page.len())
                    .map(|half| half.edge),
            );
        }
        self.relations(page)
    }

    /// Every relation, ordered by source, type, target.
    pub(crate) fn sorted_relations(&self) -> Vec<GraphRelation> {
        self.relations_after(None, usize::MAX)
    }
}

#[cfg(test)]
mod invariants;
mod lookup;
mod relations;
mod traversal;

pub(crate) use self::lookup::PreparedKeyword;

#[cfg(test)]
mod tests;
