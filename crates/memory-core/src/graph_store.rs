//! The `KnowledgeGraph` trait, the keyword matching rule of entities, and the traversal
//! algorithms every backend may reuse.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;

use crate::{
    AccessEvent, EntityPosition, GraphEntity, GraphRelation, MemoryError, MultiHopResult,
    Namespace, RelationPosition, Result, Scope, ScoredEntity, Tag, TagConstraints,
};

/// Traversals never go deeper than this many hops; a larger `depth` is clamped to it.
pub const MAX_TRAVERSAL_DEPTH: usize = 32;
/// Traversals stop after reaching this many entities.
pub const MAX_TRAVERSAL_VISITED: usize = 10_000;

/// The knowledge graph: entities, typed weighted relations, tags, traversal.
///
/// Contracts (checked by the [`testsuite`](crate::testsuite)):
/// - Entities are keyed by `(namespace, id)`; relations join two entities of one namespace
///   and are unique by `(source, target, relation_type)`.
/// - Removing an entity removes its relations and its tag-index entries.
/// - `add_entity` stores the entity as given, creation time and access statistics
///   included; `update_entity` and `set_entity_tags` keep the stored `access_count` and
///   `last_accessed`, and `update_entity` keeps the stored `created_at` unless it is `None`.
/// - Tags are normalised with [`Tag::new`] and truncated to
///   [`tag_constraints`](Self::tag_constraints) on every write.
/// - Traversals follow relations in both directions, visit each entity once (cycles are
///   safe), clamp `depth` to [`MAX_TRAVERSAL_DEPTH`] and stop at [`MAX_TRAVERSAL_VISITED`].
/// - Traversals ([`get_related`](Self::get_related), [`multi_hop`](Self::multi_hop),
///   [`shortest_path`](Self::shortest_path)) follow only relations current when they run
///   ([`GraphRelation::is_current_at`] the wall clock); [`relations_of`](Self::relations_of),
///   [`list_relations`](Self::list_relations) and [`degree`](Self::degree) see every stored
///   relation, closed ones included. The graph as it was at another time is
///   [`KnowledgeGraphExt::related_as_of`](crate::KnowledgeGraphExt::related_as_of).
#[async_trait]
pub trait KnowledgeGraph: Send + Sync + Debug + 'static {
    /// Adds an entity (tags normalised and truncated).
    ///
    /// # Errors
    /// [`MemoryError::AlreadyExists`] when the namespace has an entity with this id;
    /// [`MemoryError::InvalidInput`] for an invalid entity.
    async fn add_entity(&self, entity: GraphEntity) -> Result<()>;

    /// Replaces an existing entity's fields, keeping its relations, its access statistics
    /// and its creation time (the given one is stored only when the stored one is unknown).
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when it does not exist.
    async fn update_entity(&self, entity: GraphEntity) -> Result<()>;

    /// The entity, if it exists.
    ///
    /// # Errors
    /// Backend errors only.
    async fn get_entity(&self, namespace: &Namespace, id: &str) -> Result<Option<GraphEntity>>;

    /// Removes an entity with its relations and tag-index entries. Returns whether it existed.
    ///
    /// # Errors
    /// Backend errors only.
    async fn remove_entity(&self, namespace: &Namespace, id: &str) -> Result<bool>;

    /// Adds a relation, or updates the weight of the existing relation with the same source,
    /// target and type.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] naming the first endpoint that does not exist in the relation's
    /// namespace; [`MemoryError::InvalidInput`] for an invalid relation (weight outside `[0, 1]`).
    async fn add_relation(&self, relation: GraphRelation) -> Result<()>;

    /// Removes a relation. Returns whether it existed.
    ///
    /// # Errors
    /// Backend errors only.
    async fn remove_relation(
        &self,
        namespace: &Namespace,
        source_id: &str,
        target_id: &str,
        relation_type: &str,
    ) -> Result<bool>;

    /// Every relation with `id` as source or target, outgoing first, each group ordered by
    /// relation type then the other endpoint. Empty when the entity does not exist.
    ///
    /// # Errors
    /// Backend errors only.
    async fn relations_of(&self, namespace: &Namespace, id: &str) -> Result<Vec<GraphRelation>>;

    /// The first `limit` of [`relations_of`](Self::relations_of)' relations of `id`, in its
    /// order: what a reader that shows a page of a hub's relations needs, at the cost of the
    /// page rather than of the hub's degree (an entity every memory mentions has a relation
    /// per memory). The default reads them all and keeps the first `limit`; every backend of
    /// this workspace reads only those.
    ///
    /// # Errors
    /// Backend errors only.
    async fn relations_of_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        let mut relations = self.relations_of(namespace, id).await?;
        relations.truncate(limit);
        Ok(relations)
    }

    /// Entities matching any keyword under the matching rule ([`entity_matches_keyword`]):
    /// name prefix (case-insensitive), tag exact (after normalisation), entity type exact
    /// (case-insensitive). Ordered by namespace, then id. The entities are shared (`Arc`), so
    /// an in-memory graph returns what it holds without copying.
    ///
    /// # Errors
    /// Backend errors only.
    async fn find_by_keywords(
        &self,
        scope: &Scope,
        keywords: &[String],
    ) -> Result<Vec<Arc<GraphEntity>>>;

    /// The distinct tags in `scope` that start with `prefix`, sorted. The prefix is
    /// normalised as the beginning of a tag ([`Tag::normalize_prefix`]), so it matches
    /// the tags stored from texts that start with it; none match one that no tag can
    /// start with.
    ///
    /// # Errors
    /// Backend errors only.
    async fn find_tags(&self, scope: &Scope, prefix: &str) -> Result<Vec<String>>;

    /// How many entities in `scope` carry `tag` (normalised first; an invalid tag counts 0).
    ///
    /// # Errors
    /// Backend errors only.
    async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> Result<usize>;

    /// Replaces an entity's tags: normalised, duplicates dropped, the first
    /// `max_tags_per_entity` kept (callers pass them most relevant first).
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] for a missing entity; [`MemoryError::InvalidInput`] for a tag
    /// that cannot be normalised (nothing is changed then).
    async fn set_entity_tags(
        &self,
        namespace: &Namespace,
        id: &str,
        tags: Vec<String>,
    ) -> Result<()>;

    /// The tag limits of this graph.
    fn tag_constraints(&self) -> TagConstraints;

    /// Every entity in `scope`, ordered by namespace then id (for export).
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_entities(&self, scope: &Scope) -> Result<Vec<GraphEntity>>;

    /// Every relation in `scope`, ordered by namespace, source, type, target (for export).
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_relations(&self, scope: &Scope) -> Result<Vec<GraphRelation>>;

    /// At most `limit` entities of `scope` in [`list_entities`](Self::list_entities)' order,
    /// those after `after` (from the first without it): a large graph read a page at a
    /// time, each page after the last entity of the one before, so entities added or
    /// removed between pages neither repeat one nor push one off a page. The default lists
    /// every entity of the scope for each page; a backend should seek its order instead.
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_entities_after(
        &self,
        scope: &Scope,
        after: Option<&EntityPosition>,
        limit: usize,
    ) -> Result<Vec<GraphEntity>> {
        let mut entities = self.list_entities(scope).await?;
        entities.retain(|entity| after.is_none_or(|after| after.precedes(entity)));
        entities.truncate(limit);
        Ok(entities)
    }

    /// At most `limit` relations of `scope` in [`list_relations`](Self::list_relations)'
    /// order, those after `after`: the relations' counterpart of
    /// [`list_entities_after`](Self::list_entities_after).
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_relations_after(
        &self,
        scope: &Scope,
        after: Option<&RelationPosition>,
        limit: usize,
    ) -> Result<Vec<GraphRelation>> {
        let mut relations = self.list_relations(scope).await?;
        relations.retain(|relation| after.is_none_or(|after| after.precedes(relation)));
        relations.truncate(limit);
        Ok(relations)
    }

    /// Removes every entity and relation in `scope`. Returns how many entities were removed.
    ///
    /// # Errors
    /// Backend errors only.
    async fn clear(&self, scope: &Scope) -> Result<usize>;

    /// The distinct namespaces in `scope` that hold at least one entity, sorted.
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>>;

    /// Breadth-first traversal from `id` up to `depth` hops (clamped to
    /// [`MAX_TRAVERSAL_DEPTH`]): each reached entity once, with its hop count, the path of
    /// relations, and score `1 / (1 + hops)` times the product of the path's weights.
    /// The start is not included. Ordered by hops, then score (descending), then id.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when the start entity does not exist.
    async fn get_related(
        &self,
        namespace: &Namespace,
        id: &str,
        depth: usize,
    ) -> Result<Vec<ScoredEntity>> {
        if self.get_entity(namespace, id).await?.is_none() {
            return Err(MemoryError::not_found("entity", namespace, id));
        }
        let depth = depth.min(MAX_TRAVERSAL_DEPTH);
        let now = chrono::Utc::now();
        let mut visited: HashSet<String> = HashSet::from([id.to_owned()]);
        let mut paths: HashMap<String, Vec<Arc<GraphRelation>>> =
            HashMap::from([(id.to_owned(), Vec::new())]);
        let mut frontier = vec![id.to_owned()];
        let mut reached = Vec::new();
        'levels: for hops in 1..=depth {
            let mut next = Vec::new();
            for current in &frontier {
                let base = paths.get(current).cloned().unwrap_or_default();
                // A hub's relations are read as far as the walk goes, not to its degree:
                // first as many as could reach the bound, more only if some were passed over.
                let first = (MAX_TRAVERSAL_VISITED + 1).saturating_sub(visited.len());
                let stopped = relations_while(self, namespace, current, first, |relation| {
                    if !relation.is_current_at(now) {
                        return true;
                    }
                    let other = other_end(&relation, current).to_owned();
                    if !visited.insert(other.clone()) {
                        return true;
                    }
                    let mut path = base.clone();
                    path.push(Arc::new(relation));
                    paths.insert(other.clone(), path);
                    next.push(other.clone());
                    reached.push((other, hops));
                    visited.len() <= MAX_TRAVERSAL_VISITED
                })
                .await?;
                if stopped {
                    break 'levels;
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        let mut out = Vec::with_capacity(reached.len());
        for (other, hops) in reached {
            if let Some(entity) = self.get_entity(namespace, &other).await? {
                let path = paths.remove(&other).unwrap_or_default();
                let score = distance_score(hops, &path);
                out.push(ScoredEntity {
                    entity: Arc::new(entity),
                    hops,
                    path,
                    score,
                });
            }
        }
        sort_scored(&mut out);
        Ok(out)
    }

    /// Follows `relation_types` in order along outgoing relations from `start` (the
    /// multi-hop query: `colleague_of` then `works_on` finds the projects of a colleague).
    /// Returns the end entities and every complete path to them.
    ///
    /// Each hop keeps at most [`MAX_TRAVERSAL_VISITED`] paths. A hop expands the entities
    /// the previous hop reached in id order, extending each one's paths along its current
    /// relations of the hop's type in target id order (for each relation, its paths in
    /// order), and stops once it holds [`MAX_TRAVERSAL_VISITED`] paths: the extensions past
    /// that are dropped and the entities after it are not expanded. An entity is reached only
    /// through a path kept, so every result has at least one path in `paths`; when a hop
    /// reached the bound, the results are the ends of the paths kept, and entities or paths
    /// past the bound are missing. A hop thus expands at most [`MAX_TRAVERSAL_VISITED`]
    /// entities, and none past the first whose paths fill it.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] for a missing start; [`MemoryError::InvalidInput`] for an
    /// empty chain or one longer than [`MAX_TRAVERSAL_DEPTH`].
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
        if self.get_entity(namespace, start).await?.is_none() {
            return Err(MemoryError::not_found("entity", namespace, start));
        }
        let now = chrono::Utc::now();
        // Each state is an entity with the paths that reach it after the hops so far.
        let mut states: BTreeMap<String, Vec<Vec<GraphRelation>>> =
            BTreeMap::from([(start.to_owned(), vec![Vec::new()])]);
        for relation_type in relation_types {
            let mut next: BTreeMap<String, Vec<Vec<GraphRelation>>> = BTreeMap::new();
            let mut path_count = 0usize;
            for (node, node_paths) in &states {
                // The hop holds as many paths as it may: the entities left are not expanded.
                if path_count >= MAX_TRAVERSAL_VISITED {
                    break;
                }
                for relation in self.relations_of(namespace, node).await? {
                    if relation.source_id != *node
                        || relation.relation_type != *relation_type
                        || !relation.is_current_at(now)
                    {
                        continue;
                    }
                    let room = MAX_TRAVERSAL_VISITED - path_count;
                    if room == 0 {
                        break;
                    }
                    // An entity is reached only with a path to it.
                    let entry = next.entry(relation.target_id.clone()).or_default();
                    for path in node_paths.iter().take(room) {
                        let mut extended = path.clone();
                        extended.push(relation.clone());
                        entry.push(extended);
                        path_count += 1;
                    }
                }
            }
            states = next;
            if states.is_empty() {
                break;
            }
        }
        let results: Vec<String> = states.keys().cloned().collect();
        let paths = states.into_values().flatten().collect();
        Ok(MultiHopResult { results, paths })
    }

    /// A shortest path (fewest hops, relations followed in both directions) from `from` to
    /// `to`; `Some(vec![])` when they are the same entity, `None` when unconnected within
    /// [`MAX_TRAVERSAL_DEPTH`] hops. Among several shortest paths, the one this breadth-first
    /// search from `from` reaches first. A backend may search from both ends at once (the
    /// in-memory graph does): it returns the same path whenever this search finds one, and
    /// may find paths this search gives up on after reaching [`MAX_TRAVERSAL_VISITED`]
    /// entities, since it reaches far fewer.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when either entity does not exist.
    async fn shortest_path(
        &self,
        namespace: &Namespace,
        from: &str,
        to: &str,
    ) -> Result<Option<Vec<GraphRelation>>> {
        for id in [from, to] {
            if self.get_entity(namespace, id).await?.is_none() {
                return Err(MemoryError::not_found("entity", namespace, id));
            }
        }
        if from == to {
            return Ok(Some(Vec::new()));
        }
        let now = chrono::Utc::now();
        let mut came_from: HashMap<String, GraphRelation> = HashMap::new();
        let mut visited: HashSet<String> = HashSet::from([from.to_owned()]);
        let mut queue = VecDeque::from([(from.to_owned(), 0usize)]);
        while let Some((current, hops)) = queue.pop_front() {
            if hops >= MAX_TRAVERSAL_DEPTH || visited.len() > MAX_TRAVERSAL_VISITED {
                break;
            }
            for relation in self.relations_of(namespace, &current).await? {
                if !relation.is_current_at(now) {
                    continue;
                }
                let other = other_end(&relation, &current).to_owned();
                if !visited.insert(other.clone()) {
                    continue;
                }
                came_from.insert(other.clone(), relation);
                if other == to {
                    let mut path = Vec::new();
                    let mut cursor = other;
                    while let Some(relation) = came_from.get(&cursor) {
                        let previous = other_end(relation, &cursor).to_owned();
                        path.push(relation.clone());
                        cursor = previous;
                    }
                    path.reverse();
                    return Ok(Some(path));
                }
                queue.push_back((other, hops + 1));
            }
        }
        Ok(None)
    }

    /// Whether `scope` may hold entities: `false` only when it certainly holds none, so a
    /// caller can skip work (the retriever skips keyword extraction). The default answers
    /// `true` without asking, to cost remote backends no round trip; in-process backends
    /// answer exactly.
    ///
    /// # Errors
    /// Backend errors only.
    async fn may_have_entities(&self, scope: &Scope) -> Result<bool> {
        let _ = scope;
        Ok(true)
    }

    /// Records that recalls returned these entities: each event adds one to its entity's
    /// `access_count` and moves `last_accessed` to the event's time when later (see
    /// [`AccessEvent::tally`]). Events naming an entity that does not exist are ignored.
    /// Backends apply a batch in one transaction where they have them: a batch that fails
    /// with [`MemoryError::Unavailable`], [`MemoryError::Timeout`] or
    /// [`MemoryError::Conflict`] is written again by the background writer, and must have
    /// left nothing behind. The default records nothing, so a graph without access
    /// statistics still works.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `at` for a time outside the storable range;
    /// backend errors.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        let _ = events;
        Ok(())
    }

    /// The number of relations touching `id` (degree centrality, the graph's reference count).
    ///
    /// # Errors
    /// Backend errors only.
    async fn degree(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        Ok(self.relations_of(namespace, id).await?.len())
    }
}

