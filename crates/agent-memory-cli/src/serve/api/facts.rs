//! Facts that change: a memory's history, retraction, supersession, consolidation of
//! several memories into one summary, and the pairs of memories flagged as contradicting
//! each other.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    ApiJson, ApiQuery, Auth, ErrorBody, NamespaceQuery, PageQuery, namespace_of, not_found,
    page_limit, scope_of,
};
use crate::failure::Failure;
use crate::serve::AppState;
use crate::views::{ConflictPairView, MemoryView};

/// The versions of a fact.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct HistoryView {
    /// The memory asked about.
    pub(crate) id: String,
    /// Every version of the fact it states, oldest first (by when each starts to hold), each
    /// with how it ended; at most 1024.
    pub(crate) versions: Vec<MemoryView>,
}

/// Every version of the fact a memory states: the memories linked to it by supersession
/// and those with its fact key, oldest first, each with what replaced it and when.
#[utoipa::path(get, path = "/v1/memories/{id}/history", tag = "facts",
    params(("id" = String, Path, description = "The id of any version of the fact"), NamespaceQuery),
    responses((status = 200, body = HistoryView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn history(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<HistoryView>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let versions = state.memory.history(&namespace, &id).await?;
    Ok(Json(HistoryView {
        id,
        versions: versions.iter().map(MemoryView::from).collect(),
    }))
}

/// A retraction.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RetractRequest {
    /// The memory's namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// Why it is withdrawn (kept in its history), at most 4096 bytes.
    #[serde(default)]
    #[schema(max_length = 4096)]
    pub(crate) reason: String,
}

/// Withdraws a memory without a replacement: it leaves recall and stays in its history with
/// the reason. Answers with the memory as stored.
#[utoipa::path(post, path = "/v1/memories/{id}/retract", tag = "facts",
    request_body = RetractRequest,
    params(("id" = String, Path, description = "The memory's id"), NamespaceQuery),
    responses((status = 200, body = MemoryView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn retract(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
    ApiJson(body): ApiJson<RetractRequest>,
) -> Result<Json<MemoryView>, Failure> {
    let namespace = caller.namespace(namespace_of(
        body.namespace.as_deref(),
        query.namespace.as_deref(),
    )?)?;
    state.memory.retract(&namespace, &id, &body.reason).await?;
    match state.memory.store().get(&namespace, &id).await? {
        Some(item) => Ok(Json(MemoryView::from(&item))),
        None => Err(not_found("memory", &id, &namespace)),
    }
}

/// A supersession.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SupersedeRequest {
    /// The namespace of both memories; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The id of the memory that replaces it.
    #[schema(min_length = 1, max_length = 256)]
    pub(crate) by: String,
}

/// Both memories of a supersession, as stored.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SupersededView {
    /// The memory that no longer holds.
    pub(crate) old: MemoryView,
    /// The memory that replaces it.
    pub(crate) new: MemoryView,
}

/// Marks a memory as replaced by a newer one (`by`): it leaves recall, its validity ends
/// where the new one's begins, and both stay in the history.
#[utoipa::path(post, path = "/v1/memories/{id}/supersede", tag = "facts",
    request_body = SupersedeRequest,
    params(("id" = String, Path, description = "The id of the memory that no longer holds"), NamespaceQuery),
    responses((status = 200, body = SupersededView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn supersede(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
    ApiJson(body): ApiJson<SupersedeRequest>,
) -> Result<Json<SupersededView>, Failure> {
    let namespace = caller.namespace(namespace_of(
        body.namespace.as_deref(),
        query.namespace.as_deref(),
    )?)?;
    state.memory.supersede(&namespace, &id, &body.by).await?;
    let pair = state
        .memory
        .store()
        .get_many(&namespace, &[id.clone(), body.by.clone()])
        .await?;
    let find = |wanted: &str| {
        pair.iter()
            .find(|item| item.id == wanted)
            .map(MemoryView::from)
            .ok_or_else(|| not_found("memory", wanted, &namespace))
    };
    Ok(Json(SupersededView {
        old: find(&id)?,
        new: find(&body.by)?,
    }))
}

/// A consolidation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConsolidateRequest {
    /// The namespace of the memories; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The ids of the memories to fold together: 2 to 64, none repeated, none ended.
    #[schema(min_items = 2, max_items = 64)]
    pub(crate) ids: Vec<String>,
    /// The summary's size in tokens (estimated), 1 to 100000, default 200.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 100000)]
    pub(crate) max_tokens: Option<usize>,
}

/// A consolidation's summary.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ConsolidatedView {
    /// The summary memory, which lists its sources in `supersedes`.
    pub(crate) summary: MemoryView,
    /// The memories folded into it (ended as `consolidated`, kept in its history).
    pub(crate) consolidated: Vec<String>,
}

/// Folds several memories into one long-term summary memory (within `max_tokens`) that
/// lists them; they leave default recall and stay in its history.
#[utoipa::path(post, path = "/v1/memories/consolidate", tag = "facts",
    request_body = ConsolidateRequest,
    responses((status = 201, body = ConsolidatedView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn consolidate(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<ConsolidateRequest>,
) -> Result<(StatusCode, Json<ConsolidatedView>), Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let max_tokens = body.max_tokens.unwrap_or(200);
    if max_tokens == 0 || max_tokens > 100_000 {
        return Err(Failure::invalid(
            "max_tokens",
            format!("max_tokens {max_tokens} is outside 1 to 100000"),
        ));
    }
    let id = state
        .memory
        .consolidate(&namespace, &body.ids, max_tokens)
        .await?;
    match state.memory.store().get(&namespace, &id).await? {
        Some(item) => Ok((
            StatusCode::CREATED,
            Json(ConsolidatedView {
                summary: MemoryView::from(&item),
                consolidated: body.ids,
            }),
        )),
        None => Err(not_found("memory", &id, &namespace)),
    }
}

/// A page of conflicting pairs.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ConflictPage {
    /// The pairs, namespace by namespace.
    pub(crate) items: Vec<ConflictPairView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Lists the pairs of current memories flagged as contradicting each other (a remember
/// reports them in `conflicts`; neither ended since), with both memories, a page at a time.
/// Settle a pair with supersede or retract and it leaves the list. Finding the pairs reads
/// every current memory of the namespace (and those under it unless `exact`).
#[utoipa::path(get, path = "/v1/conflicts", tag = "facts", params(PageQuery),
    responses((status = 200, body = ConflictPage), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn conflicts(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<ConflictPage>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let limit = page_limit(query.limit)?;
    let (items, next_cursor) = crate::commands::conflict_page(
        &state.memory,
        &scope_of(&namespace, query.exact),
        query.cursor.as_deref(),
        limit,
    )
    .await?;
    Ok(Json(ConflictPage { items, next_cursor }))
}
