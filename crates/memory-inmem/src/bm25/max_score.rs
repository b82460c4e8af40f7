//! The pruned path of [`Bm25Index::top_k`] and the weighted one of
//! [`Bm25Index::top_k_weighted`]: a MaxScore walk over the query terms' postings in slot
//! order, in which documents holding only terms whose score bounds cannot reach the cut are
//! never scored.

use memory_core::search::{bm25_idf, bm25f, length_factors};

use super::{BLOCK, BlockBound, Bm25Index, Posting};

impl<const N: usize> Bm25Index<N> {
    /// The `k` best documents for `terms` among those `accept` lets through: highest score
    /// first, equal scores by `id_of` ascending. Exactly what scoring every match and sorting
    /// would return, but with MaxScore pruning: terms are visited document by document in
    /// slot order, and once `k` results are held, documents that only contain terms whose
    /// score bounds add up to less than the `k`-th score are never looked at. Cost: about
    /// `O(postings of the rare terms × log)` for typical queries instead of all postings.
    /// Indexes of at most [`SMALL_INDEX_DOCS`](super::SMALL_INDEX_DOCS) slots are instead scored into a dense array and
    /// selected against the running `k`-th score.
    ///
    /// `accept` must give the same answer for a slot each time: it may be asked more than once.
    pub(crate) fn top_k<'a>(
        &self,
        terms: &[impl AsRef<str>],
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
            |slot, total, _| accept(slot).then_some(total),
            &id_of,
        )
    }

    /// The `k` best documents for `terms` among those `accept` lets through, once each
    /// document's BM25F score is passed through `weigh(slot, bm25, needed)`, which gives its
    /// final score (at most `max_factor` times the BM25F score), or `None` when it knows that
    /// score is below `needed` (the `k`-th final score held so far: a document below it
    /// cannot make the cut); highest final score first, equal scores by `id_of`. MaxScore
    /// pruning as in [`top_k`](Self::top_k), with every bound scaled by `max_factor`: a
    /// document is weighed only when its BM25F score times `max_factor` can still reach the
    /// `k`-th final score, so `weigh` runs for few documents when few get a large factor.
    /// Exact: the same list as weighing every accepted match and sorting.
    ///
    /// `accept` must give the same answer for a slot each time, and should be cheap: it is
    /// asked of every document the walks score; `weigh` only of those that can make the cut.
    pub(crate) fn top_k_weighted<'a>(
        &self,
        terms: &[String],
        k: usize,
        max_factor: f32,
        mut accept: impl FnMut(u32) -> bool,
        mut weigh: impl FnMut(u32, f32, f32) -> Option<f32>,
        id_of: impl Fn(u32) -> Option<&'a str>,
    ) -> Vec<(f32, u32)> {
        if k == 0 || self.doc_count == 0 {
            return Vec::new();
        }
        let (cursors, length_factor) = self.cursors(terms);
        // First the k best by BM25F alone among the accepted documents, weighed: k documents
        // reach the k-th of their final scores, so the final k-th score is at least that
        // floor, and the weighted walk prunes from its first document on instead of from the
        // k-th it happens to meet in slot order.
        let first = self.max_score(
            cursors.clone(),
            &length_factor,
            Cut::plain(k),
            |slot, total, _| accept(slot).then_some(total),
            &id_of,
        );
        // The final scores of those k, kept: the walk below meets them again and takes them
        // from here instead of weighing them twice.
        let weighed: Vec<(u32, f32)> = if first.len() == k {
            first
                .iter()
                .map(|&(total, slot)| {
                    (slot, weigh(slot, total, f32::NEG_INFINITY).unwrap_or(total))
                })
                .collect()
        } else {
            Vec::new()
        };
        let floor = match weighed.len() {
            0 => f32::NEG_INFINITY,
            _ => {
                let mut floors: Vec<f32> = weighed.iter().map(|&(_, score)| score).collect();
                floors.sort_unstable_by(|a, b| b.total_cmp(a));
                floors[k - 1]
            }
        };
        self.max_score(
            cursors,
            &length_factor,
            Cut {
                k,
                max_factor: max_factor.max(1.0),
                floor,
            },
            |slot, total, needed| {
                if let Some(&(_, score)) = weighed.iter().find(|(weighed, _)| *weighed == slot) {
                    // Accepted by the first walk already.
                    Some(score)
                } else if accept(slot) {
                    weigh(slot, total, needed)
                } else {
                    None
                }
            },
            &id_of,
        )
    }

    /// A cursor over each of `terms`' postings (terms without postings left out), with the
    /// index's length factors.
    fn cursors(&self, terms: &[impl AsRef<str>]) -> (Vec<Cursor<'_, N>>, [f32; N]) {
        let n = self.doc_count as f32;
        let length_factor = length_factors(n, &self.total_len);
        let cursors = terms
            .iter()
            .filter_map(|term| self.postings.get(term.as_ref()))
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
                    blocks: &entry.blocks,
                    at: 0,
                    idf,
                    bound,
                    block: usize::MAX,
                    block_bound: 0.0,
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
        mut weigh: impl FnMut(u32, f32, f32) -> Option<f32>,
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
        // Block-max skipping: the documents up to `checked_through` were found able to reach
        // `checked_at` (the threshold then) by the bounds of the essential terms' blocks.
        let mut checked_through: Option<u32> = None;
        let mut checked_at = threshold;
        while let Some(doc) = cursors[essential..]
            .iter()
            .filter_map(|c| c.list.get(c.at).map(|p| p.slot))
            .min()
        {
            if threshold > f32::NEG_INFINITY
                && (checked_through.is_none_or(|through| doc > through) || checked_at < threshold)
            {
                // Every document from `doc` to the end of the shortest reach of the essential
                // terms' current blocks scores at most the sum of those blocks' bounds (and of
                // the other terms' bounds): when that cannot reach the cut, skip them all.
                let mut bound = if essential > 0 {
                    prefix[essential - 1]
                } else {
                    0.0
                };
                let mut through = u32::MAX;
                for cursor in &mut cursors[essential..] {
                    if let Some(last) = cursor.block_last() {
                        bound += cursor.block_bound(&self.weights, length_factor);
                        through = through.min(last);
                    }
                }
                if bound * max_factor < threshold {
                    for cursor in &mut cursors[essential..] {
                        cursor.skip_through(through);
                    }
                    #[cfg(test)]
                    super::tests::BLOCKS_SKIPPED.with(|count| count.set(count.get() + 1));
                    continue;
                }
                checked_through = Some(through);
                checked_at = threshold;
            }
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
            let needed = if held.len() == k { threshold } else { floor };
            let Some(weighed) = weigh(doc, total, needed).filter(|weighed| *weighed >= floor)
            else {
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
pub(super) struct Cut {
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
pub(super) struct Cursor<'l, const N: usize> {
    pub(super) list: &'l [Posting<N>],
    /// The bounds of each block of [`BLOCK`] postings of `list`.
    blocks: &'l [BlockBound<N>],
    pub(super) at: usize,
    pub(super) idf: f32,
    pub(super) bound: f32,
    /// The block whose score bound `block_bound` holds (`usize::MAX`: none yet).
    block: usize,
    block_bound: f32,
}

impl<const N: usize> Cursor<'_, N> {
    /// The slot of the last posting of the block the cursor stands in (`None` at the end).
    #[inline]
    fn block_last(&self) -> Option<u32> {
        if self.at >= self.list.len() {
            return None;
        }
        let end = ((self.at / BLOCK + 1) * BLOCK).min(self.list.len());
        self.list.get(end - 1).map(|posting| posting.slot)
    }

    /// The bound of the score of any posting in the block the cursor stands in, with the
    /// slack of the whole-list bounds.
    #[inline]
    fn block_bound(&mut self, weights: &[f32; N], length_factor: &[f32; N]) -> f32 {
        let block = self.at / BLOCK;
        if block != self.block {
            self.block = block;
            self.block_bound = self.blocks.get(block).map_or(self.bound, |bound| {
                let min_len = bound.min_len.map(u32::from);
                bm25f(weights, length_factor, &bound.max_tf, &min_len, self.idf) * 1.0001 + 1e-6
            });
        }
        self.block_bound
    }

    /// Moves past every posting of slot at most `through`, which is at most the slot of the
    /// last posting of the current block.
    #[inline]
    fn skip_through(&mut self, through: u32) {
        let end = ((self.at / BLOCK + 1) * BLOCK).min(self.list.len());
        if let Some(rest) = self.list.get(self.at..end) {
            self.at += rest.partition_point(|posting| posting.slot <= through);
        }
    }
}

/// How many postings at the start of `list` come before `slot`: an exponential probe from the
/// front, then a binary search of the last step (cheap for near slots, logarithmic for far).
pub(super) fn gallop<const N: usize>(list: &[Posting<N>], slot: u32) -> usize {
    let mut end = 1;
    while end < list.len() && list[end - 1].slot < slot {
        end *= 2;
    }
    let end = end.min(list.len());
    let start = end / 2;
    start + list[start..end].partition_point(|posting| posting.slot < slot)
}
