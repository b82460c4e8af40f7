//! An inverted index with BM25F ranking over a fixed number of weighted fields.
//!
//! Documents are dense `u32` slots chosen by the caller. Postings are kept sorted by slot,
//! so adding or removing a document costs `O(terms × log postings)` lookups plus a memmove;
//! a query costs `O(Σ postings of its terms)` and a partial sort of the top k.
//!
//! A document's per-term scores are summed in `f64`, which is exact for the handful of `f32`
//! terms of a query, so its score does not depend on the order the terms were added: every
//! search path (exhaustive, dense, pruned) gives the same bits, and ties break by id alone.

#[cfg(test)]
use foldhash::HashMapExt;
use foldhash::{HashMap, HashSet, HashSetExt};
use std::cell::Cell;

use memory_core::text::{Analyzer, InlineStr};

/// Up to this many slots, [`Bm25Index::top_k`] scores every match into a dense array
/// instead of pruning (cheaper when everything fits in cache).
pub(crate) const SMALL_INDEX_DOCS: usize = 4096;

thread_local! {
    /// Per-thread buffers of the small-index path of [`Bm25Index::top_k`] (score per slot,
    /// slots scored), reused so a query allocates neither. The scores are all zero between
    /// uses: a use zeroes the slots it scored before putting them back. Taken out while in
    /// use, so a re-entrant call (or one after a panic, which drops them) starts with empty
    /// ones.
    static SCRATCH: Cell<(Vec<f64>, Vec<u32>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

// The constants and the per-term formula are memory-core's, shared by every backend.
#[cfg(test)]
use memory_core::search::{BM25_B as B, BM25_K1 as K1};
#[cfg(test)]
use memory_core::search::{bm25_idf, bm25f, length_factors};

#[derive(Clone, Debug)]
struct Posting<const N: usize> {
    slot: u32,
    tf: [u16; N],
    /// The document's field lengths, so scoring reads nothing but the list; a field of
    /// `u16::MAX` terms or more is stored as `u16::MAX` and read from `Bm25Index::lens`.
    len: [u16; N],
}

impl<const N: usize> Posting<N> {
    fn new(slot: u32, tf: [u16; N], len: [u32; N]) -> Self {
        Self {
            slot,
            tf,
            len: len.map(|field| u16::try_from(field).unwrap_or(u16::MAX)),
        }
    }
}

/// Postings per block of a term's list: each block of [`BLOCK`] consecutive postings keeps
/// the bounds of its own scores, so a search skips whole blocks that cannot make the cut.
const BLOCK: usize = 64;

/// A term's postings (sorted by slot) and what bounds its score: the largest term frequency
/// and the shortest field seen per field, over the whole list and per block of [`BLOCK`]
/// postings (block `i` holds the postings at positions `i * BLOCK ..`). The whole-list
/// bounds only grow looser on removal, never wrong; the blocks' are kept exact.
#[derive(Clone, Debug)]
struct TermList<const N: usize> {
    list: Vec<Posting<N>>,
    max_tf: [u16; N],
    min_len: [u32; N],
    blocks: Vec<BlockBound<N>>,
    /// Scratch of [`Bm25Index::insert`]: where the document being indexed counts this term
    /// in its list of terms, if it holds it (a stale value points at another term's entry
    /// or past the end, so the counting checks it): the count of each term of a document
    /// is found with the term's id, without a map of its own.
    counted_at: u32,
}

impl<const N: usize> Default for TermList<N> {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            max_tf: [0; N],
            min_len: [u32::MAX; N],
            blocks: Vec::new(),
            counted_at: u32::MAX,
        }
    }
}

/// What bounds the scores of a block of postings: per field, the largest term frequency and
/// the shortest length among the postings holding the term in that field. A field no
/// posting of the block holds the term in keeps `max_tf` 0, so it adds nothing to the bound.
#[derive(Clone, Copy, Debug, PartialEq)]
struct BlockBound<const N: usize> {
    max_tf: [u16; N],
    /// Lengths saturate at `u16::MAX` as in a posting: a shorter length gives a larger score,
    /// so the bound stays an upper bound.
    min_len: [u16; N],
}

impl<const N: usize> BlockBound<N> {
    const EMPTY: Self = Self {
        max_tf: [0; N],
        min_len: [u16::MAX; N],
    };

