//! HTTP clients for the models agent-memory can use, each behind a feature:
//!
//! - `llm`: [`ChatModel`], an OpenAI-compatible chat-completions client (OpenAI, Ollama,
//!   vLLM, llama.cpp's server), which is also a
//!   [`ConflictDetector`](memory_retrieve::ConflictDetector) and a
//!   [`Summarizer`](memory_retrieve::Summarizer), and [`LlmEnricher`], an
//!   [`Enricher`](memory_retrieve::Enricher) over it;
//! - `embeddings-http`: [`HttpEmbedder`], an
//!   [`EmbeddingProvider`](memory_core::EmbeddingProvider) over `/embeddings`;
//! - `rerank-http`: [`HttpReranker`], a [`Reranker`](memory_retrieve::Reranker) over the
//!   `/rerank` API of Cohere, Jina and text-embeddings-inference.
//!
//! Every client posts JSON over HTTP/1.1 (HTTPS with rustls), with a timeout per request,
//! retries with backoff on 429, 5xx, timeouts and refused connections, and a bound on
//! requests in flight ([`HttpConfig`]). None runs on the write path of
//! [`Memory::remember`](memory_retrieve::Memory::remember): enrichment is queued, a model
//! of the conflict judge is the one exception the caller opts into.
//!
//! ```no_run
//! # #[cfg(feature = "llm")] {
//! use std::sync::Arc;
//! use memory_models::{ChatConfig, ChatModel, LlmEnricher};
//! use memory_retrieve::Memory;
//! let model = ChatModel::new(ChatConfig::new("http://localhost:11434/v1", "llama3.1"))?;
//! let memory = Memory::builder()
//!     .enricher(Arc::new(LlmEnricher::new(model)))
//!     .build()?;
//! # }
//! # Ok::<(), memory_core::MemoryError>(())
//! ```

#[cfg(feature = "embeddings-http")]
mod embeddings;
#[cfg(any(feature = "llm", feature = "embeddings-http", feature = "rerank-http"))]
mod http;
#[cfg(feature = "llm")]
mod llm;
#[cfg(feature = "rerank-http")]
mod rerank;

#[cfg(feature = "embeddings-http")]
pub use crate::embeddings::{EmbeddingConfig, HttpEmbedder};
#[cfg(any(feature = "llm", feature = "embeddings-http", feature = "rerank-http"))]
pub use crate::http::HttpConfig;
#[cfg(feature = "llm")]
pub use crate::llm::{ChatConfig, ChatModel, LlmEnricher};
#[cfg(feature = "rerank-http")]
pub use crate::rerank::{HttpReranker, RerankApi, RerankerConfig};
