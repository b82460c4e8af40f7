//! Page search: BM25F over each namespace's statistics, times the boost of the match rules,
//! with the best pages read and decoded last.

use memory_core::{PageHit, PageMatchSignals, PageQuery, PageRuleKeywords, PageRuleText, Result};
use rusqlite::{Connection, OptionalExtension};

use super::REFERENCED_BY;
use super::row::{COLUMN_COUNT, COLUMNS, read_raw};
use crate::error::Context;
use crate::fulltext;
use crate::sql::{decode_tags, json_rids, to_count};
use crate::terms::QueryTerms;

/// Candidates whose match rules are computed per round after the first (which takes
/// `top_k`), at least.
const CHUNK: usize = 64;
/// Candidates per round at most.
const MAX_CHUNK: usize = 1024;

/// A page that may make the cut, with its boosted score.
struct Candidate {
    score: f32,
    ns: String,
    id: String,
    rid: i64,
    signals: PageMatchSignals,
}

/// Best first: higher score, then namespace, then id (the in-memory backend's order: each
/// namespace's best by id, merged by namespace and id).
fn best_first(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.ns.cmp(&b.ns))
        .then_with(|| a.id.cmp(&b.id))
}

/// The match rules of a page search, computed for candidates a round at a time.
struct Rules<'c, 'q> {
    query: &'q PageQuery,
    keywords: PageRuleKeywords<'q>,
    /// The boost of every rule matching: the most a page's BM25F score can be multiplied by.
    max_boost: f32,
    /// Reads the rules' fields of a list of pages.
    fields: rusqlite::CachedStatement<'c>,
}

impl<'c, 'q> Rules<'c, 'q> {
    fn new(
        connection: &'c Connection,
        query: &'q PageQuery,
        keywords: &'q [String],
    ) -> Result<Self> {
        let fields = connection
            .prepare_cached(
                "SELECT p.rid, p.ns, p.id, p.title, p.summary, p.tags \
                 FROM json_each(?1) AS j CROSS JOIN pages p ON p.rid = j.value",
            )
            .context(|| "searching pages")?;
        let max_boost = PageMatchSignals {
            title_prefix: true,
            tag_exact: true,
            summary_contains: true,
        }
        .boost();
        Ok(Self {
            query,
            keywords: PageRuleKeywords::new(keywords),
            max_boost,
            fields,
        })
    }

    /// Adds the pages of `scored` (`(BM25F score, rid)`) that carry the query's tags to
    /// `held` with their boosted scores, best BM25F first a round at a time, until no page
    /// left could reach the `top_k`-th boosted score held; keeps the `top_k` best.
    fn weigh(&mut self, scored: &mut [(f32, i64)], held: &mut Vec<Candidate>) -> Result<()> {
        let what = || "searching pages";
        let top_k = self.query.top_k;
        let mut rest: &mut [(f32, i64)] = scored;
        let mut size = top_k.min(MAX_CHUNK);
        while !rest.is_empty() {
            if held.len() >= top_k {
                let next = rest
                    .iter()
                    .map(|(score, _)| *score)
                    .max_by(f32::total_cmp)
                    .unwrap_or(f32::NEG_INFINITY);
                if next * self.max_boost < held[top_k - 1].score {
                    break;
                }
            }
            let take = size.min(rest.len());
            if rest.len() > take {
                rest.select_nth_unstable_by(take - 1, |a, b| {
                    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
                });
            }
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(take);
            rest = tail;
            size = (size * 2).clamp(CHUNK, MAX_CHUNK);

            let list = json_rids(chunk.iter().map(|(_, rid)| *rid));
            let relevance: std::collections::HashMap<i64, f32> =
                chunk.iter().map(|(score, rid)| (*rid, *score)).collect();
            let mut rows = self.fields.query([list]).context(what)?;
            while let Some(row) = rows.next().context(what)? {
                let rid: i64 = row.get(0).context(what)?;
                let ns: String = row.get(1).context(what)?;
                let id: String = row.get(2).context(what)?;
                let tags = decode_tags(
                    &format_args!("page {id} in {ns}"),
                    &row.get::<_, String>(5).context(what)?,
                )?;
                if !self.query.tags.iter().all(|tag| tags.contains(tag)) {
                    continue;
                }
                let title: String = row.get(3).context(what)?;
                let summary: String = row.get(4).context(what)?;
                let signals = self
                    .keywords
                    .signals(&PageRuleText::new(&title, &summary), &tags);
                let Some(score) = relevance.get(&rid) else {
                    continue;
                };
                held.push(Candidate {
                    score: score * signals.boost(),
                    ns,
                    id,
                    rid,
                    signals,
                });
            }
            held.sort_by(best_first);
            held.truncate(top_k);
        }
        Ok(())
    }
}

/// The best `top_k` pages in the query's scope carrying its tags.
///
/// A page's score is its BM25F score (`fulltext`) times the boost of the match rules
/// ([`PageMatchSignals::boost`]), which needs the title, summary and tags. The pruned walk
/// the memory search uses finds the `top_k` best pages by BM25F alone; their boosted
/// scores put a floor under the `top_k`-th boosted score, and a page whose BM25F score
/// times the largest boost cannot reach that floor cannot make the cut. So a second walk
/// with that floor as its cut finds every page that can, and their rules are computed a
/// round at a time, best BM25F first, until `top_k` pages are held and no candidate left
/// could reach the `top_k`-th score even with the largest boost: the boost is at most that
/// of every rule matching, and an `f32` product grows with each factor, so the stop is
/// exact. Whole pages are decoded for the hits alone.
pub(super) fn search(
    connection: &Connection,
    query: &PageQuery,
    terms: &QueryTerms,
) -> Result<Vec<PageHit>> {
    let top_k = query.top_k;
    if top_k == 0 {
        return Ok(Vec::new());
    }
    let index = fulltext::pages();
    let keywords = query.rule_keywords().into_owned();
    let mut rules = Rules::new(connection, query, &keywords)?;
    let first = index.top(connection, &query.scope, terms, top_k)?;
    let mut held: Vec<Candidate> = Vec::new();
    let mut seen: std::collections::HashSet<i64> =
        first.candidates.iter().map(|(_, rid)| *rid).collect();
    let mut scored = first.candidates;
    rules.weigh(&mut scored, &mut held)?;
    if !first.complete {
        // Pages outside the first walk score below its cut; those that could still reach
        // the `top_k`-th boosted score (or, with fewer held, any page) are walked again.
        let floor = match held.get(top_k - 1) {
            Some(kth) => kth.score / rules.max_boost * (1.0 - 1e-6),
            None => f32::NEG_INFINITY,
        };
        let mut rest = index.above(connection, &query.scope, terms, floor)?;
        rest.retain(|(_, rid)| seen.insert(*rid));
        rules.weigh(&mut rest, &mut held)?;
    }
    let mut statement = connection
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, {REFERENCED_BY} FROM pages p WHERE p.rid = ?1"
        ))
        .context(|| "reading page hits")?;
    let mut hits = Vec::with_capacity(held.len());
    for candidate in held {
        let row = statement
            .query_row([candidate.rid], |row| {
                Ok((read_raw(row)?, row.get::<_, i64>(COLUMN_COUNT)?))
            })
            .optional()
            .context(|| format!("reading page {} in {}", candidate.id, candidate.ns))?;
        let Some((raw, referenced_by)) = row else {
            continue;
        };
        hits.push(PageHit {
            page: std::sync::Arc::new(raw.into_page()?),
            score: candidate.score,
            signals: candidate.signals,
            referenced_by: to_count(referenced_by),
        });
    }
    Ok(hits)
}