/// The endpoint of `relation` that is not `from` (the target when `from` is both).
pub fn other_end<'a>(relation: &'a GraphRelation, from: &str) -> &'a str {
    if relation.source_id == from {
        &relation.target_id
    } else {
        &relation.source_id
    }
}

/// The graph-distance score of an entity reached over `path` in `hops` hops:
/// `1 / (1 + hops)` times the product of the path's weights. The path holds relations or
/// shared relations ([`ScoredEntity::path`]).
pub fn distance_score<R: Borrow<GraphRelation>>(hops: usize, path: &[R]) -> f32 {
    let weight: f32 = path
        .iter()
        .map(|relation| relation.borrow().weight)
        .product();
    (weight / (1.0 + hops as f32)).clamp(0.0, 1.0)
}

/// Hands the relations of `id` to `keep_going`, in
/// [`relations_of`](KnowledgeGraph::relations_of)' order, until it returns `false`; returns
/// whether it did. They are read in prefixes ([`KnowledgeGraph::relations_of_at_most`]) of
/// `first`, then twice as many each time, each read handing on only what the one before
/// did not: a reader that stops early (a walk at its bound, a text at its length) reads
/// about twice what it handles, not the entity's every relation (an entity every memory
/// mentions has one per memory). A relation written between two reads may shift the
/// prefix, and one relation be handed on twice or not at all; a walk over a graph being
/// written is no snapshot either way.
///
/// # Errors
/// Backend errors of the reads.
pub(crate) async fn relations_while<G, F>(
    graph: &G,
    namespace: &Namespace,
    id: &str,
    first: usize,
    mut keep_going: F,
) -> Result<bool>
where
    G: KnowledgeGraph + ?Sized,
    F: FnMut(GraphRelation) -> bool + Send,
{
    let mut handled = 0;
    let mut ask = first.max(1);
    loop {
        let read = graph.relations_of_at_most(namespace, id, ask).await?;
        let (len, complete) = (read.len(), read.len() < ask);
        for relation in read.into_iter().skip(handled) {
            if !keep_going(relation) {
                return Ok(true);
            }
        }
        if complete {
            return Ok(false);
        }
        handled = len;
        ask = ask.saturating_mul(2);
    }
}

