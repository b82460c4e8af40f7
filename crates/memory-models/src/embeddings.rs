//! [`HttpEmbedder`]: an [`EmbeddingProvider`] over an OpenAI-compatible `/embeddings` API.

use async_trait::async_trait;
use memory_core::{EmbeddingProvider, MemoryError, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::http::{HttpClient, HttpConfig, truncate_chars};

/// The characters of one text sent at most (longer texts are cut: embedding models read a
/// few thousand tokens at most).
const MAX_TEXT_CHARS: usize = 8000;

/// The longest query or document prefix taken, in characters (an instruction is a sentence).
const MAX_PREFIX_CHARS: usize = 1000;

/// The environment variables an embedding service's key is read from, in order.
const API_KEY_VARS: [&str; 2] = ["AGENT_MEMORY_EMBEDDINGS_API_KEY", "OPENAI_API_KEY"];

/// Settings of an [`HttpEmbedder`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EmbeddingConfig {
    /// Where the service is: `https://api.openai.com/v1`, `http://localhost:11434/v1`
    /// (Ollama), `http://localhost:8080/v1` (text-embeddings-inference), with timeout,
    /// retries and concurrency.
    pub http: HttpConfig,
    /// The model name (`text-embedding-3-small`, `nomic-embed-text`, ...).
    pub model: String,
    /// The length of every vector the model returns; an answer of another length is an
    /// error (a model changed under a store of vectors would make every similarity wrong).
    pub dimension: usize,
    /// Texts per request at most (default 64); `embed_batch` splits larger batches.
    pub batch_size: usize,
    /// Sent as `dimensions` (models that can shorten their vectors, such as OpenAI's
    /// `text-embedding-3-*`); default off.
    pub send_dimensions: bool,
    /// Put before a recall's query (default none): `"query: "` for E5 models,
    /// `"search_query: "` for nomic-embed-text, BGE's instruction for English
    /// (`"Represent this sentence for searching relevant passages: "`). Models trained with
    /// such forms find less without them; symmetric models (OpenAI's, MiniLM) need none.
    pub query_prefix: String,
    /// Put before every stored text (default none): `"passage: "` for E5 models,
    /// `"search_document: "` for nomic-embed-text. Changing it, like changing the model,
    /// calls for the stored texts to be embedded again (`Memory::reembed` with
    /// `Reembed::All`).
    pub document_prefix: String,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            http: HttpConfig::new("https://api.openai.com/v1"),
            model: "text-embedding-3-small".to_owned(),
            dimension: 1536,
            batch_size: 64,
            send_dimensions: false,
            query_prefix: String::new(),
            document_prefix: String::new(),
        }
    }
}

impl EmbeddingConfig {
    /// The service at `base_url` with `model` of `dimension`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, dimension: usize) -> Self {
        Self {
            http: HttpConfig::new(base_url),
            model: model.into(),
            dimension,
            ..Self::default()
        }
    }

    /// The key from the environment: `AGENT_MEMORY_EMBEDDINGS_API_KEY`, else
    /// `OPENAI_API_KEY` (the first set and not empty), as [`from_env`](Self::from_env)
    /// reads it. For configurations that name the service elsewhere but keep the key out
    /// of files.
    pub fn api_key_from_env() -> Option<String> {
        API_KEY_VARS
            .iter()
            .filter_map(|var| std::env::var(var).ok())
            .find(|key| !key.trim().is_empty())
    }

    /// From the environment: `AGENT_MEMORY_EMBEDDINGS_BASE_URL` (default the OpenAI API),
    /// `AGENT_MEMORY_EMBEDDINGS_MODEL` and `AGENT_MEMORY_EMBEDDINGS_DIMENSION` (default
    /// `text-embedding-3-small`, 1536), `AGENT_MEMORY_EMBEDDINGS_QUERY_PREFIX` and
    /// `AGENT_MEMORY_EMBEDDINGS_DOCUMENT_PREFIX` (default none), the key from
    /// `AGENT_MEMORY_EMBEDDINGS_API_KEY` or else `OPENAI_API_KEY`.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `dimension` when the variable is not a number.
    pub fn from_env() -> Result<Self> {
        let http = HttpConfig::from_env(
            "AGENT_MEMORY_EMBEDDINGS_BASE_URL",
            "https://api.openai.com/v1",
            &API_KEY_VARS,
        );
        let mut config = Self {
            http,
            ..Self::default()
        };
        if let Ok(model) = std::env::var("AGENT_MEMORY_EMBEDDINGS_MODEL")
            && !model.trim().is_empty()
        {
            config.model = model;
        }
        if let Ok(prefix) = std::env::var("AGENT_MEMORY_EMBEDDINGS_QUERY_PREFIX") {
            config.query_prefix = prefix;
        }
        if let Ok(prefix) = std::env::var("AGENT_MEMORY_EMBEDDINGS_DOCUMENT_PREFIX") {
            config.document_prefix = prefix;
        }
        if let Ok(dimension) = std::env::var("AGENT_MEMORY_EMBEDDINGS_DIMENSION") {
            config.dimension = dimension.trim().parse().map_err(|_| {
                MemoryError::invalid("dimension", format!("{dimension:?} is not a number"))
            })?;
        }
        Ok(config)
    }
}

