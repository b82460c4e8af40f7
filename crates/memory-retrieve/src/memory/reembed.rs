//! Embedding stored memories again: after an embedder is added to a store whose memories
//! were remembered without one, or after the model (or its query and document forms)
//! changed, when the stored vectors no longer compare with the new queries'.

use std::collections::HashMap;

use memory_core::{
    ConditionalSave, EmbeddingProvider, ListPosition, MemoryError, MemoryFilter, MemoryItem,
    MemoryKind, Namespace, Result, Scope,
};
use serde::{Deserialize, Serialize};

use super::Memory;

/// Memories embedded per call of the embedder (one batch, one round of writes).
const BATCH: usize = 64;

/// Memories listed at a time: a pass holds one page of a namespace, however large it is.
const PAGE: usize = 4 * BATCH;

/// Which stored memories [`Memory::reembed`] embeds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reembed {
    /// Those without a vector the embedder can compare: none, or one of another length
    /// (remembered before the embedder was added, or under a model of another dimension).
    #[default]
    Missing,
    /// Every one: after a change of model, or of its query and document prefixes, that
    /// keeps the vectors' length but not their meaning.
    All,
}

/// What [`Memory::reembed`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReembedReport {
    /// Memories in scope that the embedder embeds (conversation messages are not).
    pub examined: usize,
    /// Memories given a new vector.
    pub embedded: usize,
    /// Memories whose text changed, or that were deleted, while their vector was being
    /// computed: left as the other writer left them (a text edited through the library
    /// was embedded by that edit).
    pub skipped: usize,
}

impl Memory {
    /// Embeds the stored memories of `scope` with this memory's embedder: those without a
    /// comparable vector ([`Reembed::Missing`]), or all of them ([`Reembed::All`]). The
    /// vector is the one [`remember_with`](Self::remember_with) would store: of the
    /// memory's text, in the embedder's document form. Conversation messages
    /// ([`MemoryKind::ShortTerm`]) are left out, as the conversation API leaves them
    /// unembedded.
    ///
    /// Memories are embedded in batches of 64, namespace by namespace, listed 256 at a time
    /// ([`MemoryFilter::after`]), so a pass over a namespace of any size holds one page. Each batch is read again just before it is written, and a memory
    /// whose text changed meanwhile, or that is gone, is left alone, so a concurrent edit
    /// is never overwritten with an old text's vector. Everything else about a memory
    /// (times, recall statistics, metadata) is kept. A failure stops the pass; the
    /// batches written before it stay written, and running it again continues where it
    /// stopped ([`Reembed::Missing`]).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`] naming `embedder` when this memory has none; the
    /// embedder's errors and the checks of [`embedding_of`](Self::embedding_of); store
    /// errors.
    pub async fn reembed(&self, scope: &Scope, which: Reembed) -> Result<ReembedReport> {
        self.reembed_with_progress(scope, which, |_| {}).await
    }

    /// [`reembed`](Self::reembed), calling `progress` with the counts so far after each
    /// batch is written (and once at the end), for a long pass to show how far it got.
    ///
    /// # Errors
    /// As [`reembed`](Self::reembed).
    pub async fn reembed_with_progress(
        &self,
        scope: &Scope,
        which: Reembed,
        mut progress: impl FnMut(&ReembedReport) + Send,
    ) -> Result<ReembedReport> {
        let Some(embedder) = self.retriever.embedder() else {
            return Err(MemoryError::invalid(
                "embedder",
                "this memory has no embedder to embed with",
            ));
        };
        let dimension = embedder.dimension();
        let mut report = ReembedReport::default();
        for namespace in self.store.list_namespaces(scope).await? {
            let mut after: Option<ListPosition> = None;
            loop {
                let mut filter = MemoryFilter::new(namespace.exact()).with_limit(PAGE);
                if let Some(position) = after.take() {
                    filter = filter.after(position);
                }
                let page = self.store.list(&filter).await?;
                let Some(last) = page.last() else { break };
                after = Some(ListPosition::of(last));
                let full = page.len() == PAGE;
                let wanted: Vec<MemoryItem> = page
                    .into_iter()
                    .filter(|item| item.kind != MemoryKind::ShortTerm)
                    .inspect(|_| report.examined += 1)
                    .filter(|item| {
                        which == Reembed::All
                            || item
                                .embedding
                                .as_ref()
                                .is_none_or(|vector| vector.len() != dimension)
                    })
                    .collect();
                for batch in wanted.chunks(BATCH) {
                    self.reembed_batch(&**embedder, &namespace, batch, &mut report)
                        .await?;
                    progress(&report);
                }
                if !full {
                    break;
                }
            }
        }
        progress(&report);
        Ok(report)
    }

    /// Embeds one batch of memories read from `namespace` and writes each vector to the
    /// memory as it is now, unless its text changed or it is gone.
    async fn reembed_batch(
        &self,
        embedder: &dyn EmbeddingProvider,
        namespace: &Namespace,
        batch: &[MemoryItem],
        report: &mut ReembedReport,
    ) -> Result<()> {
        let texts: Vec<&str> = batch.iter().map(|item| item.content.as_str()).collect();
        let vectors = Box::pin(crate::embedding::embed_batch_checked(embedder, &texts)).await?;
        let ids: Vec<String> = batch.iter().map(|item| item.id.clone()).collect();
        let mut now: HashMap<String, MemoryItem> = self
            .store
            .get_many(namespace, &ids)
            .await?
            .into_iter()
            .map(|item| (item.id.clone(), item))
            .collect();
        let mut writes = Vec::with_capacity(batch.len());
        for (read, vector) in batch.iter().zip(vectors) {
            match now.remove(&read.id) {
                Some(item) if item.content == read.content => {
                    let read_at = item.updated_at;
                    writes.push((read_at, item.with_embedding(vector)?.revised(read_at)));
                }
                _ => report.skipped += 1,
            }
        }
        // Written together (one transaction where the backend can), each only over the copy
        // read: a memory deleted or changed since stays as it is now (a changed text is
        // embedded by the next pass).
        let writes = writes
            .into_iter()
            .map(|(read_at, item)| ConditionalSave::update(item, read_at))
            .collect();
        for written in self.store.save_each_if(writes).await? {
            if written {
                report.embedded += 1;
            } else {
                report.skipped += 1;
            }
        }
        Ok(())
    }
}
