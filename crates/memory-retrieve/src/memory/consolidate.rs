//! Consolidation: many old memories (an old session's episodes) become one summary memory
//! that links to its sources; the sources leave default recall and stay in the history.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use memory_core::{
    CONTEXT_METADATA_KEY, ConditionalSave, EndReason, Ended, MAX_FACT_LINKS, MAX_TAGS, MemoryError,
    MemoryFilter, MemoryItem, MemoryKind, Namespace, ORIGINAL_METADATA_KEY, PINNED_METADATA_KEY,
    Result, Scope, TimeView,
};
use serde::{Deserialize, Serialize};

use super::Memory;
use crate::compression::{ExtractiveSummarizer, Summarizer, days_before};
use crate::eviction::DECAY_METADATA_KEY;

/// Metadata key of a summary memory: how many memories it consolidates.
pub const CONSOLIDATED_METADATA_KEY: &str = "consolidated_from";

/// When maintenance consolidates: the current episodic memories of a namespace older than
/// `older_than_days`, neither pinned nor keyed facts, grouped by the value of the metadata
/// key `group_by` (a conversation's `session`, say); every group of at least `min_group`
/// becomes one summary of at most `max_tokens` (groups larger than
/// [`MAX_FACT_LINKS`] are consolidated in chunks of that size).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsolidationConfig {
    /// Age in days before a memory may be consolidated; default 30.
    pub older_than_days: u32,
    /// Fewest memories in a group worth a summary; default 5.
    pub min_group: usize,
    /// The summary's size; default 200.
    pub max_tokens: usize,
    /// The metadata key whose value groups memories; default `session`.
    pub group_by: String,
}

impl Default for ConsolidationConfig {
    fn default() -> Self {
        Self {
            older_than_days: 30,
            min_group: 5,
            max_tokens: 200,
            group_by: "session".to_owned(),
        }
    }
}

impl ConsolidationConfig {
    /// Checks the numbers.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `min_group` under 2 or `max_tokens` of 0.
    pub fn validate(&self) -> Result<()> {
        if self.min_group < 2 {
            return Err(MemoryError::invalid("min_group", "must be at least 2"));
        }
        if self.max_tokens == 0 {
            return Err(MemoryError::invalid("max_tokens", "must be at least 1"));
        }
        Ok(())
    }
}

/// The consolidations a maintenance pass writes at a time.
const CONSOLIDATION_BATCH: usize = 64;

/// A consolidation ready to be written: its summary's id and namespace, and the write (the
/// summary first, then its sources ended, each expected as read).
struct Fold {
    id: String,
    namespace: Namespace,
    write: ConditionalSave,
}

/// Whether maintenance may fold `item` into a summary.
fn consolidable(item: &MemoryItem) -> bool {
    item.kind == MemoryKind::Episodic
        && item.ended.is_none()
        && item.fact_key.is_none()
        && !item.is_pinned()
        && item.metadata.get(CONSOLIDATED_METADATA_KEY).is_none()
}

