//! The high-level API an agent keeps: remember, recall, recall_context, forget, maintain,
//! stats, and the conversation.

use std::sync::Arc;

use memory_core::{
    Clock, DecayConfig, EvictionConfig, KnowledgeGraph, KnowledgeGraphExt, KnowledgeStore,
    MemoryFilter, MemoryItem, MemoryKind, MemoryStore, Namespace, RecallEvent, Result,
    RetrievalResult, RetrievalSource, Scope,
};
use tracing::Instrument;

use crate::compression::{CompressionConfig, Summarizer, compress_stale};
use crate::conversation::{ConversationConfig, ConversationMemory};
use crate::eviction::{MaintenanceReport, decay, evict, namespace_pass};
use crate::feedback::RecallRecorder;
use crate::prompt::{Fit, estimate_tokens, max_chars_within, one_line, render_section};
use crate::retriever::Retriever;

/// The most characters of an entity's attributes in a prompt context, as in the graph's own
/// view of an entity (`KnowledgeGraphExt::context_for_agent`).
const MAX_ATTRIBUTE_CHARS: usize = 160;

/// Memories [`Memory::stats`] reads at a time.
const STATS_PAGE: usize = 1_000;

/// Attempts [`Memory::forget_matching`] makes at a namespace's matches at once before it
/// forgets them one at a time.
const WHOLE_FORGET_ATTEMPTS: usize = 2;

/// Most eviction passes one write runs on its namespace: the one it asks for and those the
/// writes made meanwhile ask for after it (see `WriteTracker::finish`).
const MAX_PASSES_PER_WRITE: usize = 4;

mod background;
mod batch;
mod builder;
mod consolidate;
mod dialogue;
mod edit;
mod enrich;
mod facts;
mod reembed;
mod request;
mod upkeep;

pub use self::background::{MaintenanceHandle, PassReport};
pub use self::builder::{MAX_RECALL_BATCH, MemoryBuilder};
pub use self::consolidate::{CONSOLIDATED_METADATA_KEY, ConsolidationConfig};
pub use self::dialogue::{
    CONTEXT_BEFORE_METADATA_KEY, Dialogue, MAX_SESSION_BYTES, MAX_SPEAKER_BYTES, ROLE_METADATA_KEY,
    SESSION_METADATA_KEY, SPEAKER_METADATA_KEY, Turn,
};
pub use self::edit::MemoryUpdate;
pub(crate) use self::edit::{EDIT_ATTEMPTS, edit_conflict};
pub use self::facts::{ConflictPair, MAX_HISTORY};
pub use self::reembed::{Reembed, ReembedReport};
pub use self::request::{MemoryStats, RecallOptions, Remember};

/// What a remember with an id does to the memory stored under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Replacing {
    /// Writes over it, only if it is still as read (its `updated_at`).
    Over(chrono::DateTime<chrono::Utc>),
    /// Nothing: it is part of a fact's history and says what the request says (its text,
    /// kind, fact key and the start of its validity), so the request is that memory sent
    /// again (a retracted one stays retracted), answered as merged into it.
    Unchanged,
}

/// What a remember of `new` with its id does to `stored`, the memory under that id: writes
/// over it, or leaves it when it is part of a fact's history and `new` says the same;
/// refused, naming `id`, when it is part of a history and `new` says something else (see
/// [`Remember::id`]).
fn replacing(stored: &MemoryItem, new: &MemoryItem) -> Result<Replacing> {
    let part = if let Some(ended) = &stored.ended {
        match &ended.reason {
            memory_core::EndReason::Superseded { by } => format!("superseded by {by}"),
            memory_core::EndReason::Consolidated { into } => format!("consolidated into {into}"),
            memory_core::EndReason::Retracted { .. } => "retracted".to_owned(),
        }
    } else if let [only] = stored.supersedes.as_slice() {
        format!("it ends {only}")
    } else if !stored.supersedes.is_empty() {
        format!("it ends {} memories", stored.supersedes.len())
    } else {
        return Ok(Replacing::Over(stored.updated_at));
    };
    // What the memory says: its text, kind, fact and from when that holds. Not its end of
    // validity, which a superseding version closed, nor its creation time, which a request
    // sent again without one gives as now.
    if stored.content == new.content
        && stored.kind == new.kind
        && stored.fact_key == new.fact_key
        && stored.valid_from == new.valid_from
    {
        return Ok(Replacing::Unchanged);
    }
    Err(memory_core::MemoryError::invalid(
        "id",
        format!(
            "memory {} in {} is part of a fact's history ({part}) and says something else; \
             a remember does not replace it: forget it first, or remember under another id \
             and supersede it",
            stored.id, stored.namespace
        ),
    ))
}

/// The answer to a remember that changes nothing ([`Replacing::Unchanged`]).
fn unchanged(id: &str) -> crate::Remembered {
    crate::Remembered {
        id: id.to_owned(),
        outcome: crate::Outcome::Merged {
            into: id.to_owned(),
        },
        conflicts: Vec::new(),
    }
}

/// The positions of the first key that repeats an earlier one (`None` keys never repeat):
/// `(earlier, later)`. What `Remember::check_ids` and `Dialogue::check_ids` look for.
fn first_repeat<K: std::hash::Hash + Eq>(
    keys: impl ExactSizeIterator<Item = Option<K>>,
) -> Option<(usize, usize)> {
    let mut seen = std::collections::HashMap::with_capacity(keys.len());
    keys.enumerate()
        .find_map(|(index, key)| seen.insert(key?, index).map(|earlier| (earlier, index)))
}