    /// Widens the bound to cover `posting`.
    #[inline]
    fn cover(&mut self, posting: &Posting<N>) {
        for field in 0..N {
            if posting.tf[field] > 0 {
                self.max_tf[field] = self.max_tf[field].max(posting.tf[field]);
                self.min_len[field] = self.min_len[field].min(posting.len[field]);
            }
        }
    }

    /// The exact bound of `postings`.
    fn of(postings: &[Posting<N>]) -> Self {
        let mut bound = Self::EMPTY;
        for posting in postings {
            bound.cover(posting);
        }
        bound
    }
}

impl<const N: usize> TermList<N> {
    /// Appends `posting`, whose slot is above every slot in the list.
    fn push(&mut self, posting: Posting<N>) {
        if self.list.len().is_multiple_of(BLOCK) {
            self.blocks.push(BlockBound::EMPTY);
        }
        if let Some(block) = self.blocks.last_mut() {
            block.cover(&posting);
        }
        self.list.push(posting);
    }

    /// Puts `posting` in its place by slot, replacing the posting of the same slot if any.
    fn place(&mut self, posting: Posting<N>) {
        match self.list.binary_search_by_key(&posting.slot, |p| p.slot) {
            Ok(at) => {
                self.list[at] = posting;
                let block = at / BLOCK;
                if let (Some(bound), Some(postings)) = (
                    self.blocks.get_mut(block),
                    self.list.chunks(BLOCK).nth(block),
                ) {
                    *bound = BlockBound::of(postings);
                }
            }
            Err(at) => {
                self.list.insert(at, posting);
                self.rebound_from(at);
            }
        }
    }

    /// Removes the posting at `at`.
    fn remove_at(&mut self, at: usize) {
        self.list.remove(at);
        self.rebound_from(at);
    }

    /// Recomputes exactly the bounds of the blocks from the one holding position `at` on:
    /// an insertion or a removal there shifted every later posting by one place. The cost
    /// is of the order of that shift's.
    fn rebound_from(&mut self, at: usize) {
        let first = at / BLOCK;
        self.blocks.truncate(first);
        if let Some(rest) = self.list.get(first * BLOCK..) {
            self.blocks.extend(rest.chunks(BLOCK).map(BlockBound::of));
        }
    }

    /// Panics unless the blocks partition the list and each block's bound is exactly that of
    /// its postings.
    #[cfg(test)]
    fn check_blocks(&self) {
        assert_eq!(self.blocks.len(), self.list.len().div_ceil(BLOCK));
        for (bound, postings) in self.blocks.iter().zip(self.list.chunks(BLOCK)) {
            assert_eq!(
                *bound,
                BlockBound::of(postings),
                "a block's bound is not exact"
            );
        }
    }

    /// Recomputes every block's bound exactly (after the list was filtered).
    fn rebound(&mut self) {
        self.blocks = self.list.chunks(BLOCK).map(BlockBound::of).collect();
    }
}

/// The index's terms: each distinct term's id and, by id, its postings. A document keeps
/// the ids of its terms (four bytes each, no string of its own), so indexing one allocates
/// nothing per term that is already known, and removing one finds each list by id. The id of
/// a term whose last posting goes is reused by the next new term.
#[derive(Clone, Debug, Default)]
struct Dictionary<const N: usize> {
    /// By term, kept in place when short (nearly every term): a lookup compares the terms
    /// it probes in the table itself instead of following a pointer to each.
    ids: HashMap<InlineStr, u32>,
    /// By id: the postings; empty for a free id.
    lists: Vec<TermList<N>>,
    /// By id: the term (to forget it when its list empties); empty for a free id.
    names: Vec<InlineStr>,
    /// Ids free for reuse.
    free: Vec<u32>,
}

impl<const N: usize> Dictionary<N> {
    /// The postings of `term`, if any document holds it.
    fn get(&self, term: &str) -> Option<&TermList<N>> {
        let id = *self.ids.get(term)?;
        self.lists.get(id as usize)
    }

