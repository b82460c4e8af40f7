//! The optional embedding channel's helpers: checked query embeddings, the similarity
//! signal, and the weights that give it a say.

use memory_core::{EmbeddingProvider, MemoryError, MemoryItem, Result, cosine_similarity};

#[cfg(feature = "embeddings")]
use crate::{RetrieverConfig, ScoreWeights, ScoringStrategy};

/// Checks one vector of `provider`: its dimension and finite values.
fn check(provider: &dyn EmbeddingProvider, vector: &[f32]) -> Result<()> {
    if vector.len() != provider.dimension() {
        return Err(MemoryError::invalid(
            "embedding",
            format!(
                "the provider returned {} values, its dimension is {}",
                vector.len(),
                provider.dimension()
            ),
        ));
    }
    memory_core::backend::validate_embedding(vector)
}

/// `text` embedded by `provider`, checked: as long as the provider's dimension, every value
/// finite. A provider that breaks its own contract is reported, not trusted.
///
/// # Errors
/// The provider's errors; [`MemoryError::InvalidInput`] naming `embedding` for a vector of
/// the wrong length or with a non-finite value.
pub(crate) async fn embed_checked(
    provider: &dyn EmbeddingProvider,
    text: &str,
) -> Result<Vec<f32>> {
    let vector = provider.embed(text).await?;
    check(provider, &vector)?;
    Ok(vector)
}

/// The query `query` embedded by `provider` ([`embed_query`](EmbeddingProvider::embed_query),
/// the query's form for models with distinct forms), checked as by [`embed_checked`].
///
/// # Errors
/// As [`embed_checked`].
pub(crate) async fn embed_query_checked(
    provider: &dyn EmbeddingProvider,
    query: &str,
) -> Result<Vec<f32>> {
    let vector = provider.embed_query(query).await?;
    check(provider, &vector)?;
    Ok(vector)
}

/// `texts` embedded by `provider` in one [`embed_batch`](EmbeddingProvider::embed_batch)
/// call, each vector checked as by [`embed_checked`], and as many vectors as texts.
///
/// # Errors
/// The provider's errors; [`MemoryError::InvalidInput`] naming `embedding` for a wrong
/// count, a vector of the wrong length or a non-finite value.
pub(crate) async fn embed_batch_checked(
    provider: &dyn EmbeddingProvider,
    texts: &[&str],
) -> Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vectors = provider.embed_batch(texts).await?;
    if vectors.len() != texts.len() {
        return Err(MemoryError::invalid(
            "embedding",
            format!(
                "the provider returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            ),
        ));
    }
    for vector in &vectors {
        check(provider, vector)?;
    }
    Ok(vectors)
}

/// The `embedding` signal of `item` for a query vector: the cosine when it is above `min`
/// ([`RetrieverConfig::min_similarity`], at least 0), else (and for items without a
/// comparable embedding) 0.
pub(crate) fn similarity(query: &[f32], item: &MemoryItem, min: f32) -> f32 {
    item.embedding
        .as_deref()
        .and_then(|embedding| cosine_similarity(query, embedding))
        .filter(|cosine| *cosine > min.max(0.0))
        .unwrap_or(0.0)
}

/// `config` with [`ScoreWeights::with_embeddings`] if its scoring is still the default;
/// otherwise unchanged (the caller chose).
#[cfg(feature = "embeddings")]
pub(crate) fn with_embedding_weights(mut config: RetrieverConfig) -> RetrieverConfig {
    if config.scoring == ScoringStrategy::default() {
        config.scoring = ScoringStrategy::Hybrid(ScoreWeights::with_embeddings());
    }
    config
}