/// The one handle an agent keeps. Share it behind an `Arc`; every method takes `&self`.
///
/// Recall statistics (and the accesses of pages and entities) are written in batches in
/// the background: call [`flush`](Self::flush) before the last handle is dropped, or the
/// batch still pending is lost (statistics only, never a memory: every write is stored
/// before it returns). Dropping cannot write it: a store write is async, and `Drop` may run
/// where no runtime is (the command, the server and Python flush when they stop).
///
/// ```
/// use memory_core::Namespace;
/// use memory_retrieve::Memory;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let memory = Memory::in_memory();
/// let user = Namespace::parse("user-42")?;
/// memory.remember(&user, "The user prefers Rust for systems programming").await?;
/// memory.remember(&user, "The user has a cat called Miso").await?;
/// let found = memory.recall(&user.subtree(), "which programming language?").await?;
/// assert!(found.items[0].record.text().contains("Rust"));
/// let context = memory.recall_context(&user.subtree(), "programming", 200).await?;
/// assert!(context.starts_with("Relevant memories:"));
/// # Ok::<(), memory_core::MemoryError>(()) }).unwrap();
/// ```
#[derive(Debug)]
pub struct Memory {
    store: Arc<dyn MemoryStore>,
    knowledge: Arc<dyn KnowledgeStore>,
    graph: Arc<dyn KnowledgeGraph>,
    clock: Arc<dyn Clock>,
    retriever: Retriever,
    recorder: RecallRecorder,
    eviction: EvictionConfig,
    decay: Option<DecayConfig>,
    compression: Option<(CompressionConfig, Arc<dyn Summarizer>)>,
    writes: upkeep::WriteTracker,
    facts: crate::facts::FactsConfig,
    consolidation: Option<ConsolidationConfig>,
    detector: Arc<dyn crate::facts::ConflictDetector>,
    single_valued: std::collections::HashSet<String>,
    knowledge_upkeep: crate::knowledge_upkeep::KnowledgeUpkeep,
    /// The enrichment queue and worker, with an enricher.
    enrichment: Option<enrich::Pipeline>,
}

impl Memory {
    /// A builder.
    pub fn builder() -> MemoryBuilder {
        MemoryBuilder::default()
    }

    /// Everything in memory, default settings.
    pub fn in_memory() -> Self {
        // The default settings are valid by construction.
        Self::builder().assemble()
    }

    /// The memory-item store.
    pub fn store(&self) -> &Arc<dyn MemoryStore> {
        &self.store
    }

    /// The knowledge-page store.
    pub fn knowledge(&self) -> &Arc<dyn KnowledgeStore> {
        &self.knowledge
    }

    /// The knowledge graph.
    pub fn graph(&self) -> &Arc<dyn KnowledgeGraph> {
        &self.graph
    }

    /// The retriever, for direct use.
    pub fn retriever(&self) -> &Retriever {
        &self.retriever
    }

    /// Remembers `text` in `namespace` as an episodic memory. Returns its id.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) for empty or oversized text or the root namespace.
    pub async fn remember(&self, namespace: &Namespace, text: &str) -> Result<String> {
        Ok(self
            .remember_with(Remember::new(namespace.clone(), text))
            .await?
            .id)
    }

    /// The vector this memory's embedder gives `text`, checked as
    /// [`remember_with`](Self::remember_with) checks it (the provider's dimension, finite
    /// values), or `None` when the memory has no embedder. For callers that write records to
    /// the store themselves (an import, a key-value write, an edit of a memory's content),
    /// so that those are found by meaning as remembered ones are.
    ///
    /// # Errors
    /// The embedder's errors; [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput)
    /// naming `embedding` for a vector of the wrong length or with a value that is not finite.
    pub async fn embedding_of(&self, text: &str) -> Result<Option<Vec<f32>>> {
        match self.retriever.embedder() {
            Some(embedder) => Ok(Some(
                Box::pin(crate::embedding::embed_checked(&**embedder, text)).await?,
            )),
            None => Ok(None),
        }
    }

    /// The vectors of `texts` in one batch of the embedder, each checked as by
    /// [`embedding_of`](Self::embedding_of), or `None` without an embedder.
    ///
    /// # Errors
    /// As [`embedding_of`](Self::embedding_of), and for a batch answered with another count
    /// of vectors.
    pub async fn embeddings_of(&self, texts: &[&str]) -> Result<Option<Vec<Vec<f32>>>> {
        match self.retriever.embedder() {
            Some(embedder) => Ok(Some(
                Box::pin(crate::embedding::embed_batch_checked(&**embedder, texts)).await?,
            )),
            None => Ok(None),
        }
    }

