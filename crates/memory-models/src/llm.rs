//! [`ChatModel`]: an OpenAI-compatible chat-completions client, and what agent-memory asks
//! of it: enrichment ([`LlmEnricher`]), conflict judgements ([`ConflictDetector`]) and
//! summaries ([`Summarizer`]).

use std::sync::Arc;

use async_trait::async_trait;
use memory_core::{MemoryError, MemoryItem, Result};
use memory_retrieve::{
    Conflict, ConflictDetector, Enricher, Enrichment, EntityMention, RelationMention, Summarizer,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::http::{HttpClient, HttpConfig, truncate_chars};

/// The characters of one memory sent to the model at most.
const MAX_MEMORY_CHARS: usize = 4000;

/// Settings of a [`ChatModel`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatConfig {
    /// Where the service is (`https://api.openai.com/v1`, `http://localhost:11434/v1` for
    /// Ollama, `http://localhost:8000/v1` for vLLM, `http://localhost:8080/v1` for
    /// llama.cpp's server), with timeout, retries and concurrency.
    pub http: HttpConfig,
    /// The model name (`gpt-4o-mini`, `llama3.1`, ...).
    pub model: String,
    /// The most tokens an answer may have (`max_tokens`; default 1,024).
    pub max_tokens: u32,
    /// Sampling temperature (default 0: the most likely answer).
    pub temperature: f32,
    /// Ask for a JSON object (`response_format: {"type": "json_object"}`; default on). Turn
    /// it off for servers that reject the field; the prompt asks for JSON either way.
    pub json_mode: bool,
}

impl Default for ChatConfig {
    fn default() -> Self {
        Self {
            http: HttpConfig::new("https://api.openai.com/v1"),
            model: "gpt-4o-mini".to_owned(),
            max_tokens: 1024,
            temperature: 0.0,
            json_mode: true,
        }
    }
}

impl ChatConfig {
    /// The service at `base_url` with `model`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            http: HttpConfig::new(base_url),
            model: model.into(),
            ..Self::default()
        }
    }

    /// From the environment: `AGENT_MEMORY_LLM_BASE_URL` (default the OpenAI API),
    /// `AGENT_MEMORY_LLM_MODEL` (default `gpt-4o-mini`), and the key from
    /// `AGENT_MEMORY_LLM_API_KEY` or else `OPENAI_API_KEY`.
    pub fn from_env() -> Self {
        let http = HttpConfig::from_env(
            "AGENT_MEMORY_LLM_BASE_URL",
            "https://api.openai.com/v1",
            &["AGENT_MEMORY_LLM_API_KEY", "OPENAI_API_KEY"],
        );
        let model = std::env::var("AGENT_MEMORY_LLM_MODEL")
            .ok()
            .filter(|model| !model.trim().is_empty())
            .unwrap_or_else(|| "gpt-4o-mini".to_owned());
        Self {
            http,
            model,
            ..Self::default()
        }
    }
}

/// An OpenAI-compatible chat-completions client (`POST {base_url}/chat/completions`).
///
/// It is also a [`ConflictDetector`] (it judges which stored memories a new one
/// contradicts) and a [`Summarizer`] (for compression and consolidation); wrap it in
/// [`LlmEnricher`] to enrich memories.
#[derive(Clone, Debug)]
pub struct ChatModel {
    client: HttpClient,
    config: Arc<ChatConfig>,
}

/// The part of a chat-completions answer that is read.
#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    /// `length` when the answer was cut at `max_tokens`.
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

impl ChatModel {
    /// A client for `config`.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `base_url`, `model`, `max_tokens`,
    /// `temperature` or an HTTP setting.
    pub fn new(config: ChatConfig) -> Result<Self> {
        if config.model.trim().is_empty() {
            return Err(MemoryError::invalid("model", "empty"));
        }
        if config.max_tokens == 0 {
            return Err(MemoryError::invalid("max_tokens", "must be positive"));
        }
        if !config.temperature.is_finite() || !(0.0..=2.0).contains(&config.temperature) {
            return Err(MemoryError::invalid(
                "temperature",
                format!("{} is not within [0, 2]", config.temperature),
            ));
        }
        Ok(Self {
            client: HttpClient::new(config.http.clone())?,
            config: Arc::new(config),
        })
    }

    /// The settings.
    pub fn config(&self) -> &ChatConfig {
        &self.config
    }

