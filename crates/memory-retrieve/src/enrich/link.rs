//! Writing an [`Enrichment`] to the graph (and, when asked, to the memory): the memory's
//! node, the entities with reused tags, the `mentions` links and the stated relations.

use std::collections::HashMap;

use memory_core::{
    GraphEntity, GraphRelation, KnowledgeGraph, KnowledgeGraphExt, MemoryError, MemoryItem,
    MemoryStore, Namespace, Result, Tag,
};

use super::{Enrichment, MEMORY_NODE_TYPE, MENTIONS, memory_node_id};

/// The weight of a stated relation between two entities (a mention link weighs 1).
const STATED_RELATION_WEIGHT: f32 = 0.8;

/// The characters of a memory kept as its node's description.
const NODE_DESCRIPTION_CHARS: usize = 200;

/// Tags already chosen in this batch, per namespace and candidate.
pub(crate) type TagCache = HashMap<(Namespace, String), String>;

/// Writes `enrichment` of `item`: see the module docs. Entities that exist are reused (their
/// tags completed when there is room), missing ones are created.
///
/// # Errors
/// Graph and store errors; [`MemoryError::InvalidInput`] for an enrichment that does not
/// validate.
pub(crate) async fn apply(
    graph: &dyn KnowledgeGraph,
    store: &dyn MemoryStore,
    item: &MemoryItem,
    enrichment: &Enrichment,
    update_memories: bool,
    tags: &mut TagCache,
) -> Result<()> {
    enrichment.validate()?;
    let namespace = &item.namespace;
    let node = memory_node_id(&item.id);
    if memory_core::backend::validate_id("id", &node).is_err() {
        tracing::debug!(id = %item.id, "memory id too long for a graph node: not linked");
        return Ok(());
    }
    let description = memory_core::text::prefix_within(&item.content, NODE_DESCRIPTION_CHARS);
    // A memory enriched again (remembered again under its id with another text) keeps its
    // node, which then describes and links the text it holds now.
    let existed = match graph.get_entity(namespace, &node).await? {
        None => {
            let entity = GraphEntity::new(
                namespace.clone(),
                node.clone(),
                format!("#{}", item.id),
                MEMORY_NODE_TYPE,
            )?
            .with_description(description)
            .with_created_at(Some(item.created_at));
            ignore_exists(graph.add_entity(entity).await)?;
            false
        }
        Some(existing) => {
            if existing.description != description {
                graph
                    .update_entity(existing.with_description(description))
                    .await?;
            }
            true
        }
    };
    let mut ids: HashMap<String, String> = HashMap::new();
    for mention in &enrichment.entities {
        let Some(id) = ensure_entity(
            graph,
            namespace,
            &mention.name,
            &mention.entity_type,
            &mention.tags,
            tags,
        )
        .await?
        else {
            continue;
        };
        graph
            .add_relation_keeping_attributes(GraphRelation::new(
                namespace.clone(),
                node.clone(),
                id.clone(),
                MENTIONS,
                1.0,
            )?)
            .await?;
        ids.insert(mention.name.clone(), id);
    }
    if existed {
        // The mentions of the text it held before and no longer names go.
        let mentioned: std::collections::HashSet<&str> = ids.values().map(String::as_str).collect();
        for link in graph.relations_of(namespace, &node).await? {
            if link.source_id == node
                && link.relation_type == MENTIONS
                && !mentioned.contains(link.target_id.as_str())
            {
                graph
                    .remove_relation(namespace, &node, &link.target_id, MENTIONS)
                    .await?;
            }
        }
    }
    for relation in &enrichment.relations {
        // A relation the graph would refuse (a type past its limit) is left out before any
        // of its ends is written.
        let relation_type = relation_type(&relation.relation_type);
        if GraphRelation::new(namespace.clone(), "a", "b", relation_type.as_str(), 1.0).is_err() {
            tracing::debug!(%relation_type, id = %item.id, "a stated relation the graph refuses: left out");
            continue;
        }
        let mut ends = Vec::with_capacity(2);
        for name in [&relation.source, &relation.target] {
            let id = match ids.get(name) {
                Some(id) => Some(id.clone()),
                None => ensure_entity(graph, namespace, name, "name", &[], tags).await?,
            };
            ends.extend(id);
        }
        if let ([source, target], false) = (ends.as_slice(), relation_type.is_empty())
            && source != target
        {
            // Stated again, a relation keeps what a user recorded about it.
            graph
                .add_relation_keeping_attributes(GraphRelation::new(
                    namespace.clone(),
                    source.clone(),
                    target.clone(),
                    relation_type,
                    STATED_RELATION_WEIGHT,
                )?)
                .await?;
        }
    }
    if update_memories {
        update_memory(store, item, enrichment).await?;
    }
    Ok(())
}

/// A relation type as stored: lowercase, words joined by `_`.
fn relation_type(raw: &str) -> String {
    raw.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("_")
}