    /// Remembers with every option, reconciling the new memory with the stored ones (see
    /// [`FactsConfig`](crate::FactsConfig)): a duplicate is merged into the memory it
    /// repeats, a memory with a fact key supersedes the current one of that key, and
    /// memories it contradicts are flagged. Returns what happened once everything is stored; the memory and the stored
    /// ones it changed are written together (one transaction on the SQL backends).
    ///
    /// With an eviction policy, the write keeps its namespace within the policy's capacity
    /// (a pass runs when the namespace goes over it, and a full pass with TTL every
    /// `check_interval` writes to the namespace). A pass that fails after the memory was
    /// stored does not fail the call: it is logged and reported by the next
    /// [`Memory::maintain`] as [`MaintenanceReport::failed_write_passes`].
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming the bad
    /// field; [`MemoryError::AlreadyExists`](memory_core::MemoryError::AlreadyExists) or
    /// [`MemoryError::Conflict`](memory_core::MemoryError::Conflict) when the
    /// [`FactsConfig`](crate::FactsConfig) rejects duplicates or conflicts; store errors.
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming `id`
    /// when the request's id names a stored memory that is part of a fact's history (see
    /// [`Remember::id`]). Nothing is stored when it fails.
    pub async fn remember_with(&self, request: Remember) -> Result<crate::Remembered> {
        let span =
            tracing::debug_span!("remember", namespace = %request.namespace, kind = ?request.kind);
        async move {
            let namespace = request.namespace.clone();
            let named = request.id.is_some();
            let keep_apart = request.keep_apart;
            let mut item = self.item_of(request, self.clock.now())?;
            if let Some(embedder) = self.retriever.embedder()
                && item.embedding.is_none()
            {
                let vector =
                    Box::pin(crate::embedding::embed_checked(&**embedder, &item.content)).await?;
                item = item.with_embedding(vector)?;
            }
            let remembered = Box::pin(self.write_reconciled(item, named, keep_apart)).await?;
            // The write is committed: what follows never turns it into an error.
            if let Some(enrichment) = &self.enrichment {
                Box::pin(enrichment.enqueue(&namespace, &remembered.id)).await;
            }
            if self.eviction.policy != memory_core::EvictionPolicy::None {
                // Boxed: an eviction pass's state would otherwise make every write's
                // future larger, and the future is moved several times per write.
                Box::pin(self.keep_within_capacity(&namespace, 1)).await;
            }
            Ok(remembered)
        }
        .instrument(span)
        .await
    }

    /// Reconciles `item` with the stored memories and writes the plan: the new memory alone
    /// as it is, or with the stored memories it changes (a superseded version, a duplicate
    /// merged into) only if they are still as reconciliation read them
    /// ([`MemoryStore::save_many_if`]). When another write changed one in between, the
    /// reconciliation is made again on what is stored then, up to eight times. Each attempt
    /// reconciles a copy of `item` (measured: 4% more instructions per `remember` over the
    /// LoCoMo conversations, the price of writing only over what was read).
    ///
    /// With `named` (the request gave the id), the memory stored under it is read first: one
    /// in a fact's history refuses the write unless the request says what it says (then
    /// nothing is written: the same memory sent again; [`Remember::id`]), and any other is
    /// replaced only if still as read, so a supersede or consolidation that took it in
    /// meanwhile is not undone.
    async fn write_reconciled(
        &self,
        item: MemoryItem,
        named: bool,
        keep_apart: bool,
    ) -> Result<crate::Remembered> {
        for _ in 0..EDIT_ATTEMPTS {
            let replaced = if named {
                let stored = self.store.get(&item.namespace, &item.id).await?;
                stored.map(|stored| replacing(&stored, &item)).transpose()?
            } else {
                None
            };
            if replaced == Some(Replacing::Unchanged) {
                return Ok(unchanged(&item.id));
            }
            let plan = Box::pin(self.reconcile(item.clone(), self.clock.now(), keep_apart)).await?;
            let mut expected = plan.expected();
            if let Some(Replacing::Over(read_at)) = replaced
                && let Some(at) = plan.writes.iter().position(|write| write.id == item.id)
            {
                expected.push((at, read_at));
            }
            if expected.is_empty() {
                match <[MemoryItem; 1]>::try_from(plan.writes) {
                    Ok([item]) => self.store.save(item).await?,
                    Err(writes) => self.store.save_many(writes).await?,
                }
                return Ok(plan.remembered);
            }
            if self.store.save_many_if(plan.writes, &expected).await? {
                return Ok(plan.remembered);
            }
        }
        Err(memory_core::MemoryError::Conflict {
            message: format!(
                "the memories a new memory of {} reconciles with were changed by other writes \
                 at each of {EDIT_ATTEMPTS} attempts; nothing was written",
                item.namespace
            ),
            source: None,
        })
    }

    /// Runs the upkeep [`remember_with`](Self::remember_with) runs after each write, for
    /// `count` memories written to `namespace` through the store directly (a bulk import, a
    /// tool that writes its own records): the capacity's eviction pass when one is due, so
    /// such writes are kept within the capacity as remembered ones are. Never fails: a
    /// failed pass is logged and counted for the next [`maintain`](Self::maintain).
    pub async fn written(&self, namespace: &Namespace, count: usize) {
        // Counted at once, for one pass at most: a pass per memory of a large import
        // counted the namespace again and again (quadratic under a TTL-only policy, which
        // trims nothing).
        if count > 0 {
            Box::pin(self.keep_within_capacity(namespace, count)).await;
        }
    }

