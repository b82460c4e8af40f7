//! The knowledge channel: page search, with each page's relevance, overlap, reference and
//! time signals.

use memory_core::{Channel, PageQuery, Result, RetrievalSource, Signal};

use super::candidate::{Candidate, Found};
use super::request::Request;
use crate::scoring::{Signals, recency, reference, temporal_weight, text_overlap};

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
    let page_query = page_query.with_terms(request.terms.clone());
    let hits = knowledge.search(&page_query).await?;
    let best = hits
        .first()
        .map_or(1.0, |hit| hit.score)
        .max(f32::MIN_POSITIVE);
    let now = request.now;
    let out = hits
        .into_iter()
        .filter(|hit| filter.in_range(hit.page.updated_at))
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
