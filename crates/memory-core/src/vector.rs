//! Vector math for the embedding channel: cosine similarity with a prepared query, and the
//! check every stored embedding passes. Every backend scores embeddings with these, so they
//! agree to the bit.

use crate::{MemoryError, Result};

/// The cosine similarity of two vectors, in `[-1, 1]`; `None` when their lengths differ or
/// either is all zeros (no direction to compare). See [`CosineQuery`] for the precision.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> Option<f32> {
    CosineQuery::new(a).similarity(b)
}

/// A query vector prepared for many cosine comparisons: its norm is computed once.
///
/// The dot product and the other vector's norm are summed in `f32` over 8 independent lanes
/// (the compiler turns them into SIMD), then the lanes are added in `f64`: for embeddings of
/// hundreds of values the result is within a few `f32` ulps of the exact one, at a fraction
/// of the cost. When a lane overflows (values beyond about `1e19`) or a vector is so small
/// that its `f32` squares could underflow (norm under `1e-10`), the comparison is redone
/// exactly in `f64`, so every finite vector with a direction compares.
#[derive(Clone, Copy, Debug)]
pub struct CosineQuery<'a> {
    vector: &'a [f32],
    norm: f64,
}

/// Lanes of the `f32` sums.
const LANES: usize = 8;
/// Below this norm a vector's `f32` squares may underflow; such vectors are summed in `f64`.
const SMALLEST_FAST_NORM: f64 = 1e-10;

impl<'a> CosineQuery<'a> {
    /// Prepares `vector`.
    pub fn new(vector: &'a [f32]) -> Self {
        let norm = vector
            .iter()
            .map(|x| f64::from(*x) * f64::from(*x))
            .sum::<f64>()
            .sqrt();
        Self { vector, norm }
    }

    /// The cosine similarity with `other`, in `[-1, 1]`; `None` when the lengths differ or
    /// either vector is all zeros.
    pub fn similarity(&self, other: &[f32]) -> Option<f32> {
        let a = self.vector;
        if a.len() != other.len() || a.is_empty() || self.norm == 0.0 || !self.norm.is_finite() {
            return None;
        }
        let (mut dot, mut norm) = ([0f32; LANES], [0f32; LANES]);
        let (head_a, head_b) = (a.chunks_exact(LANES), other.chunks_exact(LANES));
        let (tail_a, tail_b) = (head_a.remainder(), head_b.remainder());
        for (x, y) in head_a.zip(head_b) {
            for lane in 0..LANES {
                dot[lane] += x[lane] * y[lane];
                norm[lane] += y[lane] * y[lane];
            }
        }
        let wide = |lanes: [f32; LANES]| lanes.iter().map(|v| f64::from(*v)).sum::<f64>();
        let (mut dot, mut norm_sq) = (wide(dot), wide(norm));
        for (x, y) in tail_a.iter().zip(tail_b) {
            dot += f64::from(*x) * f64::from(*y);
            norm_sq += f64::from(*y) * f64::from(*y);
        }
        // f32 squares and products of values under about 1e-19 underflow: when either
        // vector is that small overall, its parts may have vanished, so sum exactly.
        let tiny = self.norm < SMALLEST_FAST_NORM || norm_sq < SMALLEST_FAST_NORM.powi(2);
        if tiny || !dot.is_finite() || !norm_sq.is_finite() {
            (dot, norm_sq) = exact_dot_and_norm(a, other);
        }
        let norms = self.norm * norm_sq.sqrt();
        if !norms.is_finite() || norms == 0.0 {
            return None;
        }
        Some((dot / norms).clamp(-1.0, 1.0) as f32)
    }
}

/// `a · b` and `|b|²`, summed in `f64`.
pub(crate) fn exact_dot_and_norm(a: &[f32], b: &[f32]) -> (f64, f64) {
    a.iter().zip(b).fold((0.0, 0.0), |(dot, norm), (x, y)| {
        let (x, y) = (f64::from(*x), f64::from(*y));
        (dot + x * y, norm + y * y)
    })
}

/// Checks an embedding vector: not empty, every value finite.
///
/// # Errors
/// [`MemoryError::InvalidInput`] naming `embedding`.
pub fn validate_embedding(embedding: &[f32]) -> Result<()> {
    if embedding.is_empty() {
        return Err(MemoryError::invalid("embedding", "empty vector"));
    }
    if embedding.iter().any(|value| !value.is_finite()) {
        return Err(MemoryError::invalid(
            "embedding",
            "holds a value that is not finite",
        ));
    }
    Ok(())
}