/// The metadata every source holds with the same value (the `session` a pass groups by,
/// a `user`, a `source` the caller set), which the summary keeps: it tells of those
/// memories, so a listing or recall filtered by such a key finds it where it found them.
/// The library's own keys are each memory's own (`_context` and the dialogue's
/// `context_before` that measures it, `_original`, `_pinned`, `_decay`, set for the summary
/// apart) and are not carried over.
fn shared_metadata(sources: &[MemoryItem]) -> serde_json::Map<String, serde_json::Value> {
    let Some((first, rest)) = sources.split_first() else {
        return serde_json::Map::new();
    };
    let Some(first) = first.metadata.as_object() else {
        return serde_json::Map::new();
    };
    first
        .iter()
        .filter(|(key, _)| {
            ![
                CONTEXT_METADATA_KEY,
                crate::memory::CONTEXT_BEFORE_METADATA_KEY,
                ORIGINAL_METADATA_KEY,
                PINNED_METADATA_KEY,
                DECAY_METADATA_KEY,
                CONSOLIDATED_METADATA_KEY,
            ]
            .contains(&key.as_str())
        })
        .filter(|(key, value)| {
            rest.iter()
                .all(|item| item.metadata.get(key.as_str()) == Some(*value))
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

impl Memory {
    /// Consolidates memories `ids` of `namespace` into one summary memory (long-term, the
    /// sources' summary within `max_tokens` by the memory's summarizer, their largest
    /// importance, their tags, the newest source's time, sources listed in
    /// [`supersedes`](MemoryItem::supersedes)). The sources end as
    /// [`EndReason::Consolidated`]: out of default recall, kept for
    /// [`RecallView::All`](crate::RecallView::All) and [`history`](Self::history). All are
    /// written together. Returns the summary's id.
    ///
    /// The summary keeps the metadata every source holds with the same value (a
    /// conversation's `session`, say), so a listing filtered by it finds the summary, and
    /// its vector when the memory embeds.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `ids` for fewer than 2 or more than
    /// [`MAX_FACT_LINKS`] ids, a repeated id, or a source that already ended;
    /// [`MemoryError::NotFound`] for a missing source, also one found forgotten once the
    /// summary is written (the sources are read again after the summarizer's call, so only
    /// a forget between that read and the write can still be undone by it);
    /// [`MemoryError::Conflict`] (recoverable) for a source ended or edited meanwhile;
    /// summarizer, embedder (the summary is embedded as any memory written) and store
    /// errors, each before anything is written.
    pub async fn consolidate(
        &self,
        namespace: &Namespace,
        ids: &[String],
        max_tokens: usize,
    ) -> Result<String> {
        if ids.len() < 2 || ids.len() > MAX_FACT_LINKS {
            return Err(MemoryError::invalid(
                "ids",
                format!("needs 2 to {MAX_FACT_LINKS} memories"),
            ));
        }
        let mut unique = ids.to_vec();
        unique.sort();
        unique.dedup();
        if unique.len() != ids.len() {
            return Err(MemoryError::invalid("ids", "an id is repeated"));
        }
        let sources = self.store.get_many(namespace, ids).await?;
        if let Some(missing) = ids
            .iter()
            .find(|id| !sources.iter().any(|item| &item.id == *id))
        {
            return Err(MemoryError::not_found("memory", namespace, missing));
        }
        if let Some(ended) = sources.iter().find(|item| item.ended.is_some()) {
            return Err(MemoryError::invalid(
                "ids",
                format!("memory {} already ended", ended.id),
            ));
        }
        let now = self.clock.now();
        self.fold(sources, max_tokens.max(1), now).await
    }

    /// Writes the summary of `sources` (at least two current memories of one namespace, in
    /// time order) and ends them. Returns the summary's id. A caller asked for this
    /// summary: an embedder's failure fails it.
    async fn fold(
        &self,
        sources: Vec<MemoryItem>,
        max_tokens: usize,
        now: DateTime<Utc>,
    ) -> Result<String> {
        let Fold {
            id,
            namespace,
            write,
        } = self.prepare_fold(sources, max_tokens, now, true).await?;
        if !self
            .store
            .save_many_if(write.items, &write.expected)
            .await?
        {
            return Err(MemoryError::Conflict {
                message: format!(
                    "a source of summary {id} changed while its consolidation was written"
                ),
                source: None,
            });
        }
        self.folded(&namespace, &id).await;
        Ok(id)
    }

    /// Once a summary is committed: it is linked into the graph as any memory written, so
    /// the graph channel reaches the summary where it reached its sources (whose nodes
    /// stay: they are history, which recall leaves out, and come back with them if it is
    /// forgotten).
    async fn folded(&self, namespace: &Namespace, id: &str) {
        if let Some(enrichment) = &self.enrichment {
            Box::pin(enrichment.enqueue(namespace, id)).await;
        }
    }

    /// The summary of `sources` (at least two current memories of one namespace, in time
    /// order) and the sources ended, ready to be written together, each source only if it
    /// is still as read. `asked`: a caller asked for this summary, and an embedder's
    /// failure fails it; a maintenance pass writes the summary without its vector instead
    /// (found by its words until `reembed` gives it one), so an embedding service down does
    /// not stop maintenance.
    async fn prepare_fold(
        &self,
        mut sources: Vec<MemoryItem>,
        max_tokens: usize,
        now: DateTime<Utc>,
        asked: bool,
    ) -> Result<Fold> {
        sources.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let texts: Vec<&str> = sources.iter().map(|item| item.content.as_str()).collect();
        let summarizer: &dyn Summarizer = match &self.compression {
            Some((_, summarizer)) => &**summarizer,
            None => &ExtractiveSummarizer,
        };
        let text = summarizer.summarize(&texts, max_tokens).await?;
        // Embedded as any memory written is, before anything is written: without a vector
        // the summary would be found by its words only, where its sources were found by
        // meaning too, and a failing embedder leaves the sources as they are.
        let vector = match self.embedding_of(&text).await {
            Ok(vector) => vector,
            Err(error) if !asked => {
                tracing::warn!(%error, "a consolidation summary was written without its vector");
                None
            }
            Err(error) => return Err(error),
        };
        // Read again after the summarizer's call, which may take seconds: a source forgotten
        // meanwhile must not be written back (the save is an upsert, which would undo the
        // forget), and one ended or changed meanwhile is not the text summarized.
        let ids: Vec<String> = sources.iter().map(|item| item.id.clone()).collect();
        let Some(namespace) = sources.first().map(|item| item.namespace.clone()) else {
            return Err(MemoryError::invalid("ids", "no memory to consolidate"));
        };
        let current = self.store.get_many(&namespace, &ids).await?;
        for source in &sources {
            match current.iter().find(|item| item.id == source.id) {
                None => return Err(MemoryError::not_found("memory", &namespace, &source.id)),
                Some(now) if now.ended.is_some() || now.content != source.content => {
                    return Err(MemoryError::Conflict {
                        message: format!(
                            "memory {} changed while its consolidation was written",
                            source.id
                        ),
                        source: None,
                    });
                }
                Some(_) => {}
            }
        }
        // The current versions are the ones ended (their accesses and metadata kept).
        let mut sources: Vec<MemoryItem> = sources
            .iter()
            .filter_map(|source| current.iter().find(|item| item.id == source.id).cloned())
            .collect();
        let Some(last) = sources.last() else {
            return Err(MemoryError::invalid("ids", "no memory to consolidate"));
        };
        // The sources as just read: they end only if they are still so when written.
        let read: Vec<DateTime<Utc>> = sources.iter().map(|item| item.updated_at).collect();
        let mut metadata = shared_metadata(&sources);
        metadata.insert(
            CONSOLIDATED_METADATA_KEY.to_owned(),
            serde_json::json!(sources.len()),
        );
        let mut summary = MemoryItem::new(last.namespace.clone(), text)?
            .with_kind(MemoryKind::LongTerm)
            .with_created_at(last.created_at)
            .with_metadata(serde_json::Value::Object(metadata))?;
        // Dated as its newest source (what it tells happened then), it holds from when the
        // sources end: a recall as of a time before the consolidation sees the sources, not
        // the summary beside them telling each twice.
        let newest = sources.iter().map(|item| item.created_at).max();
        summary.valid_from = Some(newest.map_or(now, |newest| now.max(newest)));
        summary.importance = sources
            .iter()
            .map(|item| item.importance)
            .fold(0.0, f32::max);
        // Decay has lowered the sources' importance already: the summary's decay starts
        // now, from that importance. Without this state, decay would read the summary as
        // unreinforced since its (old) creation time and lower the lowered importance
        // again, forgetting summaries whose sources it keeps.
        if sources
            .iter()
            .any(|item| item.metadata.get(DECAY_METADATA_KEY).is_some())
        {
            summary.metadata[DECAY_METADATA_KEY] = serde_json::json!({
                "base": summary.importance,
                "since": now.to_rfc3339(),
            });
        }
        for item in &sources {
            for tag in &item.tags {
                if summary.tags.len() < MAX_TAGS && !summary.tags.contains(tag) {
                    summary.tags.push(tag.clone());
                }
            }
        }
        if let Some(vector) = vector {
            summary = summary.with_embedding(vector)?;
        }
        summary.supersedes = sources.iter().map(|item| item.id.clone()).collect();
        let id = summary.id.clone();
        for item in &mut sources {
            item.ended = Some(Ended {
                at: now.max(item.created_at),
                reason: EndReason::Consolidated { into: id.clone() },
            });
            // An edit made from a copy read before must not bring it back.
            item.revise(item.updated_at);
        }
        let mut items = vec![summary];
        items.extend(sources);
        let expected: Vec<(usize, DateTime<Utc>)> = read
            .into_iter()
            .enumerate()
            .map(|(at, read_at)| (at + 1, read_at))
            .collect();
        Ok(Fold {
            id,
            namespace,
            write: ConditionalSave { items, expected },
        })
    }

    /// Writes the consolidations of `folds` at once ([`MemoryStore::save_each_if`]: one
    /// transaction where the backend can, each consolidation whole or not at all). One
    /// whose sources changed since they were read is left for the next pass. Returns how
    /// many memories were folded into how many summaries.
    ///
    /// [`MemoryStore::save_each_if`]: memory_core::MemoryStore::save_each_if
    async fn write_folds(&self, folds: Vec<Fold>) -> Result<(usize, usize)> {
        if folds.is_empty() {
            return Ok((0, 0));
        }
        let (folds, writes): (Vec<(String, Namespace, usize)>, Vec<ConditionalSave>) = folds
            .into_iter()
            .filter(|fold| crate::compression::storable(&fold.write))
            .map(|fold| {
                let sources = fold.write.expected.len();
                ((fold.id, fold.namespace, sources), fold.write)
            })
            .unzip();
        let saved = self.store.save_each_if(writes).await?;
        let (mut folded, mut summaries) = (0, 0);
        for ((id, namespace, sources), saved) in folds.into_iter().zip(saved) {
            if saved {
                folded += sources;
                summaries += 1;
                self.folded(&namespace, &id).await;
            }
        }
        Ok((folded, summaries))
    }

    /// The consolidation pass of [`maintain`](Self::maintain): see [`ConsolidationConfig`].
    /// Returns how many memories were folded into how many summaries.
    pub(super) async fn consolidate_stale(
        &self,
        scope: &Scope,
        config: &ConsolidationConfig,
        now: DateTime<Utc>,
    ) -> Result<(usize, usize)> {
        let (mut folded, mut summaries) = (0, 0);
        let Some(cutoff) = days_before(now, config.older_than_days) else {
            return Ok((folded, summaries));
        };
        // Written a batch at a time: one transaction per batch, not one per summary.
        let mut batch: Vec<Fold> = Vec::new();
        for namespace in self.store.list_namespaces(scope).await? {
            let filter = MemoryFilter::new(namespace.exact())
                .with_kinds([MemoryKind::Episodic])
                .with_time_range(None, Some(cutoff))
                .with_view(TimeView::Current(now));
            let mut groups: BTreeMap<String, Vec<MemoryItem>> = BTreeMap::new();
            for item in self.store.list(&filter).await? {
                if !consolidable(&item) {
                    continue;
                }
                let Some(group) = item.metadata.get(config.group_by.as_str()) else {
                    continue;
                };
                let group = match group {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                groups.entry(group).or_default().push(item);
            }
            for (_, group) in groups {
                if group.len() < config.min_group {
                    continue;
                }
                let mut group = group.into_iter().peekable();
                while group.peek().is_some() {
                    let chunk: Vec<MemoryItem> = group.by_ref().take(MAX_FACT_LINKS).collect();
                    if chunk.len() < 2 {
                        break;
                    }
                    match self
                        .prepare_fold(chunk, config.max_tokens, now, false)
                        .await
                    {
                        Ok(fold) => batch.push(fold),
                        // A source forgotten or changed while the summary was written, or
                        // a summary the model could not give within its limit: the group is
                        // left for the next pass, and this one goes on.
                        Err(
                            MemoryError::NotFound { .. }
                            | MemoryError::Conflict { .. }
                            | MemoryError::LimitExceeded(_),
                        ) => {}
                        // The consolidations made before the failure are kept.
                        Err(error) => {
                            self.write_folds(batch).await?;
                            return Err(error);
                        }
                    }
                    if batch.len() == CONSOLIDATION_BATCH {
                        let (more, made) = self.write_folds(std::mem::take(&mut batch)).await?;
                        folded += more;
                        summaries += made;
                    }
                }
            }
        }
        let (more, made) = self.write_folds(batch).await?;
        Ok((folded + more, summaries + made))
    }
}
