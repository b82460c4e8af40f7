//! A place in the order a listing returns memories in, for reading a large scope a page at a
//! time ([`MemoryFilter::after`](crate::MemoryFilter::after)).

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::validate::{validate_id, validate_time};
use crate::{MemoryItem, Namespace, Result};

/// Where a memory stands in the order [`list`](crate::MemoryStore::list) returns memories
/// in: by creation time, then id, then namespace (byte order), oldest first, or the reverse
/// for [`newest_first`](crate::MemoryFilter::newest_first).
///
/// A filter [`after`](crate::MemoryFilter::after) a position lists only what comes after it
/// in the listing's order, so the next page of a listing starts after the last memory of
/// the page before: each page costs what it returns (every backend seeks its time index),
/// where skipping an offset reads every memory before it again, and a memory saved or
/// deleted between two pages neither repeats nor pushes another off a page.
///
/// ```
/// use memory_core::{ListPosition, MemoryFilter, MemoryItem, Namespace};
/// let ns = Namespace::parse("user-1")?;
/// let last_of_page = MemoryItem::new(ns.clone(), "the last memory of a page")?;
/// let next_page = MemoryFilter::new(ns.exact())
///     .after(ListPosition::of(&last_of_page))
///     .with_limit(100);
/// assert!(!next_page.matches(&last_of_page));
/// # Ok::<(), memory_core::MemoryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawPosition")]
pub struct ListPosition {
    created_at: DateTime<Utc>,
    id: String,
    namespace: Namespace,
}

/// [`ListPosition`] as read, before its checks.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPosition {
    created_at: DateTime<Utc>,
    id: String,
    namespace: Namespace,
}

impl TryFrom<RawPosition> for ListPosition {
    type Error = crate::MemoryError;

    fn try_from(raw: RawPosition) -> Result<Self> {
        Self::new(raw.created_at, raw.id, raw.namespace)
    }
}

/// The order of [`list`](crate::MemoryStore::list): creation time, then id, then namespace
/// (byte order), reversed for `newest_first`. For a backend that merges listings, as
/// [`ListPosition`] compares.
pub fn listing_order(a: &MemoryItem, b: &MemoryItem, newest_first: bool) -> Ordering {
    let order = a
        .created_at
        .cmp(&b.created_at)
        .then_with(|| a.id.cmp(&b.id))
        .then_with(|| a.namespace.as_str().cmp(b.namespace.as_str()));
    if newest_first { order.reverse() } else { order }
}

impl ListPosition {
    /// The position of `item`.
    pub fn of(item: &MemoryItem) -> Self {
        Self {
            created_at: item.created_at,
            id: item.id.clone(),
            namespace: item.namespace.clone(),
        }
    }

    /// The position a memory created at `created_at`, with this id, in this namespace would
    /// have (it need not exist).
    ///
    /// # Errors
    /// [`MemoryError::InvalidInput`](crate::MemoryError::InvalidInput) naming `after` when
    /// the id could not be a memory's (empty, longer than [`MAX_ID_LEN`](crate::MAX_ID_LEN)
    /// bytes, a control character) or the time is outside the storable range.
    pub fn new(
        created_at: DateTime<Utc>,
        id: impl Into<String>,
        namespace: Namespace,
    ) -> Result<Self> {
        let id = id.into();
        validate_id("after", &id)?;
        validate_time("after", created_at)?;
        Ok(Self {
            created_at,
            id,
            namespace,
        })
    }

    /// The creation time of the position.
    pub fn created_at(&self) -> DateTime<Utc> {
        self.created_at
    }

    /// The id of the position.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The namespace of the position.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    /// Where `item` stands against this position in the oldest-first order: `Greater` when
    /// it comes after.
    pub fn compare(&self, item: &MemoryItem) -> Ordering {
        item.created_at
            .cmp(&self.created_at)
            .then_with(|| item.id.as_str().cmp(self.id.as_str()))
            .then_with(|| item.namespace.as_str().cmp(self.namespace.as_str()))
    }

    /// Whether `item` comes after this position in a listing oldest first (or, with
    /// `newest_first`, newest first).
    pub fn precedes(&self, item: &MemoryItem, newest_first: bool) -> bool {
        let order = self.compare(item);
        if newest_first {
            order == Ordering::Less
        } else {
            order == Ordering::Greater
        }
    }
}
