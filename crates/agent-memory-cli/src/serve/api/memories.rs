//! Memories: remember one or a batch, get, list, forget one or by scope.

use agent_memory::{
    ListPosition, MemoryFilter, MemoryUpdate, Reembed, ReembedReport, Remember, TimeView,
};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{
    ApiJson, ApiQuery, Auth, ErrorBody, Forgotten, NamespaceQuery, comma_list, namespace_of,
    not_found, page_limit, parse_kind, parse_time, scope_of,
};
use crate::commands::{parse_metadata_conditions, with_fact};
use crate::failure::Failure;
use crate::serve::AppState;
use crate::serve::auth::Caller;
use crate::views::{MemoryView, RememberedView};

/// Most memories in one batch.
pub(crate) const MAX_BATCH: usize = 1000;

/// A memory to remember.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RememberRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The text (1 byte to 1 MiB).
    #[schema(min_length = 1, max_length = 1048576)]
    pub(crate) text: String,
    /// `short_term`, `long_term`, `episodic` (default) or `semantic`.
    #[serde(default)]
    #[schema(pattern = "^(short_term|long_term|episodic|semantic)$")]
    pub(crate) kind: Option<String>,
    /// Importance in [0, 1], default 0.5.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub(crate) importance: Option<f32>,
    /// Tags (at most 64, each at most 64 bytes).
    #[serde(default)]
    #[schema(max_items = 64)]
    pub(crate) tags: Vec<String>,
    /// Metadata, a JSON object.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<serde_json::Value>,
    /// Where it came from.
    #[serde(default)]
    pub(crate) source: Option<String>,
    /// Text that situates it (searchable, not part of it), at most 64 KiB.
    #[serde(default)]
    #[schema(max_length = 65536)]
    pub(crate) context: Option<String>,
    /// An explicit id; a memory with this id in the namespace is replaced, unless it is
    /// part of a fact's history: then the same text sent again writes nothing (`merged`),
    /// and other text is refused naming `id`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    pub(crate) id: Option<String>,
    /// When it happened (RFC 3339); default now.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub(crate) created_at: Option<String>,
    /// The fact it states, as subject.attribute (`user.city`): it supersedes the current
    /// memory with this key in the namespace, which stays in its history.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub(crate) fact_key: Option<String>,
    /// From when the fact holds in the world (RFC 3339).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub(crate) valid_from: Option<String>,
    /// Until when the fact holds in the world (RFC 3339).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub(crate) valid_until: Option<String>,
    /// How far the source is trusted, in [0, 1] (default 1): a memory never supersedes a
    /// more credible one; the pair is flagged as conflicting instead.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub(crate) credibility: Option<f32>,
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
        with_fact(
            request,
            self.fact_key,
            self.valid_from.as_deref(),
            self.valid_until.as_deref(),
            self.credibility,
        )
    }
}

/// Remembers one memory, reconciled with the stored ones: a duplicate is merged into the
/// memory it repeats (200, outcome `merged`), a memory with a fact key supersedes the
/// current one of that key, and memories it contradicts are listed in `conflicts`. Answers
/// once everything is stored.
#[utoipa::path(post, path = "/v1/memories", tag = "memories", request_body = RememberRequest,
    responses((status = 201, description = "Stored", body = RememberedView),
        (status = 200, description = "Merged into a stored duplicate", body = RememberedView),
        (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn remember(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<RememberRequest>,
) -> Result<(StatusCode, Json<RememberedView>), Failure> {
    let request = body.into_remember(&caller)?;
    let namespace = request.namespace.clone();
    let remembered = state
        .memory
        .remember_with(request)
        .await
        .map_err(Failure::of_remember)?;
    let view = RememberedView::new(&namespace, &remembered);
    let status = if view.stored_new() {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view)))
}

/// Several memories at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BatchRequest {
    /// The memories (at most 1000); each may name its namespace.
    #[schema(max_items = 1000)]
    pub(crate) memories: Vec<RememberRequest>,
}