    /// Runs the eviction pass a write to `namespace` asks for, if any, and those the
    /// writes made meanwhile ask for after it (at most [`MAX_PASSES_PER_WRITE`]; see the
    /// `upkeep` module). A failure is logged and counted for the next
    /// [`Memory::maintain`].
    async fn keep_within_capacity(&self, namespace: &Namespace, writes: usize) {
        if self.eviction.policy == memory_core::EvictionPolicy::None {
            return;
        }
        let Some(pass) = self.writes.record_writes(namespace, &self.eviction, writes) else {
            return;
        };
        let mut running = self.writes.running(namespace);
        // A policy that ranks by recalls or accesses ranks on what is written: the recalls
        // still batched are written first, or a memory just recalled would count as never
        // recalled and go first on a tie (`maintain` does the same). A pass runs once per
        // sixteenth of the capacity's writes, so this write is shared as the pass is.
        let by_recalls = self.eviction.policy.recall_config().is_some()
            || matches!(
                self.eviction.policy,
                memory_core::EvictionPolicy::ValueBased(_)
            );
        if by_recalls && let Err(error) = self.recorder.flush().await {
            tracing::warn!(%error, %namespace, "writing recall statistics before an eviction pass failed");
        }
        let mut pass = Some(pass);
        // Writes made while a pass ran may ask for another (see `WriteTracker::finish`);
        // this write runs at most a few, and the next write to the namespace runs the rest.
        for _ in 0..MAX_PASSES_PER_WRITE {
            let Some(this) = pass else { return };
            let outcome = namespace_pass(
                &*self.store,
                namespace,
                &self.eviction.policy,
                self.clock.now(),
                this.with_ttl,
                this.headroom,
            )
            .await;
            pass = match outcome {
                Ok((report, remaining)) => {
                    tracing::debug!(
                        expired = report.expired,
                        evicted = report.evicted,
                        remaining,
                        "eviction pass"
                    );
                    running.finish(Some(remaining), &self.eviction)
                }
                Err(error) => {
                    tracing::warn!(%error, %namespace, "eviction pass after a write failed");
                    running.finish(None, &self.eviction)
                }
            };
        }
        // Passes left: the namespace is let go; its next write asks again (its bound is
        // over the capacity).
        if pass.is_some() {
            running.release();
        }
    }

    /// Recalls the best memories, pages and entities in `scope` for `query`, with default
    /// options. Each result carries its score breakdown; recall statistics are recorded in
    /// the background.
    ///
    /// # Errors
    /// As [`Retriever::retrieve_with`].
    pub async fn recall(&self, scope: &Scope, query: &str) -> Result<RetrievalResult> {
        self.recall_with(scope, query, &RecallOptions::default())
            .await
    }

    /// Recalls with options.
    ///
    /// # Errors
    /// As [`Retriever::retrieve_with`].
    pub async fn recall_with(
        &self,
        scope: &Scope,
        query: &str,
        options: &RecallOptions,
    ) -> Result<RetrievalResult> {
        let config = options.applied_to(self.retriever.config());
        let result = self
            .retriever
            .retrieve_with(scope, query, &options.filter, &config)
            .await?;
        let now = self.clock.now();
        let events: Vec<RecallEvent> = result
            .items
            .iter()
            .filter_map(|scored| match &scored.record {
                RetrievalSource::Memory(item) => Some(RecallEvent {
                    namespace: item.namespace.clone(),
                    id: item.id.clone(),
                    score: scored.score,
                    at: now,
                }),
                _ => None,
            })
            .collect();
        if !events.is_empty() {
            self.recorder.record(events).await?;
        }
        self.knowledge_upkeep.record(&result.items, now).await?;
        Ok(result)
    }

    /// [`recall_context`](Self::recall_context) for an agent in a conversation: the last
    /// `turns` messages of `session` (its short-term memory) come first, in order and
    /// without a search ("Recent conversation:", the newest kept when the budget is short),
    /// then the recalled memories, pages and graph context in what is left of `max_tokens`.
    ///
    /// # Errors
    /// As [`recall`](Self::recall); [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput)
    /// for the root namespace as `session`.
    pub async fn recall_context_in(
        &self,
        session: &Namespace,
        turns: usize,
        scope: &Scope,
        query: &str,
        max_tokens: usize,
    ) -> Result<String> {
        session.require_record_namespace()?;
        // No more than the budget can show: a line costs at least two tokens.
        let most = turns.min(max_tokens / 2 + 1);
        let mut recent = self
            .store
            .list(
                &MemoryFilter::new(session.exact())
                    .with_kinds([MemoryKind::ShortTerm])
                    .newest_first()
                    .with_limit(most),
            )
            .await?;
        // Newest first: as many of the newest as fit, then shown oldest first.
        let title = "Recent conversation:";
        let mut used = estimate_tokens(title) + 1;
        let mut kept = Vec::new();
        for item in recent.drain(..) {
            let role = item
                .metadata
                .get("role")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("user")
                .to_owned();
            let line = format!("- {}: {}", one_line(&role), one_line(&item.content));
            let cost = estimate_tokens(&line) + 1;
            if used + cost > max_tokens {
                break;
            }
            used += cost;
            kept.push(line);
        }
        let mut out = String::new();
        if !kept.is_empty() {
            out.push_str(title);
            out.push('\n');
            for line in kept.iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        } else {
            used = 0;
        }
        out.push_str(
            &self
                .recall_context(scope, query, max_tokens.saturating_sub(used))
                .await?,
        );
        Ok(out)
    }

    /// Promotes message `id` of conversation `session` to long-term memory: a copy of it
    /// ("role: text") as an episodic memory with `importance` in the session's
    /// [`promoted_namespace`](crate::promoted_namespace) (`<session>/long-term`), which
    /// recall over the session's subtree finds (short-term messages are left out of recall
    /// by default) and the conversation's window and capacity never touch. Returns the new
    /// memory's id, or `None` when the message does not exist.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming
    /// `importance`; store errors.
    pub async fn promote(
        &self,
        session: &Namespace,
        id: &str,
        importance: f32,
    ) -> Result<Option<String>> {
        let Some(message) = self.store.get(session, id).await? else {
            return Ok(None);
        };
        let role = message
            .metadata
            .get("role")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("user");
        let request = Remember::new(
            crate::conversation::promoted_namespace(session)?,
            crate::conversation::promoted_text(role, &message.content),
        )
        .kind(MemoryKind::Episodic)
        .importance(importance)
        .created_at(message.created_at)
        .metadata(serde_json::json!({ "promoted_from": id }));
        self.remember_with(request).await.map(|done| Some(done.id))
    }

