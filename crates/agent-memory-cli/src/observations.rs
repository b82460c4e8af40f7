//! The knowledge graph of the MCP reference memory server, on this library: an entity is a
//! graph entity whose id is its name, a relation a graph relation of weight 1, and each
//! observation a semantic memory tied to its entity (metadata `entity`, the entity's name as
//! its context), so observations are recalled like any memory.

use agent_memory::{
    GraphEntity, GraphRelation, Memory, MemoryFilter, MemoryItem, MemoryKind, Namespace, Scope,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::failure::Failure;

/// The metadata key naming an observation's entity.
pub(crate) const ENTITY_KEY: &str = "entity";

/// An entity as the reference server writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpEntity {
    /// Its name, unique in the graph.
    pub(crate) name: String,
    /// Its type.
    pub(crate) entity_type: String,
    /// What is known about it.
    #[serde(default)]
    pub(crate) observations: Vec<String>,
}

/// A relation as the reference server writes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpRelation {
    /// The source entity's name.
    pub(crate) from: String,
    /// The target entity's name.
    pub(crate) to: String,
    /// The relation type, in active voice.
    pub(crate) relation_type: String,
}

/// One line of the reference server's `memory.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum McpLine {
    /// An entity.
    Entity(McpEntity),
    /// A relation.
    Relation(McpRelation),
}

/// How the id of every observation starts.
pub(crate) const OBSERVATION_PREFIX: &str = "obs-";

