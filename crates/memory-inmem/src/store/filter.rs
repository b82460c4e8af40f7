//! How a search's filter is tested on the slab: on the entry's copies of what filters read
//! ([`slab_filter`]), or for the commonest filters on one byte per slot ([`SlotTest`]).

use memory_core::{MemoryFilter, MemoryKind, TimeView};

use super::Entry;

/// [`Shard::flags`](super::Shard::flags): the slot holds an item.
pub(super) const LIVE: u8 = 0x80;
/// [`Shard::flags`](super::Shard::flags): the item has no end and no validity end, so every
/// [`TimeView::Current`] admits it.
pub(super) const LASTING: u8 = 0x40;

/// [`Shard::flags`](super::Shard::flags): the kind's index in [`MemoryKind::ALL`], in the two low bits.
pub(super) const KIND: u8 = 0x03;
const _: () = assert!(
    MemoryKind::ALL.len() <= KIND as usize + 1,
    "every kind's index fits in the KIND bits"
);

/// The flags of a slot holding `entry`: [`LIVE`], [`LASTING`] when it lasts, and its kind's
/// index in [`MemoryKind::ALL`] in the [`KIND`] bits.
pub(super) fn slot_flags(entry: &Entry) -> u8 {
    let kind = MemoryKind::ALL
        .iter()
        .position(|kind| *kind == entry.kind)
        .unwrap_or(0) as u8;
    let lasting = if entry.ended_at.is_none() && entry.valid_until.is_none() {
        LASTING
    } else {
        0
    };
    LIVE | lasting | kind
}

/// A search filter as a test on slots: decided by the slot's [`Shard::flags`](super::Shard::flags) alone when
/// the filter asks only for kinds and a time view that the flags settle (everything, or what
/// is current of a lasting item), else by the entry ([`slab_filter`]).
#[derive(Clone, Copy)]
pub(super) enum SlotTest {
    /// The kinds admitted (bit `i` for `MemoryKind::ALL[i]`), and whether only lasting items
    /// pass on the flags alone (a current view: other items are read).
    Flags { kinds: u8, current: bool },
    /// Every live slot's entry is tested.
    Entry,
}

impl SlotTest {
    pub(super) fn of(filter: &MemoryFilter) -> Self {
        let current = match filter.view {
            TimeView::All => false,
            TimeView::Current(_) => true,
            TimeView::AsOf(_) => return SlotTest::Entry,
        };
        if !filter.only_kinds_and_view() {
            return SlotTest::Entry;
        }
        let kinds = if filter.kinds.is_empty() {
            u8::MAX
        } else {
            MemoryKind::ALL
                .iter()
                .enumerate()
                .filter(|(_, kind)| filter.kinds.contains(kind))
                .fold(0, |mask, (at, _)| mask | 1 << at)
        };
        SlotTest::Flags { kinds, current }
    }
}

/// `filter` as a test on slab entries of a shard its scope chose. The shard is the namespace,
/// so the scope holds and is not compared again; kind, creation time, validity and end are
/// read from the entry's copies (no hashing, no visit to the item); only id prefix, tags,
/// metadata, fact key and list position need the item itself.
pub(super) fn slab_filter(filter: &MemoryFilter) -> impl Fn(&Entry) -> bool + Copy + '_ {
    let cheap_only = filter.id_prefix.is_none()
        && filter.tags.is_empty()
        && filter.metadata.is_empty()
        && filter.fact_key.is_none()
        && filter.after.is_none();
    move |entry: &Entry| {
        (filter.kinds.is_empty() || filter.kinds.contains(&entry.kind))
            && filter.since.is_none_or(|since| entry.created_at >= since)
            && filter.until.is_none_or(|until| entry.created_at < until)
            && filter.view.admits_parts(
                entry.created_at,
                entry.valid_from,
                entry.valid_until,
                entry.ended_at,
            )
            && (cheap_only || filter.matches_within_scope(&entry.item))
    }
}