    /// The best results rendered as prompt-ready text within `max_tokens` (estimated):
    /// memories first as a bullet list, then pages and entities (an entity with its
    /// [attributes](memory_core::GraphEntity::attribute_line), cut at 160 characters: `-
    /// [person] Ana (born: 1990; city: Lisbon)`), and the neighbourhood of the best entity from the graph. Results that
    /// do not fit are left out whole.
    ///
    /// # Errors
    /// As [`recall`](Self::recall).
    pub async fn recall_context(
        &self,
        scope: &Scope,
        query: &str,
        max_tokens: usize,
    ) -> Result<String> {
        let result = self.recall(scope, query).await?;
        let mut memories = Vec::new();
        let mut knowledge = Vec::new();
        let mut best_entity = None;
        for scored in &result.items {
            match &scored.record {
                RetrievalSource::Memory(item) => {
                    memories.push(format!("- {}", one_line(&item.content)))
                }
                RetrievalSource::KnowledgePage(page) => knowledge.push(format!(
                    "- {}: {}",
                    one_line(&page.title),
                    one_line(&page.summary)
                )),
                RetrievalSource::GraphEntity(entity) => {
                    best_entity.get_or_insert_with(|| entity.clone());
                    let attributes = entity.attribute_line();
                    knowledge.push(if attributes.is_empty() {
                        format!(
                            "- [{}] {}",
                            one_line(&entity.entity_type),
                            one_line(&entity.name)
                        )
                    } else {
                        // Cut as the graph's own view cuts them: attributes may be long,
                        // and a line that does not fit is left out whole.
                        format!(
                            "- [{}] {} ({})",
                            one_line(&entity.entity_type),
                            one_line(&entity.name),
                            crate::prompt::one_line_cut(&attributes, MAX_ATTRIBUTE_CHARS)
                        )
                    });
                }
            }
        }
        let mut out = String::new();
        let mut used = 0;
        render_section(
            "Relevant memories:",
            &memories,
            Fit::Each,
            max_tokens,
            &mut used,
            &mut out,
        );
        render_section(
            "Relevant knowledge:",
            &knowledge,
            Fit::Each,
            max_tokens,
            &mut used,
            &mut out,
        );
        if let Some(entity) = best_entity {
            let remaining_chars = max_chars_within(max_tokens.saturating_sub(used));
            if remaining_chars > 40 {
                let bound = remaining_chars - 20;
                // The memories' link nodes left out: a memory is shown by recall, which
                // leaves out those that ended (a node of a retracted memory holds its
                // text) and those the filter turns away.
                let related: Vec<memory_core::ScoredEntity> = self
                    .graph
                    .get_related(&entity.namespace, &entity.id, 1)
                    .await?
                    .into_iter()
                    .filter(|related| !crate::enrich::is_link_node(&related.entity))
                    .collect();
                let context = self
                    .graph
                    .render_neighbourhood(&entity.namespace, &entity, &related, bound)
                    .await?;
                // The graph cuts its first line when not even that fits: a header that is not
                // the entity's whole line is left out, as a result that does not fit.
                let whole =
                    context.lines().next() == Some(memory_core::context_header(&entity).as_str());
                if whole {
                    let lines: Vec<String> = context.lines().map(str::to_owned).collect();
                    // Relations stand under their entity: no line after one left out.
                    render_section(
                        "Related:",
                        &lines,
                        Fit::Prefix,
                        max_tokens,
                        &mut used,
                        &mut out,
                    );
                }
            }
        }
        Ok(out)
    }

    /// Compresses memory `id` of `namespace` to `text`: `text` replaces what is searched and
    /// shown, the original is kept ([`MemoryItem::original`]) and the memory says it is
    /// compressed. Returns whether the memory exists. Like every edit it is written only
    /// over the copy it read, and reads again when another write came between
    /// ([`Memory::update`]).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](memory_core::MemoryError::InvalidInput) naming `content`
    /// for empty or oversized text;
    /// [`MemoryError::Conflict`](memory_core::MemoryError::Conflict) when other writes
    /// changed the memory at each of eight attempts; store errors.
    pub async fn compress(&self, namespace: &Namespace, id: &str, text: &str) -> Result<bool> {
        for _ in 0..EDIT_ATTEMPTS {
            let Some(item) = self.store.get(namespace, id).await? else {
                return Ok(false);
            };
            let read_at = item.updated_at;
            let compressed = item.compressed(text)?.revised(read_at);
            if self.store.update_if(compressed, read_at).await? {
                return Ok(true);
            }
        }
        Err(edit_conflict(namespace, id))
    }

    /// Pins memory `id` of `namespace` (`pinned`), or unpins it: a pinned memory is never
    /// evicted, decayed or compressed by maintenance. Returns whether the memory exists.
    ///
    /// Written only over the copy it read, as every edit ([`Memory::update`]).
    ///
    /// # Errors
    /// [`MemoryError::Conflict`](memory_core::MemoryError::Conflict) when other writes
    /// changed the memory at each of eight attempts; store errors.
    pub async fn pin(&self, namespace: &Namespace, id: &str, pinned: bool) -> Result<bool> {
        for _ in 0..EDIT_ATTEMPTS {
            let Some(item) = self.store.get(namespace, id).await? else {
                return Ok(false);
            };
            if item.is_pinned() == pinned {
                return Ok(true);
            }
            let read_at = item.updated_at;
            if self
                .store
                .update_if(item.with_pinned(pinned).revised(read_at), read_at)
                .await?
            {
                return Ok(true);
            }
        }
        Err(edit_conflict(namespace, id))
    }

