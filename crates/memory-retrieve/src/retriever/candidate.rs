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
/// (no allocation per candidate). Two suffice: a record comes from one channel, except a
/// graph entity both matched and reached by traversal, and a memory found by keywords and by
/// similarity (context neighbours are never hits, so no record has three).
#[derive(Clone, Copy, Debug)]
pub(super) struct Found {
    first: (Channel, usize),
    second: Option<(Channel, usize)>,
}

impl Found {
    pub(super) fn new(channel: Channel, rank: usize) -> Self {
        Self {
            first: (channel, rank),
            second: None,
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (Channel, usize)> + '_ {
        std::iter::once(self.first).chain(self.second)
    }

    pub(super) fn contains(&self, channel: Channel) -> bool {
        self.iter().any(|(found, _)| found == channel)
    }

    /// Records a second channel (a third is never needed; it would be ignored).
    pub(super) fn add(&mut self, channel: Channel, rank: usize) {
        if self.second.is_none() {
            self.second = Some((channel, rank));
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
