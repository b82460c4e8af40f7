//! Listing memories: one statement, or over a subtree of few namespaces one seeking
//! statement per namespace with the pages merged in the listing's order.

use memory_core::backend::listing_order;
use memory_core::{ListPosition, MemoryFilter, MemoryItem, Namespace, Result, Scope};

use super::filter::{and_conditions, filter_is_satisfiable};
use super::{COLUMNS, PostgresStore, decode_all};
use crate::error::corrupt;
use crate::sql::limit_value;

/// The fewest rows a listing with metadata conditions reads at a time.
const LIST_CHUNK: usize = 256;

/// A page of a subtree is read namespace by namespace, each page merged, when the subtree
/// spans at most this many namespaces holding memories.
const MERGED_NAMESPACES: usize = 8;

impl PostgresStore {
    /// The memories of one listing statement, checked against every condition, at most the
    /// filter's limit.
    ///
    /// Metadata conditions go to SQL (`@>`) but are checked again on the decoded item, where
    /// a few values compare differently (numbers jsonb reads as equal). So a limited listing
    /// with metadata reads `limit` rows (at least [`LIST_CHUNK`]) at a time, each from the
    /// last row of the one before, until its page is full or the rows run out; reading every
    /// matching row for a page had held and decoded the whole scope.
    async fn list_statement(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        let chunk = match filter.limit {
            Some(limit) if !filter.metadata.is_empty() => Some(limit.max(LIST_CHUNK)),
            limit => limit,
        };
        let mut items = Vec::new();
        let mut from = filter.clone();
        loop {
            let mut sql = self.db.sql(&format!(
                "SELECT {COLUMNS} FROM {{s}}.memories m WHERE true"
            ));
            sql.and_scope("m.ns", &from.scope);
            and_conditions(&mut sql, &from);
            sql.push(if from.newest_first {
                " ORDER BY m.created_at DESC, m.id DESC, m.ns DESC"
            } else {
                " ORDER BY m.created_at, m.id, m.ns"
            });
            if let Some(chunk) = chunk {
                sql.push(" LIMIT ").bind(limit_value(chunk), "bigint");
            }
            let rows = self
                .db
                .query(&sql, || "listing memories".to_owned())
                .await?;
            let read = rows.len();
            let decoded = decode_all(&rows)?;
            let last = decoded.last().map(ListPosition::of);
            items.extend(decoded.into_iter().filter(|item| filter.matches(item)));
            let (Some(limit), Some(chunk)) = (filter.limit, chunk) else {
                break;
            };
            if items.len() >= limit || read < chunk {
                break;
            }
            from.after = last;
        }
        if let Some(limit) = filter.limit {
            items.truncate(limit);
        }
        Ok(items)
    }

    /// The namespaces holding memories in the subtree `scope`, when there are at most
    /// [`MERGED_NAMESPACES`] (`None` when there are more). Each is found by seeking the index
    /// from the one before (a probe each), where `DISTINCT` would read every entry.
    async fn few_namespaces(&self, scope: &Scope) -> Result<Option<Vec<Namespace>>> {
        let what = || "finding the namespaces of a listing".to_owned();
        let namespace = scope.namespace.as_str();
        let mut found = Vec::new();
        if !scope.namespace.is_root() {
            let mut held = self.db.sql("SELECT 1 FROM {s}.memories m WHERE m.ns = ");
            held.bind(namespace.to_owned(), "text").push(" LIMIT 1");
            if !self.db.query(&held, what).await?.is_empty() {
                found.push(scope.namespace.clone());
            }
        }
        // The descendants: from `a/` (inclusive) up to `a0`, or every namespace under the
        // root.
        let mut from = if scope.namespace.is_root() {
            String::new()
        } else {
            format!("{namespace}/")
        };
        let mut inclusive = !scope.namespace.is_root();
        loop {
            let mut next = self.db.sql("SELECT m.ns FROM {s}.memories m WHERE m.ns ");
            next.push(if inclusive { ">= " } else { "> " })
                .bind(from.clone(), "text");
            if !scope.namespace.is_root() {
                next.push(" AND m.ns < ")
                    .bind(format!("{namespace}0"), "text");
            }
            next.push(" ORDER BY m.ns LIMIT 1");
            let rows = self.db.query(&next, what).await?;
            let Some(row) = rows.first() else {
                return Ok(Some(found));
            };
            if found.len() == MERGED_NAMESPACES {
                return Ok(None);
            }
            let text: String = row
                .try_get(0)
                .map_err(|error| corrupt("a namespace", error))?;
            found.push(
                Namespace::parse(&text)
                    .map_err(|error| corrupt(format_args!("namespace {text:?}"), error))?,
            );
            from = text;
            inclusive = false;
        }
    }

    /// The memories `filter` lists, in its order: a page of a subtree of at most
    /// [`MERGED_NAMESPACES`] namespaces as one page of each, merged; anything else as one
    /// statement.
    pub(super) async fn listing(&self, filter: &MemoryFilter) -> Result<Vec<MemoryItem>> {
        if !filter_is_satisfiable(filter) || filter.limit == Some(0) {
            return Ok(Vec::new());
        }
        if let (true, Some(limit)) = (filter.scope.descendants, filter.limit)
            && let Some(namespaces) = self.few_namespaces(&filter.scope).await?
        {
            let mut items = Vec::new();
            for namespace in namespaces {
                let mut one = filter.clone();
                one.scope = namespace.exact();
                items.extend(self.list_statement(&one).await?);
            }
            items.sort_by(|a, b| listing_order(a, b, filter.newest_first));
            items.truncate(limit);
            return Ok(items);
        }
        self.list_statement(filter).await
    }
}
