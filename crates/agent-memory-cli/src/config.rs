//! Settings from three places, in order of precedence: flags, environment variables (both
//! read by clap), then the optional TOML configuration file, then the defaults.
//!
//! ```toml
//! # ~/.config/agent-memory/config.toml
//! store = "postgres://agent@db.internal:5432/memory"
//! namespace = "acme"
//! listen = "0.0.0.0:8080"
//!
//! [retriever]
//! drop_time_words = true
//!
//! # What writes and `maintain` forget, and when: an EvictionPolicy by its fields.
//! [eviction]
//! policy = "hybrid"
//! ttl_secs = 7776000   # 90 days
//! max_items = 5000
//!
//! # Importance fading with time, applied by `maintain`.
//! [decay]
//! daily_rate = 0.01
//!
//! # The optional embedding channel: an OpenAI-compatible /embeddings service.
//! [embeddings]
//! base_url = "http://localhost:11434/v1"
//! model = "nomic-embed-text"
//! dimension = 768
//! # nomic-embed-text embeds queries and stored texts in distinct forms.
//! query_prefix = "search_query: "
//! document_prefix = "search_document: "
//! ```

use std::path::{Path, PathBuf};

use agent_memory::models::{EmbeddingConfig, HttpEmbedder};
use agent_memory::{DecayConfig, EvictionConfig, EvictionPolicy, RetrieverConfig};
use serde::Deserialize;

use crate::failure::Failure;

/// The store when nothing says otherwise.
pub(crate) const DEFAULT_STORE: &str = "./agent-memory.db";
/// The namespace when nothing says otherwise.
pub(crate) const DEFAULT_NAMESPACE: &str = "default";
/// Where `serve` listens when nothing says otherwise.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// The largest request body `serve` accepts by default.
pub(crate) const DEFAULT_MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// The default deadline of one request to `serve`.
pub(crate) const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 30_000;
/// The results of a recall that asks for no number, unless the `[retriever]` table sets
/// `max_results` (the library's own default, 20, is for the recalls `context` makes).
pub(crate) const DEFAULT_RECALL_LIMIT: usize = 10;

/// The configuration file's keys; each is the flag's name with `_` for `-`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ConfigFile {
    /// As `--store`.
    pub(crate) store: Option<String>,
    /// As `--namespace`.
    pub(crate) namespace: Option<String>,
    /// As `--postgres-schema`.
    pub(crate) postgres_schema: Option<String>,
    /// As `--max-memories`.
    pub(crate) max_memories: Option<usize>,
    /// As `serve --listen`.
    pub(crate) listen: Option<String>,
    /// As `serve --admin-key`.
    pub(crate) admin_key: Option<String>,
    /// As `serve --no-auth`; `--no-auth=false` or `AGENT_MEMORY_NO_AUTH=false` overrides it.
    pub(crate) no_auth: Option<bool>,
    /// As `serve --max-body-bytes`.
    pub(crate) max_body_bytes: Option<usize>,
    /// As `serve --request-timeout-ms`.
    pub(crate) request_timeout_ms: Option<u64>,
    /// As `serve --max-connections`.
    pub(crate) max_connections: Option<usize>,
    /// As `serve --max-mcp-sessions`.
    pub(crate) max_mcp_sessions: Option<usize>,
    /// As `serve --sqlite-readers`.
    pub(crate) sqlite_readers: Option<usize>,
    /// No flag: the `[retriever]` table, the settings of every recall
    /// ([`RetrieverConfig`]'s fields, each one left out keeping its default). Read by
    /// [`retriever`](Self::retriever).
    pub(crate) retriever: Option<toml::Table>,
    /// No flag: the `[eviction]` table, what every write and `maintain` forget and when: an
    /// [`EvictionPolicy`] by its fields (`policy = "ttl"` with `ttl_secs`; `"capacity"`,
    /// `"value_based"` or `"recall_based"` with `max_items`; `"hybrid"` with any of
    /// `ttl_secs`, `max_items`, `recall`), and `check_interval`, the writes to a namespace
    /// between two full passes. Not beside `max_memories`, its shorthand. Read by
    /// [`eviction`](Self::eviction).
    pub(crate) eviction: Option<toml::Table>,
    /// No flag: the `[decay]` table, importance fading with time as `maintain` applies it
    /// ([`DecayConfig`]'s fields, each one left out keeping its default). Read by
    /// [`decay`](Self::decay).
    pub(crate) decay: Option<toml::Table>,
    /// No flag: the `[embeddings]` table, the service of the optional embedding channel.
    /// Read by [`embeddings`](Self::embeddings).
    pub(crate) embeddings: Option<EmbeddingsTable>,
}

