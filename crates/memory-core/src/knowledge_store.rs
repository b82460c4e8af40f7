//! The `KnowledgeStore` trait: knowledge pages and their index.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::validate_time;
use crate::{KnowledgePage, Namespace, PageHit, PageIndexEntry, PageQuery, Result, Scope};

/// One access to a knowledge page or a graph entity: a recall returned it at `at`.
/// [`KnowledgeStore::record_accesses`] and
/// [`KnowledgeGraph::record_accesses`](crate::KnowledgeGraph::record_accesses) take them in
/// batches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessEvent {
    /// The record's namespace.
    pub namespace: Namespace,
    /// The page or entity id.
    pub id: String,
    /// When it was accessed.
    pub at: DateTime<Utc>,
}

impl AccessEvent {
    /// An access to record `id` of `namespace` at `at`.
    pub fn new(namespace: Namespace, id: impl Into<String>, at: DateTime<Utc>) -> Self {
        Self {
            namespace,
            id: id.into(),
            at,
        }
    }

    /// The accesses of a batch per record, in order of first appearance: how many there
    /// were and the latest time. Every backend applies a batch this way (the count added
    /// with saturation, `last_accessed` set to the later of the stored time and the latest
    /// access), so they agree; a batch applies as a whole.
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `at` for a
    /// time outside the storable range (nothing of the batch should then be written).
    pub fn tally(events: &[AccessEvent]) -> Result<Vec<AccessTally<'_>>> {
        let mut out: Vec<AccessTally<'_>> = Vec::new();
        let mut seen: HashMap<(&Namespace, &str), usize> = HashMap::new();
        for event in events {
            validate_time("at", event.at)?;
            let key = (&event.namespace, event.id.as_str());
            match seen.get(&key) {
                Some(&index) => {
                    let tally = &mut out[index];
                    tally.count = tally.count.saturating_add(1);
                    tally.last = tally.last.max(event.at);
                }
                None => {
                    seen.insert(key, out.len());
                    out.push(AccessTally {
                        namespace: &event.namespace,
                        id: &event.id,
                        count: 1,
                        last: event.at,
                    });
                }
            }
        }
        Ok(out)
    }
}

/// The accesses of one record in a batch ([`AccessEvent::tally`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessTally<'a> {
    /// The record's namespace.
    pub namespace: &'a Namespace,
    /// The record's id.
    pub id: &'a str,
    /// How many accesses the batch holds.
    pub count: u64,
    /// The latest of their times.
    pub last: DateTime<Utc>,
}

impl AccessTally<'_> {
    /// Applies the accesses to stored statistics: the count added (saturating at
    /// `2^63 - 1`, the largest count every backend stores), the last access the later one.
    pub fn apply(&self, access_count: &mut u64, last_accessed: &mut Option<DateTime<Utc>>) {
        *access_count = access_count
            .saturating_add(self.count)
            .min(i64::MAX.unsigned_abs());
        *last_accessed = Some(last_accessed.map_or(self.last, |at| at.max(self.last)));
    }
}

/// How many times [`write_page`] and [`write_entity`](crate::write_entity) try to add or
/// replace a record that other writes keep adding and deleting in between.
pub(crate) const PUT_ATTEMPTS: usize = 8;

/// Writes `page` as every face does: adds it, or replaces the stored page with its id (which
/// keeps its creation time and access statistics). A page deleted between the two is added
/// again: the write is a put, whatever another writer does meanwhile. With `read_at`, the
/// `updated_at` of the copy the new version was made from, only over the page as read
/// ([`KnowledgeStore::update_page_if`]), its `updated_at` moved past `read_at`
/// ([`KnowledgePage::revise`]).
///
/// # Errors
/// With `read_at`: [`MemoryError::Conflict`](crate::MemoryError::Conflict) when the page
/// changed since it was read, [`MemoryError::NotFound`](crate::MemoryError::NotFound) when
/// it does not exist; without: [`MemoryError::Conflict`](crate::MemoryError::Conflict) when
/// other writes added and deleted the page between each of eight attempts;
/// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) for an invalid page;
/// backend errors.
pub async fn write_page(
    knowledge: &dyn KnowledgeStore,
    mut page: KnowledgePage,
    read_at: Option<DateTime<Utc>>,
) -> Result<()> {
    let Some(read_at) = read_at else {
        for _ in 0..PUT_ATTEMPTS {
            match knowledge.add_page(page.clone()).await {
                Err(crate::MemoryError::AlreadyExists(_)) => {
                    match knowledge.update_page(page.clone()).await {
                        Err(crate::MemoryError::NotFound { .. }) => {}
                        other => return other,
                    }
                }
                other => return other,
            }
        }
        return Err(crate::MemoryError::Conflict {
            message: format!(
                "page {} in {} was added and deleted by other writes at each of \
                 {PUT_ATTEMPTS} attempts to write it; nothing was written",
                page.id, page.namespace
            ),
            source: None,
        });
    };
    page.revise(read_at);
    let (namespace, id) = (page.namespace.clone(), page.id.clone());
    if knowledge.update_page_if(page, read_at).await? {
        return Ok(());
    }
    Err(match knowledge.get_page(&namespace, &id).await? {
        Some(stored) => crate::MemoryError::Conflict {
            message: format!(
                "page {id} in {namespace} changed since it was read: it was updated at {}, \
                 not {}; read it again and redo the edit",
                stored.updated_at.to_rfc3339(),
                read_at.to_rfc3339()
            ),
            source: None,
        },
        None => crate::MemoryError::not_found("page", &namespace, &id),
    })
}