    /// The id of `term`, added (with no postings yet) when it is new.
    fn id_or_insert(&mut self, term: &str) -> u32 {
        if let Some(id) = self.ids.get(term) {
            return *id;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.names[id as usize] = InlineStr::new(term);
                id
            }
            None => {
                let id = u32::try_from(self.lists.len()).unwrap_or(u32::MAX);
                self.lists.push(TermList::default());
                self.names.push(InlineStr::new(term));
                id
            }
        };
        self.ids.insert(InlineStr::new(term), id);
        id
    }

    /// The postings of the term `id`.
    fn list_mut(&mut self, id: u32) -> Option<&mut TermList<N>> {
        self.lists.get_mut(id as usize)
    }

    /// Forgets the term `id` if no document holds it any more, freeing its id.
    fn release_if_empty(&mut self, id: u32) {
        let at = id as usize;
        if self.lists.get(at).is_none_or(|list| !list.list.is_empty()) {
            return;
        }
        let name = std::mem::take(&mut self.names[at]);
        if self.ids.remove(&name).is_some() {
            self.lists[at] = TermList::default();
            self.free.push(id);
        }
    }

    /// Every term's postings, free ids' empty lists included.
    #[cfg(test)]
    fn values(&self) -> impl Iterator<Item = &TermList<N>> {
        self.lists.iter()
    }

    /// Every term's postings, mutably, free ids' empty lists included.
    fn values_mut(&mut self) -> impl Iterator<Item = &mut TermList<N>> {
        self.lists.iter_mut()
    }

    /// Every term held by some document, with its postings.
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = (&str, &TermList<N>)> {
        self.ids
            .iter()
            .filter_map(|(term, id)| Some((&**term, self.lists.get(*id as usize)?)))
    }
}

/// An inverted index over documents of `N` text fields, ranked by BM25F.
#[derive(Clone, Debug)]
pub(crate) struct Bm25Index<const N: usize> {
    analyzer: Analyzer,
    weights: [f32; N],
    postings: Dictionary<N>,
    /// Per slot: the terms it holds (to remove it) and its field lengths; `None` when free.
    docs: Vec<Option<DocEntry<N>>>,
    /// Per slot: the field lengths again, densely (for fields too long for a posting).
    lens: Vec<[u32; N]>,
    /// Per slot: the first 16 bytes of the document's id, big-endian, so a tie in score is
    /// mostly broken without reading the id (see [`tie_key`]).
    keys: Vec<u128>,
    total_len: [u64; N],
    doc_count: u32,
    /// Up to this many slots `top_k` scores exhaustively (see [`SMALL_INDEX_DOCS`]).
    small_index_docs: usize,
    /// How many documents were indexed and how many removed (see [`churn`](Self::churn)).
    #[cfg(test)]
    churn: (usize, usize),
}

#[derive(Clone, Debug)]
struct DocEntry<const N: usize> {
    /// The ids of its terms in the [`Dictionary`].
    terms: Box<[u32]>,
    len: [u32; N],
    /// The first field's terms in order, by id, when indexed with
    /// [`insert_ordered`](Bm25Index::insert_ordered): where a query's terms stand in it
    /// ([`term_positions`](Bm25Index::term_positions)).
    sequence: Option<Box<[u32]>>,
}

impl<const N: usize> Bm25Index<N> {
    /// An empty index with these field weights.
    pub(crate) fn new(analyzer: Analyzer, weights: [f32; N]) -> Self {
        Self {
            analyzer,
            weights,
            postings: Dictionary::default(),
            docs: Vec::new(),
            lens: Vec::new(),
            keys: Vec::new(),
            total_len: [0; N],
            doc_count: 0,
            small_index_docs: SMALL_INDEX_DOCS,
            #[cfg(test)]
            churn: (0, 0),
        }
    }

    /// How many documents were indexed and how many removed (a document replaced in its
    /// slot counts once in each), since the index was made.
    #[cfg(test)]
    pub(crate) fn churn(&self) -> (usize, usize) {
        self.churn
    }

    /// Sets the size up to which `top_k` scores exhaustively instead of pruning.
    #[cfg(test)]
    pub(crate) fn with_small_index_docs(mut self, slots: usize) -> Self {
        self.small_index_docs = slots;
        self
    }

