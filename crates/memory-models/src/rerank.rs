//! [`HttpReranker`]: a [`Reranker`] over the common `/rerank` API of cross-encoder services
//! (Cohere, Jina, text-embeddings-inference).

use async_trait::async_trait;
use memory_core::{MemoryError, Result};
use memory_retrieve::Reranker;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::http::{HttpClient, HttpConfig, truncate_chars};

/// The characters of one document sent at most.
const MAX_DOCUMENT_CHARS: usize = 4000;

/// The request shape of a `/rerank` service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankApi {
    /// Cohere and Jina: `{"model", "query", "documents", "top_n"}`, answered with
    /// `{"results": [{"index", "relevance_score"}]}`.
    #[default]
    Cohere,
    /// text-embeddings-inference: `{"query", "texts"}`, answered with `[{"index",
    /// "score"}]`.
    Tei,
}

/// Settings of an [`HttpReranker`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RerankerConfig {
    /// Where the service is (`https://api.cohere.com/v2`, `https://api.jina.ai/v1`,
    /// `http://localhost:8080` for text-embeddings-inference); `/rerank` is appended.
    pub http: HttpConfig,
    /// The model name, sent with the Cohere shape (`rerank-v3.5`, `jina-reranker-v2-base-multilingual`).
    pub model: String,
    /// The request shape.
    pub api: RerankApi,
}

impl Default for RerankerConfig {
    fn default() -> Self {
        Self {
            http: HttpConfig::new("http://localhost:8080"),
            model: String::new(),
            api: RerankApi::default(),
        }
    }
}

impl RerankerConfig {
    /// The service at `base_url` with `model`, Cohere shape.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            http: HttpConfig::new(base_url),
            model: model.into(),
            api: RerankApi::Cohere,
        }
    }

    /// Sets the request shape.
    pub fn with_api(mut self, api: RerankApi) -> Self {
        self.api = api;
        self
    }
}

/// A cross-encoder reranker over HTTP. An answer with a score outside `[0, 1]` holds raw
/// logits: all its scores are mapped into `[0, 1]` with the logistic function, which keeps
/// their order. A document the answer leaves out scores 0; an index out of range or
/// scored twice makes the answer an error.
#[derive(Clone, Debug)]
pub struct HttpReranker {
    client: HttpClient,
    config: RerankerConfig,
}

impl HttpReranker {
    /// A reranker for `config`.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `model` (empty with the Cohere shape) or an
    /// HTTP setting.
    pub fn new(config: RerankerConfig) -> Result<Self> {
        if config.api == RerankApi::Cohere && config.model.trim().is_empty() {
            return Err(MemoryError::invalid("model", "empty"));
        }
        Ok(Self {
            client: HttpClient::new(config.http.clone())?,
            config,
        })
    }
}

#[derive(Deserialize)]
struct RerankEntry {
    index: usize,
    #[serde(alias = "score")]
    relevance_score: f64,
}

#[derive(Deserialize)]
struct CohereAnswer {
    results: Vec<RerankEntry>,
}

#[async_trait]
impl Reranker for HttpReranker {
    async fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = documents
            .iter()
            .map(|text| truncate_chars(text, MAX_DOCUMENT_CHARS))
            .collect();
        let entries: Vec<RerankEntry> = match self.config.api {
            RerankApi::Cohere => {
                let body = json!({
                    "model": self.config.model,
                    "query": query,
                    "documents": texts,
                    "top_n": texts.len(),
                });
                let answer: CohereAnswer =
                    self.client.post_json("/rerank", &body, "rerank").await?;
                answer.results
            }
            RerankApi::Tei => {
                let body: Value = json!({"query": query, "texts": texts});
                self.client.post_json("/rerank", &body, "rerank").await?
            }
        };
        if entries
            .iter()
            .any(|entry| !entry.relevance_score.is_finite())
        {
            return Err(MemoryError::Serialization {
                message: "rerank: a score is not finite".to_owned(),
                source: None,
            });
        }
        // One mapping for the whole answer, so the order of the scores is kept: raw logits
        // (any of them outside [0, 1]) all through the logistic function, probabilities as
        // they are. Each score on its own put 1.1 below 0.9 and -0.1 above 0.1.
        let logits = entries
            .iter()
            .any(|entry| !(0.0..=1.0).contains(&entry.relevance_score));
        let mut scores: Vec<Option<f32>> = vec![None; documents.len()];
        for entry in entries {
            let score = entry.relevance_score;
            let score = if logits {
                1.0 / (1.0 + (-score).exp())
            } else {
                score
            };
            // A repeated index would replace the document's earlier score and leave another
            // document unscored (0): the answer is wrong, not to be guessed at.
            match scores.get_mut(entry.index) {
                Some(slot @ None) => *slot = Some(score as f32),
                _ => {
                    return Err(MemoryError::Serialization {
                        message: format!(
                            "rerank: index {} out of range or repeated ({} documents)",
                            entry.index,
                            documents.len()
                        ),
                        source: None,
                    });
                }
            }
        }
        // A document the service left out (a `top_n` below the count) scores 0.
        Ok(scores
            .into_iter()
            .map(|score| score.unwrap_or(0.0))
            .collect())
    }
}
