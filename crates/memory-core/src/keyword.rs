//! Keyword extraction, embeddings and clocks: the small pluggable pieces.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};

use crate::Result;

/// Turns a query into the keywords that every retrieval channel shares.
pub trait KeywordExtractor: Send + Sync + Debug + 'static {
    /// The keywords of `query`, most important first, without duplicates.
    fn extract(&self, query: &str) -> Vec<String>;
}

impl<T: KeywordExtractor + ?Sized> KeywordExtractor for Arc<T> {
    fn extract(&self, query: &str) -> Vec<String> {
        (**self).extract(query)
    }
}

impl<T: KeywordExtractor + ?Sized> KeywordExtractor for Box<T> {
    fn extract(&self, query: &str) -> Vec<String> {
        (**self).extract(query)
    }
}

/// Turns text into vectors, for the optional embedding channel. agent-memory ships no model;
/// implement this over the model or service you use.
///
/// Stored texts go through [`embed`](Self::embed) and [`embed_batch`](Self::embed_batch),
/// a recall's query through [`embed_query`](Self::embed_query). Models trained with
/// distinct forms for the two (E5's `query: ` and `passage: `, nomic-embed-text's
/// `search_query: ` and `search_document: `, BGE's query instruction) find less when a
/// query is embedded as a stored text; override `embed_query` for them.
#[async_trait]
pub trait EmbeddingProvider: Send + Sync + Debug + 'static {
    /// The embedding of one stored text, of length [`dimension`](Self::dimension).
    ///
    /// # Errors
    /// Whatever the model or service reports, mapped to a [`MemoryError`](crate::MemoryError).
    async fn embed(&self, text: &str) -> Result<Vec<f32>>;

    /// The embeddings of many texts, in order. The default calls [`embed`](Self::embed) for each.
    ///
    /// # Errors
    /// As [`embed`](Self::embed).
    async fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for text in texts {
            out.push(self.embed(text).await?);
        }
        Ok(out)
    }

    /// The embedding of a search query, compared with the stored texts' embeddings. The
    /// default embeds it as a stored text ([`embed`](Self::embed)), which is right for
    /// symmetric models (OpenAI's, MiniLM).
    ///
    /// # Errors
    /// As [`embed`](Self::embed).
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed(query).await
    }

    /// The length of every vector this provider returns.
    fn dimension(&self) -> usize;
}

#[deny(clippy::missing_trait_methods)]
#[async_trait]
impl<T: EmbeddingProvider + ?Sized> EmbeddingProvider for Arc<T> {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        (**self).embed(text).await
    }
    async fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        (**self).embed_batch(texts).await
    }
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        (**self).embed_query(query).await
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
}

#[deny(clippy::missing_trait_methods)]
#[async_trait]
impl<T: EmbeddingProvider + ?Sized> EmbeddingProvider for Box<T> {
    async fn embed(&self, text: &str) -> Result<Vec<f32>> {
        (**self).embed(text).await
    }
    async fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        (**self).embed_batch(texts).await
    }
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        (**self).embed_query(query).await
    }
    fn dimension(&self) -> usize {
        (**self).dimension()
    }
}

/// The source of "now" for TTL, decay and recency. Scoring and eviction never read the
/// system time directly, so tests can drive time with a [`ManualClock`].
pub trait Clock: Send + Sync + Debug + 'static {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

impl<T: Clock + ?Sized> Clock for Arc<T> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

impl<T: Clock + ?Sized> Clock for Box<T> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to, for deterministic tests of TTL and decay.
///
/// ```
/// use memory_core::{Clock, ManualClock};
/// let clock = ManualClock::new("2024-01-01T00:00:00Z".parse().unwrap());
/// clock.advance(chrono::Duration::days(2));
/// assert_eq!(clock.now().to_rfc3339(), "2024-01-03T00:00:00+00:00");
/// ```
#[derive(Debug)]
pub struct ManualClock {
    micros: AtomicI64,
}

impl ManualClock {
    /// A clock stopped at `at`.
    pub fn new(at: DateTime<Utc>) -> Self {
        Self {
            micros: AtomicI64::new(at.timestamp_micros()),
        }
    }

    /// Moves the clock to `at`.
    pub fn set(&self, at: DateTime<Utc>) {
        self.micros.store(at.timestamp_micros(), Ordering::SeqCst);
    }

    /// Moves the clock forward (or back, for a negative duration).
    pub fn advance(&self, by: chrono::Duration) {
        let delta = by.num_microseconds().unwrap_or(i64::MAX);
        let _ = self
            .micros
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(delta))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        Utc.timestamp_micros(self.micros.load(Ordering::SeqCst))
            .single()
            .unwrap_or_default()
    }
}