    /// Forgets a memory: a hard delete of it, of every version of its fact, and of every
    /// summary one of them was consolidated into (a summary holds their text; and the
    /// summary that summary was consolidated into, in turn), so nothing of it stays. A
    /// summary goes for the text it holds, not as a version of their fact: what it ended
    /// comes back current, as before it was made (its other sources, and a version it
    /// superseded; each reconciled with its own fact's current version, if one was written
    /// since: the later start holds), and what superseded it stays. The deletes are one
    /// [`delete_many_if`](memory_core::MemoryStore::delete_many_if) (one transaction on
    /// the SQL backends), made only if every memory the walk chose is still as read; when
    /// another write changed one in between (a supersede or a consolidation that took one
    /// of them in), the forgetting is worked out again on what is stored, so no summary
    /// keeps a forgotten memory's text and no version is left naming a successor that is
    /// gone. What comes back is written after the deletion, each only if still as read. A
    /// memory that flagged it as contradicting keeps the bare id in its
    /// [`conflicts_with`](MemoryItem::conflicts_with), which then names nothing and is
    /// ignored: rewriting that memory here could undo a concurrent write to it. The
    /// memories' link nodes are removed after (whether or not this `Memory` enriches:
    /// another may have); one that cannot be is logged, and removed by the next
    /// [`maintain`](Self::maintain) of a `Memory` that enriches. Returns whether it existed.
    ///
    /// # Errors
    /// [`MemoryError::Conflict`](memory_core::MemoryError::Conflict) when other writes
    /// changed those memories at each of eight attempts (nothing deleted), or changed what
    /// comes back at each of eight attempts (deleted; those stay ended); store errors.
    pub async fn forget(&self, namespace: &Namespace, id: &str) -> Result<bool> {
        let Some(item) = self.store.get(namespace, id).await? else {
            return Ok(false);
        };
        let ids = [item.id.clone()];
        let deleted = self
            .forget_all(namespace, vec![item], &ids, EDIT_ATTEMPTS)
            .await?
            .ok_or_else(|| edit_conflict(namespace, id))?;
        Ok(deleted > 0)
    }

    /// Forgets the memories `ids` of `namespace` (`roots`, as read) as
    /// [`forget`](Self::forget) forgets one, in one walk: returns how many were deleted, or
    /// `None` when other writes changed what the walk read at each of `attempts` attempts
    /// (nothing deleted).
    ///
    /// The deletion comes first, and only if every memory the walk chose is still as read;
    /// then what it ended comes back ([`bring_back`](Self::bring_back)). So a failure
    /// never leaves a summary holding forgotten text beside sources already current again.
    async fn forget_all(
        &self,
        namespace: &Namespace,
        mut roots: Vec<MemoryItem>,
        ids: &[String],
        attempts: usize,
    ) -> Result<Option<usize>> {
        for _ in 0..attempts {
            if roots.is_empty() {
                return Ok(Some(0));
            }
            let facts::Forgetting {
                doomed,
                returning,
                cuts,
            } = self.forgetting(namespace, roots).await?;
            if let Some(deleted) = self.store.delete_many_if(namespace, &doomed).await? {
                let doomed: Vec<String> = doomed.into_iter().map(|(id, _)| id).collect();
                // The link nodes go whatever comes of bringing back: a node holds the start
                // of its memory's text.
                self.remove_link_nodes(namespace, &doomed).await;
                self.bring_back(namespace, returning, &cuts, &doomed)
                    .await?;
                return Ok(Some(deleted));
            }
            roots = self.store.get_many(namespace, ids).await?;
        }
        Ok(None)
    }

    /// Brings back `returning`, the memories a forget's deleted memories (`gone`) had
    /// ended, each written only if still as read; those another write changed meanwhile
    /// are read again, and those still ended by a memory that is gone are brought back.
    ///
    /// # Errors
    /// [`MemoryError::Conflict`](memory_core::MemoryError::Conflict) when other writes
    /// changed them at each of [`EDIT_ATTEMPTS`] attempts (the deletion stands; they stay
    /// ended, out of recall); store errors.
    async fn bring_back(
        &self,
        namespace: &Namespace,
        mut returning: Vec<MemoryItem>,
        cuts: &std::collections::HashMap<String, chrono::DateTime<chrono::Utc>>,
        gone: &[String],
    ) -> Result<()> {
        let ids: Vec<String> = returning.iter().map(|item| item.id.clone()).collect();
        let gone: std::collections::HashSet<&str> = gone.iter().map(String::as_str).collect();
        for _ in 0..EDIT_ATTEMPTS {
            if returning.is_empty() {
                return Ok(());
            }
            let (restored, read) = self.restoration(namespace, returning, cuts).await?;
            if self.store.save_many_if(restored, &read).await? {
                return Ok(());
            }
            returning = self
                .store
                .get_many(namespace, &ids)
                .await?
                .into_iter()
                .filter(|item| {
                    item.ended
                        .as_ref()
                        .and_then(memory_core::Ended::successor)
                        .is_some_and(|successor| gone.contains(successor))
                })
                .collect();
        }
        Err(memory_core::MemoryError::Conflict {
            message: format!(
                "the memories forgotten in {namespace} are deleted, but other writes changed \
                 the {} memories they had ended at each of {EDIT_ATTEMPTS} attempts to bring \
                 them back: they stay ended, out of recall",
                ids.len()
            ),
            source: None,
        })
    }

