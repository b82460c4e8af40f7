//! Where a query's terms stand in a document, read from the terms the index kept in order
//! ([`Bm25Index::insert_ordered`]) instead of from the text, and whether its first field holds
//! one of them at all ([`Bm25Index::first_field_holds`]).

use super::{Bm25Index, Posting};

/// Up to this many query terms are looked for by a scan of the terms sought; more are
/// sorted and searched.
const SCANNED: usize = 8;

/// A first field of up to this many terms is walked to tell whether it holds a term
/// ([`Bm25Index::first_field_holds`]); a longer one is looked up in the terms' postings.
const WALKED: usize = 32;

impl<const N: usize> Bm25Index<N> {
    /// The dictionary ids of `terms`, each with its first index in `terms`, sorted by id:
    /// what [`term_positions`](Self::term_positions) looks for, worked out once for every
    /// document of the index asked about. A term no document holds has no id and stands
    /// nowhere.
    pub(crate) fn sought(&self, terms: &[String]) -> Vec<(u32, u32)> {
        let mut sought: Vec<(u32, u32)> = Vec::with_capacity(terms.len());
        for (at, term) in terms.iter().enumerate() {
            if let Some(&id) = self.postings.ids.get(term.as_str())
                && !sought.iter().any(|(known, _)| *known == id)
            {
                sought.push((id, u32::try_from(at).unwrap_or(u32::MAX)));
            }
        }
        sought.sort_unstable_by_key(|(id, _)| *id);
        sought
    }

    /// The first field's terms in order, by id, of the document in `slot`: `None` when the
    /// slot is free or was indexed without its order ([`insert`](Self::insert)).
    fn sequence(&self, slot: u32) -> Option<&[u32]> {
        self.docs.get(slot as usize)?.as_ref()?.sequence.as_deref()
    }

    /// Whether the first field of each document of `slots` holds one of `terms`, in order:
    /// what a search tells of its hits ([`SearchHit::in_own_words`](memory_core::SearchHit)).
    /// A short field kept in order has its terms walked, each passed over at once unless a
    /// term sought sets its bit (its id modulo 64); a long one, or one indexed without its
    /// order, has its slot searched in each term's postings (sorted by slot), rarest first.
    pub(crate) fn first_field_holds(
        &self,
        terms: &[impl AsRef<str>],
        slots: impl IntoIterator<Item = u32>,
    ) -> Vec<bool> {
        let mut sought: Vec<u32> = Vec::with_capacity(terms.len());
        let mut lists: Vec<&[Posting<N>]> = Vec::with_capacity(terms.len());
        for term in terms {
            if let Some(&id) = self.postings.ids.get(term.as_ref())
                && !sought.contains(&id)
                && let Some(entry) = self.postings.lists.get(id as usize)
            {
                sought.push(id);
                lists.push(&entry.list);
            }
        }
        lists.sort_unstable_by_key(|list| list.len());
        let bits = sought.iter().fold(0u64, |bits, id| bits | 1 << (id % 64));
        slots
            .into_iter()
            .map(|slot| match self.sequence(slot) {
                Some(sequence) if sequence.len() <= WALKED => sequence
                    .iter()
                    .any(|id| bits & 1 << (id % 64) != 0 && sought.contains(id)),
                _ => lists.iter().any(|list| {
                    list.binary_search_by_key(&slot, |posting| posting.slot)
                        .is_ok_and(|at| list[at].tf[0] > 0)
                }),
            })
            .collect()
    }

    /// Where the terms `sought` ([`sought`](Self::sought)) stand in the first field of the
    /// document in `slot`: `(position, term)` pairs by position, `position` counting the
    /// field's terms from 0 and `term` the index in the query's terms. Exactly what reading
    /// the field with the index's analyzer gives, as the field's terms are the ones that
    /// reading made. `None` when the slot is free or was indexed without its order
    /// ([`insert`](Self::insert)).
    pub(crate) fn term_positions(
        &self,
        slot: u32,
        sought: &[(u32, u32)],
    ) -> Option<Vec<(u32, u32)>> {
        let sequence = self.sequence(slot)?;
        let mut found = Vec::new();
        if sought.is_empty() {
            return Some(found);
        }
        let mut record = |position: usize, at: u32| {
            found.push((u32::try_from(position).unwrap_or(u32::MAX), at));
        };
        if sought.len() <= SCANNED {
            for (position, id) in sequence.iter().enumerate() {
                if let Some((_, at)) = sought.iter().find(|(known, _)| known == id) {
                    record(position, *at);
                }
            }
        } else {
            for (position, id) in sequence.iter().enumerate() {
                if let Ok(index) = sought.binary_search_by_key(id, |(known, _)| *known) {
                    record(position, sought[index].1);
                }
            }
        }
        Some(found)
    }
}