/// The id of the entity named `name` in `namespace` (its name as a tag), created when
/// missing; `None` for a name with no letter or digit.
async fn ensure_entity(
    graph: &dyn KnowledgeGraph,
    namespace: &Namespace,
    name: &str,
    entity_type: &str,
    candidate_tags: &[String],
    cache: &mut TagCache,
) -> Result<Option<String>> {
    let Ok(id) = Tag::new(name) else {
        return Ok(None);
    };
    let id = id.as_str().to_owned();
    let mut wanted = Vec::with_capacity(candidate_tags.len());
    for candidate in candidate_tags {
        if let Some(tag) = reuse_tag(graph, namespace, candidate, cache).await?
            && !wanted.contains(&tag)
        {
            wanted.push(tag);
        }
    }
    match graph.get_entity(namespace, &id).await? {
        None => {
            // The link nodes' type is the library's: an entity given it (by a model's
            // answer, say) would be taken for a link node and left out of recall.
            let entity_type = entity_type.trim();
            let entity_type =
                if entity_type.is_empty() || entity_type.eq_ignore_ascii_case(MEMORY_NODE_TYPE) {
                    "name"
                } else {
                    entity_type
                };
            wanted.truncate(graph.tag_constraints().max_tags_per_entity);
            // An entity the graph would refuse (a name or type past its limit) is left out,
            // not written half way through the enrichment.
            let entity =
                match GraphEntity::new(namespace.clone(), id.clone(), name.trim(), entity_type)
                    .and_then(|entity| entity.with_tags(&wanted))
                {
                    Ok(entity) => entity,
                    Err(error) => {
                        tracing::debug!(%error, %name, "an entity the graph refuses: left out");
                        return Ok(None);
                    }
                };
            ignore_exists(graph.add_entity(entity).await)?;
        }
        Some(existing) => {
            let limit = graph.tag_constraints().max_tags_per_entity;
            let mut merged: Vec<String> = existing
                .tags
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect();
            let before = merged.len();
            for tag in wanted {
                if merged.len() < limit && !merged.contains(&tag) {
                    merged.push(tag);
                }
            }
            if merged.len() != before {
                graph.set_entity_tags(namespace, &id, merged).await?;
            }
        }
    }
    Ok(Some(id))
}

/// The tag to use for `candidate` in `namespace`, by the tag-reuse rules: normalised
/// ([`Tag::new`]), then an existing tag of the namespace that is the same word or its
/// singular or plural form replaces it, so one concept keeps one tag. `None` when the
/// candidate is no valid tag.
async fn reuse_tag(
    graph: &dyn KnowledgeGraph,
    namespace: &Namespace,
    candidate: &str,
    cache: &mut TagCache,
) -> Result<Option<String>> {
    let Ok(tag) = Tag::new(candidate) else {
        return Ok(None);
    };
    let tag = tag.as_str().to_owned();
    let key = (namespace.clone(), tag.clone());
    if let Some(chosen) = cache.get(&key) {
        return Ok(Some(chosen.clone()));
    }
    let singular = singular(&tag);
    let existing = graph.find_tags(&namespace.exact(), singular).await?;
    let plural = format!("{singular}s");
    let chosen = [tag.as_str(), singular, plural.as_str()]
        .into_iter()
        .find(|form| existing.iter().any(|known| known == form))
        .unwrap_or(tag.as_str())
        .to_owned();
    cache.insert(key, chosen.clone());
    Ok(Some(chosen))
}

/// `tag` without a plural `s` (`agents` -> `agent`; `class`, `status`, `analysis` stay).
fn singular(tag: &str) -> &str {
    match tag.strip_suffix('s') {
        Some(stem)
            if stem.len() >= 3
                && !stem.ends_with('s')
                && !stem.ends_with('u')
                && !stem.ends_with('i') =>
        {
            stem
        }
        _ => tag,
    }
}

/// Writes the memory-level findings (tags, importance, fact key) to the stored memory; its
/// own values win (see [`EnrichmentConfig::update_memories`](super::EnrichmentConfig)).
/// Written only over the copy read, and made again on what is stored when another write
/// (a pin, a recall's statistics) came between. The findings are of the text enriched: a
/// memory whose text changed since is left as it is (its next enrichment reads the new
/// text), and so is one that other writes changed at each attempt, as its graph links hold
/// either way.
async fn update_memory(
    store: &dyn MemoryStore,
    item: &MemoryItem,
    enrichment: &Enrichment,
) -> Result<()> {
    for _ in 0..crate::memory::EDIT_ATTEMPTS {
        let Some(current) = store.get(&item.namespace, &item.id).await? else {
            return Ok(());
        };
        if current.content != item.content {
            return Ok(());
        }
        let read_at = current.updated_at;
        let Some(enriched) = enriched(current, enrichment)? else {
            return Ok(());
        };
        if store.update_if(enriched.revised(read_at), read_at).await? {
            return Ok(());
        }
    }
    tracing::debug!(id = %item.id, namespace = %item.namespace,
        "a memory changed at each attempt to write its enrichment; left as it is");
    Ok(())
}

/// `current` with the findings its own values leave room for, or `None` when it takes none.
fn enriched(mut current: MemoryItem, enrichment: &Enrichment) -> Result<Option<MemoryItem>> {
    let mut changed = false;
    for raw in &enrichment.tags {
        if let Ok(tag) = Tag::new(raw)
            && !current.tags.contains(&tag)
            && current.tags.len() < memory_core::MAX_TAGS
        {
            current.tags.push(tag);
            changed = true;
        }
    }
    if let Some(importance) = enrichment.importance
        && current.importance == 0.5
        && importance != 0.5
    {
        current = current.with_importance(importance)?;
        changed = true;
    }
    if let Some(key) = &enrichment.fact_key
        && current.fact_key.is_none()
        && let Ok(with_key) = current.clone().with_fact_key(key)
    {
        current = with_key;
        changed = true;
    }
    Ok(changed.then_some(current))
}

/// `Ok` for an [`MemoryError::AlreadyExists`]: another write created the record first.
fn ignore_exists(result: Result<()>) -> Result<()> {
    match result {
        Err(MemoryError::AlreadyExists(_)) => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn singular_and_relation_types() {
        for (tag, expected) in [
            ("agents", "agent"),
            ("class", "class"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("its", "its"),
            ("state-machines", "state-machine"),
        ] {
            assert_eq!(singular(tag), expected);
        }
        assert_eq!(relation_type("Works At"), "works_at");
        assert_eq!(relation_type("  "), "");
    }
}
