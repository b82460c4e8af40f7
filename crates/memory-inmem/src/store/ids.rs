//! A shard's id index: the slot of each item, in a hash table keyed by the id the item in
//! that slot holds.
//!
//! The table keeps slot numbers only (four bytes each) and compares a probed slot's id in
//! the item itself, so an id is stored once, in its item. A map from a copy of each id to
//! its slot kept a second allocation per memory, and every lookup compared against that
//! copy: a cold read wherever the item had just been read (recording a recall's
//! statistics reads the items the recall scored a moment before).

use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

use super::Entry;

/// Slots by the id of their item. Every slot in the table holds an item (the shard adds a
/// slot after storing its entry and removes it before taking the entry out).
#[derive(Debug, Default)]
pub(super) struct IdIndex {
    table: HashTable<u32>,
    hasher: RandomState,
}

/// The id of the item in `slot` (empty for a free slot, which the table never holds).
fn id_at(entries: &[Option<Entry>], slot: u32) -> &str {
    entries
        .get(slot as usize)
        .and_then(Option::as_ref)
        .map_or("", |entry| entry.item.id.as_str())
}

impl IdIndex {
    /// The slot of `id`.
    pub(super) fn get(&self, entries: &[Option<Entry>], id: &str) -> Option<u32> {
        self.table
            .find(self.hasher.hash_one(id), |&slot| id_at(entries, slot) == id)
            .copied()
    }

    /// Adds `slot`, whose entry is already in `entries` and whose id is not in the table.
    pub(super) fn insert(&mut self, entries: &[Option<Entry>], slot: u32) {
        let hasher = &self.hasher;
        let hash = hasher.hash_one(id_at(entries, slot));
        self.table
            .insert_unique(hash, slot, |&other| hasher.hash_one(id_at(entries, other)));
    }

    /// Removes `id` (while its entry is still in `entries`); returns its slot.
    pub(super) fn remove(&mut self, entries: &[Option<Entry>], id: &str) -> Option<u32> {
        let found = self
            .table
            .find_entry(self.hasher.hash_one(id), |&slot| id_at(entries, slot) == id)
            .ok()?;
        Some(found.remove().0)
    }

    /// Renumbers the slots: `map[old]` is each slot's new number. The ids, and so the
    /// hashes, stay as they were.
    pub(super) fn remap(&mut self, map: &[u32]) {
        for slot in self.table.iter_mut() {
            *slot = map[*slot as usize];
        }
    }

    /// How many ids there are.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }
}