    /// How many documents are indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.doc_count as usize
    }

    /// Indexes `fields` of the document `id` under `slot`, replacing whatever the slot held.
    /// Equal scores rank by `id` ascending.
    pub(crate) fn insert(&mut self, slot: u32, id: &str, fields: [&str; N]) {
        self.index(slot, id, fields, false);
    }

    /// As [`insert`](Self::insert), also keeping the first field's terms in order (four
    /// bytes a term), so that [`term_positions`](Self::term_positions) can tell where a
    /// query's terms stand in it without analysing the text again.
    pub(crate) fn insert_ordered(&mut self, slot: u32, id: &str, fields: [&str; N]) {
        self.index(slot, id, fields, true);
    }

    fn index(&mut self, slot: u32, id: &str, fields: [&str; N], ordered: bool) {
        self.remove(slot);
        #[cfg(test)]
        {
            self.churn.0 += 1;
        }
        // About one distinct term per eight bytes of text: sized once, not grown term by term.
        let text_len: usize = fields.iter().map(|text| text.len()).sum();
        // Each distinct term and its frequency per field, in order of first appearance.
        let mut counts: Vec<(u32, [u16; N])> = Vec::with_capacity(text_len / 8);
        let mut len = [0u32; N];
        let mut sequence: Vec<u32> = Vec::new();
        let analyzer = self.analyzer;
        let postings = &mut self.postings;
        for (field, text) in fields.iter().enumerate() {
            analyzer.for_each_term(text, |term| {
                len[field] += 1;
                let id = postings.id_or_insert(term);
                if ordered && field == 0 {
                    sequence.push(id);
                }
                let Some(entry) = postings.list_mut(id) else {
                    return;
                };
                let at = entry.counted_at as usize;
                let tf = match counts.get_mut(at) {
                    Some((counted, tf)) if *counted == id => tf,
                    _ => {
                        entry.counted_at = u32::try_from(counts.len()).unwrap_or(u32::MAX);
                        counts.push((id, [0; N]));
                        let last = counts.len() - 1;
                        &mut counts[last].1
                    }
                };
                tf[field] = tf[field].saturating_add(1);
            });
        }
        let mut terms = Vec::with_capacity(counts.len());
        for (id, tf) in counts {
            let Some(entry) = postings.list_mut(id) else {
                continue;
            };
            entry.counted_at = u32::MAX;
            for field in 0..N {
                if tf[field] > 0 {
                    entry.max_tf[field] = entry.max_tf[field].max(tf[field]);
                    entry.min_len[field] = entry.min_len[field].min(len[field]);
                }
            }
            // A new document mostly takes the highest slot yet: appended without a binary
            // search (whose probes miss the cache on long lists: a fifth of `remember` at
            // 100,000 memories). A reused slot is placed by the search.
            if entry.list.last().is_none_or(|last| last.slot < slot) {
                entry.push(Posting::new(slot, tf, len));
            } else {
                entry.place(Posting::new(slot, tf, len));
            }
            terms.push(id);
        }
        let index = slot as usize;
        if self.docs.len() <= index {
            self.docs.resize_with(index + 1, || None);
            self.lens.resize(index + 1, [0; N]);
            self.keys.resize(index + 1, 0);
        }
        self.lens[index] = len;
        self.keys[index] = tie_key(id);
        for (total, field_len) in self.total_len.iter_mut().zip(len) {
            *total += u64::from(field_len);
        }
        self.docs[index] = Some(DocEntry {
            terms: terms.into_boxed_slice(),
            len,
            sequence: ordered.then(|| sequence.into_boxed_slice()),
        });
        self.doc_count += 1;
    }

    /// Removes the documents in `slots` (free slots are skipped): each touched term's list is
    /// filtered once, so removing many documents costs one pass over their terms' postings
    /// instead of one shift of each list per document.
    pub(crate) fn remove_many(&mut self, slots: &[u32]) {
        if slots.len() < 4 {
            for slot in slots {
                self.remove(*slot);
            }
            return;
        }
        let mut removed = vec![false; self.docs.len()];
        let mut touched: HashSet<u32> = HashSet::new();
        for &slot in slots {
            let Some(entry) = self.docs.get_mut(slot as usize).and_then(Option::take) else {
                continue;
            };
            removed[slot as usize] = true;
            #[cfg(test)]
            {
                self.churn.1 += 1;
            }
            for (total, field_len) in self.total_len.iter_mut().zip(entry.len) {
                *total -= u64::from(field_len);
            }
            self.doc_count -= 1;
            touched.extend(entry.terms.into_vec());
        }
        for id in touched {
            if let Some(entry) = self.postings.list_mut(id) {
                entry.list.retain(|posting| {
                    !removed.get(posting.slot as usize).copied().unwrap_or(false)
                });
                entry.rebound();
            }
            self.postings.release_if_empty(id);
        }
    }

    /// Renumbers the slots: `map[old]` is a live slot's new number (the order of slots is
    /// kept, so every list stays sorted), `u32::MAX` a free slot's; `len` live slots remain.
    /// One pass over the postings, no re-analysis.
    pub(crate) fn remap(&mut self, map: &[u32], len: usize) {
        for entry in self.postings.values_mut() {
            for posting in &mut entry.list {
                posting.slot = map.get(posting.slot as usize).copied().unwrap_or(u32::MAX);
            }
            debug_assert!(entry.list.iter().all(|posting| posting.slot != u32::MAX));
        }
        let live = |old: usize| map.get(old).is_some_and(|new| *new != u32::MAX);
        let mut docs = Vec::with_capacity(len);
        let mut lens = Vec::with_capacity(len);
        let mut keys = Vec::with_capacity(len);
        for (old, doc) in std::mem::take(&mut self.docs).into_iter().enumerate() {
            if live(old) {
                docs.push(doc);
                lens.push(self.lens.get(old).copied().unwrap_or([0; N]));
                keys.push(self.keys.get(old).copied().unwrap_or(0));
            }
        }
        self.docs = docs;
        self.lens = lens;
        self.keys = keys;
    }

    /// Removes the document in `slot`, if any.
    pub(crate) fn remove(&mut self, slot: u32) {
        let Some(entry) = self.docs.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        #[cfg(test)]
        {
            self.churn.1 += 1;
        }
        for &id in entry.terms.iter() {
            if let Some(entry) = self.postings.list_mut(id)
                && let Ok(at) = entry
                    .list
                    .binary_search_by_key(&slot, |posting| posting.slot)
            {
                entry.remove_at(at);
            }
            self.postings.release_if_empty(id);
        }
        for (total, field_len) in self.total_len.iter_mut().zip(entry.len) {
            *total -= u64::from(field_len);
        }
        self.doc_count -= 1;
    }

    /// Panics unless every term's block bounds are exactly those of their postings.
    #[cfg(test)]
    pub(crate) fn check_blocks(&self) {
        for entry in self.postings.values() {
            entry.check_blocks();
        }
    }

    /// How many documents hold `term`.
    pub(crate) fn doc_freq(&self, term: &str) -> u64 {
        self.postings
            .get(term)
            .map_or(0, |entry| entry.list.len() as u64)
    }

    /// The analyzed, de-duplicated terms of a query.
    #[cfg(test)]
    pub(crate) fn query_terms(&self, text: &str) -> Vec<String> {
        self.analyzer.query_terms(text)
    }

    /// Scores every document containing at least one of `terms`; calls `emit(slot, score)`
    /// for each (in no particular order). Scores are BM25F, positive. The reference the
    /// pruned searches are tested against.
    #[cfg(test)]
    pub(crate) fn score_terms(&self, terms: &[String], mut emit: impl FnMut(u32, f32)) {
        if self.doc_count == 0 {
            return;
        }
        let n = self.doc_count as f32;
        let lists: Vec<(&Vec<Posting<N>>, f32)> = terms
            .iter()
            .filter_map(|term| self.postings.get(term.as_str()))
            .map(|entry| &entry.list)
            .map(|list| {
                let idf = bm25_idf(n, list.len() as f32);
                (list, idf)
            })
            .collect();
        let total_postings: usize = lists.iter().map(|(list, _)| list.len()).sum();
        let length_factor = length_factors(n, &self.total_len);
        // Postings only ever name live slots (removal takes a document out of every list).
        let score_of = |posting: &Posting<N>, idf: f32| -> Option<f32> {
            let len = self.doc_len(posting)?;
            Some(bm25f(&self.weights, &length_factor, &posting.tf, &len, idf))
        };
        if lists.len() == 1 {
            let (list, idf) = lists[0];
            for posting in list {
                if let Some(score) = score_of(posting, idf) {
                    emit(posting.slot, score);
                }
            }
            return;
        }
        // Dense accumulators when the query touches a large share of the index, sparse otherwise.
        if total_postings * 8 > self.docs.len() {
            let mut scores = vec![0.0f64; self.docs.len()];
            for (list, idf) in &lists {
                for posting in list.iter() {
                    if let Some(score) = score_of(posting, *idf) {
                        scores[posting.slot as usize] += f64::from(score);
                    }
                }
            }
            for (slot, score) in scores.into_iter().enumerate() {
                if score > 0.0 {
                    emit(slot as u32, score as f32);
                }
            }
        } else {
            let mut scores: HashMap<u32, f64> = HashMap::with_capacity(total_postings);
            for (list, idf) in &lists {
                for posting in list.iter() {
                    if let Some(score) = score_of(posting, *idf) {
                        *scores.entry(posting.slot).or_insert(0.0) += f64::from(score);
                    }
                }
            }
            for (slot, score) in scores {
                emit(slot, score as f32);
            }
        }
    }
}