    /// Removes the link nodes of the deleted memories `ids`, with or without an enricher of
    /// its own: another `Memory` on the same stores may have enriched them, and a node holds
    /// the start of its memory's text, which a forget must not leave behind. Without an
    /// enricher, a namespace whose graph holds no entity is not asked further. One that
    /// cannot be removed is logged; the next [`maintain`](Self::maintain) of a `Memory` with
    /// an enricher prunes it.
    async fn remove_link_nodes(&self, namespace: &Namespace, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        if self.enrichment.is_none()
            && !self
                .graph
                .may_have_entities(&namespace.exact())
                .await
                .unwrap_or(true)
        {
            return;
        }
        // A few are removed by id; more, by one listing of the namespace's link nodes, so
        // a large forget costs a statement per node that exists, not per memory.
        const BY_ID: usize = 16;
        let nodes: Vec<String> = if ids.len() <= BY_ID {
            ids.iter()
                .map(|id| crate::enrich::memory_node_id(id))
                .collect()
        } else {
            let forgotten: std::collections::HashSet<&str> =
                ids.iter().map(String::as_str).collect();
            match self.graph.list_entities(&namespace.exact()).await {
                Ok(entities) => entities
                    .into_iter()
                    .filter(crate::enrich::is_link_node)
                    .filter(|entity| {
                        crate::memory_of_node(&entity.id).is_some_and(|id| forgotten.contains(id))
                    })
                    .map(|entity| entity.id)
                    .collect(),
                Err(error) => {
                    tracing::warn!(%error, %namespace,
                        "the link nodes of forgotten memories were not listed");
                    return;
                }
            }
        };
        for node in nodes {
            if let Err(error) = self.graph.remove_entity(namespace, &node).await {
                tracing::warn!(%error, %namespace, %node,
                    "the link node of a forgotten memory was not removed");
            }
        }
    }

    /// Forgets every memory matching `filter` (its limit is ignored) as
    /// [`forget`](Self::forget) forgets one: with every version of their facts and every
    /// summary one of them was consolidated into, what those summaries ended brought back
    /// after the deletion, so no summary keeps a forgotten memory's text and no version is
    /// left naming a successor that is gone. Each namespace's memories go in one
    /// [`delete_many_if`](memory_core::MemoryStore::delete_many_if), with their link nodes;
    /// when other writes change some of them at each of two attempts (a busy namespace),
    /// each match is forgotten on its own. Returns how many memories were deleted (the
    /// versions and summaries included).
    ///
    /// # Errors
    /// [`MemoryError::Conflict`](memory_core::MemoryError::Conflict) when other writes
    /// changed one match at each of eight attempts of its own; store errors. The namespaces
    /// and matches done before the failing one stay done.
    pub async fn forget_matching(&self, filter: &MemoryFilter) -> Result<usize> {
        let mut filter = filter.clone();
        filter.limit = None;
        let mut by_namespace: std::collections::BTreeMap<Namespace, Vec<MemoryItem>> =
            std::collections::BTreeMap::new();
        for item in self.store.list(&filter).await? {
            by_namespace
                .entry(item.namespace.clone())
                .or_default()
                .push(item);
        }
        let mut deleted = 0;
        for (namespace, roots) in by_namespace {
            let ids: Vec<String> = roots.iter().map(|item| item.id.clone()).collect();
            // The namespace's matches at once; when other writes keep changing some of
            // them (a busy namespace), each match on its own, so one memory written to
            // over and over does not hold the others back.
            if let Some(count) = self
                .forget_all(&namespace, roots, &ids, WHOLE_FORGET_ATTEMPTS)
                .await?
            {
                deleted += count;
                continue;
            }
            for id in &ids {
                let Some(root) = self.store.get(&namespace, id).await? else {
                    continue;
                };
                let one = std::slice::from_ref(id);
                let count = self
                    .forget_all(&namespace, vec![root], one, EDIT_ATTEMPTS)
                    .await?
                    .ok_or_else(|| edit_conflict(&namespace, id))?;
                deleted += count;
            }
        }
        Ok(deleted)
    }

    /// Runs decay, (when configured) compression and consolidation, then TTL and eviction
    /// on `scope` now, after writing pending recall feedback, then counts the conflicting
    /// pairs of current memories (the consistency check). Eviction comes after
    /// consolidation, whose summaries are new memories: a pass ends with every namespace
    /// within the capacity. With a
    /// [`KnowledgePolicy`](crate::KnowledgePolicy), pages and entities are expired and
    /// evicted too, after their pending accesses are written. A statistics write that
    /// failed in the background is counted in
    /// [`MaintenanceReport::failed_statistics_writes`], and the pass goes on.
    ///
    /// # Errors
    /// Store errors.
    pub async fn maintain(&self, scope: &Scope) -> Result<MaintenanceReport> {
        let span = tracing::debug_span!("maintain", scope = %scope.namespace);
        async move {
            // A statistics write that failed in the background is reported, not fatal: the
            // pass's TTL and eviction still run (a scheduled pass would otherwise stop at
            // every lost batch).
            let mut failed_statistics_writes = 0;
            for (what, flushed) in [
                ("recall statistics", self.recorder.flush().await),
                (
                    "page and entity accesses",
                    self.knowledge_upkeep.flush().await,
                ),
            ] {
                if let Err(error) = flushed {
                    tracing::warn!(%error, what, "a statistics write failed; maintenance goes on");
                    failed_statistics_writes += 1;
                }
            }
            let now = self.clock.now();
            let mut report = MaintenanceReport {
                failed_write_passes: self.writes.take_failed_passes(),
                failed_statistics_writes,
                ..MaintenanceReport::default()
            };
            if let Some(config) = &self.decay {
                let decayed = decay(&*self.store, scope, config, now, true).await?;
                report.decayed = decayed.decayed;
                report.evicted += decayed.evicted;
            }
            if let Some((config, summarizer)) = &self.compression {
                report.compressed =
                    compress_stale(&*self.store, scope, config, &**summarizer, now).await?;
            }
            if let Some(config) = &self.consolidation {
                let (folded, summaries) = self.consolidate_stale(scope, config, now).await?;
                report.consolidated = folded;
                report.summaries = summaries;
            }
            let evicted = evict(&*self.store, scope, &self.eviction.policy, now).await?;
            report.expired += evicted.expired;
            report.evicted += evicted.evicted;
            self.knowledge_upkeep
                .enforce(scope, now, &mut report)
                .await?;
            if self.enrichment.is_some() {
                report.links_pruned = self.prune_links(scope).await?;
            }
            report.conflicts_found = self.conflicts(scope).await?.len();
            tracing::debug!(
                expired = report.expired,
                decayed = report.decayed,
                evicted = report.evicted,
                "maintained"
            );
            Ok(report)
        }
        .instrument(span)
        .await
    }

