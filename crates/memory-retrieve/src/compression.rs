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
use memory_core::{
    ConditionalSave, MemoryError, MemoryFilter, MemoryKind, MemoryStore, Result, Scope,
};
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
/// One pass: the prefix's [`estimate_tokens`] is counted as it grows.
fn cut(text: &str, max_tokens: usize) -> &str {
    let (mut each, mut other) = (0usize, 0usize);
    let mut end = 0;
    for (at, c) in text.char_indices() {
        if crate::prompt::one_token_each(c) {
            each += 1;
        } else {
            other += 1;
        }
        if each + other.div_ceil(4) > max_tokens {
            break;
        }
        end = at + c.len_utf8();
    }
    match text[..end].rfind(char::is_whitespace) {
        Some(space) if space > 0 && end < text.len() => text[..space].trim_end(),
        _ => &text[..end],
    }
}

/// A sentence's place in the greedy choice: the new terms it adds per token when last
/// counted (an upper bound of what it adds now, since the covered terms only grow), then
/// the earlier sentence first.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Offer {
    value: f64,
    at: usize,
}

impl Eq for Offer {}

impl Ord for Offer {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.value
            .total_cmp(&other.value)
            .then_with(|| other.at.cmp(&self.at))
    }
}

impl PartialOrd for Offer {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Which of `pieces` (each `terms`) the greedy choice keeps within `max_tokens`: again and
/// again the sentence that adds the most new terms per token and still fits, the earlier
/// one on a tie, until none adds a term. Lazily: a sentence's value can only fall as terms
/// are covered, so the best one counted is counted again, and taken when it still leads.
/// Each choice costs a recount of the sentences whose counts fell, not of every sentence.
fn choose(pieces: &[&str], terms: &[HashSet<String>], max_tokens: usize) -> Vec<bool> {
    let costs: Vec<usize> = pieces
        .iter()
        .map(|piece| estimate_tokens(piece) + 1)
        .collect();
    let mut covered: HashSet<&str> = HashSet::new();
    let mut chosen = vec![false; pieces.len()];
    let mut used = 0usize;
    let value = |at: usize, covered: &HashSet<&str>| {
        let gain = terms[at]
            .iter()
            .filter(|term| !covered.contains(term.as_str()))
            .count();
        gain as f64 / costs[at] as f64
    };
    let mut offers: std::collections::BinaryHeap<Offer> = (0..pieces.len())
        .filter(|&at| costs[at] <= max_tokens)
        .map(|at| Offer {
            value: value(at, &covered),
            at,
        })
        .filter(|offer| offer.value > 0.0)
        .collect();
    while let Some(offer) = offers.pop() {
        // Used only grows: a sentence that no longer fits never will.
        if used + costs[offer.at] > max_tokens {
            continue;
        }
        let now = Offer {
            value: value(offer.at, &covered),
            at: offer.at,
        };
        if now.value <= 0.0 {
            continue;
        }
        if offers.peek().is_some_and(|next| *next > now) {
            offers.push(now);
            continue;
        }
        chosen[now.at] = true;
        used += costs[now.at];
        covered.extend(terms[now.at].iter().map(String::as_str));
    }
    chosen
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
        let chosen = choose(&pieces, &terms, max_tokens);
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

/// `days` before `now`; `None` when that is before any representable time (so nothing is
/// that old). A setting in days may be any `u32`, past what `chrono` counts in a duration.
pub(crate) fn days_before(now: DateTime<Utc>, days: u32) -> Option<DateTime<Utc>> {
    Duration::try_days(i64::from(days)).and_then(|back| now.checked_sub_signed(back))
}

/// Compresses the stale memories of `scope` (see [`CompressionConfig`]). Returns how many.
pub(crate) async fn compress_stale(
    store: &dyn MemoryStore,
    scope: &Scope,
    config: &CompressionConfig,
    summarizer: &dyn Summarizer,
    now: DateTime<Utc>,
) -> Result<usize> {
    let Some(cutoff) = days_before(now, config.older_than_days) else {
        return Ok(0);
    };
    let filter = MemoryFilter::new(scope.clone()).with_time_range(None, Some(cutoff));
    let mut compressed = 0;
    // A page at a time: a scope may hold any number of old memories.
    let mut after: Option<memory_core::ListPosition> = None;
    loop {
        let mut page = filter.clone().with_limit(COMPRESSION_PAGE);
        if let Some(position) = after.take() {
            page = page.after(position);
        }
        let items = store.list(&page).await?;
        let Some(last) = items.last() else { break };
        after = Some(memory_core::ListPosition::of(last));
        let full = items.len() == COMPRESSION_PAGE;
        compressed += compress_page(store, items, cutoff, config, summarizer).await?;
        if !full {
            break;
        }
    }
    Ok(compressed)
}

/// The memories a compression pass reads at a time.
const COMPRESSION_PAGE: usize = 256;

/// [`compress_stale`] over one page of the memories made before `cutoff`. The page's
/// compressions are written together ([`MemoryStore::save_each_if`]), each only over the
/// copy summarised: one transaction for the page, not one per memory.
async fn compress_page(
    store: &dyn MemoryStore,
    items: Vec<memory_core::MemoryItem>,
    cutoff: DateTime<Utc>,
    config: &CompressionConfig,
    summarizer: &dyn Summarizer,
) -> Result<usize> {
    let mut edits = Vec::new();
    for item in items {
        let stale = item.last_accessed.is_none_or(|at| at < cutoff);
        if !stale
            || item.is_pinned()
            || item.is_compressed()
            || item.kind == MemoryKind::ShortTerm
            || estimate_tokens(&item.content) <= config.max_tokens
        {
            continue;
        }
        let summary = match summarizer
            .summarize(&[&item.content], config.max_tokens)
            .await
        {
            Ok(summary) => summary,
            // A summary the model could not give within its limit: this memory stays whole,
            // and the pass (with the maintenance after it) goes on.
            Err(MemoryError::LimitExceeded(reason)) => {
                tracing::warn!(%reason, id = %item.id, "a memory was left uncompressed");
                continue;
            }
            Err(error) => return fail_after(store, edits, error).await,
        };
        if summary.trim().is_empty() || summary.len() >= item.content.len() {
            continue;
        }
        // Written only over the copy summarised: a memory changed while its summary was
        // written (an edit, a pin) or forgotten is left as it is now, for the next pass.
        let read_at = item.updated_at;
        match item.compressed(summary) {
            Ok(compressed) => edits.push(ConditionalSave::update(
                compressed.revised(read_at),
                read_at,
            )),
            Err(error) => return fail_after(store, edits, error).await,
        }
    }
    write_each(store, edits).await
}

/// Fails a page with `error` once the compressions made before it (`edits`) are written:
/// a failure keeps the work done before it, as it does when each is written on its own.
async fn fail_after(
    store: &dyn MemoryStore,
    edits: Vec<ConditionalSave>,
    error: MemoryError,
) -> Result<usize> {
    write_each(store, edits).await?;
    Err(error)
}

/// Writes `edits` at once ([`MemoryStore::save_each_if`]), each only over the copy it was
/// made from. Returns how many were written. An edit a store would refuse is left out
/// ([`storable`]).
pub(crate) async fn write_each(
    store: &dyn MemoryStore,
    edits: Vec<ConditionalSave>,
) -> Result<usize> {
    let edits: Vec<ConditionalSave> = edits.into_iter().filter(storable).collect();
    if edits.is_empty() {
        return Ok(0);
    }
    let written = store.save_each_if(edits).await?;
    Ok(written.into_iter().filter(|written| *written).count())
}

/// Whether a maintenance edit holds only valid memories; one that does not (a memory whose
/// metadata the edit took past its limit) is logged and left out, not written with its
/// batch: [`MemoryStore::save_each_if`] checks every write before it makes any, so one
/// such edit would refuse its whole batch, at every pass.
pub(crate) fn storable(edit: &ConditionalSave) -> bool {
    match edit
        .items
        .iter()
        .try_for_each(memory_core::MemoryItem::validate)
    {
        Ok(()) => true,
        Err(error) => {
            let id = edit.items.first().map_or("", |item| item.id.as_str());
            tracing::warn!(%error, %id, "a maintenance edit the store would refuse was left out");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use memory_core::text::Analyzer;
    use proptest::prelude::*;

    use super::{choose, cut, sentences};
    use crate::prompt::estimate_tokens;

    /// The greedy choice counted out in full at every step: every sentence that fits
    /// counted again, the best taken (the earlier on a tie).
    fn choose_by_recounting(
        pieces: &[&str],
        terms: &[HashSet<String>],
        max_tokens: usize,
    ) -> Vec<bool> {
        let mut covered: HashSet<&str> = HashSet::new();
        let mut chosen = vec![false; pieces.len()];
        let mut used = 0usize;
        loop {
            let mut best: Option<(f64, usize)> = None;
            for (at, piece) in pieces.iter().enumerate() {
                let cost = estimate_tokens(piece) + 1;
                if chosen[at] || used + cost > max_tokens {
                    continue;
                }
                let gain = terms[at]
                    .iter()
                    .filter(|term| !covered.contains(term.as_str()))
                    .count();
                let value = gain as f64 / cost as f64;
                if gain > 0 && best.is_none_or(|(top, _)| value > top) {
                    best = Some((value, at));
                }
            }
            let Some((_, at)) = best else { break };
            chosen[at] = true;
            used += estimate_tokens(pieces[at]) + 1;
            covered.extend(terms[at].iter().map(String::as_str));
        }
        chosen
    }

    /// The longest prefix within the budget, each prefix counted whole.
    fn cut_by_recounting(text: &str, max_tokens: usize) -> &str {
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

    const WORDS: [&str; 12] = [
        "garden", "tomato", "river", "piano", "bread", "train", "北京", "咖啡", "lamp", "cat",
        "stone", "paper",
    ];

    proptest! {
        /// The lazy greedy choice keeps exactly the sentences the full recount keeps.
        #[test]
        fn the_lazy_choice_is_the_greedy_choice(
            text in prop::collection::vec((0..WORDS.len(), 0u8..4), 1..120),
            max_tokens in 1usize..80,
        ) {
            let mut written = String::new();
            for (word, end) in text {
                written.push_str(WORDS[word]);
                written.push_str(match end { 0 => ". ", 1 => "! ", _ => " " });
            }
            let pieces = sentences(&written);
            let analyzer = Analyzer::default();
            let terms: Vec<HashSet<String>> = pieces
                .iter()
                .map(|piece| analyzer.unique_terms(piece).into_iter().collect())
                .collect();
            prop_assert_eq!(
                choose(&pieces, &terms, max_tokens),
                choose_by_recounting(&pieces, &terms, max_tokens)
            );
        }

        /// Counting the prefix as it grows cuts where counting each prefix whole does.
        #[test]
        fn the_one_pass_cut_is_the_prefix_cut(
            text in "[a-z 北京。안녕🙂]{0,200}",
            max_tokens in 1usize..60,
        ) {
            prop_assert_eq!(cut(&text, max_tokens), cut_by_recounting(&text, max_tokens));
        }
    }

    #[test]
    fn a_long_text_without_a_sentence_end_is_cut_within_the_budget() {
        let text = "word ".repeat(200_000);
        let kept = cut(&text, 100_000);
        assert!(estimate_tokens(kept) <= 100_000);
        assert!(kept.len() > 399_000, "{}", kept.len());
        assert!(kept.ends_with("word"));
    }
}
