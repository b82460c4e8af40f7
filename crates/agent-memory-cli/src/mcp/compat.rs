//! The nine tools of the reference MCP memory server, with its argument names and result
//! shapes, on this library's graph and memories (see [`crate::observations`]). Reads are
//! paginated: `read_graph` and `search_nodes` take `limit` and `cursor` and return
//! `nextCursor` while more remains, so no call returns an unbounded graph. The cursor is a
//! position (the last entity's, or the last name found), so a page starts after the one
//! before it whatever was deleted between them. Each entity shown brings at most
//! [`MAX_RELATIONS`] of its relations (those from it first), and `relationsTruncated` names
//! the entities that have more: an entity every memory mentions would otherwise put its
//! whole degree in every page that shows it. The native server's `get_entity` and the HTTP
//! API's `GET /v1/graph/relations` read the rest a page at a time.
//!
//! `search_nodes` finds what the reference server finds: every entity whose name, type or
//! any observation contains the query, ignoring case (`ali` finds an entity observed as
//! "Alice likes tea"). Names and types are checked on the namespace's entities;
//! observations on the namespace's observation memories (their ids share a prefix, so the
//! store narrows to them), not entity by entity: one pass over what the namespace holds, as
//! the reference server reads its whole file for each search, read 256 records at a time and
//! keeping only the page's names (and the entities' names), so a call's memory is bounded by
//! its page, not by the namespace. A substring cannot use the keyword index, hence the pass. The keyword search over the
//! observations stays beside it, so an observation that holds the query's words in another
//! form (`programs` for "wrote the first program") is found too: the answer holds everything
//! the reference server's does, and these keyword matches besides.

use std::collections::{BTreeSet, HashMap, HashSet};

use agent_memory::{
    EntityPosition, KnowledgeGraph, Memory, MemoryError, MemoryItem, MemoryKind, Namespace,
    SearchQuery,
};
use rmcp::model::Tool;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::native::paging;
use super::{arguments, schema};
use crate::failure::Failure;
use crate::observations::{
    self, ENTITY_KEY, McpEntity, McpRelation, OBSERVATION_PREFIX, observation_id, to_mcp_relation,
};
use crate::serve::Caller;

/// The default and largest page of entities.
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 200;
/// Most relations shown with one entity.
const MAX_RELATIONS: usize = 100;
/// Most names `open_nodes` takes at once.
const MAX_NAMES: usize = 200;
/// Most records one write call takes: entities, relations, entity names, and observations
/// counted over all its entries (as a batch of the API takes at most 1,000 memories). A
/// call is refused whole past it, before anything is written.
const MAX_ITEMS: usize = 1_000;

/// Entities `search_nodes` reads at a time.
const SCAN_PAGE: usize = 256;

/// The names a `search_nodes` page shows: the `keep` smallest past the cursor's (`after`).
struct Found<'a> {
    names: BTreeSet<String>,
    after: Option<&'a str>,
    keep: usize,
}

impl Found<'_> {
    /// Takes `name` if it is past the cursor and among the `keep` smallest seen.
    fn offer(&mut self, name: &str) {
        if self.after.is_some_and(|after| name <= after)
            || (self.names.len() >= self.keep
                && self
                    .names
                    .last()
                    .is_some_and(|largest| name >= largest.as_str()))
        {
            return;
        }
        self.names.insert(name.to_owned());
        if self.names.len() > self.keep {
            self.names.pop_last();
        }
    }
}

/// Refuses `count` records of `field` past [`MAX_ITEMS`].
fn at_most(field: &str, count: usize) -> Result<(), Failure> {
    if count > MAX_ITEMS {
        return Err(Failure::invalid(
            field,
            format!("{count} is more than {MAX_ITEMS} in one call: split it"),
        ));
    }
    Ok(())
}

fn entity_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": "The name of the entity"},
            "entityType": {"type": "string", "minLength": 1, "description": "The type of the entity"},
            "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents associated with the entity"}
        },
        "required": ["name", "entityType", "observations"],
        "additionalProperties": false
    })
}

fn relation_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "from": {"type": "string", "minLength": 1, "description": "The name of the entity where the relation starts"},
            "to": {"type": "string", "minLength": 1, "description": "The name of the entity where the relation ends"},
            "relationType": {"type": "string", "minLength": 1, "description": "The type of the relation"}
        },
        "required": ["from", "to", "relationType"],
        "additionalProperties": false
    })
}

