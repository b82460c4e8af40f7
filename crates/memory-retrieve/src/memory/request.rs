//! What a caller hands `Memory`: [`Remember`] (a memory to store, with its options) and
//! [`RecallOptions`] (per-call overrides of the retrieval settings), and what
//! [`Memory::stats`](super::Memory::stats) returns.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use memory_core::{MemoryError, MemoryKind, Namespace};
use serde::{Deserialize, Serialize};

use crate::retriever::{Fusion, RecallFilter, RecallView, RetrievalStrategy, RetrieverConfig};
use crate::scoring::ScoringStrategy;

/// What to remember: text plus its kind, importance, tags, metadata and time.
#[derive(Clone, Debug, PartialEq)]
pub struct Remember {
    /// The namespace (tenant / agent / session) it belongs to.
    pub namespace: Namespace,
    /// The text.
    pub text: String,
    /// Its kind, default episodic.
    pub kind: MemoryKind,
    /// Its importance in `[0, 1]`, default 0.5.
    pub importance: f32,
    /// Tags (normalised on build).
    pub tags: Vec<String>,
    /// Metadata, a JSON object.
    pub metadata: serde_json::Value,
    /// Creation time; default the clock's now (set it when replaying old conversations).
    pub created_at: Option<DateTime<Utc>>,
    /// An explicit id; default a fresh one.
    pub id: Option<String>,
    /// Where it came from.
    pub source: Option<String>,
    /// Text that situates it, indexed with a lower weight (see
    /// [`memory_core::CONTEXT_METADATA_KEY`]); for a dialogue turn, the message it answers.
    pub context: Option<String>,
    /// Pinned: never evicted, decayed or compressed (see
    /// [`memory_core::PINNED_METADATA_KEY`]).
    pub pinned: bool,
    /// The fact it states (`"user.city"`): it supersedes the current memory of that key.
    pub fact_key: Option<String>,
    /// From when the fact holds in the world.
    pub valid_from: Option<DateTime<Utc>>,
    /// Until when the fact holds in the world.
    pub valid_until: Option<DateTime<Utc>>,
    /// How far the source is trusted, in `[0, 1]` (default 1): a memory never supersedes a
    /// more credible one automatically.
    pub credibility: Option<f32>,
    /// Stored as a memory of its own even when a stored one says the same: the
    /// [`DuplicatePolicy`](crate::DuplicatePolicy) is not applied to it (fact keys and
    /// conflicts are). For records that are events, each its own even in the same words: a
    /// dialogue turn given an id ([`Turn::id`](crate::Turn::id)) is remembered so.
    pub keep_apart: bool,
}

impl Remember {
    /// Refuses requests of one call that name one id twice in a namespace: stored one after
    /// another, or in one write, the later would replace the earlier while both were
    /// answered as stored. `list` is what the caller calls the requests (`memories`), for
    /// the message.
    ///
    /// # Errors
    /// The position of the first request naming an id an earlier one names in its
    /// namespace, and [`MemoryError::InvalidInput`] naming `id`.
    pub fn check_ids(
        requests: &[Remember],
        list: &str,
    ) -> std::result::Result<(), (usize, MemoryError)> {
        let keys = requests
            .iter()
            .map(|request| Some((&request.namespace, request.id.as_deref()?)));
        let Some((earlier, index)) = super::first_repeat(keys) else {
            return Ok(());
        };
        let request = &requests[index];
        let id = request.id.as_deref().unwrap_or_default();
        Err((
            index,
            MemoryError::invalid(
                "id",
                format!(
                    "{list}[{earlier}] has id {id} in {} too; one call stores each id once",
                    request.namespace
                ),
            ),
        ))
    }

    /// `text` in `namespace`, with defaults for the rest.
    pub fn new(namespace: Namespace, text: impl Into<String>) -> Self {
        Self {
            namespace,
            text: text.into(),
            kind: MemoryKind::Episodic,
            importance: 0.5,
            tags: Vec::new(),
            metadata: serde_json::json!({}),
            created_at: None,
            id: None,
            source: None,
            context: None,
            pinned: false,
            fact_key: None,
            valid_from: None,
            valid_until: None,
            credibility: None,
            keep_apart: false,
        }
    }

    /// Stores it as a memory of its own even when a stored one says the same (see the
    /// field of this name).
    pub fn keep_apart(mut self) -> Self {
        self.keep_apart = true;
        self
    }

