//! Knowledge pages as the HTTP API and the MCP tools write and read them.

use agent_memory::{KnowledgePage, KnowledgeStore, MemoryError, Namespace};

use crate::failure::{ErrorKind, Failure};
use crate::views::PageView;

/// Adds `page`, or replaces the stored one with its id (its creation time and access
/// statistics stay), then reads it back with the pages that cite it.
pub(crate) async fn put_page(
    knowledge: &dyn KnowledgeStore,
    page: KnowledgePage,
) -> Result<PageView, Failure> {
    let (namespace, id) = (page.namespace.clone(), page.id.clone());
    match knowledge.add_page(page.clone()).await {
        Err(MemoryError::AlreadyExists(_)) => knowledge.update_page(page).await?,
        other => other?,
    }
    page_view(knowledge, &namespace, &id).await
}

/// Page `id` of `namespace` with the pages that cite it.
///
/// # Errors
/// [`ErrorKind::NotFound`] when there is no such page.
pub(crate) async fn page_view(
    knowledge: &dyn KnowledgeStore,
    namespace: &Namespace,
    id: &str,
) -> Result<PageView, Failure> {
    let Some(page) = knowledge.get_page(namespace, id).await? else {
        return Err(Failure::new(
            ErrorKind::NotFound,
            format!("no page {id:?} in namespace {namespace}"),
        ));
    };
    let referrers = knowledge.referrers(namespace, id).await?;
    Ok(PageView::with_referrers(&page, referrers))
}
