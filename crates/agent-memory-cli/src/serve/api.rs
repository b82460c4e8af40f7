//! The HTTP API's handlers and request and response bodies, with their OpenAPI description.

use std::collections::BTreeMap;

use agent_memory::{
    GraphEntity, GraphRelation, KnowledgePage, MemoryError, MemoryFilter, MemoryItem, MemoryKind,
    Namespace, Remember, Scope,
};
use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use super::AppState;
use super::auth::{Caller, KeyInfo, NewKey};
use crate::commands::{parse_tags, recall_options};
use crate::failure::{ErrorKind, Failure};
use crate::views::{
    EntityView, Explanation, MemoryView, PageIndexView, PageView, RecallHit, RecallView,
    RelationView, SignalView,
};

/// Most memories in one batch.
pub(crate) const MAX_BATCH: usize = 1000;
/// The page size of list endpoints when none is asked for.
const DEFAULT_PAGE: usize = 50;
/// The largest page size of list endpoints.
const MAX_PAGE: usize = 500;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong.
    pub(crate) error: Failure,
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.kind.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(kind = ?self.kind, message = %self.message, "request failed");
        }
        (status, Json(ErrorBody { error: self })).into_response()
    }
}

/// A JSON body whose rejections are structured errors.
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = Failure;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => {
                    Failure::new(ErrorKind::PayloadTooLarge, rejection.body_text())
                }
                StatusCode::UNSUPPORTED_MEDIA_TYPE => Failure::new(
                    ErrorKind::Usage,
                    "the body must be JSON with `Content-Type: application/json`",
                ),
                _ => Failure::invalid("body", rejection.body_text()),
            }),
        }
    }
}

/// A query string whose rejections are structured errors.
#[derive(Debug)]
pub(crate) struct ApiQuery<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|query| Self(query.0))
            .map_err(|rejection| Failure::invalid("query", rejection.body_text()))
    }
}

/// The caller, from the `Authorization: Bearer` (or `X-API-Key`) header.
#[derive(Debug)]
pub(crate) struct Auth(pub(crate) Caller);

impl FromRequestParts<AppState> for Auth {
    type Rejection = Failure;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(Self(caller.clone()));
        }
        let key = presented_key(parts);
        let caller = state.keys.caller(&state.memory, key).await?;
        Ok(Self(caller))
    }
}

/// The key a request presents.
pub(crate) fn presented_key(parts: &Parts) -> Option<&str> {
    let bearer = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    bearer.or_else(|| {
        parts
            .headers
            .get("x-api-key")
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    })
}

fn parse_kind(text: &str) -> Result<MemoryKind, Failure> {
    Ok(MemoryKind::parse(text.trim())?)
}

fn parse_time(field: &str, text: &str) -> Result<DateTime<Utc>, Failure> {
    DateTime::parse_from_rfc3339(text)
        .map(|time| time.with_timezone(&Utc))
        .map_err(|error| {
            Failure::invalid(
                field,
                format!("{field}: {text:?} is not an RFC 3339 time: {error}"),
            )
        })
}

fn comma_list(text: Option<&str>) -> Vec<String> {
    text.map(|text| {
        text.split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

/// The offset and size of a page from `cursor` and `limit`.
fn paging(limit: Option<usize>, cursor: Option<&str>) -> Result<(usize, usize), Failure> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Failure::invalid(
            "limit",
            format!("limit {limit} is outside 1 to {MAX_PAGE}"),
        ));
    }
    let offset = match cursor.filter(|c| !c.is_empty()) {
        None => 0,
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            Failure::invalid(
                "cursor",
                format!("cursor {cursor:?} is not one this server gave"),
            )
            .with_hint("pass the next_cursor of the previous page, or no cursor for the first page")
        })?,
    };
    Ok((offset, limit))
}

/// One page of `items` and the cursor of the next.
fn page_of<T>(items: Vec<T>, offset: usize, limit: usize) -> (Vec<T>, Option<String>) {
    let total = items.len();
    let page: Vec<T> = items.into_iter().skip(offset).take(limit).collect();
    let end = offset.saturating_add(page.len());
    let next = (end < total).then(|| end.to_string());
    (page, next)
}