    /// Sets the fact key (a subject and an attribute, `"user.city"`): the memory supersedes
    /// the current memory with this key in its namespace, which stays in its history.
    pub fn fact_key(mut self, key: impl Into<String>) -> Self {
        self.fact_key = Some(key.into());
        self
    }

    /// Sets when the fact holds in the world; either end may be open.
    pub fn valid(mut self, from: Option<DateTime<Utc>>, until: Option<DateTime<Utc>>) -> Self {
        self.valid_from = from;
        self.valid_until = until;
        self
    }

    /// Sets the credibility of its source, in `[0, 1]`.
    pub fn credibility(mut self, credibility: f32) -> Self {
        self.credibility = Some(credibility);
        self
    }

    /// Pins the memory: maintenance never evicts, decays or compresses it.
    pub fn pinned(mut self) -> Self {
        self.pinned = true;
        self
    }

    /// Sets the context: text that situates the memory, searchable but not part of it.
    pub fn context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    /// Sets the kind.
    pub fn kind(mut self, kind: MemoryKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the importance.
    pub fn importance(mut self, importance: f32) -> Self {
        self.importance = importance;
        self
    }

    /// Sets the tags.
    pub fn tags<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tags: I) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the metadata.
    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets the creation time.
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.created_at = Some(at);
        self
    }

    /// Sets the id (a dialogue's turn id, say). A memory already stored under it in the
    /// namespace is replaced whole, pin included, as a turn sent again replaces itself;
    /// without an id, the memory gets a new one. A stored memory that is part of a fact's
    /// history (it ended, or it ends others: a superseded version, a consolidated source, a
    /// successor, a summary) is not replaced: a remember that says what it says (its text,
    /// kind and fact key) is that memory sent again, writes nothing and is answered as
    /// merged into it; one that says something else is refused naming `id`, since the other
    /// memories of that history would name a memory that says something else.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the source.
    pub fn source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }
}

/// Per-call recall options. Each field that is set overrides that one setting of the
/// [`Memory`](super::Memory)'s retriever config for this call; the others keep the memory's values (so a
/// per-call `max_results` keeps, say, the embedding weights the builder installed).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RecallOptions {
    /// Which channels.
    pub strategy: Option<RetrievalStrategy>,
    /// How each candidate is scored.
    pub scoring: Option<ScoringStrategy>,
    /// How channels are fused.
    pub fusion: Option<Fusion>,
    /// Most results returned.
    pub max_results: Option<usize>,
    /// Results under this score are dropped.
    pub min_score: Option<f32>,
    /// Traversal depth from matched entities.
    pub graph_depth: Option<usize>,
    /// What may be found: kinds, time range, tags, metadata values, time view.
    pub filter: RecallFilter,
}