/// What a batch did, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BatchRemembered {
    /// What remembering each memory did, in request order.
    pub(crate) memories: Vec<RememberedView>,
}

/// Remembers a batch: every memory is checked first (a bad one refuses the batch and
/// nothing is stored), then each is remembered in order as `POST /v1/memories` would:
/// reconciled with the stored memories (the batch's earlier ones included) and kept within
/// its namespace's capacity. Should the store fail part way, the memories before the
/// failing one stay stored and the error says how many.
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
    let at = |index: usize| {
        move |failure: Failure| Failure {
            message: format!("memories[{index}]: {}", failure.message),
            ..failure
        }
    };
    let mut requests = Vec::with_capacity(body.memories.len());
    for (index, request) in body.memories.into_iter().enumerate() {
        let request = request.into_remember(&caller).map_err(at(index))?;
        state
            .memory
            .check(&request)
            .map_err(|error| at(index)(Failure::of_remember(error)))?;
        requests.push(request);
    }
    agent_memory::retrieve::Remember::check_ids(&requests, "memories")
        .map_err(|(index, error)| at(index)(Failure::from(error)))?;
    let deadline = super::batch_deadline(&state);
    let mut memories = Vec::with_capacity(requests.len());
    for (index, request) in requests.into_iter().enumerate() {
        if index > 0 && std::time::Instant::now() >= deadline {
            return Err(super::batch_overdue("memories", index));
        }
        let namespace = request.namespace.clone();
        let remembered = state.memory.remember_with(request).await.map_err(|error| {
            let failure = Failure::of_remember(error);
            Failure {
                message: format!(
                    "memories[{index}]: {} (the {index} before it are stored)",
                    failure.message
                ),
                ..failure
            }
        })?;
        memories.push(RememberedView::new(&namespace, &remembered));
    }
    Ok((StatusCode::CREATED, Json(BatchRemembered { memories })))
}

/// Changes to a memory: only the fields given change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateRequest {
    /// The memory's namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The new text (1 byte to 1 MiB); also taken as `text`, the name a remember and the
    /// Python `update` give it.
    #[serde(default, alias = "text")]
    #[schema(min_length = 1, max_length = 1048576)]
    pub(crate) content: Option<String>,
    /// The new tags, replacing the old ones (at most 64).
    #[serde(default)]
    #[schema(max_items = 64)]
    pub(crate) tags: Option<Vec<String>>,
    /// The new importance, in [0, 1].
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub(crate) importance: Option<f32>,
    /// The new metadata, a JSON object replacing the old one (the library's own keys, those
    /// starting with `_`, are kept).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<serde_json::Value>,
}

