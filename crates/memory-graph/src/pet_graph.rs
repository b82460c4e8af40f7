//! [`PetGraph`]: the namespace map, its locking, and the `KnowledgeGraph` implementation.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use memory_core::{
    AccessEvent, EntityPosition, GraphEntity, GraphRelation, KnowledgeGraph, MAX_TRAVERSAL_DEPTH,
    MemoryError, MultiHopResult, Namespace, RelationPosition, Result, Scope, ScoredEntity, Tag,
    TagConstraints, async_trait,
};

use crate::namespace_graph::{NamespaceGraph, PreparedKeyword, limit_tags};

type SharedNamespace = Arc<RwLock<NamespaceGraph>>;

/// The knowledge graph in memory, on a petgraph `StableGraph` per namespace, with each
/// entity's relations also kept grouped by node in one contiguous array in traversal order.
///
/// Each namespace has its own graph with an id index, a sorted name index (case-insensitive
/// prefix lookups are range scans), an entity-type index and a sorted tag index, so
/// [`find_by_keywords`](KnowledgeGraph::find_by_keywords) and
/// [`find_tags`](KnowledgeGraph::find_tags) never scan every entity. Traversals
/// ([`get_related`](KnowledgeGraph::get_related), [`multi_hop`](KnowledgeGraph::multi_hop))
/// walk node indices and those adjacency arrays directly and return the same results as
/// the trait's default implementations; [`shortest_path`](KnowledgeGraph::shortest_path)
/// is a bidirectional breadth-first search returning the default's path (and finding
/// paths the default gives up on at
/// [`MAX_TRAVERSAL_VISITED`](memory_core::MAX_TRAVERSAL_VISITED)).
/// Results share the stored entities and relations (`Arc`) instead of copying them.
///
/// Concurrency: namespaces are locked independently (readers share, a writer is
/// exclusive), and the methods never await while holding a lock. Cloning is not provided;
/// share it as `Arc<PetGraph>` or `Arc<dyn KnowledgeGraph>`.
///
/// ```
/// use memory_core::{GraphEntity, GraphRelation, KnowledgeGraph, Namespace};
/// use memory_graph::PetGraph;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> memory_core::Result<()> {
/// let graph = PetGraph::new();
/// let ns = Namespace::parse("user-1")?;
/// graph.add_entity(GraphEntity::new(ns.clone(), "rust", "Rust", "language")?).await?;
/// graph.add_entity(GraphEntity::new(ns.clone(), "tokio", "Tokio", "library")?).await?;
/// graph.add_relation(GraphRelation::new(ns.clone(), "tokio", "rust", "written_in", 1.0)?).await?;
/// assert_eq!(graph.degree(&ns, "rust").await?, 1);
/// assert_eq!(graph.degree_centrality(&ns, "rust")?, 1.0);
/// # Ok(())
/// # }
/// ```
pub struct PetGraph {
    namespaces: RwLock<BTreeMap<Namespace, SharedNamespace>>,
    tag_constraints: TagConstraints,
}

/// Another name for the in-memory knowledge graph.
pub type InMemoryGraph = PetGraph;

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    // A panic while a lock was held cannot leave a half-applied change behind: every write
    // validates first and mutates after, so the data is still usable.
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

impl fmt::Debug for PetGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PetGraph")
            .field("namespaces", &read(&self.namespaces).len())
            .field("tag_constraints", &self.tag_constraints)
            .finish()
    }
}

impl Default for PetGraph {
    fn default() -> Self {
        Self::new()
    }
}

impl PetGraph {
    /// An empty graph with the default tag constraints (8 tags per entity).
    pub fn new() -> Self {
        Self::with_tag_constraints(TagConstraints::default())
    }

    /// An empty graph keeping at most `tag_constraints.max_tags_per_entity` tags per entity.
    pub fn with_tag_constraints(tag_constraints: TagConstraints) -> Self {
        Self {
            namespaces: RwLock::new(BTreeMap::new()),
            tag_constraints,
        }
    }

    /// The graph of `namespace`, if it has one.
    fn existing(&self, namespace: &Namespace) -> Option<SharedNamespace> {
        read(&self.namespaces).get(namespace).cloned()
    }

    /// The graph of `namespace`, created when missing.
    fn existing_or_new(&self, namespace: &Namespace) -> SharedNamespace {
        if let Some(shared) = self.existing(namespace) {
            return shared;
        }
        Arc::clone(
            write(&self.namespaces)
                .entry(namespace.clone())
                .or_insert_with(|| Arc::new(RwLock::new(NamespaceGraph::new(namespace.clone())))),
        )
    }

