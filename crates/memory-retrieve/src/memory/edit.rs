//! Editing a stored memory in place: [`Memory::update`] changes the fields a caller names
//! and keeps every other (fact key and validity, pin, context, compressed original, creation
//! time, recall statistics), which a [`save`](memory_core::MemoryStore::save) of a new
//! item would not.

use chrono::Utc;
use memory_core::{MemoryError, MemoryItem, Namespace, Result};

use super::Memory;

/// The changes [`Memory::update`] makes to a memory: only the fields given change.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct MemoryUpdate {
    /// The new text, checked as a new memory's is (not empty, at most the content limit).
    /// A text that differs is embedded again when the memory has an embedder, and loses
    /// its old vector otherwise.
    pub content: Option<String>,
    /// The new tags, replacing the old ones.
    pub tags: Option<Vec<String>>,
    /// The new importance, in [0, 1].
    pub importance: Option<f32>,
    /// The new metadata, a JSON object replacing the old one; the library's own keys
    /// (those starting with `_`: context, pin, compressed original, decay state) are kept
    /// unless it names them ([`MemoryItem::with_metadata`]).
    pub metadata: Option<serde_json::Value>,
    /// Refuse the update when the memory has ended (a superseded or retracted version of a
    /// fact), as read at each attempt: an update meant for the current version is then not
    /// written on one that a concurrent write ended. Off by default (an ended version may be
    /// corrected in place).
    pub only_current: bool,
}

impl MemoryUpdate {
    /// No change yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// With the new text.
    #[must_use]
    pub fn content(mut self, content: impl Into<String>) -> Self {
        self.content = Some(content.into());
        self
    }

    /// With the new tags.
    #[must_use]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }

    /// With the new importance.
    #[must_use]
    pub fn importance(mut self, importance: f32) -> Self {
        self.importance = Some(importance);
        self
    }

    /// With the new metadata.
    #[must_use]
    pub fn metadata(mut self, metadata: serde_json::Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Refusing the update of a memory that has ended ([`only_current`](Self::only_current)).
    #[must_use]
    pub fn only_current(mut self) -> Self {
        self.only_current = true;
        self
    }
}

impl Memory {
    /// Changes memory `id` of `namespace` as `update` says and returns it as stored. What
    /// `update` does not name stays as it was: kind, source, credibility, the fact key and
    /// the version's validity (a superseded version stays superseded), the pin, the
    /// dialogue context, a compressed original, the creation time and the recall
    /// statistics. Every change is checked before anything is written, so a refused update
    /// changes nothing. Like the other edits (`pin`, `compress`) it reads the memory and
    /// writes the change only over the copy it read
    /// ([`update_if`](memory_core::MemoryStore::update_if)): when another write changed the
    /// memory in between (a pin, an enrichment, another process's edit), the update reads it
    /// again and makes its change on what is stored then, so neither write is lost. A new
    /// text is embedded again and, once written, linked again in the graph (queued to the
    /// enricher; without one, the memory's link node, which holds the old text's start, is
    /// removed).
    ///
    /// # Errors
    /// [`MemoryError::NotFound`] when there is no such memory;
    /// [`MemoryError::InvalidInput`] naming `content`, `tag`, `importance` or `metadata`
    /// for a value out of its limits, or `id` for an ended memory when the update is
    /// [`only_current`](MemoryUpdate::only_current); [`MemoryError::Conflict`] when other writes changed
    /// the memory at each of eight attempts to edit it (nothing is written; the
    /// update can be made again); embedding and store errors.
    pub async fn update(
        &self,
        namespace: &Namespace,
        id: &str,
        update: MemoryUpdate,
    ) -> Result<MemoryItem> {
        // Checked as a new memory's text is, before anything is read.
        let content = update
            .content
            .map(|content| MemoryItem::new(namespace.clone(), content).map(|item| item.content))
            .transpose()?;
        // The new text's vector, asked for once however many times the memory is read.
        let mut vector: Option<Option<Vec<f32>>> = None;
        for _ in 0..EDIT_ATTEMPTS {
            let Some(mut item) = self.store.get(namespace, id).await? else {
                return Err(MemoryError::not_found("memory", namespace, id));
            };
            if update.only_current && item.ended.is_some() {
                return Err(MemoryError::invalid(
                    "id",
                    format!("memory {id} in {namespace} has ended; update the current version"),
                ));
            }
            let read_at = item.updated_at;
            let new_text = content
                .as_ref()
                .is_some_and(|content| *content != item.content);
            if let Some(content) = &content
                && new_text
            {
                // The old vector describes the old text: embedded again, or none without
                // an embedder.
                let embedded = match &vector {
                    Some(embedded) => embedded.clone(),
                    None => vector.insert(self.embedding_of(content).await?).clone(),
                };
                item.embedding = None;
                if let Some(embedded) = embedded {
                    item = item.with_embedding(embedded)?;
                }
                item.content = content.clone();
            }
            if let Some(tags) = &update.tags {
                item = item.with_tags(tags.clone())?;
            }
            if let Some(metadata) = &update.metadata {
                item = item.with_metadata(metadata.clone())?;
            }
            item.updated_at = Utc::now().max(item.created_at);
            if let Some(importance) = update.importance {
                item = item.with_importance(importance)?;
                // Decay goes on from the importance set, from now: kept, the state of an
                // earlier pass would bring back the importance it had decayed. (Without
                // decay here or a state from a pass elsewhere, none is written.)
                if self.decay.is_some()
                    || item
                        .metadata
                        .get(crate::eviction::DECAY_METADATA_KEY)
                        .is_some()
                {
                    crate::eviction::restart_decay(&mut item, importance, self.clock.now());
                }
            }
            let item = item.revised(read_at);
            if self.store.update_if(item.clone(), read_at).await? {
                if new_text {
                    self.relink(namespace, id).await;
                }
                return Ok(item);
            }
        }
        Err(edit_conflict(namespace, id))
    }