impl<const N: usize> Bm25Index<N> {
    /// A posting's document field lengths (`None` for a slot that is not indexed).
    #[inline]
    fn doc_len(&self, posting: &Posting<N>) -> Option<[u32; N]> {
        if posting.len.contains(&u16::MAX) {
            self.lens.get(posting.slot as usize).copied()
        } else {
            Some(posting.len.map(u32::from))
        }
    }

    /// Sorts `held` best first and keeps the first `k`. Sorts by score alone, then orders
    /// each run of equal scores that reaches into the first `k`, so ids are read only for ties.
    fn rank<'a>(
        &self,
        held: &mut Vec<(f32, u32)>,
        k: usize,
        id_of: &impl Fn(u32) -> Option<&'a str>,
    ) {
        held.sort_unstable_by_key(|&(score, slot)| descending(score, slot));
        let mut start = 0;
        while start < held.len().min(k) {
            // Runs of equal scores are short (mostly one): a scan, not a binary search.
            let score = held[start].0;
            let end = start
                + 1
                + held[start + 1..]
                    .iter()
                    .take_while(|h| h.0.total_cmp(&score).is_eq())
                    .count();
            if end - start > 1 {
                held[start..end].sort_unstable_by(self.best_first(id_of));
            }
            start = end;
        }
        held.truncate(k);
    }

    /// The order of results, best first: higher score, then lower id, then lower slot. A tie
    /// in score is broken by the ids' first 16 bytes kept with the index, and the ids
    /// themselves are read only when those are equal too.
    fn best_first<'s, 'a>(
        &'s self,
        id_of: &'s impl Fn(u32) -> Option<&'a str>,
    ) -> impl Fn(&(f32, u32), &(f32, u32)) -> std::cmp::Ordering + 's {
        move |a, b| {
            let key = |slot: u32| self.keys.get(slot as usize).copied().unwrap_or(0);
            b.0.total_cmp(&a.0)
                .then_with(|| key(a.1).cmp(&key(b.1)))
                .then_with(|| id_of(a.1).unwrap_or("").cmp(id_of(b.1).unwrap_or("")))
                .then_with(|| a.1.cmp(&b.1))
        }
    }
}