    /// Runs `f` on the graph of `namespace` under its read lock; `None` when it has none.
    fn read_namespace<R>(
        &self,
        namespace: &Namespace,
        f: impl FnOnce(&NamespaceGraph) -> R,
    ) -> Option<R> {
        let shared = self.existing(namespace)?;
        let graph = read(&shared);
        Some(f(&graph))
    }

    /// Runs `f` on the graph of `namespace` under its write lock, creating the graph first
    /// when `create` is set; `None` when it has none and `create` is not set.
    fn write_namespace<R>(
        &self,
        namespace: &Namespace,
        create: bool,
        f: impl FnOnce(&mut NamespaceGraph) -> R,
    ) -> Option<R> {
        loop {
            let shared = if create {
                self.existing_or_new(namespace)
            } else {
                self.existing(namespace)?
            };
            let mut graph = write(&shared);
            // A concurrent `clear` dropped this graph from the map after we looked it up:
            // look again rather than write into a graph nobody can see.
            if graph.retired {
                continue;
            }
            return Some(f(&mut graph));
        }
    }

    /// A page of at most `limit` records of `scope`, namespace by namespace in order, from
    /// after a position in namespace `after` (the start without one): `take(graph, same,
    /// left)` lists at most `left` of one namespace's, after the position when `same` (the
    /// position's namespace), all when not. Namespaces before the position's are skipped.
    fn page<T>(
        &self,
        scope: &Scope,
        after: Option<&Namespace>,
        limit: usize,
        take: impl Fn(&NamespaceGraph, bool, usize) -> Vec<T>,
    ) -> Vec<T> {
        let mut out = Vec::new();
        for shared in self.in_scope(scope) {
            if out.len() >= limit {
                break;
            }
            let graph = read(&shared);
            let order = after.map(|after| graph.namespace().as_str().cmp(after.as_str()));
            if order == Some(std::cmp::Ordering::Less) {
                continue;
            }
            let same = order == Some(std::cmp::Ordering::Equal);
            out.extend(take(&graph, same, limit - out.len()));
        }
        out
    }

    /// The graphs of the namespaces in `scope`, ordered by namespace.
    fn in_scope(&self, scope: &Scope) -> Vec<SharedNamespace> {
        let namespaces = read(&self.namespaces);
        if !scope.descendants {
            return namespaces
                .get(&scope.namespace)
                .cloned()
                .into_iter()
                .collect();
        }
        // Descendants of `a/b` sort at or after `a/b` and start with it.
        let prefix = scope.namespace.as_str();
        namespaces
            .range(scope.namespace.clone()..)
            .take_while(|(namespace, _)| namespace.as_str().starts_with(prefix))
            .filter(|(namespace, _)| scope.contains(namespace))
            .map(|(_, shared)| Arc::clone(shared))
            .collect()
    }

    /// Drops the graph of `namespace` from the map when it holds no entity.
    fn drop_if_empty(&self, namespace: &Namespace) {
        let mut namespaces = write(&self.namespaces);
        let Some(shared) = namespaces.get(namespace) else {
            return;
        };
        let mut graph = write(shared);
        if graph.entity_count() == 0 {
            graph.retired = true;
            drop(graph);
            namespaces.remove(namespace);
        }
    }

    /// How many entities `namespace` holds.
    pub fn entity_count(&self, namespace: &Namespace) -> usize {
        self.read_namespace(namespace, NamespaceGraph::entity_count)
            .unwrap_or(0)
    }

    /// How many relations `namespace` holds.
    pub fn relation_count(&self, namespace: &Namespace) -> usize {
        self.read_namespace(namespace, NamespaceGraph::relation_count)
            .unwrap_or(0)
    }

    /// Degree centrality of an entity for graph scoring: the number of distinct other
    /// entities it is related to (either direction) divided by the number of other entities
    /// in its namespace, in `[0, 1]`; 0 when it is alone. The raw relation count is
    /// [`KnowledgeGraph::degree`].
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when the entity does not exist.
    pub fn degree_centrality(&self, namespace: &Namespace, id: &str) -> Result<f32> {
        let counts = self.read_namespace(namespace, |graph| {
            graph
                .neighbour_count(id)
                .map(|neighbours| (neighbours, graph.entity_count()))
        });
        let Some(Some((neighbours, entities))) = counts else {
            return Err(MemoryError::not_found("entity", namespace, id));
        };
        if entities <= 1 {
            return Ok(0.0);
        }
        Ok((neighbours as f32 / (entities - 1) as f32).clamp(0.0, 1.0))
    }

