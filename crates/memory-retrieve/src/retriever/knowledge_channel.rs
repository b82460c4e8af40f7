//! The knowledge channel: page search, with each page's relevance, overlap, reference and
//! time signals.

use memory_core::{Channel, PageQuery, Result, RetrievalSource, Signal};

use super::candidate::{Candidate, Found};
use super::request::Request;
use crate::scoring::{Signals, recency, reference, temporal_weight, text_overlap};

/// The most pages a recall with a time range searches to find its candidates in range.
const MOST_PAGES_SEARCHED: usize = 10_000;

/// The pages of `request` as candidates, and the microseconds the channel took.
pub(super) async fn gather(request: &Request<'_>) -> Result<(Vec<Candidate>, u64)> {
    let Some(knowledge) = request.knowledge else {
        return Ok((Vec::new(), 0));
    };
    let (config, filter) = (request.config, request.filter);
    if !config.strategy.knowledge() || !filter.admits_pages_and_entities() {
        return Ok((Vec::new(), 0));
    }
    let started = super::request::Stopwatch::start();
    let mut page_query = PageQuery::new(request.scope.clone(), request.query, request.candidates);
    page_query.tags = filter.tags.clone();
    // The page match rules keep their own keywords (the query's words as written): see
    // `page_rule_keywords`.
    let mut page_query = page_query.with_terms(request.terms.clone());
    let mut hits = knowledge.search(&page_query).await?;
    // A time range is checked on the hits (the page search takes none): searched deeper
    // while too few of them are in range and the search had more, so the best pages in
    // range are not cut by better ones outside it. Four times deeper each round, at most
    // MOST_PAGES_SEARCHED.
    if filter.since.is_some() || filter.until.is_some() {
        let in_range = |hits: &[memory_core::PageHit]| {
            hits.iter()
                .filter(|hit| filter.in_range(hit.page.updated_at))
                .count()
        };
        while in_range(&hits) < request.candidates
            && hits.len() >= page_query.top_k
            && page_query.top_k < MOST_PAGES_SEARCHED
        {
            page_query.top_k = page_query.top_k.saturating_mul(4).min(MOST_PAGES_SEARCHED);
            hits = knowledge.search(&page_query).await?;
        }
    }
    let best = hits
        .first()
        .map_or(1.0, |hit| hit.score)
        .max(f32::MIN_POSITIVE);
    let now = request.now;
    let out = hits
        .into_iter()
        .filter(|hit| filter.in_range(hit.page.updated_at))
        .take(request.candidates)
        .enumerate()
        .map(|(rank, hit)| {
            let page = hit.page;
            let mut signals = Signals::default();
            signals[Signal::Relevance] = hit.score / best;
            if request.wants_overlap() {
                signals[Signal::Overlap] = text_overlap(
                    &request.grams,
                    &[
                        (&page.title, 3.0),
                        (&page.summary, 2.0),
                        (&page.content, 1.0),
                    ],
                );
            }
            signals[Signal::Temporal] = temporal_weight(page.updated_at, now);
            signals[Signal::Reference] = reference(hit.referenced_by);
            signals[Signal::Importance] = 0.5;
            signals[Signal::Recency] =
                recency(page.updated_at, now, config.recency_half_life_hours);
            Candidate {
                record: RetrievalSource::KnowledgePage(page),
                channels: Found::new(Channel::Knowledge, rank + 1),
                signals,
            }
        })
        .collect();
    Ok((out, started.micros()))
}