/// Changes a memory's text, tags, importance or metadata (PUT and PATCH alike change only
/// the fields given); answers with the memory as stored.
#[utoipa::path(patch, path = "/v1/memories/{id}", tag = "memories",
    request_body = UpdateRequest,
    params(("id" = String, Path, description = "The memory's id"), NamespaceQuery),
    responses((status = 200, body = MemoryView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn update_memory(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
    ApiJson(body): ApiJson<UpdateRequest>,
) -> Result<Json<MemoryView>, Failure> {
    let namespace = caller.namespace(namespace_of(
        body.namespace.as_deref(),
        query.namespace.as_deref(),
    )?)?;
    let mut update = MemoryUpdate::new();
    update.content = body.content;
    update.tags = body.tags;
    update.importance = body.importance;
    update.metadata = body.metadata;
    let item = state.memory.update(&namespace, &id, update).await?;
    Ok(Json(MemoryView::from(&item)))
}

/// Same as PATCH: changes only the fields given.
#[utoipa::path(put, path = "/v1/memories/{id}", tag = "memories",
    request_body = UpdateRequest,
    params(("id" = String, Path, description = "The memory's id"), NamespaceQuery),
    responses((status = 200, body = MemoryView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn put_memory(
    state: State<AppState>,
    auth: Auth,
    id: Path<String>,
    query: ApiQuery<NamespaceQuery>,
    body: ApiJson<UpdateRequest>,
) -> Result<Json<MemoryView>, Failure> {
    update_memory(state, auth, id, query, body).await
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
    #[param(min_length = 1, max_length = 512)]
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
    /// Only memories whose metadata holds each key of this JSON object with its value
    /// (`{"user":"ann"}`, URL-encoded; values compare as JSON), at most 32 keys.
    #[serde(default)]
    pub(crate) metadata: Option<String>,
    /// Only memories created at or after this time (RFC 3339).
    #[serde(default)]
    pub(crate) since: Option<String>,
    /// Only memories created before this time (RFC 3339).
    #[serde(default)]
    pub(crate) until: Option<String>,
    /// Only what is believed now: none superseded, retracted or consolidated, none past its
    /// `valid_until` (one whose `valid_from` lies ahead is listed). Default false: the
    /// history too, each ended one with `ended`.
    #[serde(default)]
    pub(crate) current: Option<bool>,
    /// Page size, 1 to 500, default 50.
    #[serde(default)]
    #[param(minimum = 1, maximum = 500)]
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
    let limit = page_limit(query.limit)?;
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
    if let Some(raw) = query.metadata.as_deref() {
        filter.metadata = parse_metadata_conditions(raw)?.into_iter().collect();
    }
    if query.current == Some(true) {
        filter = filter.with_view(TimeView::Current(Utc::now()));
    }
    filter.after = crate::cursor::position(query.cursor.as_deref())?;
    filter.limit = Some(limit.saturating_add(1));
    let mut items = state.memory.store().list(&filter).await?;
    let next_cursor = crate::cursor::cut(&mut items, limit, ListPosition::of);
    Ok(Json(MemoryPage {
        items: items.iter().map(MemoryView::from).collect(),
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
    #[schema(min_length = 1, max_length = 512)]
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

/// Forgets every memory of a namespace (and those under it) that matches the filters, each
/// as `DELETE /v1/memories/{id}` forgets one: with the versions of its fact and the
/// summaries holding its text. Answers how many memories were deleted.
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

/// Which memories to embed again.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReembedRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// Only this namespace, not those under it.
    #[serde(default)]
    pub(crate) exact: bool,
    /// Every memory, not only those without a vector the embedder can compare: after a
    /// change of model (or of its prefixes) that keeps the vectors' length.
    #[serde(default)]
    pub(crate) all: bool,
}

/// What a re-embedding did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReembedView {
    /// Memories in scope that the embedder embeds (conversation messages are not).
    pub(crate) examined: usize,
    /// Memories given a new vector.
    pub(crate) embedded: usize,
    /// Memories whose text changed, or that were deleted, while their vector was being
    /// computed: left as the other writer left them.
    pub(crate) skipped: usize,
}

impl From<ReembedReport> for ReembedView {
    fn from(report: ReembedReport) -> Self {
        Self {
            examined: report.examined,
            embedded: report.embedded,
            skipped: report.skipped,
        }
    }
}

/// Embeds the memories of a namespace (and those under it) with the server's embedding
/// service: those without a vector it can compare (remembered before the service was
/// configured, or under a model of another length), or every one with `all`. Refused,
/// naming `embeddings`, when the server has no embedding service.
///
/// The request has the server's deadline (`request_timeout_ms`). What was embedded before
/// it passed is kept, so a second call without `all` embeds the rest; `agent-memory
/// reembed`, which has no deadline, suits a store too large for one request.
#[utoipa::path(post, path = "/v1/memories/reembed", tag = "memories", request_body = ReembedRequest,
    responses((status = 200, body = ReembedView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn reembed(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<ReembedRequest>,
) -> Result<Json<ReembedView>, Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let which = if body.all {
        Reembed::All
    } else {
        Reembed::Missing
    };
    let report = state
        .memory
        .reembed(&scope_of(&namespace, Some(body.exact)), which)
        .await
        .map_err(crate::commands::reembed_failure)?;
    Ok(Json(ReembedView::from(report)))
}