/// Sorts traversal results by hops, then score (descending), then id.
pub fn sort_scored(results: &mut [ScoredEntity]) {
    results.sort_by(|a, b| {
        a.hops
            .cmp(&b.hops)
            .then(b.score.total_cmp(&a.score))
            .then_with(|| a.entity.id.cmp(&b.entity.id))
    });
}

/// The matching rule for one keyword: the lowercased keyword is a prefix of the
/// lowercased name, or equals the entity type (case-insensitive), or, normalised as a tag,
/// equals one of the entity's tags. Blank keywords match nothing.
pub fn entity_matches_keyword(entity: &GraphEntity, keyword: &str) -> bool {
    let keyword = keyword.trim();
    if keyword.is_empty() {
        return false;
    }
    let lower = keyword.to_lowercase();
    if entity.name.to_lowercase().starts_with(&lower) || entity.entity_type.to_lowercase() == lower
    {
        return true;
    }
    Tag::new(keyword).is_ok_and(|tag| entity.tags.contains(&tag))
}

/// Writes `entity` as every face does: adds it, or replaces the stored entity with its id
/// (which keeps its creation time). An entity deleted between the two is added again: the
/// write is a put, whatever another writer does meanwhile.
///
/// # Errors
/// [`MemoryError::Conflict`] when other writes added and deleted the entity between each
/// of eight attempts; [`MemoryError::InvalidInput`] for an invalid entity; backend errors.
pub async fn write_entity(graph: &dyn KnowledgeGraph, entity: GraphEntity) -> Result<()> {
    for _ in 0..crate::knowledge_store::PUT_ATTEMPTS {
        match graph.add_entity(entity.clone()).await {
            Err(crate::MemoryError::AlreadyExists(_)) => {
                match graph.update_entity(entity.clone()).await {
                    Err(crate::MemoryError::NotFound { .. }) => {}
                    other => return other,
                }
            }
            other => return other,
        }
    }
    Err(crate::MemoryError::Conflict {
        message: format!(
            "entity {} in {} was added and deleted by other writes at each of {} attempts \
             to write it; nothing was written",
            entity.id,
            entity.namespace,
            crate::knowledge_store::PUT_ATTEMPTS
        ),
        source: None,
    })
}

