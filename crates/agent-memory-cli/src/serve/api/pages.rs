//! Knowledge pages.

use agent_memory::KnowledgePage;
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{
    ApiJson, ApiQuery, Auth, ErrorBody, Forgotten, NamespaceQuery, PageQuery, not_found,
    page_limit, scope_of,
};
use crate::failure::Failure;
use crate::serve::AppState;
use crate::views::{PageIndexView, PageView};

/// A page to write.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The title (at most 1 KiB).
    #[schema(min_length = 1, max_length = 1024)]
    pub(crate) title: String,
    /// A short summary (at most 16 KiB).
    #[serde(default)]
    #[schema(max_length = 16384)]
    pub(crate) summary: String,
    /// The body.
    #[serde(default)]
    pub(crate) content: String,
    /// Tags (at most 64).
    #[serde(default)]
    #[schema(max_items = 64)]
    pub(crate) tags: Vec<String>,
    /// Ids of pages it refers to.
    #[serde(default)]
    pub(crate) references: Vec<String>,
    /// Write only over the page as it was read: its `updated_at` as a read showed it (RFC
    /// 3339). 409 when the page changed since, 404 when it does not exist.
    #[serde(default)]
    pub(crate) if_updated_at: Option<String>,
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

/// The page index, a page at a time, by title (regardless of case), then id. The cursor is
/// the last line's title and id: a page retitled between two requests moves in the index,
/// and may be listed again or not at all; a page written or deleted meanwhile moves no
/// other.
#[utoipa::path(get, path = "/v1/pages", tag = "pages", params(PageQuery),
    responses((status = 200, body = PageList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn list_pages(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<PageList>, Failure> {
    let namespace = caller.namespace(query.namespace.as_deref())?;
    let limit = page_limit(query.limit)?;
    let index = state
        .memory
        .knowledge()
        .get_index(&scope_of(&namespace, query.exact))
        .await?;
    let (page, next_cursor) = crate::cursor::page_after(
        index,
        query.cursor.as_deref(),
        limit,
        crate::pages::index_position,
    )?;
    Ok(Json(PageList {
        items: page.iter().map(PageIndexView::from).collect(),
        next_cursor,
    }))
}

/// Writes a page (creates it, or replaces the page with this id); with `if_updated_at`,
/// only over the page as it was read (409 when it changed since).
#[utoipa::path(put, path = "/v1/pages/{id}", tag = "pages", request_body = PageRequest,
    params(("id" = String, Path, description = "The page's id"), NamespaceQuery),
    responses((status = 200, body = PageView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn put_page(
    State(state): State<AppState>,
    Auth(caller): Auth,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<NamespaceQuery>,
    ApiJson(body): ApiJson<PageRequest>,
) -> Result<Json<PageView>, Failure> {
    // In the body or the query, as the page's reads take it.
    let named = super::namespace_of(body.namespace.as_deref(), query.namespace.as_deref())?;
    let namespace = caller.namespace(named)?;
    let page = KnowledgePage::new(namespace.clone(), &id, body.title)?
        .with_summary(body.summary)
        .with_content(body.content)
        .with_tags(&body.tags)?
        .with_references(&body.references)?;
    let read_at = crate::pages::read_at(body.if_updated_at.as_deref())?;
    let view = crate::pages::put_page(state.memory.knowledge().as_ref(), page, read_at).await?;
    Ok(Json(view))
}

/// One page, with the ids of the pages that refer to it.
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
    let view = crate::pages::page_view(state.memory.knowledge().as_ref(), &namespace, &id).await?;
    Ok(Json(view))
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