impl RecallOptions {
    /// At most `n` results.
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = Some(n);
        self
    }

    /// Only these kinds.
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = MemoryKind>) -> Self {
        self.filter.kinds = kinds.into_iter().collect();
        self
    }

    /// Which memories by time (default the current ones; see [`RecallView`]).
    pub fn view(mut self, view: RecallView) -> Self {
        self.filter.view = view;
        self
    }

    /// What was held true at `at`: [`RecallView::AsOf`].
    pub fn as_of(mut self, at: DateTime<Utc>) -> Self {
        self.filter.view = RecallView::AsOf(at);
        self
    }

    /// Only these channels.
    pub fn strategy(mut self, strategy: RetrievalStrategy) -> Self {
        self.strategy = Some(strategy);
        self
    }

    /// This scoring strategy.
    pub fn scoring(mut self, scoring: ScoringStrategy) -> Self {
        self.scoring = Some(scoring);
        self
    }

    /// This fusion of the channels.
    pub fn fusion(mut self, fusion: Fusion) -> Self {
        self.fusion = Some(fusion);
        self
    }

    /// Drop results under `score`.
    pub fn min_score(mut self, score: f32) -> Self {
        self.min_score = Some(score);
        self
    }

    /// Traverse the graph this deep from matched entities.
    pub fn graph_depth(mut self, depth: usize) -> Self {
        self.graph_depth = Some(depth);
        self
    }

    /// Only memories whose metadata holds `key` with exactly `value`, beside the
    /// conditions already set ([`RecallFilter::metadata`]).
    pub fn metadata(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.filter.metadata.insert(key.into(), value);
        self
    }

    /// These conditions on what may be found, replacing those set before.
    pub fn filter(mut self, filter: RecallFilter) -> Self {
        self.filter = filter;
        self
    }

    /// `config` with this call's overrides applied.
    pub fn apply_to(&self, config: &RetrieverConfig) -> RetrieverConfig {
        self.applied_to(config).into_owned()
    }

    /// `config` itself when no override changes it (an override equal to its value is
    /// none), else a copy with the overrides applied: a recall that does not change the
    /// settings does not copy them (their role weights are a map of strings).
    pub(crate) fn applied_to<'a>(
        &self,
        config: &'a RetrieverConfig,
    ) -> std::borrow::Cow<'a, RetrieverConfig> {
        let changes = self.strategy.is_some_and(|v| v != config.strategy)
            || self.scoring.is_some_and(|v| v != config.scoring)
            || self.fusion.is_some_and(|v| v != config.fusion)
            || self.max_results.is_some_and(|v| v != config.max_results)
            || self.min_score.is_some_and(|v| v != config.min_score)
            || self.graph_depth.is_some_and(|v| v != config.graph_depth);
        if !changes {
            return std::borrow::Cow::Borrowed(config);
        }
        let mut config = config.clone();
        if let Some(strategy) = self.strategy {
            config.strategy = strategy;
        }
        if let Some(scoring) = self.scoring {
            config.scoring = scoring;
        }
        if let Some(fusion) = self.fusion {
            config.fusion = fusion;
        }
        if let Some(max) = self.max_results {
            config.max_results = max;
        }
        if let Some(min) = self.min_score {
            config.min_score = min;
        }
        if let Some(depth) = self.graph_depth {
            config.graph_depth = depth;
        }
        std::borrow::Cow::Owned(config)
    }
}

/// Counts from [`Memory::stats`](super::Memory::stats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MemoryStats {
    /// Items in the scope: the current ones and the history (ended versions, sources of
    /// summaries, memories past their `valid_until`).
    pub total: usize,
    /// Current items: not ended and not past their `valid_until` (one valid from a later
    /// time, a plan, counts): what a recall can find.
    #[serde(default)]
    pub current: usize,
    /// Items per kind.
    pub per_kind: BTreeMap<MemoryKind, usize>,
    /// Items per namespace.
    pub per_namespace: BTreeMap<String, usize>,
    /// Mean `access_count` over the items (each recall of an item counts, and so does each
    /// duplicate merged into it).
    pub mean_access: f64,
    /// Compressed items (their originals kept).
    pub compressed: usize,
    /// The share of items that are compressed, in `[0, 1]`.
    pub compression_rate: f64,
    /// The largest namespace's share of the per-namespace capacity, when a capacity is set.
    pub capacity_use: Option<f64>,
    /// Items returned by at least one recall.
    #[serde(default)]
    pub recalled: usize,
    /// The mean relevance recalls returned the items with, in `[0, 1]`: every recall of
    /// every item counted once (the recall statistics' total score over their count).
    /// `None` before the first recall.
    #[serde(default)]
    pub mean_recall_score: Option<f64>,
    /// Knowledge pages in the scope.
    pub pages: usize,
    /// Graph entities in the scope (the link nodes enrichment keeps for memories are not
    /// counted).
    pub entities: usize,
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn options_that_change_nothing_borrow_the_settings() {
        let config = RetrieverConfig::default();
        let same = RecallOptions::default()
            .max_results(config.max_results)
            .min_score(config.min_score);
        assert!(matches!(same.applied_to(&config), Cow::Borrowed(_)));
        assert!(matches!(
            RecallOptions::default().applied_to(&config),
            Cow::Borrowed(_)
        ));
        let changed = RecallOptions::default().max_results(config.max_results + 1);
        let applied = changed.applied_to(&config);
        assert!(matches!(applied, Cow::Owned(_)));
        assert_eq!(applied.max_results, config.max_results + 1);
        assert_eq!(applied.role_weights, config.role_weights);
        // NaN equals nothing, so it is applied (and rejected by validation later).
        let nan = RecallOptions::default().min_score(f32::NAN);
        assert!(nan.applied_to(&config).min_score.is_nan());
    }
}
