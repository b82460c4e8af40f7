//! Recall, context and stats.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiJson, ApiQuery, Auth, ErrorBody, NamespaceQuery, parse_kind};
use crate::commands::{metadata_conditions, parse_tags, recall_options, with_time_view};
use crate::failure::Failure;
use crate::serve::AppState;
use crate::views::{RecallView, StatsView};

/// A recall.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecallRequest {
    /// The namespace; it and those under it are searched. Default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// What to look for, in plain words (at most 16 KiB).
    #[schema(max_length = 16384)]
    pub(crate) query: String,
    /// Most results, 1 to 1000; default the server's configured `[retriever]` `max_results`,
    /// else 10.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000)]
    pub(crate) limit: Option<usize>,
    /// Only these kinds; default all but short_term.
    #[serde(default)]
    #[schema(inline, value_type = Vec<KindName>)]
    pub(crate) kinds: Vec<String>,
    /// Only records with all these tags.
    #[serde(default)]
    #[schema(max_items = 64)]
    pub(crate) tags: Vec<String>,
    /// Only memories whose metadata holds each of these keys with this value (compared as
    /// JSON: 1 is not "1"); pages and graph entities, which carry no metadata, are left out.
    /// At most 32 keys.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<serde_json::Value>,
    /// Include each result's score breakdown (`stale` marks a memory ranked down because it
    /// ended or a newer memory contradicts it).
    #[serde(default)]
    pub(crate) explain: bool,
    /// Recall what was held true at this time (RFC 3339) instead of now.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub(crate) as_of: Option<String>,
    /// Include memories that ended (superseded, retracted, consolidated), ranked below the
    /// current ones and marked with `ended`. Not with `as_of`.
    #[serde(default)]
    pub(crate) include_ended: bool,
}

/// A kind of memory.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(
    dead_code,
    reason = "only its schema is used: requests carry kinds as strings"
)]
pub(crate) enum KindName {
    /// Recent working context (conversation turns).
    ShortTerm,
    /// Durable knowledge.
    LongTerm,
    /// An event or experience.
    Episodic,
    /// A fact or concept.
    Semantic,
}

/// Finds the memories, pages and entities that best answer a query.
#[utoipa::path(post, path = "/v1/recall", tag = "recall", request_body = RecallRequest,
    responses((status = 200, body = RecallView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn recall(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RecallRequest>,
) -> Result<Json<RecallView>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let kinds = body
        .kinds
        .iter()
        .map(|kind| parse_kind(kind))
        .collect::<Result<Vec<_>, _>>()?;
    let options = recall_options(
        body.limit.unwrap_or(state.recall_limit),
        kinds,
        parse_tags(&body.tags)?,
        metadata_conditions(body.metadata)?,
    )?;
    let options = with_time_view(options, body.as_of.as_deref(), body.include_ended)?;
    let result = state
        .memory
        .recall_with(&namespace.subtree(), &body.query, &options)
        .await?;
    Ok(Json(RecallView::new(&result, body.explain)))
}

/// A context request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextRequest {
    /// The namespace; it and those under it are searched. Default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// What the prompt is about (at most 16 KiB).
    #[schema(max_length = 16384)]
    pub(crate) query: String,
    /// The token budget, 1 to 100000, default 500.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100000)]
    pub(crate) max_tokens: Option<usize>,
}

/// Prompt-ready text.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ContextResponse {
    /// The text, within the budget.
    pub(crate) context: String,
}

/// Prompt-ready text for a query within a token budget.
#[utoipa::path(post, path = "/v1/context", tag = "recall", request_body = ContextRequest,
    responses((status = 200, body = ContextResponse), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn context(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<ContextRequest>,
) -> Result<Json<ContextResponse>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let max_tokens = body.max_tokens.unwrap_or(500);
    crate::commands::check_max_tokens(max_tokens)?;
    let context = state
        .memory
        .recall_context(&namespace.subtree(), &body.query, max_tokens)
        .await?;
    Ok(Json(ContextResponse { context }))
}

/// Counts per kind and namespace, pages and entities.
#[utoipa::path(get, path = "/v1/stats", tag = "recall", params(NamespaceQuery),
    responses((status = 200, body = StatsView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn stats(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<StatsView>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let stats = state.memory.stats(&namespace.subtree()).await?;
    Ok(Json(StatsView::new(stats)))
}