// ---- memories ----------------------------------------------------------------------------

/// A memory to remember.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RememberRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// The text (1 byte to 1 MiB).
    pub(crate) text: String,
    /// `short_term`, `long_term`, `episodic` (default) or `semantic`.
    #[serde(default)]
    pub(crate) kind: Option<String>,
    /// Importance in [0, 1], default 0.5.
    #[serde(default)]
    pub(crate) importance: Option<f32>,
    /// Tags.
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    /// Metadata, a JSON object.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<serde_json::Value>,
    /// Where it came from.
    #[serde(default)]
    pub(crate) source: Option<String>,
    /// Text that situates it (searchable, not part of it).
    #[serde(default)]
    pub(crate) context: Option<String>,
    /// An explicit id; a memory with this id in the namespace is replaced.
    #[serde(default)]
    pub(crate) id: Option<String>,
    /// When it happened (RFC 3339); default now.
    #[serde(default)]
    pub(crate) created_at: Option<String>,
}

impl RememberRequest {
    fn into_remember(self, caller: &Caller) -> Result<Remember, Failure> {
        let namespace = caller.namespace(self.namespace.as_deref())?;
        let mut request = Remember::new(namespace, self.text)
            .tags(self.tags)
            .metadata(self.metadata.unwrap_or_else(|| serde_json::json!({})));
        if let Some(kind) = &self.kind {
            request = request.kind(parse_kind(kind)?);
        }
        if let Some(importance) = self.importance {
            request = request.importance(importance);
        }
        if let Some(source) = self.source {
            request = request.source(source);
        }
        if let Some(context) = self.context {
            request = request.context(context);
        }
        if let Some(id) = self.id {
            request = request.id(id);
        }
        if let Some(at) = &self.created_at {
            request = request.created_at(parse_time("created_at", at)?);
        }
        Ok(request)
    }
}

/// The memory built from a request, checked as `Memory::remember_with` checks it.
fn item_of(request: Remember) -> Result<MemoryItem, Failure> {
    agent_memory::backend::validate_metadata(&request.metadata)?;
    let mut item = MemoryItem::new(request.namespace, request.text)?
        .with_kind(request.kind)
        .with_importance(request.importance)?
        .with_tags(request.tags)?
        .with_metadata(request.metadata)?
        .with_created_at(request.created_at.unwrap_or_else(Utc::now));
    if let Some(id) = request.id {
        item = item.with_id(id)?;
    }
    if let Some(source) = request.source {
        item = item.with_source(source);
    }
    if let Some(context) = request.context.filter(|c| !c.trim().is_empty()) {
        item = item.with_context(context);
    }
    Ok(item)
}

/// A remembered memory's id.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Remembered {
    /// Its id.
    pub(crate) id: String,
    /// Its namespace.
    pub(crate) namespace: String,
}

/// Remembers one memory; answers once it is stored.
#[utoipa::path(post, path = "/v1/memories", tag = "memories", request_body = RememberRequest,
    responses((status = 201, body = Remembered), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn remember(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RememberRequest>,
) -> Result<(StatusCode, Json<Remembered>), Failure> {
    let request = body.into_remember(&caller)?;
    let namespace = request.namespace.to_string();
    let id = state.memory.remember_with(request).await?.id;
    Ok((StatusCode::CREATED, Json(Remembered { id, namespace })))
}

/// Several memories at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BatchRequest {
    /// The memories (at most 1000); each may name its namespace.
    pub(crate) memories: Vec<RememberRequest>,
}

/// The ids of a batch, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BatchRemembered {
    /// The memories, in request order.
    pub(crate) memories: Vec<Remembered>,
}

