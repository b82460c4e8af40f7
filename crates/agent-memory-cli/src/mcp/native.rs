//! This library's MCP tools: remember, recall, context, forget, the history of facts
//! (history, retract, supersede, conflicts), and the knowledge graph.

use agent_memory::{GraphRelation, Memory, MemoryKind, Remember};
use rmcp::model::{Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{arguments, schema};
use crate::commands::{
    conflict_page, metadata_conditions, parse_tags, recall_options, with_fact, with_time_view,
};
use crate::failure::{ErrorKind, Failure};
use crate::serve::Caller;
use crate::views::{EntityView, MemoryView, RecallView, RelationView, RememberedView};

/// Most entities in one page of `list_entities`.
const MAX_PAGE: usize = 100;
/// The default and largest page of `conflicts` (each pair holds two whole memories).
const DEFAULT_CONFLICTS: usize = 20;
const MAX_CONFLICTS: usize = 100;
/// Most relations shown with one entity.
const MAX_RELATIONS: usize = crate::views::MAX_ENTITY_RELATIONS;

const NAMESPACE: &str = "Optional namespace to work in, written in full: the one this connection is scoped to or one under it (e.g. `team/project-x` when the connection is scoped to `team`; recall results show each memory's namespace in this form). Leave it out to use the connection's namespace; reads then cover everything under it.";

fn tool(name: &'static str, description: &'static str, input: Value, read_only: bool) -> Tool {
    let mut tool = Tool::new(name, description, schema(input));
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(read_only);
    annotations.destructive_hint = Some(name == "forget" || name == "delete_entity");
    annotations.open_world_hint = Some(false);
    tool.annotations = Some(annotations);
    tool
}

/// The tools with their schemas and descriptions, written for a model.
pub(super) fn tools() -> Vec<Tool> {
    let kinds = json!(["short_term", "long_term", "episodic", "semantic"]);
    vec![
        tool(
            "remember",
            "Store one durable memory: a fact, preference, decision or event stated in one self-contained sentence (name the people and things; do not write 'he' or 'it'). Returns the memory's id once it is stored, and what happened: `added`, `merged` (memory `into` already said this), `superseded` (it replaced the memories in `old`) or `outdated` (a later version `by` exists), plus any stored memories it contradicts (`conflicts`: resolve them with supersede or retract). Use it whenever the user tells you something worth knowing in a later conversation.",
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "description": "The memory, self-contained, e.g. 'Dana prefers meetings after 10am'."},
                    "kind": {"type": "string", "enum": kinds, "default": "episodic", "description": "semantic for facts and preferences, episodic for events, long_term for standing instructions, short_term for scratch notes."},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5, "description": "How much it matters; important memories rank higher and are evicted last."},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Short topic labels, e.g. ['travel', 'dana']."},
                    "context": {"type": "string", "description": "What situates the memory (the question it answers); searchable but not part of it."},
                    "fact_key": {"type": "string", "maxLength": 256, "description": "Name the fact it states as subject.attribute (e.g. 'dana.city', 'user.employer') when it may change later: a newer memory with the same key replaces it in recall, and history keeps both."},
                    "valid_from": {"type": "string", "format": "date-time", "description": "From when the fact holds in the world (RFC 3339), if the user said."},
                    "valid_until": {"type": "string", "format": "date-time", "description": "Until when the fact holds in the world (RFC 3339), if the user said."},
                    "credibility": {"type": "number", "minimum": 0, "maximum": 1, "description": "How far the source is trusted (default 1): lower it for hearsay or guesses; a less credible memory never replaces a more credible one."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["text"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "remember_dialogue",
            "Store the turns of a conversation, in order: each turn is kept as '[date] speaker: text' with its role and session, and is searchable through the turns next to it (an answer is found by the question it answers). Use it to save a transcript; use remember for single facts.",
            json!({
                "type": "object",
                "properties": {
                    "turns": {
                        "type": "array",
                        "maxItems": 1000,
                        "description": "The turns, in order. Pass a conversation's turns together: a later call starts a new stretch.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "text": {"type": "string", "minLength": 1, "description": "What was said."},
                                "speaker": {"type": "string", "maxLength": 256, "description": "Who said it (a name, or user / assistant)."},
                                "role": {"type": "string", "enum": ["user", "assistant", "system", "tool"], "description": "The speaker's role, when it is one."},
                                "session": {"type": "string", "maxLength": 256, "description": "The session: context never crosses a change of session."},
                                "at": {"type": "string", "format": "date-time", "description": "When it was said (RFC 3339); default now."},
                                "id": {"type": "string", "minLength": 1, "maxLength": 256, "description": "An explicit id."},
                                "metadata": {"type": "object", "description": "Extra metadata."}
                            },
                            "required": ["text"],
                            "additionalProperties": false
                        }
                    },
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["turns"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "recall",
            "Search long-term memory. Returns the best matching memories, knowledge pages and graph entities, best first, each with its id, text and score. Ask in plain words about what you need ('Dana meeting preferences'); set explain to see why each result ranked where it did.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "What to look for, in plain words."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RECALL, "description": "Most results; left out, the server's configured number (10 unless its operator set another)."},
                    "kinds": {"type": "array", "items": {"type": "string", "enum": kinds}, "description": "Only these kinds; default all but short_term."},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Only results carrying every one of these tags."},
                    "explain": {"type": "boolean", "default": false, "description": "Include each result's score breakdown."},
                    "as_of": {"type": "string", "format": "date-time", "description": "Recall what was believed at this time (RFC 3339) instead of now."},
                    "include_ended": {"type": "boolean", "default": false, "description": "Also return memories that were superseded or retracted (marked `ended`), ranked below current ones."},
                    "metadata": {"type": "object", "maxProperties": 32, "description": "Only memories whose metadata holds each of these keys with this value, e.g. {\"user\": \"ann\"}; knowledge pages and graph entities are then left out."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "context",
            "Get prompt-ready background for a topic: the most relevant memories and knowledge as short bullet lists, within a token budget. Use it at the start of a task to load what you know about it.",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "description": "The topic or task."},
                    "max_tokens": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 500, "description": "The budget for the returned text, in tokens (estimated)."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "forget",
            "Delete one memory by its id (from remember or recall), e.g. when it is wrong or the user asks you to forget it. Fails with not_found when there is no such memory.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The memory's id."},
                    "namespace": {"type": "string", "description": "The memory's namespace, as recall returned it; default the connection's namespace."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "history",
            "Show every version of the fact a memory states, oldest first, each with what replaced it and when (or why it was retracted). Use it to answer 'what did I say before?' or to check how a fact changed.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The id of any version of the fact."},
                    "namespace": {"type": "string", "description": "The memory's namespace, as recall returned it; default the connection's namespace."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "retract",
            "Withdraw a memory that turned out wrong, without a replacement: it leaves recall and stays in its history with the reason. Prefer this to forget when the record of the mistake matters.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The memory's id."},
                    "reason": {"type": "string", "maxLength": 4096, "description": "Why it is withdrawn."},
                    "namespace": {"type": "string", "description": "The memory's namespace, as recall returned it; default the connection's namespace."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "supersede",
            "Mark memory `old` as replaced by memory `new` (both stored already), e.g. to settle a conflict that remember reported: the old one leaves recall and stays in the history.",
            json!({
                "type": "object",
                "properties": {
                    "old": {"type": "string", "minLength": 1, "description": "The id of the memory that no longer holds."},
                    "new": {"type": "string", "minLength": 1, "description": "The id of the memory that replaces it."},
                    "namespace": {"type": "string", "description": "The namespace of both memories; default the connection's namespace."}
                },
                "required": ["old", "new"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "conflicts",
            "List the pairs of current memories that were flagged as contradicting each other (e.g. 'Alice lives in Paris' and 'Alice lives in Berlin'), each with both memories: `older` and `newer` by when each started to hold. Call it to check what is uncertain before relying on a fact, or to tidy memory. Settle a pair with supersede (old = the one that no longer holds, new = the one that does) or retract the wrong one; a settled pair leaves this list. Returns a page of `conflicts`; while more remain, pass the returned next_cursor as cursor to read on.",
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_CONFLICTS, "default": DEFAULT_CONFLICTS, "description": "Most pairs in this page."},
                    "cursor": {"type": "string", "description": "The next_cursor of the previous page; leave it out for the first page."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "add_entity",
            "Create or replace a knowledge-graph entity (a person, project, place, tool...). Its id is how relations refer to it; reuse ids rather than creating duplicates.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "maxLength": 256, "description": "A stable id, e.g. 'dana' or 'project-apollo'."},
                    "name": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "The display name."},
                    "entity_type": {"type": "string", "minLength": 1, "maxLength": 128, "description": "What it is: person, project, organization, ..."},
                    "description": {"type": "string", "maxLength": 65536, "description": "One or two sentences about it."},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 8, "description": "Topic labels, at most 8."},
                    "attributes": {"type": "object", "description": "What is known about it as keys and values, e.g. {\"born\": 1990, \"city\": \"Lisbon\"}."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["id", "name", "entity_type"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "add_relation",
            "Relate two existing entities with a typed, directed relation in active voice (source works_at target). Adding the same relation again updates its weight and attributes.",
            json!({
                "type": "object",
                "properties": {
                    "source_id": {"type": "string", "minLength": 1, "maxLength": 256, "description": "The source entity's id."},
                    "target_id": {"type": "string", "minLength": 1, "maxLength": 256, "description": "The target entity's id."},
                    "relation_type": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The relation in active voice, e.g. works_at, manages, depends_on."},
                    "weight": {"type": "number", "minimum": 0, "maximum": 1, "default": 1, "description": "How strong the relation is."},
                    "attributes": {"type": "object", "description": "What is known about the relation as keys and values, e.g. {\"since\": 2019}."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["source_id", "target_id", "relation_type"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "get_entity",
            "Read one entity with its relations (at most 100).",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The entity's id."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "related_entities",
            "Explore the knowledge graph around one entity: the entities within a few hops, nearest first, each with the relations that lead to it, and the neighbourhood as prompt-ready text (entities with their attributes and descriptions, and the relations between them).",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The entity to start from."},
                    "depth": {"type": "integer", "minimum": 1, "maximum": 4, "default": 2, "description": "Hops to walk."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50, "description": "Most entities listed."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "list_entities",
            "Page through the graph's entities, at most `limit` at a time; pass the returned next_cursor to get the next page.",
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 50},
                    "cursor": {"type": "string", "description": "The next_cursor of the previous page."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "delete_entity",
            "Delete an entity and every relation from or to it.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The entity's id."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "write_page",
            "Write a knowledge page: what is known about one topic, written on purpose (a runbook, a person's profile, a project's decisions), that recall finds beside memories. Creates the page, or replaces the page with this id. references are the ids of the pages it cites; read_page lists the pages that cite a page.",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The page's id, e.g. deploy-runbook."},
                    "title": {"type": "string", "minLength": 1, "maxLength": 1024, "description": "The title."},
                    "summary": {"type": "string", "maxLength": 16384, "description": "A short summary."},
                    "content": {"type": "string", "description": "The body."},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Tags."},
                    "references": {"type": "array", "items": {"type": "string"}, "description": "Ids of the pages it cites, written or not."},
                    "if_updated_at": {"type": "string", "description": "Write only over the page as it was read: the updated_at read_page showed. Refused when another write changed the page since: read it again and redo the edit."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["id", "title"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "read_page",
            "Read one knowledge page, with referrers: the ids of the pages that cite it (the first 100; referrers_truncated says whether there are more).",
            json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1, "description": "The page's id."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "list_pages",
            "The knowledge pages' table of contents (id, title, summary, tags, how many pages cite each), by title, at most `limit` at a time; pass the returned next_cursor to get the next page.",
            json!({
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 50},
                    "cursor": {"type": "string", "description": "The next_cursor of the previous page."},
                    "namespace": {"type": "string", "description": NAMESPACE}
                },
                "additionalProperties": false
            }),
            true,
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RememberArgs {
    text: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    importance: Option<f32>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    fact_key: Option<String>,
    #[serde(default)]
    valid_from: Option<String>,
    #[serde(default)]
    valid_until: Option<String>,
    #[serde(default)]
    credibility: Option<f32>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecallArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    explain: bool,
    #[serde(default)]
    as_of: Option<String>,
    #[serde(default)]
    include_ended: bool,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetractArgs {
    id: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SupersedeArgs {
    old: String,
    new: String,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextArgs {
    query: String,
    #[serde(default)]
    max_tokens: Option<usize>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PageArgs {
    id: String,
    title: String,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    references: Vec<String>,
    #[serde(default)]
    if_updated_at: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntityArgs {
    id: String,
    name: String,
    entity_type: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    attributes: Option<serde_json::Value>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RelatedArgs {
    id: String,
    #[serde(default)]
    depth: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RelationArgs {
    source_id: String,
    target_id: String,
    relation_type: String,
    #[serde(default)]
    weight: Option<f32>,
    #[serde(default)]
    attributes: Option<serde_json::Value>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

/// The offset and size of a page.
pub(super) fn paging(
    limit: Option<usize>,
    cursor: Option<&str>,
    default: usize,
    max: usize,
) -> Result<(usize, usize), Failure> {
    let limit = limit.unwrap_or(default);
    if limit == 0 || limit > max {
        return Err(Failure::invalid(
            "limit",
            format!("limit {limit} is outside 1 to {max}"),
        ));
    }
    let offset = match cursor.filter(|c| !c.is_empty()) {
        None => 0,
        Some(cursor) => cursor.parse().map_err(|_| {
            Failure::invalid(
                "cursor",
                format!("cursor {cursor:?} is not one this server gave"),
            )
        })?,
    };
    Ok((offset, limit))
}

/// The server's settings of the tools' arguments left out.
#[derive(Clone, Copy, Debug)]
pub(super) struct Defaults {
    /// The results of a `recall` without `limit` (the configuration file's `[retriever]`
    /// `max_results`, else 10), capped at the tool's most.
    pub(super) recall_limit: usize,
}

/// The most results one `recall` returns.
const MAX_RECALL: usize = 50;

/// Runs tool `name`, with `defaults` for arguments left out.
pub(super) async fn call(
    memory: &Memory,
    caller: &Caller,
    defaults: &Defaults,
    name: &str,
    raw: Option<Map<String, Value>>,
) -> Result<Value, Failure> {
    match name {
        "remember" => {
            let args: RememberArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let mut request = Remember::new(namespace.clone(), args.text).tags(args.tags);
            if let Some(kind) = &args.kind {
                request = request.kind(MemoryKind::parse(kind)?);
            }
            if let Some(importance) = args.importance {
                request = request.importance(importance);
            }
            if let Some(context) = args.context {
                request = request.context(context);
            }
            let request = with_fact(
                request,
                args.fact_key,
                args.valid_from.as_deref(),
                args.valid_until.as_deref(),
                args.credibility,
            )?;
            let remembered = memory
                .remember_with(request)
                .await
                .map_err(Failure::of_remember)?;
            to_value(&RememberedView::new(&namespace, &remembered))
        }
        "remember_dialogue" => {
            let args: crate::serve::DialogueRequest = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let memories =
                crate::serve::remember_turns(memory, &namespace, args.turns, None).await?;
            to_value(&json!({ "memories": memories }))
        }
        "recall" => {
            let args: RecallArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let limit = args
                .limit
                .unwrap_or_else(|| defaults.recall_limit.min(MAX_RECALL));
            if limit > MAX_RECALL {
                return Err(Failure::invalid(
                    "limit",
                    format!("limit {limit} is above {MAX_RECALL}"),
                ));
            }
            let kinds = args
                .kinds
                .iter()
                .map(|kind| MemoryKind::parse(kind))
                .collect::<Result<Vec<_>, _>>()?;
            let options = recall_options(
                limit,
                kinds,
                parse_tags(&args.tags)?,
                metadata_conditions(args.metadata)?,
            )?;
            let options = with_time_view(options, args.as_of.as_deref(), args.include_ended)?;
            let result = memory
                .recall_with(&namespace.subtree(), &args.query, &options)
                .await?;
            to_value(&RecallView::new(&result, args.explain))
        }
        "context" => {
            let args: ContextArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let max_tokens = args.max_tokens.unwrap_or(500);
            crate::commands::check_max_tokens(max_tokens)?;
            let context = memory
                .recall_context(&namespace.subtree(), &args.query, max_tokens)
                .await?;
            Ok(json!({ "context": context }))
        }
        "forget" => {
            let args: IdArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            if memory.forget(&namespace, &args.id).await? {
                Ok(json!({ "forgotten": 1, "id": args.id }))
            } else {
                Err(Failure::new(
                    ErrorKind::NotFound,
                    format!("no memory {:?} in namespace {namespace}", args.id),
                ))
            }
        }
        "history" => {
            let args: IdArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let versions = memory.history(&namespace, &args.id).await?;
            let versions: Vec<MemoryView> = versions.iter().map(MemoryView::from).collect();
            Ok(json!({ "id": args.id, "versions": versions }))
        }
        "retract" => {
            let args: RetractArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            memory.retract(&namespace, &args.id, &args.reason).await?;
            Ok(json!({ "retracted": args.id, "namespace": namespace.as_str() }))
        }
        "supersede" => {
            let args: SupersedeArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            memory.supersede(&namespace, &args.old, &args.new).await?;
            Ok(json!({ "old": args.old, "new": args.new, "namespace": namespace.as_str() }))
        }
        "conflicts" => {
            let args: ListArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let (_, limit) = paging(args.limit, None, DEFAULT_CONFLICTS, MAX_CONFLICTS)?;
            let (pairs, next) =
                conflict_page(memory, &namespace.subtree(), args.cursor.as_deref(), limit).await?;
            let mut value = json!({ "conflicts": to_value(&pairs)? });
            if let Some(cursor) = next {
                value["next_cursor"] = Value::String(cursor);
            }
            Ok(value)
        }
        "add_entity" => {
            let args: EntityArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let entity = crate::entities::entity_of(
                namespace,
                args.id,
                args.name,
                args.entity_type,
                args.description,
                &args.tags,
                args.attributes,
            )?;
            let stored = crate::entities::put_entity(memory.graph().as_ref(), entity).await?;
            to_value(&EntityView::from(&stored))
        }
        "add_relation" => {
            let args: RelationArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let mut relation = GraphRelation::new(
                namespace,
                args.source_id,
                args.target_id,
                args.relation_type,
                args.weight.unwrap_or(1.0),
            )?;
            if let Some(attributes) = args.attributes {
                relation = relation.with_attributes(attributes)?;
            }
            memory.graph().add_relation(relation.clone()).await?;
            to_value(&RelationView::from(&relation))
        }
        "get_entity" => {
            let args: IdArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let Some(entity) = memory.graph().get_entity(&namespace, &args.id).await? else {
                return Err(Failure::new(
                    ErrorKind::NotFound,
                    format!("no entity {:?} in namespace {namespace}", args.id),
                ));
            };
            // One more than is shown, to tell whether there are more: a hub's read costs a
            // page.
            let relations = memory
                .graph()
                .relations_of_at_most(&namespace, &args.id, MAX_RELATIONS + 1)
                .await?;
            let truncated = relations.len() > MAX_RELATIONS;
            let relations: Vec<RelationView> = relations
                .iter()
                .take(MAX_RELATIONS)
                .map(RelationView::from)
                .collect();
            Ok(json!({
                "entity": EntityView::from(&entity),
                "relations": relations,
                "relations_truncated": truncated,
            }))
        }
        "related_entities" => {
            let args: RelatedArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let view = crate::serve::related_view(
                memory.graph().as_ref(),
                &namespace,
                &args.id,
                args.depth.unwrap_or(2),
                args.limit.unwrap_or(50),
            )
            .await?;
            to_value(&view)
        }
        "list_entities" => {
            let args: ListArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let (_, limit) = paging(args.limit, None, 50, MAX_PAGE)?;
            // The cursor is the position of the page's last entity, as over HTTP: a page
            // costs what it returns, and writes between pages move no entity off a page.
            let after: Option<agent_memory::EntityPosition> =
                crate::cursor::position(args.cursor.as_deref())?;
            let mut entities = memory
                .graph()
                .list_entities_after(
                    &namespace.subtree(),
                    after.as_ref(),
                    limit.saturating_add(1),
                )
                .await?;
            let next_cursor =
                crate::cursor::cut(&mut entities, limit, agent_memory::EntityPosition::of);
            let page: Vec<EntityView> = entities.iter().map(EntityView::from).collect();
            let mut value = json!({ "entities": page });
            if let Some(cursor) = next_cursor {
                value["next_cursor"] = Value::String(cursor);
            }
            Ok(value)
        }
        "write_page" => {
            let args: PageArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let page = agent_memory::KnowledgePage::new(namespace, &args.id, args.title)?
                .with_summary(args.summary)
                .with_content(args.content)
                .with_tags(&args.tags)?
                .with_references(&args.references)?;
            let read_at = crate::pages::read_at(args.if_updated_at.as_deref())?;
            to_value(&crate::pages::put_page(memory.knowledge().as_ref(), page, read_at).await?)
        }
        "read_page" => {
            let args: IdArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            to_value(
                &crate::pages::page_view(memory.knowledge().as_ref(), &namespace, &args.id).await?,
            )
        }
        "list_pages" => {
            let args: ListArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            let (_, limit) = paging(args.limit, None, 50, MAX_PAGE)?;
            // The index is the wiki's table of contents, read whole (as over HTTP).
            let index = memory.knowledge().get_index(&namespace.subtree()).await?;
            let (page, next_cursor) = crate::cursor::page_after(
                index,
                args.cursor.as_deref(),
                limit,
                crate::pages::index_position,
            )?;
            let pages: Vec<crate::views::PageIndexView> =
                page.iter().map(crate::views::PageIndexView::from).collect();
            let mut value = json!({ "pages": pages });
            if let Some(cursor) = next_cursor {
                value["next_cursor"] = Value::String(cursor);
            }
            Ok(value)
        }
        "delete_entity" => {
            let args: IdArgs = arguments(raw)?;
            let namespace = caller.namespace(args.namespace.as_deref())?;
            if memory.graph().remove_entity(&namespace, &args.id).await? {
                Ok(json!({ "deleted": 1, "id": args.id }))
            } else {
                Err(Failure::new(
                    ErrorKind::NotFound,
                    format!("no entity {:?} in namespace {namespace}", args.id),
                ))
            }
        }
        other => Err(Failure::invalid("name", format!("unknown tool {other:?}"))),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, Failure> {
    serde_json::to_value(value).map_err(|error| Failure::internal(error.to_string()))
}
