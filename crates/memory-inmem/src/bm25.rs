//! An inverted index with BM25F ranking over a fixed number of weighted fields.
//!
//! Documents are dense `u32` slots chosen by the caller. Postings are kept sorted by slot,
//! so adding or removing a document costs `O(terms × log postings)` lookups plus a memmove;
//! a query costs `O(Σ postings of its terms)` and a partial sort of the top k.
//!
//! A document's per-term scores are summed in `f64`, which is exact for the handful of `f32`
//! terms of a query, so its score does not depend on the order the terms were added: every
//! search path (exhaustive, dense, pruned) gives the same bits, and ties break by id alone.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use memory_core::text::Analyzer;

/// Up to this many slots, [`Bm25Index::top_k`] scores every match into a dense array
/// instead of pruning (cheaper when everything fits in cache).
pub(crate) const SMALL_INDEX_DOCS: usize = 4096;

thread_local! {
    /// Per-thread buffers of the small-index path of [`Bm25Index::top_k`] (score per slot,
    /// slots scored), reused so a query allocates neither. Taken out while in use, so a
    /// re-entrant call simply starts with empty ones.
    static SCRATCH: Cell<(Vec<f64>, Vec<u32>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

// The constants and the per-term formula are memory-core's, shared by every backend.
#[cfg(test)]
use memory_core::search::{BM25_B as B, BM25_K1 as K1};
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

/// A term's postings (sorted by slot) and what bounds its score: the largest term frequency
/// and the shortest field seen per field. Bounds only grow looser on removal, never wrong.
#[derive(Clone, Debug)]
struct TermList<const N: usize> {
    list: Vec<Posting<N>>,
    max_tf: [u16; N],
    min_len: [u32; N],
}

impl<const N: usize> Default for TermList<N> {
    fn default() -> Self {
        Self {
            list: Vec::new(),
            max_tf: [0; N],
            min_len: [u32::MAX; N],
        }
    }
}

/// An inverted index over documents of `N` text fields, ranked by BM25F.
#[derive(Clone, Debug)]
pub(crate) struct Bm25Index<const N: usize> {
    analyzer: Analyzer,
    weights: [f32; N],
    postings: HashMap<Box<str>, TermList<N>>,
    /// Per slot: the terms it holds (to remove it) and its field lengths; `None` when free.
    docs: Vec<Option<DocEntry<N>>>,
    /// Per slot: the field lengths again, densely (for fields too long for a posting).
    lens: Vec<[u32; N]>,
    /// Per slot: the first 8 bytes of the document's id, big-endian, so a tie in score is
    /// mostly broken without reading the id (see [`tie_key`]).
    keys: Vec<u64>,
    total_len: [u64; N],
    doc_count: u32,
    /// Up to this many slots `top_k` scores exhaustively (see [`SMALL_INDEX_DOCS`]).
    small_index_docs: usize,
}

#[derive(Clone, Debug)]
struct DocEntry<const N: usize> {
    terms: Box<[Box<str>]>,
    len: [u32; N],
}

impl<const N: usize> Bm25Index<N> {
    /// An empty index with these field weights.
    pub(crate) fn new(analyzer: Analyzer, weights: [f32; N]) -> Self {
        Self {
            analyzer,
            weights,
            postings: HashMap::new(),
            docs: Vec::new(),
            lens: Vec::new(),
            keys: Vec::new(),
            total_len: [0; N],
            doc_count: 0,
            small_index_docs: SMALL_INDEX_DOCS,
        }
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
        self.remove(slot);
        let mut counts: HashMap<Box<str>, [u16; N]> = HashMap::new();
        let mut len = [0u32; N];
        for (field, text) in fields.iter().enumerate() {
            self.analyzer.for_each_term(text, |term| {
                len[field] += 1;
                let tf = match counts.get_mut(term) {
                    Some(tf) => tf,
                    None => counts.entry(Box::from(term)).or_insert([0; N]),
                };
                tf[field] = tf[field].saturating_add(1);
            });
        }
        let mut terms = Vec::with_capacity(counts.len());
        for (term, tf) in counts {
            let entry = match self.postings.get_mut(&term) {
                Some(entry) => entry,
                None => self.postings.entry(term.clone()).or_default(),
            };
            for field in 0..N {
                if tf[field] > 0 {
                    entry.max_tf[field] = entry.max_tf[field].max(tf[field]);
                    entry.min_len[field] = entry.min_len[field].min(len[field]);
                }
            }
            let list = &mut entry.list;
            match list.binary_search_by_key(&slot, |posting| posting.slot) {
                Ok(at) => list[at] = Posting::new(slot, tf, len),
                Err(at) => list.insert(at, Posting::new(slot, tf, len)),
            }
            terms.push(term);
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
        let mut touched: HashSet<Box<str>> = HashSet::new();
        for &slot in slots {
            let Some(entry) = self.docs.get_mut(slot as usize).and_then(Option::take) else {
                continue;
            };
            removed[slot as usize] = true;
            for (total, field_len) in self.total_len.iter_mut().zip(entry.len) {
                *total -= u64::from(field_len);
            }
            self.doc_count -= 1;
            touched.extend(entry.terms.into_vec());
        }
        for term in touched {
            if let Some(entry) = self.postings.get_mut(&term) {
                entry.list.retain(|posting| {
                    !removed.get(posting.slot as usize).copied().unwrap_or(false)
                });
                if entry.list.is_empty() {
                    self.postings.remove(&term);
                }
            }
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
        for term in entry.terms.iter() {
            if let Some(entry) = self.postings.get_mut(term) {
                if let Ok(at) = entry
                    .list
                    .binary_search_by_key(&slot, |posting| posting.slot)
                {
                    entry.list.remove(at);
                }
                if entry.list.is_empty() {
                    self.postings.remove(term);
                }
            }
        }
        for (total, field_len) in self.total_len.iter_mut().zip(entry.len) {
            *total -= u64::from(field_len);
        }
        self.doc_count -= 1;
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
    /// The `k` best documents for `terms` among those `accept` lets through: highest score
    /// first, equal scores by `id_of` ascending. Exactly what scoring every match and sorting
    /// would return, but with MaxScore pruning: terms are visited document by document in
    /// slot order, and once `k` results are held, documents that only contain terms whose
    /// score bounds add up to less than the `k`-th score are never looked at. Cost: about
    /// `O(postings of the rare terms × log)` for typical queries instead of all postings.
    /// Indexes of at most [`SMALL_INDEX_DOCS`] slots are instead scored into a dense array and
    /// selected against the running `k`-th score.
    ///
    /// `accept` must give the same answer for a slot each time: it may be asked more than once.
    pub(crate) fn top_k<'a>(
        &self,
        terms: &[String],
        k: usize,
        mut accept: impl FnMut(u32) -> bool,
        id_of: impl Fn(u32) -> Option<&'a str>,
    ) -> Vec<(f32, u32)> {
        if k == 0 || self.doc_count == 0 {
            return Vec::new();
        }
        let (cursors, length_factor) = self.cursors(terms);
        if self.docs.len() <= self.small_index_docs {
            return self.dense_top_k(&cursors, &length_factor, k, &mut accept, &id_of);
        }
        self.max_score(
            cursors,
            &length_factor,
            Cut::plain(k),
            |slot, total| accept(slot).then_some(total),
            &id_of,
        )
    }

    /// The `k` best documents for `terms` once each document's BM25F score is passed through
    /// `weigh(slot, bm25)`, which gives its final score (at most `max_factor` times the BM25F
    /// score) or `None` to leave it out; highest final score first, equal scores by `id_of`.
    /// MaxScore pruning as in [`top_k`](Self::top_k), with every bound scaled by
    /// `max_factor`: a document is weighed only when its BM25F score times `max_factor` can
    /// still reach the `k`-th final score, so `weigh` runs for few documents when few get a
    /// large factor. Exact: the same list as weighing every match and sorting.
    pub(crate) fn top_k_weighted<'a>(
        &self,
        terms: &[String],
        k: usize,
        max_factor: f32,
        weigh: impl FnMut(u32, f32) -> Option<f32>,
        id_of: impl Fn(u32) -> Option<&'a str>,
    ) -> Vec<(f32, u32)> {
        if k == 0 || self.doc_count == 0 {
            return Vec::new();
        }
        let (cursors, length_factor) = self.cursors(terms);
        // First the k best by BM25F alone among the documents `weigh` keeps, weighed: k
        // documents reach the k-th of their final scores, so the final k-th score is at least
        // that floor, and the weighted walk prunes from its first document on instead of from
        // the k-th it happens to meet in slot order.
        let mut weigh = weigh;
        let mut weighed: Vec<(u32, f32)> = Vec::new();
        let first = self.max_score(
            cursors.clone(),
            &length_factor,
            Cut::plain(k),
            |slot, total| {
                let score = weigh(slot, total)?;
                weighed.push((slot, score));
                Some(total)
            },
            &id_of,
        );
        let mut floors: Vec<f32> = first
            .iter()
            .filter_map(|(_, slot)| weighed.iter().find(|(at, _)| at == slot))
            .map(|(_, score)| *score)
            .collect();
        let floor = if floors.len() == k {
            floors.sort_unstable_by(|a, b| b.total_cmp(a));
            floors[k - 1]
        } else {
            f32::NEG_INFINITY
        };
        self.max_score(
            cursors,
            &length_factor,
            Cut {
                k,
                max_factor: max_factor.max(1.0),
                floor,
            },
            weigh,
            &id_of,
        )
    }

    /// A cursor over each of `terms`' postings (terms without postings left out), with the
    /// index's length factors.
    fn cursors(&self, terms: &[String]) -> (Vec<Cursor<'_, N>>, [f32; N]) {
        let n = self.doc_count as f32;
        let length_factor = length_factors(n, &self.total_len);
        let cursors = terms
            .iter()
            .filter_map(|term| self.postings.get(term.as_str()))
            .filter(|entry| !entry.list.is_empty())
            .map(|entry| {
                let idf = bm25_idf(n, entry.list.len() as f32);
                let bound = bm25f(
                    &self.weights,
                    &length_factor,
                    &entry.max_tf,
                    &entry.min_len,
                    idf,
                );
                Cursor {
                    list: &entry.list,
                    at: 0,
                    idf,
                    bound,
                }
            })
            .collect();
        (cursors, length_factor)
    }

    /// The MaxScore walk of [`top_k_weighted`](Self::top_k_weighted) (`max_factor` at least
    /// 1; with 1 and `weigh` passing the score through, that of [`top_k`](Self::top_k)).
    /// `floor` is a final score that `k` documents are known to reach (`-∞` when none is
    /// known): nothing below it is held, and the walk prunes against it from the start.
    fn max_score<'a>(
        &self,
        mut cursors: Vec<Cursor<'_, N>>,
        length_factor: &[f32; N],
        Cut {
            k,
            max_factor,
            floor,
        }: Cut,
        mut weigh: impl FnMut(u32, f32) -> Option<f32>,
        id_of: &impl Fn(u32) -> Option<&'a str>,
    ) -> Vec<(f32, u32)> {
        let score = |tf: &[u16; N], len: &[u32; N], idf: f32| {
            bm25f(&self.weights, length_factor, tf, len, idf)
        };
        // Ascending bounds; prefix[i] bounds the score of a document holding only terms 0..=i.
        cursors.sort_by(|a, b| a.bound.total_cmp(&b.bound));
        let mut prefix = Vec::with_capacity(cursors.len());
        let mut sum = 0.0f32;
        for cursor in &cursors {
            // A little slack so float rounding never prunes a document that could tie.
            sum += cursor.bound * 1.0001 + 1e-6;
            prefix.push(sum);
        }
        let order = self.best_first(id_of);
        let mut held: Vec<(f32, u32)> = Vec::with_capacity(k.min(1024) + 1);
        let mut threshold = floor;
        let mut essential = 0usize;
        while essential < cursors.len() && prefix[essential] * max_factor < threshold {
            essential += 1;
        }
        while let Some(doc) = cursors[essential..]
            .iter()
            .filter_map(|c| c.list.get(c.at).map(|p| p.slot))
            .min()
        {
            let mut total = 0.0f64;
            for cursor in &mut cursors[essential..] {
                if let Some(posting) = cursor.list.get(cursor.at)
                    && posting.slot == doc
                {
                    let len = self.doc_len(posting).unwrap_or([0; N]);
                    total += f64::from(score(&posting.tf, &len, cursor.idf));
                    cursor.at += 1;
                }
            }
            let mut pruned = false;
            for i in (0..essential).rev() {
                if (total as f32 + prefix[i]) * max_factor < threshold {
                    pruned = true;
                    break;
                }
                let cursor = &mut cursors[i];
                // Documents come in slot order: gallop forward from where the cursor stands
                // (a few cache-local steps for a near document, logarithmic for a far one).
                cursor.at += gallop(&cursor.list[cursor.at..], doc);
                if let Some(posting) = cursor.list.get(cursor.at)
                    && posting.slot == doc
                {
                    let len = self.doc_len(posting).unwrap_or([0; N]);
                    total += f64::from(score(&posting.tf, &len, cursor.idf));
                    cursor.at += 1;
                }
            }
            let total = total as f32;
            if pruned || total * max_factor < threshold {
                continue;
            }
            // Not better than the worst held (a tie it loses) even with the largest factor:
            // skip before `weigh` reads the document.
            if held.len() == k && !order(&(total * max_factor, doc), &held[k - 1]).is_lt() {
                continue;
            }
            // Below the floor: k documents are known to score more.
            let Some(weighed) = weigh(doc, total).filter(|weighed| *weighed >= floor) else {
                continue;
            };
            let candidate = (weighed, doc);
            if held.len() < k {
                held.push(candidate);
                if held.len() == k {
                    held.sort_unstable_by(&order);
                    threshold = held[k - 1].0;
                }
            } else if order(&candidate, &held[k - 1]).is_lt() {
                // Insert in order, drop the worst: `held` stays sorted best first.
                let at = held.partition_point(|h| order(h, &candidate).is_lt());
                held.insert(at, candidate);
                held.pop();
                threshold = held[k - 1].0;
            } else {
                continue;
            }
            while essential < cursors.len() && prefix[essential] * max_factor < threshold {
                essential += 1;
            }
            if essential == cursors.len() {
                break;
            }
        }
        held.sort_unstable_by(&order);
        held
    }
}

/// What a MaxScore walk keeps: the `k` best final scores, each at most `max_factor` (at
/// least 1) times the document's BM25F score, none below `floor`.
#[derive(Clone, Copy)]
struct Cut {
    k: usize,
    max_factor: f32,
    floor: f32,
}

impl Cut {
    /// The `k` best BM25F scores, unweighted.
    fn plain(k: usize) -> Self {
        Self {
            k,
            max_factor: 1.0,
            floor: f32::NEG_INFINITY,
        }
    }
}

/// A term's postings being walked, with its idf and the bound of its score.
#[derive(Clone)]
struct Cursor<'l, const N: usize> {
    list: &'l [Posting<N>],
    at: usize,
    idf: f32,
    bound: f32,
}

/// How many postings at the start of `list` come before `slot`: an exponential probe from the
/// front, then a binary search of the last step (cheap for near slots, logarithmic for far).
fn gallop<const N: usize>(list: &[Posting<N>], slot: u32) -> usize {
    let mut end = 1;
    while end < list.len() && list[end - 1].slot < slot {
        end *= 2;
    }
    let end = end.min(list.len());
    let start = end / 2;
    start + list[start..end].partition_point(|posting| posting.slot < slot)
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
        held.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut start = 0;
        while start < held.len().min(k) {
            let end =
                start + held[start..].partition_point(|h| h.0.total_cmp(&held[start].0).is_eq());
            if end - start > 1 {
                held[start..end].sort_unstable_by(self.best_first(id_of));
            }
            start = end;
        }
        held.truncate(k);
    }

    /// The order of results, best first: higher score, then lower id, then lower slot. A tie
    /// in score is broken by the ids' first 8 bytes kept with the index, and the ids
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

/// The first 8 bytes of `id`, big-endian, zero-padded: comparing two keys orders the ids
/// lexicographically whenever the keys differ (a shorter id that is a prefix of a longer one
/// pads with zeros, which sort first), so only equal keys need the ids compared.
fn tie_key(id: &str) -> u64 {
    let mut bytes = [0u8; 8];
    let prefix = &id.as_bytes()[..id.len().min(8)];
    bytes[..prefix.len()].copy_from_slice(prefix);
    u64::from_be_bytes(bytes)
}

/// Keeps the `k` best `(score, key)` pairs: highest score first, ties by key ascending.
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

#[cfg(test)]
mod tests;