    fn limit(&self, tags: Vec<Tag>) -> Vec<Tag> {
        limit_tags(tags, self.tag_constraints.max_tags_per_entity.max(1))
    }

    fn missing(namespace: &Namespace, id: &str) -> MemoryError {
        MemoryError::not_found("entity", namespace, id)
    }
}

#[async_trait]
impl KnowledgeGraph for PetGraph {
    async fn add_entity(&self, mut entity: GraphEntity) -> Result<()> {
        entity.validate()?;
        entity.tags = self.limit(std::mem::take(&mut entity.tags));
        let namespace = entity.namespace.clone();
        self.write_namespace(&namespace, true, |graph| graph.insert_entity(entity))
            .unwrap_or_else(|| Err(MemoryError::not_found("namespace", &namespace, &namespace)))
    }

    async fn update_entity(&self, mut entity: GraphEntity) -> Result<()> {
        entity.validate()?;
        entity.tags = self.limit(std::mem::take(&mut entity.tags));
        let namespace = entity.namespace.clone();
        let id = entity.id.clone();
        self.write_namespace(&namespace, false, |graph| graph.update_entity(entity))
            .unwrap_or_else(|| Err(Self::missing(&namespace, &id)))
    }

    async fn get_entity(&self, namespace: &Namespace, id: &str) -> Result<Option<GraphEntity>> {
        Ok(self
            .read_namespace(namespace, |graph| {
                graph.entity(id).map(|e| GraphEntity::clone(e))
            })
            .flatten())
    }

    async fn remove_entity(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        let outcome = self.write_namespace(namespace, false, |graph| {
            (graph.remove_entity(id), graph.entity_count() == 0)
        });
        let Some((removed, now_empty)) = outcome else {
            return Ok(false);
        };
        if now_empty {
            self.drop_if_empty(namespace);
        }
        Ok(removed)
    }

    async fn add_relation(&self, relation: GraphRelation) -> Result<()> {
        relation.validate()?;
        self.write_namespace(&relation.namespace, false, |graph| {
            graph.add_relation(&relation)
        })
        .unwrap_or_else(|| {
            Err(MemoryError::not_found(
                "entity",
                &relation.namespace,
                &relation.source_id,
            ))
        })
    }

    async fn remove_relation(
        &self,
        namespace: &Namespace,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> Result<bool> {
        Ok(self
            .write_namespace(namespace, false, |graph| {
                graph.remove_relation(source_id, target_id, relation_type)
            })
            .unwrap_or(false))
    }

    async fn relations_of(&self, namespace: &Namespace, id: &str) -> Result<Vec<GraphRelation>> {
        Ok(self
            .read_namespace(namespace, |graph| graph.relations_of(id))
            .unwrap_or_default())
    }

    async fn relations_of_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        Ok(self
            .read_namespace(namespace, |graph| graph.relations_of_at_most(id, limit))
            .unwrap_or_default())
    }

    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> Result<Vec<Arc<GraphEntity>>> {
        let keywords = PreparedKeyword::prepare_all(keywords);
        if keywords.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for shared in self.in_scope(scope) {
            out.extend(read(&shared).matching(&keywords));
        }
        Ok(out)
    }

    async fn find_tags(&self, scope: &Scope, prefix: &str) -> Result<Vec<String>> {
        let Some(prefix) = Tag::normalize_prefix(prefix) else {
            return Ok(Vec::new());
        };
        let mut tags = BTreeSet::new();
        for shared in self.in_scope(scope) {
            read(&shared).tags_with_prefix(&prefix, &mut tags);
        }
        Ok(tags.into_iter().collect())
    }

    async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> Result<usize> {
        let Ok(tag) = Tag::new(tag) else {
            return Ok(0);
        };
        Ok(self
            .in_scope(scope)
            .iter()
            .map(|shared| read(shared).tag_count(&tag))
            .sum())
    }

    async fn set_entity_tags(
        &self,
        namespace: &Namespace,
        id: &str,
        tags: Vec<String>,
    ) -> Result<()> {
        let tags = self.limit(Tag::normalize_all(tags)?);
        self.write_namespace(namespace, false, |graph| graph.set_tags(id, tags))
            .unwrap_or_else(|| Err(Self::missing(namespace, id)))
    }

