//! Knowledge pages from Python: the wiki's pages as dicts, written and read through the
//! memory's knowledge store (the same one recall's knowledge channel searches).

use std::sync::Arc;

use agent_memory::{KnowledgePage, KnowledgeStore, Namespace, Scope};
use chrono::{DateTime, Utc};
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::graph::as_dict;
use crate::errors::invalid;
use crate::runtime::block_on;

/// Writes `page` as every face does ([`agent_memory::write_page`]): added or replaced, and
/// with `read_at` only over the page as read (`ConflictError` when it changed since,
/// `NotFoundError` when it does not exist).
pub(super) fn put(
    py: Python<'_>,
    knowledge: &Arc<dyn KnowledgeStore>,
    page: KnowledgePage,
    read_at: Option<DateTime<Utc>>,
) -> PyResult<()> {
    let knowledge = Arc::clone(knowledge);
    block_on(py, async move {
        agent_memory::write_page(knowledge.as_ref(), page, read_at).await
    })
}

/// The `if_updated_at` of `put_page`: a page dict's `updated_at` (RFC 3339, to the
/// nanosecond; a Python `datetime` holds only microseconds, so the text is taken).
pub(super) fn read_at(py: Python<'_>, raw: Option<&str>) -> PyResult<Option<DateTime<Utc>>> {
    raw.map(|raw| {
        DateTime::parse_from_rfc3339(raw.trim())
            .map(|at| at.with_timezone(&Utc))
            .map_err(|error| {
                invalid(
                    py,
                    "if_updated_at",
                    format!("{raw:?} is not an RFC 3339 time (a page's updated_at): {error}"),
                )
            })
    })
    .transpose()
}

/// The most referrers a page dict lists: any number of pages may cite one (an index page
/// every page cites), and a read of it stays the size of a page.
const MAX_REFERRERS: usize = 100;

/// Page `id` of `namespace` as a dict with its `referrers` (the ids of the first
/// [`MAX_REFERRERS`] pages citing it) and `referrers_truncated` (whether more cite it), or
/// None.
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
                // The first MAX_REFERRERS, as every face shows them; one more tells of more.
                let referrers = knowledge
                    .referrers_at_most(&namespace, &id, MAX_REFERRERS + 1)
                    .await?;
                Ok(Some((page, referrers)))
            }
            None => Ok(None),
        }
    })?;
    found
        .map(|(page, mut referrers)| {
            let dict = as_dict(py, &page)?;
            let truncated = referrers.len() > MAX_REFERRERS;
            referrers.truncate(MAX_REFERRERS);
            dict.set_item("referrers", referrers)?;
            dict.set_item("referrers_truncated", truncated)?;
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