/// A key whose ascending order is `score` descending by [`f32::total_cmp`], then `slot`
/// ascending: one integer comparison instead of two float and integer ones.
fn descending(score: f32, slot: u32) -> u64 {
    let bits = score.to_bits();
    // `total_cmp`'s order as unsigned integers: negatives flipped whole, positives' sign set.
    let ordered = if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    (u64::from(!ordered) << 32) | u64::from(slot)
}

/// The first 16 bytes of `id`, big-endian, zero-padded: comparing two keys orders the ids
/// lexicographically whenever the keys differ (a shorter id that is a prefix of a longer one
/// pads with zeros, which sort first), so only equal keys need the ids compared. Sixteen
/// bytes, not eight: generated ids ([`memory_core::new_id`]) begin with fourteen hex digits
/// of their creation time in microseconds, whose first eight change only every 17 seconds,
/// so memories written together shared an 8-byte key and every tie between them read both
/// ids (about 7% of a recall over 10,000 of them). Sixteen reach the microseconds.
fn tie_key(id: &str) -> u128 {
    let mut bytes = [0u8; 16];
    let prefix = &id.as_bytes()[..id.len().min(16)];
    bytes[..prefix.len()].copy_from_slice(prefix);
    u128::from_be_bytes(bytes)
}

/// Keeps the `k` best `(score, key)` pairs: highest score first, ties by key ascending.
#[cfg(test)]
pub(crate) fn top_k<K: Ord>(mut scored: Vec<(f32, K)>, k: usize) -> Vec<(f32, K)> {
    let order = |a: &(f32, K), b: &(f32, K)| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1));
    if k == 0 {
        return Vec::new();
    }
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_unstable_by(order);
    scored
}

mod dense;
mod max_score;
mod positions;

#[cfg(test)]
mod tests;