    /// The answer's text to `system` and `user` messages, with at most `max_tokens` tokens
    /// (capped by the config's).
    ///
    /// # Errors
    /// As the HTTP client (timeouts, 429 and 5xx after the retries, 4xx); a
    /// [`MemoryError::Serialization`] for an answer without a message;
    /// [`MemoryError::LimitExceeded`] for one cut at its token limit (`finish_reason`
    /// `length`).
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        max_tokens: u32,
        json: bool,
    ) -> Result<String> {
        let mut body = json!({
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": max_tokens.clamp(1, self.config.max_tokens),
            "temperature": self.config.temperature,
        });
        if json && self.config.json_mode {
            body["response_format"] = json!({"type": "json_object"});
        }
        let completion: Completion = self
            .client
            .post_json("/chat/completions", &body, "chat completion")
            .await?;
        let choice = completion.choices.into_iter().next();
        // An answer cut at its token limit is half a sentence, or half a JSON document: not
        // an answer (a summary taken from it would end memories in favour of it).
        if choice
            .as_ref()
            .is_some_and(|choice| choice.finish_reason.as_deref() == Some("length"))
        {
            return Err(MemoryError::LimitExceeded(format!(
                "chat completion: the answer was cut at {} tokens (max_tokens)",
                max_tokens.clamp(1, self.config.max_tokens)
            )));
        }
        choice
            .and_then(|choice| choice.message.content)
            .ok_or_else(|| MemoryError::Serialization {
                message: "chat completion: the answer has no message content".to_owned(),
                source: None,
            })
    }

    /// The answer to `system` and `user` as a JSON object (code fences around it are
    /// removed).
    ///
    /// # Errors
    /// As [`complete`](Self::complete); [`MemoryError::Serialization`] naming the call
    /// when the content is not a JSON object.
    pub async fn complete_json(&self, system: &str, user: &str, what: &str) -> Result<Value> {
        let content = self
            .complete(system, user, self.config.max_tokens, true)
            .await?;
        parse_object(&content, what)
    }
}

/// The JSON object in `content`: the whole text, or inside a ```json fence.
fn parse_object(content: &str, what: &str) -> Result<Value> {
    let trimmed = content.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(trimmed);
    match serde_json::from_str::<Value>(unfenced.trim()) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(MemoryError::Serialization {
            message: format!("{what}: the model answered JSON that is not an object"),
            source: None,
        }),
        Err(error) => Err(MemoryError::Serialization {
            message: format!(
                "{what}: the model's answer is not JSON: {error}; it starts {:?}",
                truncate_chars(trimmed, 120)
            ),
            source: Some(Box::new(error)),
        }),
    }
}

const ENRICH_PROMPT: &str = "You extract structured knowledge from an agent's memories. \
For each numbered memory, list the entities it mentions (people, places, organisations, \
projects, concepts, dates) with a short lowercase type and up to 4 lowercase one-word or \
hyphenated tags, the relations between them that the memory states (relation types in \
snake_case), up to 5 tags for the memory, its importance from 0 to 1, and a fact key \
(like user.city) when it states a single-valued fact, else null. Answer only with a JSON \
object: {\"memories\": [{\"index\": 0, \"entities\": [{\"name\": \"...\", \"type\": \"...\", \
\"tags\": [\"...\"]}], \"relations\": [{\"source\": \"...\", \"target\": \"...\", \"type\": \
\"...\"}], \"tags\": [\"...\"], \"importance\": 0.5, \"fact_key\": null}]}";

/// An [`Enricher`] that asks a [`ChatModel`] for entities, relations, tags, importance and
/// fact keys, in one request per batch, and validates the answer entry by entry.
///
/// Only an answer that is not a JSON object (code fences around it are removed), or an
/// object without a `memories` list, fails the batch, with a
/// [`MemoryError::Serialization`] (the enrichment worker retries it with backoff). Within
/// the list, what does not validate is dropped and the rest is kept:
/// - an entry whose `index` is not a non-negative integer naming a memory of the batch, or
///   repeats the index of an earlier entry (the first is kept), is dropped; a memory without
///   an entry gets an empty [`Enrichment`];
/// - `entities`, `relations` and `tags` that are missing, `null` or not a list read as
///   empty;
/// - an entity without a non-empty `name` text, a relation without non-empty `source`,
///   `target` and `type` texts, and a tag that is not a text are dropped; the first 32
///   entities, 32 relations and 8 tags (8 per entity) that validate are kept;
/// - an `importance` that is not a number within `[0, 1]` reads as none, as does a
///   `fact_key` that is not a text of 1 to 128 bytes once trimmed.
#[derive(Clone, Debug)]
pub struct LlmEnricher {
    model: ChatModel,
}

