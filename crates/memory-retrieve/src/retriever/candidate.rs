//! A candidate of a recall: the record a channel found, the channels that found it (with
//! its rank in each) and its signals.

use memory_core::{Channel, Namespace, RetrievalSource};

use crate::scoring::Signals;

/// The kind of record, the first part of a candidate's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum RecordType {
    Memory,
    Page,
    Entity,
}

/// One record found by one or more channels.
#[derive(Debug)]
pub(super) struct Candidate {
    pub(super) record: RetrievalSource,
    pub(super) channels: Found,
    pub(super) signals: Signals,
}

/// The channels that found a candidate, each with the candidate's rank there, kept inline
/// (no allocation per candidate). Three at most: a graph entity both matched and reached by
/// traversal, or a memory found by keywords, by similarity and through the graph's links
/// (context neighbours are never hits).
#[derive(Clone, Copy, Debug)]
pub(super) struct Found {
    /// The first `len` are the channels, in the order they found the record.
    slots: [(Channel, usize); MAX_CHANNELS],
    len: u8,
}

/// The most channels a candidate records ([`Found`]).
pub(super) const MAX_CHANNELS: usize = 3;

impl Found {
    pub(super) fn new(channel: Channel, rank: usize) -> Self {
        Self {
            slots: [(channel, rank); MAX_CHANNELS],
            len: 1,
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (Channel, usize)> + '_ {
        self.slots[..usize::from(self.len)].iter().copied()
    }

    pub(super) fn contains(&self, channel: Channel) -> bool {
        self.iter().any(|(found, _)| found == channel)
    }

    /// Records another channel, once (its first rank kept).
    pub(super) fn add(&mut self, channel: Channel, rank: usize) {
        let len = usize::from(self.len);
        if len < MAX_CHANNELS && !self.contains(channel) {
            self.slots[len] = (channel, rank);
            self.len += 1;
        }
    }
}

/// A record's identity across channels (owned: for the maps that merge channels).
pub(super) type Key = (RecordType, Namespace, String);

impl Candidate {
    /// The record's identity, borrowed from the record (the final order's tie-break).
    pub(super) fn key(&self) -> (RecordType, &Namespace, &str) {
        match &self.record {
            RetrievalSource::Memory(item) => (RecordType::Memory, &item.namespace, &item.id),
            RetrievalSource::KnowledgePage(page) => (RecordType::Page, &page.namespace, &page.id),
            RetrievalSource::GraphEntity(entity) => {
                (RecordType::Entity, &entity.namespace, &entity.id)
            }
        }
    }

    pub(super) fn owned_key(&self) -> Key {
        let (kind, namespace, id) = self.key();
        (kind, namespace.clone(), id.to_owned())
    }
}