    /// After the text of memory `id` changed: its link node describes and links the old
    /// text, which an edit may have been made to take out. Queued to be enriched again
    /// when this `Memory` enriches (the node then describes and links the new text, as a
    /// memory remembered again under its id); otherwise the node is removed (another
    /// `Memory` may have enriched it), as `forget` removes it. The edit is committed: a
    /// failure is logged.
    async fn relink(&self, namespace: &Namespace, id: &str) {
        if let Some(enrichment) = &self.enrichment {
            Box::pin(enrichment.enqueue(namespace, id)).await;
            return;
        }
        self.remove_link_nodes(namespace, &[id.to_owned()]).await;
    }
}

/// How many times an edit of one memory reads it again when another write changed it
/// between the edit's read and its write, before it gives up with
/// [`MemoryError::Conflict`]. Each attempt is a read and a conditional write; eight
/// concurrent writes to one memory within one edit are already far past what an agent
/// does.
pub(crate) const EDIT_ATTEMPTS: usize = 8;

/// The error of an edit that found memory `id` changed at each of its [`EDIT_ATTEMPTS`].
pub(crate) fn edit_conflict(namespace: &Namespace, id: &str) -> MemoryError {
    MemoryError::Conflict {
        message: format!(
            "memory {id} in {namespace} was changed by other writes at each of {EDIT_ATTEMPTS} \
             attempts to edit it; nothing was written"
        ),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use memory_core::{MemoryError, MemoryStore, Namespace};
    use serde_json::json;

    use super::MemoryUpdate;
    use crate::{Memory, Remember};

    fn user() -> Namespace {
        Namespace::parse("user").expect("namespace")
    }

    /// An update for the current version only is refused on an ended one, read as the
    /// update is made; without it, an ended version may be corrected.
    #[tokio::test]
    async fn an_update_for_the_current_version_is_refused_on_an_ended_one() {
        let memory = Memory::in_memory();
        let remember = |text: &'static str| {
            let memory = &memory;
            async move {
                memory
                    .remember_with(Remember::new(user(), text).fact_key("user.city"))
                    .await
                    .expect("remember")
                    .id
            }
        };
        let paris = remember("The user lives in Paris").await;
        remember("The user lives in Berlin").await;
        let error = memory
            .update(
                &user(),
                &paris,
                MemoryUpdate::new()
                    .content("The user lives in Lyon")
                    .only_current(),
            )
            .await
            .unwrap_err();
        assert_eq!(error.field(), Some("id"), "{error}");
        let stored = memory.store().get(&user(), &paris).await.unwrap().unwrap();
        assert_eq!(stored.content, "The user lives in Paris", "nothing written");
        let corrected = memory
            .update(
                &user(),
                &paris,
                MemoryUpdate::new().content("The user lived in Paris"),
            )
            .await
            .expect("an ended version may be corrected");
        assert!(corrected.ended.is_some());
    }

    #[tokio::test]
    async fn an_update_changes_what_it_names_and_keeps_the_rest() {
        let memory = Memory::in_memory();
        let paris = memory
            .remember_with(
                Remember::new(user(), "The user lives in Paris")
                    .fact_key("user.city")
                    .metadata(json!({"src": "chat"})),
            )
            .await
            .expect("remember")
            .id;
        assert!(memory.pin(&user(), &paris, true).await.expect("pin"));
        let before = memory.store().get(&user(), &paris).await.unwrap().unwrap();
        let after = memory
            .update(
                &user(),
                &paris,
                MemoryUpdate::new().content("The user lives in Paris, France"),
            )
            .await
            .expect("update");
        assert_eq!(after.content, "The user lives in Paris, France");
        assert_eq!(after.fact_key.as_deref(), Some("user.city"));
        assert!(after.is_pinned(), "the pin is kept");
        assert_eq!(after.metadata["src"], "chat");
        assert_eq!(after.created_at, before.created_at);
        assert_eq!(
            memory.store().get(&user(), &paris).await.unwrap(),
            Some(after),
            "returned as stored"
        );
        // A later value of the fact supersedes the updated memory, and it stays superseded
        // through an update of its own.
        let berlin = memory
            .remember_with(Remember::new(user(), "The user lives in Berlin").fact_key("user.city"))
            .await
            .expect("remember")
            .id;
        let old = memory
            .update(&user(), &paris, MemoryUpdate::new().tags(["home"]))
            .await
            .expect("update");
        assert!(!old.is_current(), "a superseded version stays superseded");
        assert!(
            memory
                .store()
                .get(&user(), &berlin)
                .await
                .unwrap()
                .unwrap()
                .is_current()
        );
    }

    #[tokio::test]
    async fn a_refused_update_writes_nothing() {
        let memory = Memory::in_memory();
        let id = memory.remember(&user(), "a note").await.expect("remember");
        let before = memory.store().get(&user(), &id).await.unwrap();
        for (update, field) in [
            (MemoryUpdate::new().tags(["fine"]).content(""), "content"),
            (
                MemoryUpdate::new().content("new text").importance(2.0),
                "importance",
            ),
            (
                MemoryUpdate::new().content("new text").metadata(json!([1])),
                "metadata",
            ),
        ] {
            let error = memory.update(&user(), &id, update).await.unwrap_err();
            assert_eq!(error.field(), Some(field), "{error}");
        }
        assert_eq!(memory.store().get(&user(), &id).await.unwrap(), before);
        let missing = memory
            .update(&user(), "missing", MemoryUpdate::new().content("x"))
            .await
            .unwrap_err();
        assert!(matches!(missing, MemoryError::NotFound { .. }), "{missing}");
    }
}
