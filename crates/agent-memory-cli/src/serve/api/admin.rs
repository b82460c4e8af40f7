//! API keys (admin only), liveness and readiness.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiJson, Auth, ErrorBody, Forgotten};
use crate::failure::{ErrorKind, Failure};
use crate::serve::AppState;
use crate::serve::auth::{KeyInfo, NewKey};

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