/// The `[embeddings]` table: an OpenAI-compatible `/embeddings` service (OpenAI, Ollama,
/// vLLM, llama.cpp's server, text-embeddings-inference) that embeds every memory as it is
/// remembered and every query, so recall also finds memories by meaning. The key is never
/// in the file: it comes from `AGENT_MEMORY_EMBEDDINGS_API_KEY`, else `OPENAI_API_KEY`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EmbeddingsTable {
    /// Where the service is, e.g. `http://localhost:11434/v1`.
    pub(crate) base_url: String,
    /// The model's name.
    pub(crate) model: String,
    /// The length of the model's vectors; an answer of another length is refused.
    pub(crate) dimension: usize,
    /// Texts per request at most (the library's default when left out).
    #[serde(default)]
    pub(crate) batch_size: Option<usize>,
    /// Whether `dimension` is sent to the service (models that shorten their vectors).
    #[serde(default)]
    pub(crate) send_dimensions: bool,
    /// Put before each recall's query (`"query: "` for E5, `"search_query: "` for
    /// nomic-embed-text); none when left out.
    #[serde(default)]
    pub(crate) query_prefix: String,
    /// Put before each stored text (`"passage: "`, `"search_document: "`); none when left
    /// out.
    #[serde(default)]
    pub(crate) document_prefix: String,
}

impl ConfigFile {
    /// Reads the file named by `--config` (which must exist), else the default file when it
    /// exists, else nothing.
    ///
    /// # Errors
    /// Invalid input for a file that cannot be read or is not valid TOML of known keys.
    pub(crate) fn load(explicit: Option<&Path>) -> Result<Self, Failure> {
        let (path, required) = match explicit {
            Some(path) => (path.to_path_buf(), true),
            None => match default_path() {
                Some(path) => (path, false),
                None => return Ok(Self::default()),
            },
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if !required && error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self::default());
            }
            Err(error) => {
                return Err(Failure::invalid(
                    "config",
                    format!(
                        "cannot read the configuration file {}: {error}",
                        path.display()
                    ),
                )
                .with_hint("pass an existing file to --config (or AGENT_MEMORY_CONFIG)"));
            }
        };
        toml::from_str(&text).map_err(|error| {
            Failure::invalid(
                "config",
                format!("configuration file {}: {error}", path.display()),
            )
            .with_hint(
                "the file is TOML with the keys store, namespace, postgres_schema, max_memories, listen, admin_key, no_auth, max_body_bytes, request_timeout_ms, max_connections, max_mcp_sessions, sqlite_readers, and the tables [retriever], [eviction], [decay] and [embeddings]",
            )
        })
    }

    /// The `[retriever]` table as recall settings; `None` when the file has none.
    ///
    /// # Errors
    /// Invalid input naming `retriever.KEY` for a key that is no setting, a value out of
    /// range or one of the wrong type.
    pub(crate) fn retriever(&self) -> Result<Option<RetrieverConfig>, Failure> {
        let Some(table) = &self.retriever else {
            return Ok(None);
        };
        // The settings' names, from the defaults as written: an unknown key is a typo, and
        // a typo silently ignored would leave a setting at its default.
        let known = serde_json::to_value(RetrieverConfig::default())
            .map_err(|error| Failure::invalid("retriever", error.to_string()))?;
        if let Some(unknown) = table.keys().find(|key| known.get(key.as_str()).is_none()) {
            return Err(Failure::invalid(
                &format!("retriever.{unknown}"),
                format!("`{unknown}` is no retriever setting"),
            )
            .with_hint(
                "the [retriever] table takes RetrieverConfig's fields, e.g. max_results, drop_time_words, outside_time_factor",
            ));
        }
        let config: RetrieverConfig = read_table("retriever", toml::Value::Table(table.clone()))?;
        config
            .validate()
            .map_err(|error| in_table("retriever", error))?;
        Ok(Some(config))
    }

    /// The results of a recall that asks for no number (`recall` without `--limit`, an HTTP
    /// or MCP recall without `limit`): the `[retriever]` table's `max_results` when it sets
    /// one, else [`DEFAULT_RECALL_LIMIT`].
    ///
    /// # Errors
    /// As [`retriever`](Self::retriever).
    pub(crate) fn recall_limit(&self) -> Result<usize, Failure> {
        let set = self
            .retriever
            .as_ref()
            .is_some_and(|table| table.contains_key("max_results"));
        Ok(match self.retriever()? {
            Some(config) if set => config.max_results,
            _ => DEFAULT_RECALL_LIMIT,
        })
    }
}