impl LlmEnricher {
    /// An enricher over `model`.
    pub fn new(model: ChatModel) -> Self {
        Self { model }
    }
}

/// `text` cut to at most `max_bytes` bytes, at a character boundary: for the limits the
/// records count in bytes.
fn truncate_bytes(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut at = max_bytes;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

fn text_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
}

/// The list under `key`: empty when the field is missing, `null` or not a list.
fn list_field<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The `index` of an entry in a model's answer, when it is a non-negative integer below
/// `len`.
fn index_field(value: &Value, len: usize) -> Option<usize> {
    value
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|index| usize::try_from(index).ok())
        .filter(|&index| index < len)
}

/// What one entry of an enrichment answer says of its memory, as far as it validates.
fn enrichment_of(entry: &Value) -> Enrichment {
    let entities = list_field(entry, "entities")
        .iter()
        .filter_map(|entity| {
            let name = text_field(entity, "name")?;
            let entity_type = text_field(entity, "type").unwrap_or("concept");
            let tags = entity
                .get("tags")
                .and_then(Value::as_array)
                .map(|tags| {
                    tags.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .take(8)
                        .collect()
                })
                .unwrap_or_default();
            Some(EntityMention {
                name: truncate_chars(name, 200).to_owned(),
                // Types are at most 128 bytes (`GraphEntity::validate`), names 1,024.
                entity_type: truncate_bytes(truncate_chars(entity_type, 64), 128).to_owned(),
                tags,
            })
        })
        .take(32)
        .collect();
    let relations = list_field(entry, "relations")
        .iter()
        .filter_map(|relation| {
            Some(RelationMention {
                source: text_field(relation, "source")?.to_owned(),
                target: text_field(relation, "target")?.to_owned(),
                relation_type: truncate_bytes(
                    truncate_chars(text_field(relation, "type")?, 64),
                    128,
                )
                .to_owned(),
            })
        })
        .take(32)
        .collect();
    let importance = entry
        .get("importance")
        .and_then(Value::as_f64)
        .map(|importance| importance as f32)
        .filter(|importance| importance.is_finite() && (0.0..=1.0).contains(importance));
    Enrichment {
        entities,
        relations,
        tags: list_field(entry, "tags")
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .take(8)
            .collect(),
        importance,
        fact_key: entry
            .get("fact_key")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|key| !key.is_empty() && key.len() <= 128)
            .map(str::to_owned),
    }
}

#[async_trait]
impl Enricher for LlmEnricher {
    async fn enrich(&self, memories: &[MemoryItem]) -> Result<Vec<Enrichment>> {
        if memories.is_empty() {
            return Ok(Vec::new());
        }
        let mut user = String::new();
        for (index, item) in memories.iter().enumerate() {
            user.push_str(&format!(
                "[{index}] {}\n",
                truncate_chars(&item.content, MAX_MEMORY_CHARS)
            ));
        }
        let answer = self
            .model
            .complete_json(ENRICH_PROMPT, &user, "enrichment")
            .await?;
        let Some(entries) = answer.get("memories").and_then(Value::as_array) else {
            return Err(MemoryError::Serialization {
                message: "enrichment: the model's JSON has not the asked shape (an object with \
                          a `memories` list)"
                    .to_owned(),
                source: None,
            });
        };
        // Entry by entry: one malformed entry costs its memory's enrichment, not the batch's
        // (a retry would get the same answer).
        let mut out = vec![Enrichment::default(); memories.len()];
        let mut answered = vec![false; memories.len()];
        for entry in entries {
            if let Some(index) = index_field(entry, memories.len())
                && !std::mem::replace(&mut answered[index], true)
            {
                out[index] = enrichment_of(entry);
            }
        }
        Ok(out)
    }
}

const CONFLICT_PROMPT: &str = "You judge whether a new memory contradicts stored ones: \
they cannot both be true now (a changed address, a reversed preference). Different topics \
or added detail are no contradiction. Answer only with a JSON object: {\"conflicts\": \
[{\"index\": 0, \"reason\": \"...\"}]} listing the stored memories (by index) the new one \
contradicts, or an empty list.";