/// The id of observation `text` of entity `entity`: the same observation always has the
/// same id, so adding it twice or importing a file twice keeps one memory.
pub(crate) fn observation_id(entity: &str, text: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(entity.as_bytes());
    hasher.update([0]);
    hasher.update(text.as_bytes());
    let digest = hasher.finalize();
    let mut id = String::from(OBSERVATION_PREFIX);
    for byte in &digest[..12] {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// The memory holding observation `text` of entity `entity`.
pub(crate) fn observation(
    namespace: &Namespace,
    entity: &str,
    text: &str,
) -> Result<MemoryItem, Failure> {
    Ok(MemoryItem::new(namespace.clone(), text)?
        .with_id(observation_id(entity, text))?
        .with_kind(MemoryKind::Semantic)
        .with_metadata(serde_json::json!({ ENTITY_KEY: entity }))?
        .with_context(entity))
}

/// The entity `entity`.
pub(crate) fn entity(namespace: &Namespace, entity: &McpEntity) -> Result<GraphEntity, Failure> {
    Ok(GraphEntity::new(
        namespace.clone(),
        &entity.name,
        &entity.name,
        &entity.entity_type,
    )?)
}

/// The relation `relation`.
pub(crate) fn relation(
    namespace: &Namespace,
    relation: &McpRelation,
) -> Result<GraphRelation, Failure> {
    Ok(GraphRelation::new(
        namespace.clone(),
        &relation.from,
        &relation.to,
        &relation.relation_type,
        1.0,
    )?)
}

/// The observations of entity `name`, oldest first: the semantic memories of the namespace
/// whose id is an observation's ([`OBSERVATION_PREFIX`]) and whose metadata names the
/// entity. A memory the user stored by other means with the same metadata (through the
/// API, say) is not one: it is neither shown as an observation nor deleted with the entity.
pub(crate) async fn observations_of(
    memory: &Memory,
    namespace: &Namespace,
    name: &str,
) -> Result<Vec<MemoryItem>, Failure> {
    let filter = MemoryFilter::new(Scope::from(namespace))
        .with_kinds([MemoryKind::Semantic])
        .with_id_prefix(OBSERVATION_PREFIX)
        .with_metadata(ENTITY_KEY, serde_json::Value::String(name.to_owned()));
    Ok(memory.store().list(&filter).await?)
}

/// Visits every observation memory of `namespace` with its entity's name, oldest first, a
/// page of [`OBSERVATION_PAGE`] at a time (memory bounded by the page, whatever the
/// namespace holds).
pub(crate) async fn for_each_observation(
    memory: &Memory,
    namespace: &Namespace,
    mut visit: impl FnMut(&str, MemoryItem),
) -> Result<(), Failure> {
    let filter = MemoryFilter::new(Scope::from(namespace))
        .with_kinds([MemoryKind::Semantic])
        .with_id_prefix(OBSERVATION_PREFIX)
        .with_limit(OBSERVATION_PAGE);
    let mut page = filter.clone();
    loop {
        let items = memory.store().list(&page).await?;
        let Some(last) = items.last() else { break };
        let next = agent_memory::ListPosition::of(last);
        let done = items.len() < OBSERVATION_PAGE;
        for item in items {
            let entity = item
                .metadata
                .get(ENTITY_KEY)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned);
            if let Some(entity) = entity {
                visit(&entity, item);
            }
        }
        if done {
            break;
        }
        page = filter.clone().after(next);
    }
    Ok(())
}

/// Observation memories read at a time ([`for_each_observation`]).
const OBSERVATION_PAGE: usize = 256;

/// The observations of each of the entities `names`, oldest first, as
/// [`observations_of`] answers for one: for several entities, one pass over the namespace's
/// observation memories, a page at a time, rather than one listing (each a scan of them)
/// per entity.
pub(crate) async fn observations_of_each(
    memory: &Memory,
    namespace: &Namespace,
    names: &[&str],
) -> Result<std::collections::HashMap<String, Vec<String>>, Failure> {
    let mut found: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    if let [name] = names {
        let texts = observations_of(memory, namespace, name)
            .await?
            .into_iter()
            .map(|item| item.content)
            .collect();
        found.insert((*name).to_owned(), texts);
        return Ok(found);
    }
    let wanted: std::collections::HashSet<&str> = names.iter().copied().collect();
    for_each_observation(memory, namespace, |entity, item| {
        if wanted.contains(entity) {
            found
                .entry(entity.to_owned())
                .or_default()
                .push(item.content);
        }
    })
    .await?;
    Ok(found)
}

/// A relation as the reference server shows it.
pub(crate) fn to_mcp_relation(relation: &GraphRelation) -> McpRelation {
    McpRelation {
        from: relation.source_id.clone(),
        to: relation.target_id.clone(),
        relation_type: relation.relation_type.clone(),
    }
}

/// `items` with the vectors the memory's embedder gives their text (unchanged without an
/// embedder): observations are saved to the store directly, and would otherwise be found
/// by words only when the embedding channel is on.
///
/// # Errors
/// The embedder's failures; nothing is saved then.
pub(crate) async fn embedded(
    memory: &Memory,
    items: Vec<MemoryItem>,
) -> Result<Vec<MemoryItem>, Failure> {
    let texts: Vec<&str> = items.iter().map(|item| item.content.as_str()).collect();
    let Some(vectors) = memory.embeddings_of(&texts).await? else {
        return Ok(items);
    };
    items
        .into_iter()
        .zip(vectors)
        .map(|(item, vector)| item.with_embedding(vector).map_err(Failure::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_the_reference_format_parse() {
        let entity: McpLine = serde_json::from_str(
            r#"{"type":"entity","name":"Ada","entityType":"person","observations":["writes programs"]}"#,
        )
        .unwrap();
        assert!(matches!(entity, McpLine::Entity(e) if e.observations == ["writes programs"]));
        let relation: McpLine = serde_json::from_str(
            r#"{"type":"relation","from":"Ada","to":"Babbage","relationType":"works_with"}"#,
        )
        .unwrap();
        assert!(matches!(relation, McpLine::Relation(r) if r.relation_type == "works_with"));
        assert_eq!(observation_id("a", "b"), observation_id("a", "b"));
        assert_ne!(observation_id("a", "b"), observation_id("ab", ""));
    }
}