/// Remembers a batch: every memory is checked first, then all are stored together (one
/// transaction on SQLite and PostgreSQL); a bad one refuses the batch.
#[utoipa::path(post, path = "/v1/memories/batch", tag = "memories", request_body = BatchRequest,
    responses((status = 201, body = BatchRemembered), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn remember_batch(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<BatchRequest>,
) -> Result<(StatusCode, Json<BatchRemembered>), Failure> {
    if body.memories.len() > MAX_BATCH {
        return Err(Failure::invalid(
            "memories",
            format!(
                "{} memories is more than the {MAX_BATCH} of one batch",
                body.memories.len()
            ),
        ));
    }
    let mut items = Vec::with_capacity(body.memories.len());
    for (index, request) in body.memories.into_iter().enumerate() {
        let item = request
            .into_remember(&caller)
            .and_then(item_of)
            .map_err(|failure| Failure {
                message: format!("memories[{index}]: {}", failure.message),
                ..failure
            })?;
        items.push(item);
    }
    let memories = items
        .iter()
        .map(|item| Remembered {
            id: item.id.clone(),
            namespace: item.namespace.to_string(),
        })
        .collect();
    if !items.is_empty() {
        state.memory.store().save_many(items).await?;
    }
    Ok((StatusCode::CREATED, Json(BatchRemembered { memories })))
}

/// The namespace of a request on one record.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct NamespaceQuery {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
}

/// One memory.
#[utoipa::path(get, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "The memory's id"), NamespaceQuery),
    responses((status = 200, body = MemoryView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn get_memory(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<MemoryView>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    match state.memory.store().get(&namespace, &id).await? {
        Some(item) => Ok(Json(MemoryView::from(&item))),
        None => Err(not_found("memory", &id, &namespace)),
    }
}

fn not_found(what: &str, id: &str, namespace: &Namespace) -> Failure {
    Failure::new(
        ErrorKind::NotFound,
        format!("no {what} {id:?} in namespace {namespace}"),
    )
}

/// Which memories to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// The namespace; default the key's prefix. Namespaces under it are listed too unless
    /// `exact` is true.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// Only this namespace, not those under it.
    #[serde(default)]
    pub(crate) exact: Option<bool>,
    /// Only these kinds, comma-separated.
    #[serde(default)]
    pub(crate) kinds: Option<String>,
    /// Only memories with all these tags, comma-separated.
    #[serde(default)]
    pub(crate) tags: Option<String>,
    /// Only memories created at or after this time (RFC 3339).
    #[serde(default)]
    pub(crate) since: Option<String>,
    /// Only memories created before this time (RFC 3339).
    #[serde(default)]
    pub(crate) until: Option<String>,
    /// Page size, 1 to 500, default 50.
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

/// A page of memories, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MemoryPage {
    /// The memories.
    pub(crate) items: Vec<MemoryView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

fn scope_of(namespace: &Namespace, exact: Option<bool>) -> Scope {
    if exact == Some(true) {
        namespace.exact()
    } else {
        namespace.subtree()
    }
}

/// Lists memories with filters, a page at a time.
#[utoipa::path(get, path = "/v1/memories", tag = "memories", params(ListQuery),
    responses((status = 200, body = MemoryPage), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_memories(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<MemoryPage>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let (offset, limit) = paging(query.limit, query.cursor.as_deref())?;
    let kinds = comma_list(query.kinds.as_deref())
        .iter()
        .map(|kind| parse_kind(kind))
        .collect::<Result<Vec<_>, _>>()?;
    let mut filter = MemoryFilter::new(scope_of(&namespace, query.exact))
        .with_kinds(kinds)
        .with_tags(comma_list(query.tags.as_deref()))?;
    let since = query
        .since
        .as_deref()
        .map(|t| parse_time("since", t))
        .transpose()?;
    let until = query
        .until
        .as_deref()
        .map(|t| parse_time("until", t))
        .transpose()?;
    filter.since = since;
    filter.until = until;
    // One more than the page tells whether another page follows.
    filter.limit = Some(offset.saturating_add(limit).saturating_add(1));
    let items = state.memory.store().list(&filter).await?;
    let (page, next_cursor) = page_of(items, offset, limit);
    Ok(Json(MemoryPage {
        items: page.iter().map(MemoryView::from).collect(),
        next_cursor,
    }))
}

/// Whether a record was removed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Forgotten {
    /// How many records were removed.
    pub(crate) forgotten: usize,
}

/// Forgets one memory.
#[utoipa::path(delete, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "The memory's id"), NamespaceQuery),
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn forget_memory(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<Forgotten>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    if state.memory.forget(&namespace, &id).await? {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(not_found("memory", &id, &namespace))
    }
}

/// Which memories to forget.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForgetRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// Only this namespace, not those under it.
    #[serde(default)]
    pub(crate) exact: bool,
    /// Only these kinds.
    #[serde(default)]
    pub(crate) kinds: Vec<String>,
    /// Only memories with all these tags.
    #[serde(default)]
    pub(crate) tags: Vec<String>,
}

/// Forgets every memory of a namespace (and those under it) that matches the filters.
#[utoipa::path(post, path = "/v1/memories/forget", tag = "memories", request_body = ForgetRequest,
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn forget_scope(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<ForgetRequest>,
) -> Result<Json<Forgotten>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let kinds = body
        .kinds
        .iter()
        .map(|kind| parse_kind(kind))
        .collect::<Result<Vec<_>, _>>()?;
    let filter = MemoryFilter::new(scope_of(&namespace, Some(body.exact)))
        .with_kinds(kinds)
        .with_tags(&body.tags)?;
    let forgotten = state.memory.forget_matching(&filter).await?;
    Ok(Json(Forgotten { forgotten }))
}