fn page_properties() -> Value {
    json!({
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": DEFAULT_PAGE, "description": "Most entities in this page."},
        "cursor": {"type": "string", "description": "The nextCursor of the previous page; leave out for the first page."}
    })
}

/// The reference server's tools.
pub(super) fn tools() -> Vec<Tool> {
    let mut search = json!({
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1, "description": "The search query to match against entity names, types, and observation content"}},
        "required": ["query"],
        "additionalProperties": false
    });
    let mut read = json!({"type": "object", "properties": {}, "additionalProperties": false});
    for target in [&mut search, &mut read] {
        if let (Some(properties), Some(extra)) = (
            target["properties"].as_object_mut(),
            page_properties().as_object(),
        ) {
            properties.extend(extra.clone());
        }
    }
    vec![
        Tool::new(
            "create_entities",
            "Create multiple new entities in the knowledge graph. Entities whose name exists already are left as they are and not returned.",
            schema(json!({
                "type": "object",
                "properties": {"entities": {"type": "array", "items": entity_schema(), "maxItems": MAX_ITEMS}},
                "required": ["entities"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "create_relations",
            "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice. Both entities must exist.",
            schema(json!({
                "type": "object",
                "properties": {"relations": {"type": "array", "items": relation_schema(), "maxItems": MAX_ITEMS}},
                "required": ["relations"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "add_observations",
            "Add new observations to existing entities in the knowledge graph. Returns the observations that were new.",
            schema(json!({
                "type": "object",
                "properties": {"observations": {"type": "array", "maxItems": MAX_ITEMS, "items": {
                    "type": "object",
                    "properties": {
                        "entityName": {"type": "string", "minLength": 1, "description": "The name of the entity to add the observations to"},
                        "contents": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents to add"}
                    },
                    "required": ["entityName", "contents"],
                    "additionalProperties": false
                }}},
                "required": ["observations"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "delete_entities",
            "Delete multiple entities and their associated relations and observations from the knowledge graph.",
            schema(json!({
                "type": "object",
                "properties": {"entityNames": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_ITEMS, "description": "An array of entity names to delete"}},
                "required": ["entityNames"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "delete_observations",
            "Delete specific observations from entities in the knowledge graph.",
            schema(json!({
                "type": "object",
                "properties": {"deletions": {"type": "array", "maxItems": MAX_ITEMS, "items": {
                    "type": "object",
                    "properties": {
                        "entityName": {"type": "string", "minLength": 1, "description": "The name of the entity containing the observations"},
                        "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observations to delete"}
                    },
                    "required": ["entityName", "observations"],
                    "additionalProperties": false
                }}},
                "required": ["deletions"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "delete_relations",
            "Delete multiple relations from the knowledge graph.",
            schema(json!({
                "type": "object",
                "properties": {"relations": {"type": "array", "items": relation_schema(), "maxItems": MAX_ITEMS, "description": "An array of relations to delete"}},
                "required": ["relations"],
                "additionalProperties": false
            })),
        ),
        Tool::new(
            "read_graph",
            "Read the knowledge graph a page of entities at a time: each page holds entities with their observations and the relations that start from them (at most 100 an entity; relationsTruncated names the entities with more). Pass nextCursor back to read on.",
            schema(read),
        ),
        Tool::new(
            "search_nodes",
            "Search for nodes in the knowledge graph based on a query: entities whose name, type or any observation contains it (ignoring case), or whose observations hold its words. Returns a page of entities and the relations from or to them (at most 100 an entity; relationsTruncated names the entities with more).",
            schema(search),
        ),
        Tool::new(
            "open_nodes",
            "Open specific nodes in the knowledge graph by their names: the entities with their observations, and the relations from or to them (at most 100 an entity; relationsTruncated names the entities with more).",
            schema(json!({
                "type": "object",
                "properties": {"names": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_NAMES, "description": "An array of entity names to retrieve"}},
                "required": ["names"],
                "additionalProperties": false
            })),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entities {
    entities: Vec<McpEntity>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Relations {
    relations: Vec<McpRelation>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ObservationAdd {
    entity_name: String,
    contents: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Observations {
    observations: Vec<ObservationAdd>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EntityNames {
    entity_names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ObservationDeletion {
    entity_name: String,
    observations: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Deletions {
    deletions: Vec<ObservationDeletion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Search {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Names {
    names: Vec<String>,
}

/// Runs tool `name` in the caller's namespace.
pub(super) async fn call(
    memory: &Memory,
    caller: &Caller,
    name: &str,
    raw: Option<Map<String, Value>>,
) -> Result<Value, Failure> {
    let namespace = caller.namespace(None)?;
    let graph = memory.graph();
    match name {
        "create_entities" => {
            let args: Entities = arguments(raw)?;
            at_most("entities", args.entities.len())?;
            at_most(
                "observations",
                args.entities
                    .iter()
                    .map(|entity| entity.observations.len())
                    .sum(),
            )?;
            // Everything is checked, and the new entities' observations embedded, before the
            // first write. An entity the namespace holds is left as it is, with its
            // observations, as the reference server does.
            let mut entities = Vec::with_capacity(args.entities.len());
            let mut items = Vec::new();
            let mut held = HashSet::new();
            for entity in &args.entities {
                entities.push(observations::entity(&namespace, entity)?);
                for text in &entity.observations {
                    items.push(observations::observation(&namespace, &entity.name, text)?);
                }
                if graph.get_entity(&namespace, &entity.name).await?.is_some() {
                    held.insert(entity.name.clone());
                }
            }
            let of_any = |item: &MemoryItem, names: &HashSet<String>| {
                item.metadata
                    .get(ENTITY_KEY)
                    .and_then(Value::as_str)
                    .is_some_and(|name| names.contains(name))
            };
            items.retain(|item| !of_any(item, &held));
            let items = observations::embedded(memory, items).await?;
            // Then the entities, and their observations in one write. When a write fails,
            // the entities this call added are removed again, so a retry finds them new and
            // stores their observations; none is left without them.
            let mut created = Vec::new();
            let mut fresh = HashSet::new();
            let mut outcome = Ok(());
            for (entity, shown) in entities.into_iter().zip(&args.entities) {
                match graph.add_entity(entity).await {
                    Ok(()) => {
                        fresh.insert(shown.name.clone());
                        created.push(shown.clone());
                    }
                    Err(MemoryError::AlreadyExists { .. }) => {}
                    Err(error) => {
                        outcome = Err(error);
                        break;
                    }
                }
            }
            if outcome.is_ok() {
                let items: Vec<MemoryItem> = items
                    .into_iter()
                    .filter(|item| of_any(item, &fresh))
                    .collect();
                if !items.is_empty() {
                    let written = items.len();
                    outcome = memory.store().save_many(items).await;
                    if outcome.is_ok() {
                        // Kept within the capacity, as remembered memories are.
                        memory.written(&namespace, written).await;
                    }
                }
            }
            if let Err(error) = outcome {
                for name in &fresh {
                    if let Err(undo) = graph.remove_entity(&namespace, name).await {
                        tracing::warn!(%undo, entity = %name,
                            "an entity of a failed create_entities could not be removed");
                    }
                }
                return Err(error.into());
            }
            Ok(json!({ "entities": created }))
        }
        "create_relations" => {
            let args: Relations = arguments(raw)?;
            at_most("relations", args.relations.len())?;
            let mut relations = Vec::new();
            for relation in &args.relations {
                relations.push(observations::relation(&namespace, relation)?);
            }
            // Every end must exist before the first relation is written.
            let mut known = HashSet::new();
            for relation in &relations {
                for end in [&relation.source_id, &relation.target_id] {
                    if !known.contains(end.as_str()) {
                        if graph.get_entity(&namespace, end).await?.is_none() {
                            return Err(MemoryError::not_found("entity", &namespace, end).into());
                        }
                        known.insert(end.clone());
                    }
                }
            }
            // Each source's relations are read once, and what this call adds joins them: a
            // call of many relations from one entity reads its relations once, not once a
            // relation, and a relation listed twice is created once.
            let mut held: HashMap<String, HashSet<(String, String)>> = HashMap::new();
            let mut created = Vec::new();
            for (relation, shown) in relations.into_iter().zip(&args.relations) {
                if !held.contains_key(&relation.source_id) {
                    let known = outgoing(graph.as_ref(), &namespace, &relation.source_id).await?;
                    held.insert(relation.source_id.clone(), known);
                }
                let pair = (relation.target_id.clone(), relation.relation_type.clone());
                let fresh = held
                    .get_mut(&relation.source_id)
                    .is_some_and(|known| known.insert(pair));
                if fresh {
                    graph.add_relation(relation).await?;
                    created.push(shown.clone());
                }
            }
            Ok(json!({ "relations": created }))
        }
        "add_observations" => {
            let args: Observations = arguments(raw)?;
            at_most("observations", args.observations.len())?;
            at_most(
                "contents",
                args.observations.iter().map(|add| add.contents.len()).sum(),
            )?;
            let mut results = Vec::new();
            let mut items = Vec::new();
            for add in &args.observations {
                if graph
                    .get_entity(&namespace, &add.entity_name)
                    .await?
                    .is_none()
                {
                    return Err(Failure::new(
                        crate::failure::ErrorKind::NotFound,
                        format!("Entity with name {} not found", add.entity_name),
                    ));
                }
                let existing: HashSet<String> =
                    observations::observations_of(memory, &namespace, &add.entity_name)
                        .await?
                        .into_iter()
                        .map(|item| item.content)
                        .collect();
                // An observation stored under the id of a text but holding another (edited,
                // compressed) is not the text's to overwrite: it is skipped, as one holding
                // the text is.
                let ids: Vec<String> = add
                    .contents
                    .iter()
                    .map(|text| observations::observation_id(&add.entity_name, text))
                    .collect();
                let stored: HashSet<String> = memory
                    .store()
                    .get_many(&namespace, &ids)
                    .await?
                    .into_iter()
                    .map(|item| item.id)
                    .collect();
                let mut added = Vec::new();
                for (text, id) in add.contents.iter().zip(&ids) {
                    if !existing.contains(text) && !stored.contains(id) && !added.contains(text) {
                        items.push(observations::observation(
                            &namespace,
                            &add.entity_name,
                            text,
                        )?);
                        added.push(text.clone());
                    }
                }
                results.push(json!({ "entityName": add.entity_name, "addedObservations": added }));
            }
            if !items.is_empty() {
                let written = items.len();
                memory
                    .store()
                    .save_many(observations::embedded(memory, items).await?)
                    .await?;
                memory.written(&namespace, written).await;
            }
            Ok(json!({ "results": results }))
        }
        "delete_entities" => {
            let args: EntityNames = arguments(raw)?;
            at_most("entityNames", args.entity_names.len())?;
            for name in &args.entity_names {
                for item in observations::observations_of(memory, &namespace, name).await? {
                    memory.forget(&namespace, &item.id).await?;
                }
                graph.remove_entity(&namespace, name).await?;
            }
            Ok(json!({ "success": true, "message": "Entities deleted successfully" }))
        }
        "delete_observations" => {
            let args: Deletions = arguments(raw)?;
            at_most("deletions", args.deletions.len())?;
            at_most(
                "observations",
                args.deletions
                    .iter()
                    .map(|deletion| deletion.observations.len())
                    .sum(),
            )?;
            for deletion in &args.deletions {
                for text in &deletion.observations {
                    memory
                        .forget(&namespace, &observation_id(&deletion.entity_name, text))
                        .await?;
                }
            }
            Ok(json!({ "success": true, "message": "Observations deleted successfully" }))
        }
        "delete_relations" => {
            let args: Relations = arguments(raw)?;
            at_most("relations", args.relations.len())?;
            for relation in &args.relations {
                graph
                    .remove_relation(
                        &namespace,
                        &relation.from,
                        &relation.to,
                        &relation.relation_type,
                    )
                    .await?;
            }
            Ok(json!({ "success": true, "message": "Relations deleted successfully" }))
        }
        "read_graph" => {
            let args: Page = arguments(raw)?;
            let (_, limit) = paging(args.limit, None, DEFAULT_PAGE, MAX_PAGE)?;
            // The cursor is the last entity's position: a deep page costs what it returns.
            let after: Option<EntityPosition> = crate::cursor::position(args.cursor.as_deref())?;
            let mut page = graph
                .list_entities_after(&namespace.exact(), after.as_ref(), limit.saturating_add(1))
                .await?;
            let next = crate::cursor::cut(&mut page, limit, EntityPosition::of);
            let names: Vec<&str> = page.iter().map(|entity| entity.id.as_str()).collect();
            let mut observed =
                observations::observations_of_each(memory, &namespace, &names).await?;
            let mut shown = Vec::with_capacity(page.len());
            let mut relations = Vec::new();
            let mut truncated = Vec::new();
            for entity in &page {
                shown.push(McpEntity {
                    name: entity.id.clone(),
                    entity_type: entity.entity_type.clone(),
                    observations: observed.remove(&entity.id).unwrap_or_default(),
                });
                // Those from it come first: fewer than the page read means all of them.
                let read = graph
                    .relations_of_at_most(&namespace, &entity.id, MAX_RELATIONS + 1)
                    .await?;
                let from: Vec<_> = read
                    .iter()
                    .filter(|relation| relation.source_id == entity.id)
                    .collect();
                if from.len() > MAX_RELATIONS {
                    truncated.push(entity.id.clone());
                }
                relations.extend(from.into_iter().take(MAX_RELATIONS).map(to_mcp_relation));
            }
            Ok(graph_page(shown, relations, truncated, next))
        }
        "search_nodes" => {
            let args: Search = arguments(raw)?;
            let (_, limit) = paging(args.limit, None, DEFAULT_PAGE, MAX_PAGE)?;
            let needle = args.query.to_lowercase();
            // The cursor is the last name shown, and the next page starts after it: an entity
            // deleted or added between two pages pushes no other off one.
            let after: Option<String> = crate::cursor::position(args.cursor.as_deref())?;
            // The page's names, the smallest past the cursor, one more than the page to
            // tell whether another follows: what a call holds is bounded by the page, not
            // by the namespace, which is read a page at a time.
            let mut found = Found {
                names: BTreeSet::new(),
                after: after.as_deref(),
                keep: limit.saturating_add(1),
            };
            // Entities by name or type; the others' names, for their observations.
            let mut others: HashSet<String> = HashSet::new();
            let mut position = None;
            loop {
                let entities = graph
                    .list_entities_after(&namespace.exact(), position.as_ref(), SCAN_PAGE)
                    .await?;
                let Some(last) = entities.last() else { break };
                position = Some(EntityPosition::of(last));
                let done = entities.len() < SCAN_PAGE;
                for entity in entities {
                    if entity.name.to_lowercase().contains(&needle)
                        || entity.entity_type.to_lowercase().contains(&needle)
                    {
                        found.offer(&entity.id);
                    } else {
                        others.insert(entity.id);
                    }
                }
                if done {
                    break;
                }
            }
            if !others.is_empty() {
                // Substrings of observations, as the reference server matches them, a page
                // of memories at a time.
                observations::for_each_observation(memory, &namespace, |entity, item| {
                    if others.contains(entity) && item.content.to_lowercase().contains(&needle) {
                        found.offer(entity);
                    }
                })
                .await?;
                // And the query's words, through the keyword index.
                let hits = memory
                    .store()
                    .search(&SearchQuery::new(namespace.exact(), &args.query, 1000))
                    .await?;
                for hit in hits {
                    if hit.item.kind == MemoryKind::Semantic
                        && hit.item.id.starts_with(OBSERVATION_PREFIX)
                        && let Some(name) =
                            hit.item.metadata.get(ENTITY_KEY).and_then(Value::as_str)
                        && others.contains(name)
                    {
                        found.offer(name);
                    }
                }
            }
            let mut page: Vec<String> = found.names.into_iter().collect();
            let next = crate::cursor::cut(&mut page, limit, String::clone);
            open(memory, &namespace, &page, next).await
        }
        "open_nodes" => {
            let args: Names = arguments(raw)?;
            if args.names.len() > MAX_NAMES {
                return Err(Failure::invalid(
                    "names",
                    format!("{} names is more than {MAX_NAMES}", args.names.len()),
                ));
            }
            open(memory, &namespace, &args.names, None).await
        }
        other => Err(Failure::invalid("name", format!("unknown tool {other:?}"))),
    }
}

/// The relations from `source`, as (target, type): read in prefixes of
/// `KnowledgeGraph::relations_of_at_most` that double, until one from another entity (those
/// from it come first) or the last, so an entity every other one relates to costs its own
/// relations, not theirs.
async fn outgoing(
    graph: &dyn KnowledgeGraph,
    namespace: &Namespace,
    source: &str,
) -> Result<HashSet<(String, String)>, MemoryError> {
    let mut ask = 64;
    loop {
        let read = graph.relations_of_at_most(namespace, source, ask).await?;
        let done = read.len() < ask || read.iter().any(|r| r.source_id != source);
        if done {
            return Ok(read
                .into_iter()
                .filter(|r| r.source_id == source)
                .map(|r| (r.target_id, r.relation_type))
                .collect());
        }
        ask = ask.saturating_mul(2);
    }
}

/// A page of the graph: the entities, their relations, the names of those with more
/// relations than shown (`relationsTruncated`, only when there are some, so a page is what
/// the reference server returns whenever nothing is cut) and the next page's cursor.
fn graph_page(
    entities: Vec<McpEntity>,
    relations: Vec<McpRelation>,
    truncated: Vec<String>,
    next: Option<String>,
) -> Value {
    let mut value = json!({ "entities": entities, "relations": relations });
    if !truncated.is_empty() {
        value["relationsTruncated"] = json!(truncated);
    }
    if let Some(next) = next {
        value["nextCursor"] = Value::String(next);
    }
    value
}

/// The named entities with their observations, and the relations with at least one end
/// among them (as the reference server answers since it lets callers discover a node's
/// connections), each once, at most [`MAX_RELATIONS`] of each entity's.
async fn open(
    memory: &Memory,
    namespace: &Namespace,
    names: &[String],
    next: Option<String>,
) -> Result<Value, Failure> {
    let graph = memory.graph();
    let mut found = Vec::new();
    let mut opened: HashSet<&str> = HashSet::new();
    for name in names {
        if !opened.insert(name.as_str()) {
            continue;
        }
        if let Some(entity) = graph.get_entity(namespace, name).await? {
            found.push(entity);
        }
    }
    // Their observations in one pass, not one listing per entity.
    let ids: Vec<&str> = found.iter().map(|entity| entity.id.as_str()).collect();
    let mut observed = observations::observations_of_each(memory, namespace, &ids).await?;
    let mut entities = Vec::with_capacity(found.len());
    let mut relations = Vec::new();
    let mut seen: HashSet<(String, String, String)> = HashSet::new();
    let mut truncated = Vec::new();
    for entity in &found {
        let name = &entity.id;
        entities.push(McpEntity {
            name: entity.id.clone(),
            entity_type: entity.entity_type.clone(),
            observations: observed.remove(&entity.id).unwrap_or_default(),
        });
        let mut read = graph
            .relations_of_at_most(namespace, name, MAX_RELATIONS + 1)
            .await?;
        if read.len() > MAX_RELATIONS {
            read.truncate(MAX_RELATIONS);
            truncated.push(name.clone());
        }
        for relation in read {
            let key = (
                relation.source_id.clone(),
                relation.target_id.clone(),
                relation.relation_type.clone(),
            );
            if seen.insert(key) {
                relations.push(to_mcp_relation(&relation));
            }
        }
    }
    Ok(graph_page(entities, relations, truncated, next))
}

/// The text a client reads of a tool's result, as the reference server writes it: the list
/// a write returns, a sentence for a deletion, the graph for a read.
pub(super) fn text_of(name: &str, structured: &Value) -> String {
    let shown = match name {
        "create_entities" => &structured["entities"],
        "create_relations" => &structured["relations"],
        "add_observations" => &structured["results"],
        "delete_entities" | "delete_observations" | "delete_relations" => {
            return structured["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
        }
        _ => structured,
    };
    serde_json::to_string_pretty(shown).unwrap_or_else(|_| shown.to_string())
}

#[cfg(test)]
mod tests {
    use agent_memory::{Memory, MemoryStore, Namespace};
    use serde_json::{Value, json};

    use super::call;
    use crate::observations::observation_id;
    use crate::serve::Caller;

    fn arguments(value: Value) -> Option<serde_json::Map<String, Value>> {
        value.as_object().cloned()
    }

    /// Adding an observation whose stored memory was edited since (compressed here) leaves
    /// it as it is: the id is the text's, but what it holds is another write's.
    #[tokio::test]
    async fn an_edited_observation_is_not_written_over() {
        let memory = Memory::in_memory();
        let namespace = Namespace::parse("acme").unwrap();
        let caller = Caller::Tenant(namespace.clone());
        call(
            &memory,
            &caller,
            "create_entities",
            arguments(json!({"entities": [{"name": "Ada", "entityType": "person",
                "observations": ["Ada drinks green tea every morning before work"]}]})),
        )
        .await
        .unwrap();
        let id = observation_id("Ada", "Ada drinks green tea every morning before work");
        assert!(memory.compress(&namespace, &id, "green tea").await.unwrap());
        let answer = call(
            &memory,
            &caller,
            "add_observations",
            arguments(json!({"observations": [{"entityName": "Ada",
                "contents": ["Ada drinks green tea every morning before work", "Ada rows"]}]})),
        )
        .await
        .unwrap();
        assert_eq!(
            answer["results"][0]["addedObservations"],
            json!(["Ada rows"])
        );
        let stored = memory.store().get(&namespace, &id).await.unwrap().unwrap();
        assert_eq!(
            stored.content, "green tea",
            "the compressed observation is kept"
        );
        assert!(stored.is_compressed());
    }
}