    fn tag_constraints(&self) -> TagConstraints {
        self.tag_constraints
    }

    async fn list_entities(&self, scope: &Scope) -> Result<Vec<GraphEntity>> {
        Ok(self
            .in_scope(scope)
            .iter()
            .flat_map(|shared| read(shared).sorted_entities())
            .collect())
    }

    async fn list_relations(&self, scope: &Scope) -> Result<Vec<GraphRelation>> {
        Ok(self
            .in_scope(scope)
            .iter()
            .flat_map(|shared| read(shared).sorted_relations())
            .collect())
    }

    async fn list_entities_after(
        &self,
        scope: &Scope,
        after: Option<&EntityPosition>,
        limit: usize,
    ) -> Result<Vec<GraphEntity>> {
        Ok(self.page(
            scope,
            after.map(|a| a.namespace()),
            limit,
            |graph, same, left| {
                graph.entities_after(after.filter(|_| same).map(EntityPosition::id), left)
            },
        ))
    }

    async fn list_relations_after(
        &self,
        scope: &Scope,
        after: Option<&RelationPosition>,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        Ok(self.page(
            scope,
            after.map(|a| a.namespace()),
            limit,
            |graph, same, left| {
                let within = after
                    .filter(|_| same)
                    .map(|a| (a.source_id(), a.relation_type(), a.target_id()));
                graph.relations_after(within, left)
            },
        ))
    }

    async fn clear(&self, scope: &Scope) -> Result<usize> {
        let mut namespaces = write(&self.namespaces);
        let cleared: Vec<Namespace> = namespaces
            .keys()
            .filter(|namespace| scope.contains(namespace))
            .cloned()
            .collect();
        let mut removed = 0;
        for namespace in cleared {
            if let Some(shared) = namespaces.remove(&namespace) {
                let mut graph = write(&shared);
                removed += graph.clear();
                graph.retired = true;
            }
        }
        Ok(removed)
    }

    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
        let namespaces = read(&self.namespaces);
        let prefix = scope.namespace.as_str();
        Ok(namespaces
            .range(scope.namespace.clone()..)
            .take_while(|(namespace, _)| namespace.as_str().starts_with(prefix))
            .filter(|(namespace, shared)| {
                scope.contains(namespace) && read(shared).entity_count() > 0
            })
            .map(|(namespace, _)| namespace.clone())
            .collect())
    }

    /// Exact, by a range scan of the namespace map: `O(log n + namespaces in scope)`.
    async fn may_have_entities(&self, scope: &Scope) -> Result<bool> {
        Ok(self
            .in_scope(scope)
            .iter()
            .any(|shared| read(shared).entity_count() > 0))
    }

    async fn get_related(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
    ) -> Result<Vec<ScoredEntity>> {
        self.read_namespace(namespace, |graph| graph.related(id, depth))
            .unwrap_or_else(|| Err(Self::missing(namespace, id)))
    }

    async fn multi_hop(
        &self,
        namespace: &Namespace,
        start: &str,
        relation_types: &[String],
    ) -> Result<MultiHopResult> {
        if relation_types.is_empty() || relation_types.len() > MAX_TRAVERSAL_DEPTH {
            return Err(MemoryError::invalid(
                "relation_types",
                format!("needs 1 to {MAX_TRAVERSAL_DEPTH} relation types"),
            ));
        }
        self.read_namespace(namespace, |graph| graph.multi_hop(start, relation_types))
            .unwrap_or_else(|| Err(Self::missing(namespace, start)))
    }

    async fn shortest_path(
        &self,
        namespace: &Namespace,
        from: &str,
        to: &str,
    ) -> Result<Option<Vec<GraphRelation>>> {
        self.read_namespace(namespace, |graph| graph.shortest_path(from, to))
            .unwrap_or_else(|| Err(Self::missing(namespace, from)))
    }

    async fn degree(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        Ok(self
            .read_namespace(namespace, |graph| graph.degree(id))
            .unwrap_or(0))
    }

    /// Applies the batch namespace by namespace, each under its write lock (taken once per
    /// namespace), `O(1)` per event.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        let mut tallies = AccessEvent::tally(events)?;
        tallies.sort_by(|a, b| a.namespace.cmp(b.namespace));
        for group in tallies.chunk_by(|a, b| a.namespace == b.namespace) {
            self.write_namespace(group[0].namespace, false, |graph| {
                group.iter().for_each(|tally| graph.record_access(tally));
            });
        }
        Ok(())
    }
}
