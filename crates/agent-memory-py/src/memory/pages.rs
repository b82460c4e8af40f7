//! Knowledge pages from Python: the wiki's pages as dicts, written and read through the
//! memory's knowledge store (the same one recall's knowledge channel searches).

use std::sync::Arc;

use agent_memory::{KnowledgePage, KnowledgeStore, MemoryError, Namespace, Scope};
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::graph::as_dict;
use crate::runtime::block_on;

/// Writes `page`: adds it, or replaces the stored page with its id (which keeps its creation
/// time and access statistics).
pub(super) fn put(
    py: Python<'_>,
    knowledge: &Arc<dyn KnowledgeStore>,
    page: KnowledgePage,
) -> PyResult<()> {
    let knowledge = Arc::clone(knowledge);
    block_on(py, async move {
        match knowledge.add_page(page.clone()).await {
            Err(MemoryError::AlreadyExists(_)) => knowledge.update_page(page).await,
            other => other,
        }
    })
}

/// Page `id` of `namespace` as a dict with its `referrers` (the ids of the pages citing
/// it), or None.
pub(super) fn get<'py>(
    py: Python<'py>,
    knowledge: &Arc<dyn KnowledgeStore>,
    namespace: Namespace,
    id: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let knowledge = Arc::clone(knowledge);
    let id = id.to_owned();
    let found = block_on(py, async move {
        match knowledge.get_page(&namespace, &id).await? {
            Some(page) => {
                let referrers = knowledge.referrers(&namespace, &id).await?;
                Ok(Some((page, referrers)))
            }
            None => Ok(None),
        }
    })?;
    found
        .map(|(page, referrers)| {
            let dict = as_dict(py, &page)?;
            dict.set_item("referrers", referrers)?;
            Ok(dict)
        })
        .transpose()
}

/// The page index of `scope` as dicts: `id`, `namespace`, `title`, `summary`, `tags`,
/// `updated_at`, `referenced_by`.
pub(super) fn index<'py>(
    py: Python<'py>,
    knowledge: &Arc<dyn KnowledgeStore>,
    scope: Scope,
) -> PyResult<Bound<'py, PyList>> {
    let knowledge = Arc::clone(knowledge);
    let entries = block_on(py, async move { knowledge.get_index(&scope).await })?;
    let list = PyList::empty(py);
    for entry in &entries {
        list.append(as_dict(py, entry)?)?;
    }
    Ok(list)
}
