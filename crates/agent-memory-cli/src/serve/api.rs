//! The HTTP API: what every handler shares (structured errors, JSON bodies and queries
//! whose rejections are structured errors, the caller from its key, paging), the handlers
//! by resource in the submodules, and the OpenAPI description of them all.

pub(crate) mod admin;
pub(crate) mod dialogue;
pub(crate) mod facts;
mod grammar;
pub(crate) mod graph;
mod links;
pub(crate) mod memories;
pub(crate) mod pages;
pub(crate) mod recall;

use agent_memory::{MemoryKind, Namespace, Scope};
use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use self::grammar::Grammar;
use self::links::Links;
use super::AppState;
use super::auth::{Caller, KeyInfo, NewKey};
use crate::failure::{ErrorKind, Failure};
use crate::views::{
    ConflictPairView, ConflictView, EndedView, EntityView, Explanation, MemoryView, PageIndexView,
    PageView, RecallHit, RecallView, RelationView, RememberedView, SignalView,
};

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
                    ErrorKind::UnsupportedMediaType,
                    "the body must be JSON with `Content-Type: application/json`",
                ),
                _ => {
                    let message = rejection.body_text();
                    Failure::invalid(body_field(&message).unwrap_or("body"), message.as_str())
                }
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
            .map_err(|rejection| {
                let message = rejection.body_text();
                Failure::invalid(query_field(&message).unwrap_or("query"), message.as_str())
            })
    }
}

/// The parameter a query string's rejection names (`Failed to deserialize query string:
/// limit: invalid digit found in string` names `limit`), if it names one.
fn query_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("Failed to deserialize query string: ")?;
    let (field, _) = rest.split_once(": ")?;
    (!field.is_empty() && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(field)
}

/// The field a JSON body's rejection names, if it names one: the path before the error
/// (`importance: invalid type: ...` names `importance`, `items[2].text: ...` names
/// `items[2].text`), or the field in `` unknown field `txt` `` and `` missing field `text` ``.
fn body_field(message: &str) -> Option<&str> {
    // A value of the wrong type or shape ("... into the target type: importance: ..."), or
    // text that is not JSON where a field's value begins ("... as JSON: text: unexpected
    // end of hex escape"): each names the field's path after its prefix.
    let rest = message
        .split_once("into the target type: ")
        .or_else(|| message.split_once("as JSON: "))
        .map_or(message, |(_, rest)| rest);
    for quoted in ["unknown field `", "missing field `"] {
        if let Some(at) = rest.find(quoted) {
            let field = rest[at + quoted.len()..].split('`').next()?;
            return is_field_path(field).then_some(field);
        }
    }
    let (field, _) = rest.split_once(": ")?;
    is_field_path(field).then_some(field)
}

/// Whether `text` reads as a field's path in a body (`importance`, `items[2].text`).
fn is_field_path(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 256
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'))
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
        .and_then(|value| value.trim_start().split_once(' '))
        // The scheme is case-insensitive (RFC 9110, 11.1).
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, key)| key.trim());
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
    crate::commands::parse_time(field, text)
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

/// The size of a page from `limit`.
fn page_limit(limit: Option<usize>) -> Result<usize, Failure> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Failure::invalid(
            "limit",
            format!("limit {limit} is outside 1 to {MAX_PAGE}"),
        ));
    }
    Ok(limit)
}

/// The namespace of a request on one record.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct NamespaceQuery {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[param(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
}

/// When a request writing its records one at a time stops before the next: nine tenths of
/// its deadline from now, so that it answers with how many it stored rather than be cut
/// off by the deadline with no count.
pub(crate) fn batch_deadline(state: &AppState) -> std::time::Instant {
    std::time::Instant::now() + state.timeout.mul_f64(0.9)
}

/// The answer of a batch that stopped at `index` as its deadline neared (see
/// [`batch_deadline`]): the records before it are stored, and the rest are to be sent
/// again.
pub(crate) fn batch_overdue(list: &str, index: usize) -> Failure {
    Failure::new(
        ErrorKind::Timeout,
        format!(
            "{list}[{index}]: the request neared its deadline and stopped; the {index} before it are stored"
        ),
    )
    .with_hint(format!(
        "send {list}[{index}..] again in another request (or raise --request-timeout-ms)"
    ))
}