/// Storage of [`KnowledgePage`]s with a browsable index and search.
///
/// Contracts (checked by the [`testsuite`](crate::testsuite)):
/// - The index is in step with the pages after every add, update and delete.
/// - `referenced_by` counts the existing pages of the same namespace whose `references`
///   name the page (a page referring to itself does not count).
/// - Reads never leave their namespace or scope; a deleted page is gone from every read.
/// - `add_page` stores the page as given, access statistics included; `update_page` keeps
///   the stored `created_at`, `access_count` and `last_accessed` (the store keeps those).
#[async_trait]
pub trait KnowledgeStore: Send + Sync + Debug + 'static {
    /// Adds a new page.
    ///
    /// # Errors
    /// [`MemoryError::AlreadyExists`](crate::MemoryError::AlreadyExists) when the namespace
    /// already has a page with this id; [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput)
    /// for an invalid page.
    async fn add_page(&self, page: KnowledgePage) -> Result<()>;

    /// The page, if it exists.
    ///
    /// # Errors
    /// Backend errors only.
    async fn get_page(&self, namespace: &Namespace, id: &str) -> Result<Option<KnowledgePage>>;

    /// Replaces an existing page; its `created_at` is kept from the stored page.
    ///
    /// # Errors
    /// [`MemoryError::NotFound`](crate::MemoryError::NotFound) when it does not exist;
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) for an invalid page.
    async fn update_page(&self, page: KnowledgePage) -> Result<()>;

    /// Replaces the stored page of `page`'s namespace and id, as
    /// [`update_page`](Self::update_page) does, only when the stored page's `updated_at` is
    /// still `read_at`: the `updated_at` of the copy the new version was made from. Returns
    /// `false`, writing nothing, when the page was changed or deleted since that copy was
    /// read: two agents editing one page from one copy do not lose an edit, as the second
    /// learns that it must read again. `page.updated_at` should be later than `read_at`, or
    /// a second edit from the same copy would find it unchanged.
    ///
    /// The default reads, compares and updates in three steps, exact only when nothing else
    /// writes between them; every backend of this workspace does it in one step (under the
    /// shard's lock, in one transaction, in one conditional `UPDATE`).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) for an invalid page;
    /// backend errors.
    async fn update_page_if(&self, page: KnowledgePage, read_at: DateTime<Utc>) -> Result<bool> {
        page.validate()?;
        match self.get_page(&page.namespace, &page.id).await? {
            Some(stored) if stored.updated_at == read_at => {
                self.update_page(page).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Adds `page`, or replaces the page with its id whole: its creation time and access
    /// statistics too, as given (an import or a restore, where [`update_page`](Self::update_page)
    /// keeps the stored ones). A failure leaves the stored page as it was. The default
    /// deletes the stored page and adds the new one, two writes a failure can come between;
    /// every backend of this workspace overrides it with one transaction (in memory: one
    /// lock).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) for an invalid page
    /// (nothing is written); backend errors.
    async fn put_page(&self, page: KnowledgePage) -> Result<()> {
        page.validate()?;
        match self.add_page(page.clone()).await {
            Err(crate::MemoryError::AlreadyExists(_)) => {
                self.delete_page(&page.namespace, &page.id).await?;
                self.add_page(page).await
            }
            other => other,
        }
    }

    /// Deletes a page. Returns whether it existed.
    ///
    /// # Errors
    /// Backend errors only.
    async fn delete_page(&self, namespace: &Namespace, id: &str) -> Result<bool>;

    /// The best `query.top_k` pages for `query.text`, best first, ties by id. Text with no
    /// searchable word returns no hits.
    ///
    /// # Errors
    /// Backend errors only.
    async fn search(&self, query: &PageQuery) -> Result<Vec<PageHit>>;

    /// The table of contents of `scope`, ordered by namespace, then title
    /// (case-insensitive), then id.
    ///
    /// # Errors
    /// Backend errors only.
    async fn get_index(&self, scope: &Scope) -> Result<Vec<PageIndexEntry>>;

    /// Deletes every page in `scope`. Returns how many were deleted.
    ///
    /// # Errors
    /// Backend errors only.
    async fn clear(&self, scope: &Scope) -> Result<usize>;

    /// The distinct namespaces in `scope` that hold at least one page, sorted.
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>>;

    /// How many existing pages of `namespace` reference page `id`.
    ///
    /// # Errors
    /// Backend errors only.
    async fn reference_count(&self, namespace: &Namespace, id: &str) -> Result<usize> {
        Ok(self
            .get_index(&namespace.exact())
            .await?
            .into_iter()
            .find(|entry| entry.id == id)
            .map_or(0, |entry| entry.referenced_by))
    }

    /// The ids of the pages of `namespace` whose references name page `id` (a page naming
    /// itself excepted), sorted: what links to the page, whether or not it exists yet (a
    /// page that is cited before it is written).
    ///
    /// # Errors
    /// Backend errors only.
    async fn referrers(&self, namespace: &Namespace, id: &str) -> Result<Vec<String>> {
        let mut ids: Vec<String> = self
            .list_pages(&namespace.exact())
            .await?
            .into_iter()
            .filter(|page| page.id != id && page.references.iter().any(|r| r == id))
            .map(|page| page.id)
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// The first `limit` of [`referrers`](Self::referrers)' ids, in its order: what a
    /// reader that shows a page with a page of what cites it needs, at the cost of that
    /// page rather than of every citing page (an index page every page cites). The default
    /// reads them all and keeps the first `limit`; every backend of this workspace reads
    /// only those.
    ///
    /// # Errors
    /// Backend errors only.
    async fn referrers_at_most(
        &self,
        namespace: &Namespace,
        id: &str,
        limit: usize,
    ) -> Result<Vec<String>> {
        let mut ids = self.referrers(namespace, id).await?;
        ids.truncate(limit);
        Ok(ids)
    }

    /// Records that recalls returned these pages: each event adds one to its page's
    /// `access_count` and moves `last_accessed` to the event's time when later (see
    /// [`AccessEvent::tally`]). Events naming a page that does not exist are ignored. Backends
    /// apply a batch in one transaction where they have them: a batch that fails with a
    /// recoverable error (unavailable, timed out, conflicting) is written again by the
    /// background writer, and must have left nothing behind. The default records nothing,
    /// so a store without access statistics still works (a knowledge lifecycle policy then
    /// sees every page as never accessed).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `at` for a
    /// time outside the storable range; backend errors.
    async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
        let _ = events;
        Ok(())
    }

    /// Every page in `scope`, in index order (for export).
    ///
    /// # Errors
    /// Backend errors only.
    async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
        let mut pages = Vec::new();
        for entry in self.get_index(scope).await? {
            if let Some(page) = self.get_page(&entry.namespace, &entry.id).await? {
                pages.push(page);
            }
        }
        Ok(pages)
    }
}

macro_rules! forward_knowledge_store {
    ($wrapper:ident) => {
        // Every method forwarded, the defaulted ones too: a wrapper that fell back to a
        // default would hide the wrapped store's own implementation.
        #[deny(clippy::missing_trait_methods)]
        #[async_trait]
        impl<T: KnowledgeStore + ?Sized> KnowledgeStore for $wrapper<T> {
            async fn add_page(&self, page: KnowledgePage) -> Result<()> {
                (**self).add_page(page).await
            }
            async fn get_page(
                &self,
                namespace: &Namespace,
                id: &str,
            ) -> Result<Option<KnowledgePage>> {
                (**self).get_page(namespace, id).await
            }
            async fn update_page(&self, page: KnowledgePage) -> Result<()> {
                (**self).update_page(page).await
            }
            async fn update_page_if(
                &self,
                page: KnowledgePage,
                read_at: DateTime<Utc>,
            ) -> Result<bool> {
                (**self).update_page_if(page, read_at).await
            }
            async fn put_page(&self, page: KnowledgePage) -> Result<()> {
                (**self).put_page(page).await
            }
            async fn delete_page(&self, namespace: &Namespace, id: &str) -> Result<bool> {
                (**self).delete_page(namespace, id).await
            }
            async fn search(&self, query: &PageQuery) -> Result<Vec<PageHit>> {
                (**self).search(query).await
            }
            async fn get_index(&self, scope: &Scope) -> Result<Vec<PageIndexEntry>> {
                (**self).get_index(scope).await
            }
            async fn clear(&self, scope: &Scope) -> Result<usize> {
                (**self).clear(scope).await
            }
            async fn list_namespaces(&self, scope: &Scope) -> Result<Vec<Namespace>> {
                (**self).list_namespaces(scope).await
            }
            async fn reference_count(&self, namespace: &Namespace, id: &str) -> Result<usize> {
                (**self).reference_count(namespace, id).await
            }
            async fn referrers(&self, namespace: &Namespace, id: &str) -> Result<Vec<String>> {
                (**self).referrers(namespace, id).await
            }
            async fn referrers_at_most(
                &self,
                namespace: &Namespace,
                id: &str,
                limit: usize,
            ) -> Result<Vec<String>> {
                (**self).referrers_at_most(namespace, id, limit).await
            }
            async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
                (**self).list_pages(scope).await
            }
            async fn record_accesses(&self, events: &[AccessEvent]) -> Result<()> {
                (**self).record_accesses(events).await
            }
        }
    };
}

forward_knowledge_store!(Arc);
forward_knowledge_store!(Box);