// ---- recall ------------------------------------------------------------------------------

/// A recall.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecallRequest {
    /// The namespace; it and those under it are searched. Default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// What to look for, in plain words.
    pub(crate) query: String,
    /// Most results, 1 to 1000, default 10.
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    /// Only these kinds; default all but short_term.
    #[serde(default)]
    pub(crate) kinds: Vec<String>,
    /// Only records with all these tags.
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    /// Include each result's score breakdown.
    #[serde(default)]
    pub(crate) explain: bool,
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
    let options = recall_options(body.limit.unwrap_or(10), kinds, parse_tags(&body.tags)?)?;
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
    pub(crate) namespace: Option<String>,
    /// What the prompt is about.
    pub(crate) query: String,
    /// The token budget, 1 to 100000, default 500.
    #[serde(default)]
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
    if max_tokens == 0 || max_tokens > 100_000 {
        return Err(Failure::invalid(
            "max_tokens",
            format!("max_tokens {max_tokens} is outside 1 to 100000"),
        ));
    }
    let context = state
        .memory
        .recall_context(&namespace.subtree(), &body.query, max_tokens)
        .await?;
    Ok(Json(ContextResponse { context }))
}

/// Counts of a namespace and those under it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct StatsView {
    /// Memories.
    pub(crate) total: usize,
    /// Memories per kind.
    pub(crate) per_kind: BTreeMap<String, usize>,
    /// Memories per namespace.
    pub(crate) per_namespace: BTreeMap<String, usize>,
    /// Mean recalls per memory.
    pub(crate) mean_access: f64,
    /// Knowledge pages.
    pub(crate) pages: usize,
    /// Graph entities.
    pub(crate) entities: usize,
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
    Ok(Json(StatsView {
        total: stats.total,
        per_kind: stats
            .per_kind
            .iter()
            .map(|(kind, count)| (kind.as_str().to_owned(), *count))
            .collect(),
        per_namespace: stats.per_namespace,
        mean_access: stats.mean_access,
        pages: stats.pages,
        entities: stats.entities,
    }))
}

// ---- pages -------------------------------------------------------------------------------

/// A page to write.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// The title.
    pub(crate) title: String,
    /// A short summary.
    #[serde(default)]
    pub(crate) summary: String,
    /// The body.
    #[serde(default)]
    pub(crate) content: String,
    /// Tags.
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    /// Ids of pages it refers to.
    #[serde(default)]
    pub(crate) references: Vec<String>,
}

