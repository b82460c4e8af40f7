//! Memories: remember one or a batch, get, list, forget one or by scope.

use agent_memory::{MemoryFilter, MemoryItem, Remember};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{
    ApiJson, ApiQuery, Auth, ErrorBody, Forgotten, NamespaceQuery, comma_list, not_found, page_of,
    paging, parse_kind, parse_time, scope_of,
};
use crate::failure::Failure;
use crate::serve::AppState;
use crate::serve::auth::Caller;
use crate::views::MemoryView;

/// Most memories in one batch.
pub(crate) const MAX_BATCH: usize = 1000;

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