/// The conflict judge reads its answer as [`LlmEnricher`] does, entry by entry: only an
/// answer that is not a JSON object, or whose `conflicts` is neither a list nor missing
/// or `null` (no conflicts), is a [`MemoryError::Serialization`]. An entry whose `index` is
/// not a non-negative integer naming a candidate, or names a candidate an earlier entry
/// named, is dropped; a `reason` that is missing, empty or not a text reads as
/// "contradiction judged by the model".
#[async_trait]
impl ConflictDetector for ChatModel {
    async fn detect(
        &self,
        new: &MemoryItem,
        candidates: &[Arc<MemoryItem>],
    ) -> Result<Vec<Conflict>> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let mut user = format!(
            "New memory: {}\nStored memories:\n",
            truncate_chars(&new.content, MAX_MEMORY_CHARS)
        );
        for (index, item) in candidates.iter().enumerate() {
            user.push_str(&format!(
                "[{index}] {}\n",
                truncate_chars(&item.content, MAX_MEMORY_CHARS)
            ));
        }
        let answer = self
            .complete_json(CONFLICT_PROMPT, &user, "conflict judgement")
            .await?;
        let entries = match answer.get("conflicts") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(entries)) => entries.as_slice(),
            Some(_) => {
                return Err(MemoryError::Serialization {
                    message: "conflict judgement: the model's JSON has not the asked shape (an \
                              object with a `conflicts` list)"
                        .to_owned(),
                    source: None,
                });
            }
        };
        let mut out: Vec<Conflict> = Vec::new();
        for entry in entries {
            if let Some(item) =
                index_field(entry, candidates.len()).and_then(|index| candidates.get(index))
                && !out.iter().any(|known| known.id == item.id)
            {
                out.push(Conflict {
                    id: item.id.clone(),
                    reason: text_field(entry, "reason").map_or_else(
                        || "contradiction judged by the model".to_owned(),
                        |reason| truncate_chars(reason, 500).to_owned(),
                    ),
                });
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl Summarizer for ChatModel {
    async fn summarize(&self, texts: &[&str], max_tokens: usize) -> Result<String> {
        let mut user = String::new();
        for text in texts {
            user.push_str("- ");
            user.push_str(truncate_chars(text, MAX_MEMORY_CHARS));
            user.push('\n');
        }
        // The prompt asks for the budget; the request allows twice it (within the config's
        // cap), as models overshoot a little and some spend hidden tokens. An answer cut
        // even there is refused by `complete`. The prompt never asks for more than the
        // request allows.
        let cap = self.config.max_tokens;
        let budget = u32::try_from(max_tokens.max(16))
            .unwrap_or(u32::MAX)
            .min(cap);
        let allowed = budget.saturating_mul(2).min(cap);
        let system = format!(
            "Summarize these memories of an agent in at most {budget} tokens: keep names, \
             dates, numbers and decisions; no preamble."
        );
        let summary = self.complete(&system, &user, allowed, false).await?;
        let summary = summary.trim();
        if summary.is_empty() {
            return Err(MemoryError::Serialization {
                message: "summary: the model answered an empty text".to_owned(),
                source: None,
            });
        }
        Ok(summary.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_from_the_model_fit_the_graph_in_bytes() {
        // 60 CJK characters: within 64 characters, 180 bytes, over the 128 a type may hold.
        let long = "类".repeat(60);
        let enrichment = enrichment_of(&json!({
            "index": 0,
            "entities": [{"name": "Ada", "type": long}],
            "relations": [{"source": "Ada", "target": "Engine", "type": long}],
        }));
        let ns = memory_core::Namespace::parse("kb").unwrap();
        let entity = &enrichment.entities[0];
        assert!(entity.entity_type.len() <= 128 && entity.entity_type.starts_with('类'));
        assert!(
            memory_core::GraphEntity::new(ns.clone(), "ada", "Ada", &entity.entity_type).is_ok()
        );
        let relation = &enrichment.relations[0];
        assert!(
            memory_core::GraphRelation::new(ns, "ada", "engine", &relation.relation_type, 0.5)
                .is_ok()
        );
        assert_eq!(truncate_bytes("aé", 2), "a");
        assert_eq!(truncate_bytes("aé", 3), "aé");
    }

    #[test]
    fn parses_objects_in_fences() {
        assert!(parse_object("```json\n{\"a\": 1}\n```", "t").is_ok());
        assert!(parse_object(" {\"a\": 1} ", "t").is_ok());
        let error = parse_object("[1, 2]", "enrichment").unwrap_err();
        assert!(error.to_string().contains("not an object"), "{error}");
        let error = parse_object("sure! here you go", "enrichment").unwrap_err();
        assert!(error.to_string().contains("not JSON"), "{error}");
    }
}