/// A page of the page index.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PageList {
    /// The pages' index lines.
    pub(crate) items: Vec<PageIndexView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Which records of a list to return.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// The namespace; default the key's prefix. Namespaces under it are listed too unless
    /// `exact` is true.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// Only this namespace, not those under it.
    #[serde(default)]
    pub(crate) exact: Option<bool>,
    /// Page size, 1 to 500, default 50.
    #[serde(default)]
    pub(crate) limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub(crate) cursor: Option<String>,
}

/// The page index, a page at a time.
#[utoipa::path(get, path = "/v1/pages", tag = "pages", params(PageQuery),
    responses((status = 200, body = PageList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_pages(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<PageList>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let (offset, limit) = paging(query.limit, query.cursor.as_deref())?;
    let index = state
        .memory
        .knowledge()
        .get_index(&scope_of(&namespace, query.exact))
        .await?;
    let (page, next_cursor) = page_of(index, offset, limit);
    Ok(Json(PageList {
        items: page.iter().map(PageIndexView::from).collect(),
        next_cursor,
    }))
}

/// Writes a page (creates it, or replaces the page with this id).
#[utoipa::path(put, path = "/v1/pages/{id}", tag = "pages", request_body = PageRequest,
    params(("id" = String, Path, description = "The page's id")),
    responses((status = 200, body = PageView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn put_page(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PageRequest>,
) -> Result<Json<PageView>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let page = KnowledgePage::new(namespace.clone(), &id, body.title)?
        .with_summary(body.summary)
        .with_content(body.content)
        .with_tags(&body.tags)?
        .with_references(&body.references)?;
    let knowledge = state.memory.knowledge();
    match knowledge.add_page(page.clone()).await {
        Err(MemoryError::AlreadyExists { .. }) => knowledge.update_page(page).await?,
        other => other?,
    }
    match knowledge.get_page(&namespace, &id).await? {
        Some(page) => Ok(Json(PageView::from(&page))),
        None => Err(not_found("page", &id, &namespace)),
    }
}

/// One page.
#[utoipa::path(get, path = "/v1/pages/{id}", tag = "pages",
    params(("id" = String, Path, description = "The page's id"), NamespaceQuery),
    responses((status = 200, body = PageView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn get_page(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<PageView>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    match state.memory.knowledge().get_page(&namespace, &id).await? {
        Some(page) => Ok(Json(PageView::from(&page))),
        None => Err(not_found("page", &id, &namespace)),
    }
}

/// Deletes a page.
#[utoipa::path(delete, path = "/v1/pages/{id}", tag = "pages",
    params(("id" = String, Path, description = "The page's id"), NamespaceQuery),
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn delete_page(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<Forgotten>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    if state
        .memory
        .knowledge()
        .delete_page(&namespace, &id)
        .await?
    {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(not_found("page", &id, &namespace))
    }
}

// ---- graph -------------------------------------------------------------------------------

/// An entity to write.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EntityRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// Its id, unique in the namespace; an entity with this id is replaced (its relations stay).
    pub(crate) id: String,
    /// Its display name.
    pub(crate) name: String,
    /// Its type (person, project, ...).
    pub(crate) entity_type: String,
    /// A description.
    #[serde(default)]
    pub(crate) description: String,
    /// Tags.
    #[serde(default)]
    pub(crate) tags: Vec<String>,
}

/// A page of entities.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EntityList {
    /// The entities.
    pub(crate) items: Vec<EntityView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// An entity with its relations.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EntityDetail {
    /// The entity.
    pub(crate) entity: EntityView,
    /// The relations from and to it.
    pub(crate) relations: Vec<RelationView>,
}

/// Lists entities, a page at a time.
#[utoipa::path(get, path = "/v1/graph/entities", tag = "graph", params(PageQuery),
    responses((status = 200, body = EntityList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_entities(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<EntityList>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let (offset, limit) = paging(query.limit, query.cursor.as_deref())?;
    let entities = state
        .memory
        .graph()
        .list_entities(&scope_of(&namespace, query.exact))
        .await?;
    let (page, next_cursor) = page_of(entities, offset, limit);
    Ok(Json(EntityList {
        items: page.iter().map(EntityView::from).collect(),
        next_cursor,
    }))
}

/// Writes an entity (creates it, or replaces the one with this id, keeping its relations).
#[utoipa::path(post, path = "/v1/graph/entities", tag = "graph", request_body = EntityRequest,
    responses((status = 200, body = EntityView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn put_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<EntityRequest>,
) -> Result<Json<EntityView>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let entity = GraphEntity::new(namespace, body.id, body.name, body.entity_type)?
        .with_description(body.description)
        .with_tags(&body.tags)?;
    let graph = state.memory.graph();
    match graph.add_entity(entity.clone()).await {
        Err(MemoryError::AlreadyExists { .. }) => graph.update_entity(entity.clone()).await?,
        other => other?,
    }
    Ok(Json(EntityView::from(&entity)))
}

/// One entity with its relations.
#[utoipa::path(get, path = "/v1/graph/entities/{id}", tag = "graph",
    params(("id" = String, Path, description = "The entity's id"), NamespaceQuery),
    responses((status = 200, body = EntityDetail), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn get_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<EntityDetail>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let graph = state.memory.graph();
    let Some(entity) = graph.get_entity(&namespace, &id).await? else {
        return Err(not_found("entity", &id, &namespace));
    };
    let relations = graph.relations_of(&namespace, &id).await?;
    Ok(Json(EntityDetail {
        entity: EntityView::from(&entity),
        relations: relations.iter().map(RelationView::from).collect(),
    }))
}

/// Deletes an entity with its relations.
#[utoipa::path(delete, path = "/v1/graph/entities/{id}", tag = "graph",
    params(("id" = String, Path, description = "The entity's id"), NamespaceQuery),
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn delete_entity(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
) -> Result<Json<Forgotten>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    if state.memory.graph().remove_entity(&namespace, &id).await? {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(not_found("entity", &id, &namespace))
    }
}

/// A relation to write or delete.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RelationRequest {
    /// The namespace of both entities; default the key's prefix.
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    /// The source entity's id.
    pub(crate) source_id: String,
    /// The target entity's id.
    pub(crate) target_id: String,
    /// The relation type (works_at, knows, ...).
    pub(crate) relation_type: String,
    /// Its weight in [0, 1], default 1 (ignored when deleting).
    #[serde(default)]
    pub(crate) weight: Option<f32>,
}

/// A page of relations.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RelationList {
    /// The relations.
    pub(crate) items: Vec<RelationView>,
    /// The cursor of the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Lists relations, a page at a time.
#[utoipa::path(get, path = "/v1/graph/relations", tag = "graph", params(PageQuery),
    responses((status = 200, body = RelationList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_relations(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<RelationList>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let (offset, limit) = paging(query.limit, query.cursor.as_deref())?;
    let relations = state
        .memory
        .graph()
        .list_relations(&scope_of(&namespace, query.exact))
        .await?;
    let (page, next_cursor) = page_of(relations, offset, limit);
    Ok(Json(RelationList {
        items: page.iter().map(RelationView::from).collect(),
        next_cursor,
    }))
}

fn relation_of(caller: &Caller, body: RelationRequest) -> Result<GraphRelation, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    Ok(GraphRelation::new(
        namespace,
        body.source_id,
        body.target_id,
        body.relation_type,
        body.weight.unwrap_or(1.0),
    )?)
}

/// Adds a relation (or sets the weight of the same one) between two existing entities.
#[utoipa::path(post, path = "/v1/graph/relations", tag = "graph", request_body = RelationRequest,
    responses((status = 200, body = RelationView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn add_relation(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RelationRequest>,
) -> Result<Json<RelationView>, Failure> {
    let relation = relation_of(&caller, body)?;
    state.memory.graph().add_relation(relation.clone()).await?;
    Ok(Json(RelationView::from(&relation)))
}

/// Deletes a relation.
#[utoipa::path(post, path = "/v1/graph/relations/delete", tag = "graph",
    request_body = RelationRequest,
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn delete_relation(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RelationRequest>,
) -> Result<Json<Forgotten>, Failure> {
    let relation = relation_of(&caller, body)?;
    let removed = state
        .memory
        .graph()
        .remove_relation(
            &relation.namespace,
            &relation.source_id,
            &relation.target_id,
            &relation.relation_type,
        )
        .await?;
    if removed {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(Failure::new(
            ErrorKind::NotFound,
            format!(
                "no relation {} -[{}]-> {} in namespace {}",
                relation.source_id, relation.relation_type, relation.target_id, relation.namespace
            ),
        ))
    }
}

// ---- keys --------------------------------------------------------------------------------

/// A key to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeyRequest {
    /// The namespace prefix the key covers (whole segments).
    pub(crate) namespace: String,
    /// A label.
    #[serde(default)]
    pub(crate) name: String,
}

/// The keys.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KeyList {
    /// Every key, without secrets.
    pub(crate) keys: Vec<KeyInfo>,
}

/// Creates an API key (admin only); the key is shown once.
#[utoipa::path(post, path = "/v1/keys", tag = "keys", request_body = KeyRequest,
    responses((status = 201, body = NewKey), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn create_key(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<KeyRequest>,
) -> Result<(StatusCode, Json<NewKey>), Failure> {
    caller.require_admin()?;
    let key = state
        .keys
        .create(&state.memory, &body.name, &body.namespace)
        .await?;
    Ok((StatusCode::CREATED, Json(key)))
}

/// Lists the API keys (admin only).
#[utoipa::path(get, path = "/v1/keys", tag = "keys",
    responses((status = 200, body = KeyList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_keys(
    State(state): State<AppState>,
    Auth(caller): Auth,
) -> Result<Json<KeyList>, Failure> {
    caller.require_admin()?;
    Ok(Json(KeyList {
        keys: state.keys.list(&state.memory).await?,
    }))
}

/// Revokes an API key (admin only).
#[utoipa::path(delete, path = "/v1/keys/{id}", tag = "keys",
    params(("id" = String, Path, description = "The key's id, as listed")),
    responses((status = 200, body = Forgotten), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn revoke_key(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
) -> Result<Json<Forgotten>, Failure> {
    caller.require_admin()?;
    if state.keys.revoke(&state.memory, &id).await? {
        Ok(Json(Forgotten { forgotten: 1 }))
    } else {
        Err(Failure::new(
            ErrorKind::NotFound,
            format!("no key with id {id:?}"),
        ))
    }
}

// ---- health ------------------------------------------------------------------------------

/// Whether the server is alive.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Health {
    /// `ok`.
    pub(crate) status: String,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = Health)))]
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok".to_owned(),
    })
}

/// Readiness: the store answers a read.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, body = Health), (status = 503, body = ErrorBody)))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<Health>, Failure> {
    state
        .keys
        .probe(&state.memory)
        .await
        .map_err(|error| Failure::new(ErrorKind::Unavailable, error.to_string()))?;
    Ok(Json(Health {
        status: "ok".to_owned(),
    }))
}

/// Adds the API key scheme.
#[derive(Debug)]
struct SecurityAddon;

impl utoipa::Modify for SecurityAddon {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        if let Some(components) = openapi.components.as_mut() {
            components.add_security_scheme(
                "api_key",
                SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
            );
        }
    }
}

/// The OpenAPI document of the API.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "agent-memory",
        description = "Long-term memory for LLM agents: remember, recall, knowledge pages and a knowledge graph, per namespace. Send an API key as `Authorization: Bearer <key>`; a key covers one namespace prefix, whole segments."
    ),
    paths(
        remember, remember_batch, list_memories, get_memory, forget_memory, forget_scope,
        recall, context, stats, list_pages, put_page, get_page, delete_page, list_entities,
        put_entity, get_entity, delete_entity, list_relations, add_relation, delete_relation,
        create_key, list_keys, revoke_key, healthz, readyz
    ),
    components(schemas(
        ErrorBody, Failure, ErrorKind, MemoryView, RecallView, RecallHit, Explanation,
        SignalView, PageView, PageIndexView, EntityView, RelationView, KeyInfo, NewKey
    )),
    modifiers(&SecurityAddon)
)]
pub(crate) struct ApiDoc;