/// The namespace a write on one record names: in its body, or in its query string as the
/// reads on the same path take it. Both may be given only alike (as namespaces: `acme` and
/// `acme/` are one): a request naming two is refused, not served on either.
fn namespace_of<'a>(
    body: Option<&'a str>,
    query: Option<&'a str>,
) -> Result<Option<&'a str>, Failure> {
    let same = |a: &str, b: &str| {
        a == b || matches!((Namespace::parse(a), Namespace::parse(b)), (Ok(a), Ok(b)) if a == b)
    };
    match (body, query) {
        (Some(body), Some(query)) if !same(body, query) => Err(Failure::invalid(
            "namespace",
            format!("the query names namespace {query:?} and the body {body:?}"),
        )
        .with_hint("name the namespace once, in the body or in the query")),
        (Some(named), _) | (None, Some(named)) => Ok(Some(named)),
        (None, None) => Ok(None),
    }
}

fn not_found(what: &str, id: &str, namespace: &Namespace) -> Failure {
    Failure::new(
        ErrorKind::NotFound,
        format!("no {what} {id:?} in namespace {namespace}"),
    )
}

fn scope_of(namespace: &Namespace, exact: Option<bool>) -> Scope {
    if exact == Some(true) {
        namespace.exact()
    } else {
        namespace.subtree()
    }
}

/// Whether a record was removed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Forgotten {
    /// How many records were removed.
    pub(crate) forgotten: usize,
}

/// Which records of a list to return.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// The namespace; default the key's prefix. Namespaces under it are listed too unless
    /// `exact` is true.
    #[serde(default)]
    #[param(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// Only this namespace, not those under it.
    #[serde(default)]
    pub(crate) exact: Option<bool>,
    /// Page size, 1 to 500, default 50.
    #[serde(default)]
    #[param(minimum = 1, maximum = 500)]
    pub(crate) limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub(crate) cursor: Option<String>,
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

/// Adds a `5XX` response, in the error body's shape, to every operation that has a `4XX`
/// one: a store that fails (500 `storage`), cannot be reached (503 `unavailable`), or a
/// request past its deadline (504 `timeout`) answers so on any route, and a generated
/// client should know the shape.
#[derive(Debug)]
struct ServerErrors;

impl utoipa::Modify for ServerErrors {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                let responses = &mut operation.responses.responses;
                let Some(RefOr::T(client)) = responses.get("4XX") else {
                    continue;
                };
                let mut server = client.clone();
                server.description = "The store failed (500 `storage`), could not be reached \
                     (503 `unavailable`), or the request passed its deadline (504 `timeout`)"
                    .to_owned();
                responses
                    .entry("5XX".to_owned())
                    .or_insert(RefOr::T(server));
            }
        }
    }
}

/// The operations of a path of the OpenAPI document, for the modifiers that annotate them.
fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.patch,
    ]
    .into_iter()
    .flatten()
}

/// The OpenAPI document of the API.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "agent-memory",
        description = "Long-term memory for LLM agents: remember, recall, knowledge pages and a knowledge graph, per namespace. Send an API key as `Authorization: Bearer <key>`; a key covers one namespace prefix, whole segments."
    ),
    paths(
        memories::remember, memories::remember_batch, dialogue::remember_dialogue,
        memories::list_memories,
        memories::get_memory, memories::forget_memory, memories::forget_scope,
        memories::reembed,
        memories::update_memory, memories::put_memory, facts::history, facts::retract,
        facts::supersede, facts::consolidate, facts::conflicts, recall::recall,
        recall::context, recall::stats, pages::list_pages, pages::put_page, pages::get_page,
        pages::delete_page, graph::list_entities, graph::put_entity, graph::get_entity,
        graph::delete_entity, graph::related_entities, graph::list_relations,
        graph::add_relation,
        graph::delete_relation, admin::create_key, admin::list_keys, admin::revoke_key,
        admin::healthz, admin::readyz
    ),
    components(schemas(
        ErrorBody, Failure, ErrorKind, MemoryView, RecallView, RecallHit, Explanation,
        SignalView, PageView, PageIndexView, EntityView, RelationView, KeyInfo, NewKey,
        RememberedView, ConflictView, ConflictPairView, EndedView
    )),
    modifiers(&SecurityAddon, &Grammar, &Links, &ServerErrors)
)]
pub(crate) struct ApiDoc;

#[cfg(test)]
mod tests {
    use super::query_field;

    #[test]
    fn a_query_rejection_names_its_parameter() {
        assert_eq!(
            query_field("Failed to deserialize query string: limit: invalid digit found in string"),
            Some("limit")
        );
        assert_eq!(
            query_field("Failed to deserialize query string: invalid type: map"),
            None
        );
        assert_eq!(query_field("something else: x"), None);
    }
}
