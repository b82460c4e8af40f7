//! The model clients against scripted servers on loopback: recorded answers, malformed JSON,
//! timeouts, 429 and 500. No test needs the internet.

#[cfg(feature = "embeddings-http")]
mod embeddings;
#[cfg(feature = "llm")]
mod llm;
#[cfg(feature = "rerank-http")]
mod rerank;
#[cfg(any(feature = "llm", feature = "embeddings-http", feature = "rerank-http"))]
mod server;