impl ConfigFile {
    /// The eviction the `[eviction]` table sets, if any.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::failure::ErrorKind::InvalidInput) naming
    /// `eviction.<key>` for a key no policy of its kind has (a typo would leave a setting
    /// at its default) or a value out of range (`eviction.recall.<key>` inside a hybrid
    /// policy's `recall`) or of the wrong type (`eviction.policy` for no policy's name).
    pub(crate) fn eviction(&self) -> Result<Option<EvictionConfig>, Failure> {
        let Some(table) = &self.eviction else {
            return Ok(None);
        };
        let mut table = table.clone();
        let mut config = EvictionConfig::default();
        if let Some(interval) = table.remove("check_interval") {
            config.check_interval = usize::deserialize(interval)
                .map_err(|error| Failure::invalid("eviction.check_interval", error.to_string()))?;
        }
        if !table.contains_key("policy") {
            return Err(Failure::invalid(
                "eviction.policy",
                "missing: one of ttl, capacity, value_based, recall_based, hybrid, none",
            ));
        }
        config.policy =
            EvictionPolicy::deserialize(toml::Value::Table(table.clone())).map_err(|error| {
                let field = wrong_policy_key(&table)
                    .map_or_else(|| "eviction".to_owned(), |key| format!("eviction.{key}"));
                let why = error.to_string();
                Failure::invalid(&field, format!("{field}: {}", why.trim_end()))
            })?;
        // The policy read back names every key its kind has: any other is unknown.
        let known = serde_json::to_value(&config.policy)
            .map_err(|error| Failure::invalid("eviction", error.to_string()))?;
        if let Some(unknown) = table.keys().find(|key| known.get(key.as_str()).is_none()) {
            return Err(Failure::invalid(
                &format!("eviction.{unknown}"),
                format!("`{unknown}` is no setting of this eviction policy"),
            ));
        }
        // A hybrid policy's `recall` names its own keys, which the file writes inside it.
        if let EvictionPolicy::Hybrid {
            recall: Some(recall),
            ..
        } = &config.policy
        {
            recall
                .validate()
                .map_err(|error| in_table("eviction.recall", error))?;
        }
        config
            .validate()
            .map_err(|error| in_table("eviction", error))?;
        Ok(Some(config))
    }

    /// The decay the `[decay]` table sets, if any: [`DecayConfig`]'s defaults with the
    /// table's keys over them.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidInput`](crate::failure::ErrorKind::InvalidInput) naming
    /// `decay.<key>` for an unknown key, a value out of range or one of the wrong type.
    pub(crate) fn decay(&self) -> Result<Option<DecayConfig>, Failure> {
        let Some(table) = &self.decay else {
            return Ok(None);
        };
        let mut merged = serde_json::to_value(DecayConfig::default())
            .map_err(|error| Failure::invalid("decay", error.to_string()))?;
        for (key, value) in table {
            let Some(slot) = merged.get_mut(key.as_str()) else {
                return Err(Failure::invalid(
                    &format!("decay.{key}"),
                    format!(
                        "`{key}` is no decay setting (daily_rate, min_threshold, grace_period_days)"
                    ),
                ));
            };
            *slot = serde_json::to_value(value)
                .map_err(|error| Failure::invalid(&format!("decay.{key}"), error.to_string()))?;
        }
        let config: DecayConfig = read_table("decay", merged)?;
        config
            .validate()
            .map_err(|error| in_table("decay", error))?;
        Ok(Some(config))
    }

    /// The client of the embedding service, if any: from the environment when
    /// `AGENT_MEMORY_EMBEDDINGS_BASE_URL` is set (with `_MODEL`, `_DIMENSION`,
    /// `_QUERY_PREFIX`, `_DOCUMENT_PREFIX` and `_API_KEY`, as [`EmbeddingConfig::from_env`]
    /// reads them), which replaces the file's
    /// `[embeddings]` table; else from the table, the key from the environment. `None`
    /// without either: recall is keyword-only.
    ///
    /// # Errors
    /// Invalid input naming `embeddings.FIELD` for a setting the service cannot take (a URL
    /// that is no http:// or https:// URL, an empty model, a dimension or batch size out
    /// of range).
    pub(crate) fn embeddings(&self) -> Result<Option<HttpEmbedder>, Failure> {
        let from_env = std::env::var("AGENT_MEMORY_EMBEDDINGS_BASE_URL")
            .is_ok_and(|url| !url.trim().is_empty());
        let config = if from_env {
            EmbeddingConfig::from_env().map_err(|error| prefixed(error.into()))?
        } else {
            let Some(table) = &self.embeddings else {
                return Ok(None);
            };
            let mut config = EmbeddingConfig::new(&table.base_url, &table.model, table.dimension);
            if let Some(batch_size) = table.batch_size {
                config.batch_size = batch_size;
            }
            config.send_dimensions = table.send_dimensions;
            config.query_prefix.clone_from(&table.query_prefix);
            config.document_prefix.clone_from(&table.document_prefix);
            config.http.api_key = EmbeddingConfig::api_key_from_env();
            config
        };
        // The service's own checks (URL, model, dimension, batch size), named in the table.
        let embedder = HttpEmbedder::new(config).map_err(|error| prefixed(error.into()))?;
        Ok(Some(embedder))
    }
}