    /// Writes pending recall feedback now (of memories, and the accesses of pages and
    /// entities), after waiting for the enrichment of every memory remembered before the
    /// call (with an enricher; a batch that fails is retried with backoff first).
    ///
    /// Both kinds are written whatever happens to the other: a failure of the memories'
    /// batch does not leave the pages' and entities' accesses queued.
    ///
    /// # Errors
    /// Store errors (the memories' first, when both fail).
    pub async fn flush(&self) -> Result<()> {
        if let Some(enrichment) = &self.enrichment {
            enrichment.flush().await;
        }
        let memories = self.recorder.flush().await;
        let knowledge = self.knowledge_upkeep.flush().await;
        memories.and(knowledge)
    }

    /// Counts per kind and namespace, mean access count, compression, how many memories
    /// were recalled and the mean relevance they were recalled with, capacity use, pages
    /// and entities. The memories (with their recall statistics) and the entities are read
    /// 1,000 at a time, so the call holds one page of them whatever the scope holds.
    ///
    /// # Errors
    /// Store errors.
    pub async fn stats(&self, scope: &Scope) -> Result<MemoryStats> {
        self.recorder.flush().await?;
        let mut stats = MemoryStats::default();
        let mut access = 0u64;
        // Read a page at a time: the scope's memories are counted, not held at once.
        let mut filter = MemoryFilter::new(scope.clone()).with_limit(STATS_PAGE);
        let (mut recalls, mut recall_score) = (0u64, 0.0f64);
        let now = self.clock.now();
        // As `TimeView::Current` reads: a memory valid from a later time (a plan) counts.
        let holds = |item: &MemoryItem| {
            item.ended.is_none() && item.valid_until.is_none_or(|until| until > now)
        };
        loop {
            let page = self.store.list(&filter).await?;
            // The page's recall statistics, one read per namespace it holds (a listing is
            // in namespace order).
            for run in page.chunk_by(|a, b| a.namespace == b.namespace) {
                let Some(first) = run.first() else { continue };
                let ids: Vec<String> = run.iter().map(|item| item.id.clone()).collect();
                for recall in self
                    .store
                    .recall_stats_many(&first.namespace, &ids)
                    .await?
                    .into_iter()
                    .flatten()
                    .filter(|recall| recall.recall_count > 0)
                {
                    stats.recalled += 1;
                    recalls = recalls.saturating_add(recall.recall_count);
                    recall_score += recall.total_score;
                }
            }
            for item in &page {
                stats.total += 1;
                stats.current += usize::from(holds(item));
                stats.compressed += usize::from(item.is_compressed());
                *stats.per_kind.entry(item.kind).or_default() += 1;
                *stats
                    .per_namespace
                    .entry(item.namespace.to_string())
                    .or_default() += 1;
                access = access.saturating_add(item.access_count);
            }
            match page.last() {
                Some(last) if page.len() == STATS_PAGE => {
                    filter.after = Some(memory_core::ListPosition::of(last));
                }
                _ => break,
            }
        }
        let total = stats.total;
        stats.mean_access = if total == 0 {
            0.0
        } else {
            access as f64 / total as f64
        };
        stats.compression_rate = if total == 0 {
            0.0
        } else {
            stats.compressed as f64 / total as f64
        };
        stats.mean_recall_score =
            (recalls > 0).then(|| (recall_score / recalls as f64).clamp(0.0, 1.0));
        let capacity = self.eviction.policy.capacity();
        stats.capacity_use = capacity.map(|cap| {
            stats.per_namespace.values().copied().max().unwrap_or(0) as f64 / cap as f64
        });
        stats.pages = self.knowledge.get_index(scope).await?.len();
        // Entities the agent knows of, not the link nodes enrichment keeps for memories.
        // A page at a time, as the memories.
        let mut after = None;
        loop {
            let page = self
                .graph
                .list_entities_after(scope, after.as_ref(), STATS_PAGE)
                .await?;
            stats.entities += page
                .iter()
                .filter(|entity| !crate::enrich::is_link_node(entity))
                .count();
            match page.last() {
                Some(last) if page.len() == STATS_PAGE => {
                    after = Some(memory_core::EntityPosition::of(last));
                }
                _ => break,
            }
        }
        Ok(stats)
    }

    /// The conversation of session `session`, stored in this memory's store.
    ///
    /// # Errors
    /// As [`ConversationMemory::open`].
    pub async fn conversation(
        &self,
        session: Namespace,
        config: ConversationConfig,
    ) -> Result<ConversationMemory> {
        ConversationMemory::open_with_clock(
            Arc::clone(&self.store),
            session,
            config,
            Arc::clone(&self.clock),
        )
        .await
    }
}