macro_rules! forward_knowledge_graph {
    ($wrapper:ident) => {
        // Every method forwarded, the defaulted ones too: a wrapper that fell back to a
        // default would hide the wrapped store's own implementation.
        #[deny(clippy::missing_trait_methods)]
        #[async_trait]
        impl<T: KnowledgeGraph + ?Sized> KnowledgeGraph for $wrapper<T> {
            async fn add_entity(&self, entity: GraphEntity) -> Result<()> {
                (**self).add_entity(entity).await
            }
            async fn update_entity(&self, entity: GraphEntity) -> Result<()> {
                (**self).update_entity(entity).await
            }
            async fn get_entity(
                &self,
                namespace: &Namespace,
                id: &str,
            ) -> Result<Option<GraphEntity>> {
                (**self).get_entity(namespace, id).await
            }
            async fn remove_entity(&self, namespace: &Namespace, id: &str) -> Result<bool> {
                (**self).remove_entity(namespace, id).await
            }
            async fn add_relation(&self, relation: GraphRelation) -> Result<()> {
                (**self).add_relation(relation).await
            }
            async fn remove_relation(
                &self,
                namespace: &Namespace,
                source_id: &str,
                target_id: &str,
                relation_type: &str,
            ) -> Result<bool> {
                (**self)
                    .remove_relation(namespace, source_id, target_id, relation_type)
                    .await
            }
            async fn relations_of(
                &self,
                namespace: &Namespace,
                id: &str,
            ) -> Result<Vec<GraphRelation>> {
                (**self).relations_of(namespace, id).await
            }
            async fn relations_of_at_most(
                &self,
                namespace: &Namespace,
                id: &str,
                limit: usize,
            ) -> Result<Vec<GraphRelation>> {
                (**self).relations_of_at_most(namespace, id, limit).await
            }
            async fn find_by_keywords(
                &self,
                scope: &Scope,
                keywords: &[String],
            ) -> Result<Vec<Arc<GraphEntity>>> {
                (**self).find_by_keywords(scope, keywords).await
            }
            async fn find_tags(&self, scope: &Scope, prefix: &str) -> Result<Vec<String>> {
                (**self).find_tags(scope, prefix).await
            }
            async fn entity_count_by_tag(&self, scope: &Scope, tag: &str) -> Result<usize> {
                (**self).entity_count_by_tag(scope, tag).await
            }
            async fn set_entity_tags(
                &self,
                namespace: &Namespace,
                id: &str,
                tags: Vec<String>,
            ) -> Result<()> {
                (**self).set_entity_tags(namespace, id, tags).await
            }
            fn tag_constraints(&self) -> TagConstraints {
                (**self).tag_constraints()
            }
            async fn list_entities(&self, scope: &Scope) -> Result<Vec<GraphEntity>> {
                (**self).list_entities(scope).await
            }
            async fn list_relations(&self, scope: &Scope) -> Result<Vec<GraphRelation>> {
                (**self).list_relations(scope).await
            }
            async fn list_entities_after(
                &self,
                scope: &Scope,
                after: Option<&EntityPosition>,
                limit: usize,
            ) -> Result<Vec<GraphEntity>> {
                (**self).list_entities_after(scope, after, limit).await
            }
            async fn list_relations_after(
                &self,
                scope: &Scope,
                after: Option<&RelationPosition>,
                limit: usize,
            ) -> Result<Vec<GraphRelation>> {
                (**self).list_relations_after(scope, after, limit).await
            }
            async fn clear(&self, scope: &Scope) -> Result<usize> {
                (**self).clear(scope).await
            }
            async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
                (**self).list_namespaces(scope).await
            }
            async fn get_related(
                &self,
                namespace: &Namespace,
                id: &str,
                depth: usize,
            ) -> Result<Vec<ScoredEntity>> {
                (**self).get_related(namespace, id, depth).await
            }
            async fn multi_hop(
                &self,
                namespace: &Namespace,
                start: &str,
                relation_types: &[String],
            ) -> Result<MultiHopResult> {
                (**self).multi_hop(namespace, start, relation_types).await
            }
            async fn shortest_path(
                &self,
                namespace: &Namespace,
                from: &str,
                to: &str,
            ) -> Result<Option<Vec<GraphRelation>>> {
                (**self).shortest_path(namespace, from, to).await
            }
            async fn degree(&self, namespace: &Namespace, id: &str) -> Result<usize> {
                (**self).degree(namespace, id).await
            }
            async fn may_have_entities(&self, scope: &Scope) -> Result<bool> {
                (**self).may_have_entities(scope).await
            }
            async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
                (**self).record_accesses(events).await
            }
        }
    };
}

forward_knowledge_graph!(Arc);
forward_knowledge_graph!(Box);
