//! The `KnowledgeStore` trait: knowledge pages and their index.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;

use crate::{KnowledgePage, Namespace, PageHit, PageIndexEntry, PageQuery, Result, Scope};

/// Storage of [`KnowledgePage`]s with a browsable index and search.
///
/// Contracts (checked by the [`testsuite`](crate::testsuite)):
/// - The index is in step with the pages after every add, update and delete.
/// - `referenced_by` counts the existing pages of the same namespace whose `references`
///   name the page (a page referring to itself does not count).
/// - Reads never leave their namespace or scope; a deleted page is gone from every read.
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
            async fn list_pages(&self, scope: &Scope) -> Result<Vec<KnowledgePage>> {
                (**self).list_pages(scope).await
            }
        }
    };
}

forward_knowledge_store!(Arc);
forward_knowledge_store!(Box);
