//! Compression: long, stale memories rewritten shorter, their originals kept.
//!
//! A [`Summarizer`] turns texts into a shorter text within a token budget.
//! [`ExtractiveSummarizer`] is the default and needs no model: it keeps the sentences that
//! cover the most distinct terms, in their order. [`Memory::compress`](crate::Memory::compress)
//! compresses one memory with a text of the caller's; with a [`CompressionConfig`] on the
//! builder, [`Memory::maintain`](crate::Memory::maintain) compresses what has gone stale.

use std::collections::HashSet;
use std::fmt::Debug;

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use memory_core::text::Analyzer;
use memory_core::{MemoryFilter, MemoryKind, MemoryStore, Result, Scope};
use serde::{Deserialize, Serialize};

use crate::prompt::estimate_tokens;

/// Turns texts into one shorter text of at most about `max_tokens` tokens (as
/// [`estimate_tokens`] counts them).
#[async_trait]
pub trait Summarizer: Send + Sync + Debug + 'static {
    /// The summary of `texts`, in at most about `max_tokens` tokens.
    ///
    /// # Errors
    /// Whatever the summarizer's model or service reports.
    async fn summarize(&self, texts: &[&str], max_tokens: usize) -> Result<String>;
}

/// The summarizer that needs no model: it splits the texts into sentences and keeps, in
/// their original order, those that add the most distinct analyzer terms per token, until
/// the budget is spent. Deterministic; the first sentence is kept even when it alone is over
/// the budget (cut at a word), so a summary is never empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExtractiveSummarizer;

fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?' | '\n' | '。' | '！' | '？') {
            let end = at + c.len_utf8();
            let piece = text[start..end].trim();
            if !piece.is_empty() {
                out.push(piece);
            }
            start = end;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The longest prefix of `text` within `max_tokens`, cut at a whitespace when there is one.
fn cut(text: &str, max_tokens: usize) -> &str {
    let mut end = 0;
    for (at, c) in text.char_indices() {
        let next = at + c.len_utf8();
        if estimate_tokens(&text[..next]) > max_tokens {
            break;
        }
        end = next;
    }
    match text[..end].rfind(char::is_whitespace) {
        Some(space) if space > 0 && end < text.len() => text[..space].trim_end(),
        _ => &text[..end],
    }
}

#[async_trait]
impl Summarizer for ExtractiveSummarizer {
    async fn summarize(&self, texts: &[&str], max_tokens: usize) -> Result<String> {
        let analyzer = Analyzer::default();
        let pieces: Vec<&str> = texts.iter().flat_map(|text| sentences(text)).collect();
        let terms: Vec<HashSet<String>> = pieces
            .iter()
            .map(|piece| analyzer.unique_terms(piece).into_iter().collect())
            .collect();
        let mut covered: HashSet<&str> = HashSet::new();
        let mut chosen = vec![false; pieces.len()];
        let mut used = 0usize;
        loop {
            // The sentence adding the most new terms per token that still fits.
            let mut best: Option<(f64, usize)> = None;
            for (at, piece) in pieces.iter().enumerate() {
                if chosen[at] {
                    continue;
                }
                let cost = estimate_tokens(piece) + 1;
                if used + cost > max_tokens {
                    continue;
                }
                let gain = terms[at]
                    .iter()
                    .filter(|term| !covered.contains(term.as_str()))
                    .count();
                if gain == 0 {
                    continue;
                }
                let value = gain as f64 / cost as f64;
                if best.is_none_or(|(top, _)| value > top) {
                    best = Some((value, at));
                }
            }
            let Some((_, at)) = best else { break };
            chosen[at] = true;
            used += estimate_tokens(pieces[at]) + 1;
            covered.extend(terms[at].iter().map(String::as_str));
        }
        let summary: Vec<&str> = pieces
            .iter()
            .zip(&chosen)
            .filter(|(_, chosen)| **chosen)
            .map(|(piece, _)| *piece)
            .collect();
        if summary.is_empty() {
            let first = pieces.first().copied().unwrap_or_default();
            return Ok(cut(first, max_tokens.max(1)).to_owned());
        }
        Ok(summary.join(" "))
    }
}

/// When maintenance compresses a memory: it is older than `older_than_days`, was not
/// accessed in that time, is longer than `max_tokens`, and is neither pinned, short-term
/// (a conversation message) nor compressed already. It is compressed to at most
/// `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressionConfig {
    /// Days without creation or access before a memory counts as stale; default 30.
    pub older_than_days: u32,
    /// The compressed size, and the size a memory must exceed to be compressed; default 64.
    pub max_tokens: usize,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            older_than_days: 30,
            max_tokens: 64,
        }
    }
}

/// Compresses the stale memories of `scope` (see [`CompressionConfig`]). Returns how many.
pub(crate) async fn compress_stale(
    store: &dyn MemoryStore,
    scope: &Scope,
    config: &CompressionConfig,
    summarizer: &dyn Summarizer,
    now: DateTime<Utc>,
) -> Result<usize> {
    let cutoff = now - Duration::days(i64::from(config.older_than_days));
    let filter = MemoryFilter::new(scope.clone()).with_time_range(None, Some(cutoff));
    let mut compressed = 0;
    for item in store.list(&filter).await? {
        let stale = item.last_accessed.is_none_or(|at| at < cutoff);
        if !stale
            || item.is_pinned()
            || item.is_compressed()
            || item.kind == MemoryKind::ShortTerm
            || estimate_tokens(&item.content) <= config.max_tokens
        {
            continue;
        }
        let summary = summarizer
            .summarize(&[&item.content], config.max_tokens)
            .await?;
        if summary.trim().is_empty() || summary.len() >= item.content.len() {
            continue;
        }
        store.update(item.compressed(summary)?).await?;
        compressed += 1;
    }
    Ok(compressed)
}