/// An embedding provider over HTTP (`POST {base_url}/embeddings`, the OpenAI shape that
/// Ollama, vLLM, llama.cpp's server and text-embeddings-inference serve too). Batches go
/// in one request per [`EmbeddingConfig::batch_size`] texts; every vector is checked
/// against [`EmbeddingConfig::dimension`] and for finite values. A vector of zeros is
/// kept: a model answers one for a text it has no words for (a static model's unknown
/// words), and a write must not fail for it; such a memory is found by its words alone, as
/// no similarity is defined for it, and a query's is no query by meaning.
#[derive(Clone, Debug)]
pub struct HttpEmbedder {
    client: HttpClient,
    config: EmbeddingConfig,
}

#[derive(Deserialize)]
struct EmbeddingAnswer {
    data: Vec<EmbeddingEntry>,
}

#[derive(Deserialize)]
struct EmbeddingEntry {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl HttpEmbedder {
    /// A provider for `config`.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `model`, `dimension`, `batch_size` or an HTTP
    /// setting.
    pub fn new(config: EmbeddingConfig) -> Result<Self> {
        if config.model.trim().is_empty() {
            return Err(MemoryError::invalid("model", "empty"));
        }
        if config.dimension == 0 || config.dimension > 65_536 {
            return Err(MemoryError::invalid(
                "dimension",
                "must be between 1 and 65536",
            ));
        }
        if config.batch_size == 0 || config.batch_size > 2048 {
            return Err(MemoryError::invalid(
                "batch_size",
                "must be between 1 and 2048",
            ));
        }
        for (field, prefix) in [
            ("query_prefix", &config.query_prefix),
            ("document_prefix", &config.document_prefix),
        ] {
            if prefix.chars().count() > MAX_PREFIX_CHARS {
                return Err(MemoryError::invalid(
                    field,
                    format!("longer than {MAX_PREFIX_CHARS} characters"),
                ));
            }
        }
        Ok(Self {
            client: HttpClient::new(config.http.clone())?,
            config,
        })
    }

    /// One request for `texts` (at most a batch), each put after `prefix`.
    async fn request(&self, texts: &[&str], prefix: &str) -> Result<Vec<Vec<f32>>> {
        let input: Vec<String> = texts
            .iter()
            .map(|text| {
                let text = truncate_chars(text, MAX_TEXT_CHARS);
                let mut input = String::with_capacity(prefix.len() + text.len());
                input.push_str(prefix);
                input.push_str(text);
                input
            })
            .collect();
        let mut body = json!({"model": self.config.model, "input": input});
        if self.config.send_dimensions {
            body["dimensions"] = json!(self.config.dimension);
        }
        let answer: EmbeddingAnswer = self
            .client
            .post_json("/embeddings", &body, "embeddings")
            .await?;
        if answer.data.len() != texts.len() {
            return Err(MemoryError::Serialization {
                message: format!(
                    "embeddings: {} vectors for {} texts",
                    answer.data.len(),
                    texts.len()
                ),
                source: None,
            });
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (position, entry) in answer.data.into_iter().enumerate() {
            let index = entry.index.unwrap_or(position);
            if entry.embedding.len() != self.config.dimension {
                return Err(MemoryError::invalid(
                    "dimension",
                    format!(
                        "the model {} answered {} values, the provider expects {}",
                        self.config.model,
                        entry.embedding.len(),
                        self.config.dimension
                    ),
                ));
            }
            if entry.embedding.iter().any(|value| !value.is_finite()) {
                return Err(MemoryError::Serialization {
                    message: "embeddings: a vector has a value that is not finite".to_owned(),
                    source: None,
                });
            }
            match out.get_mut(index) {
                Some(slot @ None) => *slot = Some(entry.embedding),
                _ => {
                    return Err(MemoryError::Serialization {
                        message: format!("embeddings: index {index} out of range or repeated"),
                        source: None,
                    });
                }
            }
        }
        // Every slot is filled: as many distinct in-range indexes as texts.
        Ok(out.into_iter().flatten().collect())
    }

    /// The vector of one text put after `prefix`.
    async fn one(&self, text: &str, prefix: &str) -> Result<Vec<f32>> {
        let mut vectors = self.request(&[text], prefix).await?;
        vectors.pop().ok_or_else(|| MemoryError::Serialization {
            message: "embeddings: no vector".to_owned(),
            source: None,
        })
    }
}

#[async_trait]
impl EmbeddingProvider for HttpEmbedder {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        self.one(text, &self.config.document_prefix).await
    }

    async fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size) {
            out.extend(self.request(chunk, &self.config.document_prefix).await?);
        }
        Ok(out)
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.one(query, &self.config.query_prefix).await
    }

    fn dimension(&self) -> usize {
        self.config.dimension
    }
}
