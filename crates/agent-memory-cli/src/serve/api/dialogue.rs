//! A dialogue's turns, remembered through `Memory::dialogue`: each turn dated, with its
//! speaker, role and session, and the turns next to it in its session as its context.

use agent_memory::{Role, Turn};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::memories::{BatchRemembered, MAX_BATCH};
use super::{ApiJson, Auth, ErrorBody, parse_time};
use crate::failure::Failure;
use crate::serve::AppState;
use crate::views::RememberedView;

/// One turn of a dialogue.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnRequest {
    /// Who said it (a name, or a role such as `user`), at most 256 bytes.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub(crate) speaker: Option<String>,
    /// What was said (1 byte to 1 MiB).
    #[schema(min_length = 1, max_length = 1048576)]
    pub(crate) text: String,
    /// The speaker's role: `user`, `assistant`, `system` or `tool`.
    #[serde(default)]
    #[schema(pattern = "^(user|assistant|system|tool)$")]
    pub(crate) role: Option<String>,
    /// The session: context never crosses a change of session. At most 256 bytes.
    #[serde(default)]
    #[schema(max_length = 256)]
    pub(crate) session: Option<String>,
    /// When it was said (RFC 3339); default now.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub(crate) at: Option<String>,
    /// An explicit id; a memory with this id in the namespace is replaced, unless it is
    /// part of a fact's history: then the same text sent again writes nothing (`merged`),
    /// and other text is refused naming `id`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 256)]
    pub(crate) id: Option<String>,
    /// Metadata, a JSON object (the speaker, role and session keys are set from the turn).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub(crate) metadata: Option<serde_json::Value>,
}

/// A stretch of dialogue, in order.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DialogueRequest {
    /// The namespace; default the key's prefix.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 512)]
    pub(crate) namespace: Option<String>,
    /// The turns, in order (at most 1000). A later request starts a new stretch: its first
    /// turn is not linked to the last of this one.
    #[schema(max_items = 1000)]
    pub(crate) turns: Vec<TurnRequest>,
}

fn role(text: &str) -> Result<Role, Failure> {
    Role::parse(text).ok_or_else(|| {
        Failure::invalid(
            "role",
            format!("{text:?} is not user, assistant, system or tool"),
        )
    })
}

impl TurnRequest {
    fn into_turn(self) -> Result<Turn, Failure> {
        let speaker = self.speaker.unwrap_or_default();
        if speaker.len() > agent_memory::retrieve::MAX_SPEAKER_BYTES {
            return Err(Failure::invalid("speaker", "longer than 256 bytes"));
        }
        if self.text.trim().is_empty() {
            return Err(Failure::invalid("text", "is empty"));
        }
        let mut turn = Turn::new(speaker, self.text).source("dialogue");
        if let Some(name) = &self.role {
            turn = turn.role(role(name)?);
        }
        if let Some(session) = self.session {
            if session.len() > agent_memory::retrieve::MAX_SESSION_BYTES {
                return Err(Failure::invalid("session", "longer than 256 bytes"));
            }
            turn = turn.session(session);
        }
        if let Some(at) = &self.at {
            turn = turn.at(parse_time("at", at)?);
        }
        if let Some(id) = self.id {
            agent_memory::backend::validate_id("id", &id)?;
            turn = turn.id(id);
        }
        if let Some(metadata) = self.metadata {
            if !metadata.is_object() {
                return Err(Failure::invalid("metadata", "must be a JSON object"));
            }
            agent_memory::backend::validate_metadata(&metadata)?;
            turn = turn.metadata(metadata);
        }
        Ok(turn)
    }
}

/// Remembers a dialogue's turns in order, as `Memory::dialogue` does: each stored as
/// `[date] speaker: text` with its role and session in metadata, indexed with the turns next
/// to it in its session as context, and reconciled with the stored memories. Every turn is
/// checked first (a bad one refuses the request and nothing is stored). Should the store
/// fail part way, the turns before the failing one stay stored and the error says how many.
#[utoipa::path(post, path = "/v1/dialogue", tag = "memories", request_body = DialogueRequest,
    responses((status = 201, body = BatchRemembered), (status = "4XX", body = ErrorBody)),
    security(("api_key" = [])))]
pub(crate) async fn remember_dialogue(
    State(state): State<AppState>,
    Auth(caller): Auth,
    ApiJson(body): ApiJson<DialogueRequest>,
) -> Result<(StatusCode, Json<BatchRemembered>), Failure> {
    let namespace = caller.namespace(body.namespace.as_deref())?;
    let deadline = super::batch_deadline(&state);
    let memories = remember_turns(&state.memory, &namespace, body.turns, Some(deadline)).await?;
    Ok((StatusCode::CREATED, Json(BatchRemembered { memories })))
}

/// Checks every turn, then remembers them in order in `namespace` through one
/// `Memory::dialogue` (the HTTP endpoint and the MCP tool both call this). A bad turn
/// refuses them all, naming `turns[i]` and its field; a store failure part way leaves the
/// turns before it stored and says how many, as does reaching `deadline` (when given)
/// before the last turn.
pub(crate) async fn remember_turns(
    memory: &agent_memory::Memory,
    namespace: &agent_memory::Namespace,
    requests: Vec<TurnRequest>,
    deadline: Option<std::time::Instant>,
) -> Result<Vec<RememberedView>, Failure> {
    if requests.len() > MAX_BATCH {
        return Err(Failure::invalid(
            "turns",
            format!(
                "{} turns is more than the {MAX_BATCH} of one request",
                requests.len()
            ),
        ));
    }
    let at = |index: usize| {
        move |failure: Failure| Failure {
            message: format!("turns[{index}]: {}", failure.message),
            ..failure
        }
    };
    let mut dialogue = memory.dialogue(namespace.clone());
    let mut turns = Vec::with_capacity(requests.len());
    for (index, turn) in requests.into_iter().enumerate() {
        let turn = turn.into_turn().map_err(at(index))?;
        // As the dialogue will write it: its dated text, its metadata with the speaker,
        // role and session, and its context.
        dialogue
            .check(&turn)
            .map_err(|error| at(index)(Failure::from(error)))?;
        turns.push(turn);
    }
    agent_memory::retrieve::Dialogue::check_ids(&turns)
        .map_err(|(index, error)| at(index)(Failure::from(error)))?;
    let mut memories = Vec::with_capacity(turns.len());
    for (index, turn) in turns.into_iter().enumerate() {
        if index > 0 && deadline.is_some_and(|deadline| std::time::Instant::now() >= deadline) {
            return Err(super::batch_overdue("turns", index));
        }
        let remembered = dialogue.add(turn).await.map_err(|error| {
            let failure = Failure::from(error);
            Failure {
                message: format!(
                    "turns[{index}]: {} (the {index} before it are stored)",
                    failure.message
                ),
                ..failure
            }
        })?;
        memories.push(RememberedView::new(namespace, &remembered));
    }
    Ok(memories)
}