/// A table's settings read from `value`; a value of the wrong type refused naming its key
/// inside `table` (`retriever.min_score`, `decay.daily_rate`), or `table` when the reader
/// cannot tell which.
fn read_table<'de, T, D>(table: &str, value: D) -> Result<T, Failure>
where
    T: Deserialize<'de>,
    D: serde::Deserializer<'de>,
    D::Error: std::fmt::Display,
{
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let field = match path.as_str() {
            "." | "" => table.to_owned(),
            path => format!("{table}.{path}"),
        };
        let why = error.inner().to_string();
        Failure::invalid(&field, format!("{field}: {}", why.trim_end()))
    })
}

/// The key of an `[eviction]` table whose value the policy does not take. A policy's keys
/// are read together with its kind (`policy` names the variant), which loses the key at
/// fault: each is read again alone beside the kind, and the first refused for another
/// reason than the keys left out is the one (`policy` itself when it names no policy).
fn wrong_policy_key(table: &toml::Table) -> Option<&str> {
    let policy = table.get("policy")?;
    // The kind first: a name no policy has fails beside every key.
    let mut alone = toml::Table::new();
    alone.insert("policy".to_owned(), policy.clone());
    if EvictionPolicy::deserialize(toml::Value::Table(alone))
        .is_err_and(|error| !error.to_string().contains("missing field"))
    {
        return Some("policy");
    }
    table
        .iter()
        .find(|(key, value)| {
            let mut alone = toml::Table::new();
            alone.insert("policy".to_owned(), policy.clone());
            alone.insert((*key).clone(), (*value).clone());
            EvictionPolicy::deserialize(toml::Value::Table(alone))
                .is_err_and(|error| !error.to_string().contains("missing field"))
        })
        .map(|(key, _)| key.as_str())
}

/// `error`, a setting's check, with its field named as the file writes it: inside `table`
/// (`retriever.min_score`, `eviction.max_items`, `decay.daily_rate`).
fn in_table(table: &str, error: agent_memory::MemoryError) -> Failure {
    let mut failure = Failure::from(error);
    if let Some(field) = failure.field.take() {
        failure.field = Some(format!("{table}.{field}"));
    }
    failure
}

/// `failure` with its field named inside the `[embeddings]` table.
fn prefixed(mut failure: Failure) -> Failure {
    if let Some(field) = failure.field.take() {
        failure.field = Some(if field.starts_with("embeddings") {
            field
        } else {
            format!("embeddings.{field}")
        });
    }
    failure
}

/// `$XDG_CONFIG_HOME/agent-memory/config.toml`, or `~/.config/agent-memory/config.toml`.
fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("agent-memory").join("config.toml"))
}

/// The first value that is set: flag or environment (`cli`), then the file, then `default`.
pub(crate) fn pick<T>(cli: Option<T>, file: Option<T>, default: T) -> T {
    cli.or(file).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables of the README's example read as the settings they show.
    #[test]
    fn the_readme_example_of_eviction_and_decay_reads() {
        let file: ConfigFile = toml::from_str(
            "[eviction]\npolicy = \"hybrid\"\nttl_secs = 7776000\nmax_items = 5000\n\n\
             [decay]\ndaily_rate = 0.01\n",
        )
        .expect("the example parses");
        let eviction = file.eviction().expect("valid").expect("set");
        assert_eq!(
            eviction.policy,
            EvictionPolicy::Hybrid {
                ttl_secs: Some(7_776_000),
                max_items: Some(5000),
                recall: None,
            }
        );
        let decay = file.decay().expect("valid").expect("set");
        assert_eq!(decay, DecayConfig::default());
    }
}
