//! The graph channel: entities matched by the query's keywords, and the entities reached
//! from them by traversal.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use futures::future::try_join_all;
use memory_core::backend::entity_matches_keyword;
use memory_core::{Channel, GraphEntity, Result, RetrievalSource, Signal};

use super::MAX_EXPANDED_ENTITIES;
use super::candidate::{Candidate, Found, Key, RecordType};
use super::request::Request;
use crate::scoring::{Signals, reference, text_overlap};

/// The entities of `request` as candidates, and the microseconds the channel took.
pub(super) async fn gather(request: &Request<'_>) -> Result<(Vec<Candidate>, u64)> {
    let Some(graph) = request.graph else {
        return Ok((Vec::new(), 0));
    };
    let (config, filter, scope) = (request.config, request.filter, request.scope);
    if !config.strategy.graph()
        || !filter.allows_semantic()
        || filter.since.is_some()
        || filter.until.is_some()
    {
        return Ok((Vec::new(), 0));
    }
    let started = Instant::now();
    if !graph.may_have_entities(scope).await? {
        return Ok((Vec::new(), started.elapsed().as_micros() as u64));
    }
    let keywords = request.keywords();
    if keywords.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let matched = graph.find_by_keywords(scope, keywords).await?;
    // Each entity's share of the keywords it matches, computed once.
    let mut matched: Vec<(f32, Arc<GraphEntity>)> = matched
        .into_iter()
        .map(|entity| {
            let share = keywords
                .iter()
                .filter(|keyword| entity_matches_keyword(&entity, keyword))
                .count() as f32
                / keywords.len() as f32;
            (share, entity)
        })
        .collect();
    matched.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    matched.truncate(config.candidates_per_channel);
    let mut found: HashMap<Key, Candidate> = HashMap::new();
    let mut rank = 0;
    for (share, entity) in &matched {
        rank += 1;
        let key = (
            RecordType::Entity,
            entity.namespace.clone(),
            entity.id.clone(),
        );
        let mut signals = Signals::only(Signal::Graph, 1.0);
        signals[Signal::Relevance] = *share;
        found.insert(
            key,
            Candidate {
                signals,
                channels: Found::new(Channel::GraphMatch, rank),
                record: RetrievalSource::GraphEntity(Box::new(GraphEntity::clone(entity))),
            },
        );
    }
    if config.graph_depth > 0 {
        // The traversals run together; their results merge in the matched order.
        let expanded = matched
            .iter()
            .take(MAX_EXPANDED_ENTITIES)
            .map(|(_, entity)| {
                graph.get_related(&entity.namespace, &entity.id, config.graph_depth)
            });
        for related in try_join_all(expanded).await? {
            for reached in related {
                let key = (
                    RecordType::Entity,
                    reached.entity.namespace.clone(),
                    reached.entity.id.clone(),
                );
                match found.get_mut(&key) {
                    Some(existing) => {
                        let graph_signal = &mut existing.signals[Signal::Graph];
                        *graph_signal = graph_signal.max(reached.score);
                        if !existing.channels.contains(Channel::GraphTraversal) {
                            rank += 1;
                            existing.channels.add(Channel::GraphTraversal, rank);
                        }
                    }
                    None => {
                        rank += 1;
                        found.insert(
                            key,
                            Candidate {
                                signals: Signals::only(Signal::Graph, reached.score),
                                channels: Found::new(Channel::GraphTraversal, rank),
                                record: RetrievalSource::GraphEntity(Box::new(
                                    Arc::unwrap_or_clone(reached.entity),
                                )),
                            },
                        );
                    }
                }
                if found.len() >= config.candidates_per_channel * 2 {
                    break;
                }
            }
        }
    }
    let kept: Vec<Candidate> = found
        .into_values()
        .filter(|candidate| match &candidate.record {
            RetrievalSource::GraphEntity(entity) => {
                filter.tags.iter().all(|tag| entity.tags.contains(tag))
            }
            _ => false,
        })
        .collect();
    // Degrees are read together: on the SQL backends each is a query.
    let degrees = try_join_all(kept.iter().map(|candidate| {
        let (namespace, id) = (candidate.record.namespace(), candidate.record.id());
        graph.degree(namespace, id)
    }))
    .await?;
    let mut out = Vec::with_capacity(kept.len());
    for (mut candidate, degree) in kept.into_iter().zip(degrees) {
        if let (true, RetrievalSource::GraphEntity(entity)) =
            (request.wants_overlap(), &candidate.record)
        {
            candidate.signals[Signal::Overlap] = text_overlap(
                &request.grams,
                &[(&entity.name, 3.0), (&entity.description, 1.0)],
            );
        }
        candidate.signals[Signal::Reference] = reference(degree);
        candidate.signals[Signal::Importance] = 0.5;
        out.push(candidate);
    }
    Ok((out, started.elapsed().as_micros() as u64))
}
