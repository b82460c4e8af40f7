//! The small-index path of [`Bm25Index::top_k`]: scores accumulate in a dense per-slot
//! array, rarer terms first, with the common terms looked up only for the documents that can
//! still make the cut.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use memory_core::search::bm25f;

use super::max_score::{Cursor, gallop};
use super::{Bm25Index, SCRATCH};

impl<const N: usize> Bm25Index<N> {
    /// [`top_k`](Self::top_k) for small indexes: scores accumulate in a dense per-slot array.
    ///
    /// Terms found in more than a quarter of the slots (a speaker's name in a conversation,
    /// say) hold most postings and add little to any score. So the rarer terms are scored
    /// first; the `k`-th best partial score `θ` is then a floor for the `k`-th final score,
    /// and when the common terms' bounds add up to less than `θ`, only documents whose
    /// partial score plus those bounds reaches `θ` can still make the cut. The common terms
    /// are looked up (binary search) for those few documents alone. Otherwise (too few
    /// partial scores, or bounds too high) every term is scored densely. Exact either way.
    pub(super) fn dense_top_k<'a>(
        &self,
        cursors: &[Cursor<'_, N>],
        length_factor: &[f32; N],
        k: usize,
        accept: &mut impl FnMut(u32) -> bool,
        id_of: &impl Fn(u32) -> Option<&'a str>,
    ) -> Vec<(f32, u32)> {
        let score = |tf: &[u16; N], len: &[u32; N], idf: f32| {
            bm25f(&self.weights, length_factor, tf, len, idf)
        };
        // The scratch array comes back all zeros (each use zeroes the slots it touched), so
        // a query costs its postings, not a pass over every slot.
        let (mut totals, mut touched) = SCRATCH.with(Cell::take);
        debug_assert!(totals.iter().all(|total| *total == 0.0));
        totals.resize(self.docs.len(), 0.0);
        touched.clear();
        // Every posting adds a positive score, so a slot at zero has not been touched yet.
        let add = |totals: &mut Vec<f64>, touched: &mut Vec<u32>, cursor: &Cursor<'_, N>| {
            for posting in cursor.list {
                let slot = posting.slot as usize;
                if let (Some(len), Some(total)) = (self.doc_len(posting), totals.get_mut(slot)) {
                    if *total == 0.0 {
                        touched.push(posting.slot);
                    }
                    *total += f64::from(score(&posting.tf, &len, cursor.idf));
                }
            }
        };
        let common = |cursor: &&Cursor<'_, N>| cursor.list.len() * 4 > self.docs.len();
        for cursor in cursors.iter().filter(|c| !common(c)) {
            add(&mut totals, &mut touched, cursor);
        }
        let mut result = None;
        if cursors.iter().any(|c| common(&c)) {
            // A little slack so float rounding never prunes a document that could tie.
            let rest: f32 = cursors
                .iter()
                .filter(common)
                .map(|c| c.bound * 1.0001 + 1e-6)
                .sum();
            let floor = kth_best(&totals, &touched, k, accept);
            if floor.is_some_and(|floor| floor > rest) {
                let floor = floor.unwrap_or(f32::INFINITY);
                // Sized for the usual few: growing from empty was four allocations.
                let mut open: Vec<(u32, f64)> =
                    Vec::with_capacity(touched.len().min(k.saturating_mul(2)));
                open.extend(
                    touched
                        .iter()
                        .map(|slot| (*slot, totals[*slot as usize]))
                        .filter(|(slot, partial)| *partial as f32 + rest >= floor && accept(*slot)),
                );
                // In slot order, each common list is walked once (galloping), not searched
                // from scratch per document.
                open.sort_unstable_by_key(|(slot, _)| *slot);
                for cursor in cursors.iter().filter(common) {
                    let mut from = 0;
                    for (slot, total) in &mut open {
                        from += gallop(&cursor.list[from..], *slot);
                        if let Some(posting) = cursor.list.get(from)
                            && posting.slot == *slot
                        {
                            let len = self.doc_len(posting).unwrap_or([0; N]);
                            *total += f64::from(score(&posting.tf, &len, cursor.idf));
                        }
                    }
                }
                let mut held: Vec<(f32, u32)> = open
                    .into_iter()
                    .map(|(slot, total)| (total as f32, slot))
                    .collect();
                self.rank(&mut held, k, id_of);
                #[cfg(test)]
                super::tests::PRUNED_DENSE.with(|count| count.set(count.get() + 1));
                result = Some(held);
            } else {
                for cursor in cursors.iter().filter(common) {
                    add(&mut totals, &mut touched, cursor);
                }
            }
        }
        let held = result.unwrap_or_else(|| {
            // Everything scoring at least the k-th score: k documents plus any tied with it.
            let floor = kth_best(&totals, &touched, k, accept).unwrap_or(0.0);
            // k of them, and more only when tied with the k-th.
            let mut held: Vec<(f32, u32)> =
                Vec::with_capacity(touched.len().min(k.saturating_add(1)));
            held.extend(
                touched
                    .iter()
                    .map(|slot| (totals[*slot as usize] as f32, *slot))
                    .filter(|(total, slot)| *total >= floor && accept(*slot)),
            );
            self.rank(&mut held, k, id_of);
            held
        });
        for slot in &touched {
            if let Some(total) = totals.get_mut(*slot as usize) {
                *total = 0.0;
            }
        }
        SCRATCH.with(|scratch| scratch.set((totals, touched)));
        held
    }
}

/// The `k`-th best score among the `touched` slots that `accept` lets through, or `None` when
/// fewer than `k` pass. Keeps a min-heap of `k` score bits (positive floats order like their
/// bits): most slots cost one comparison, and only would-be entrants are offered to `accept`.
fn kth_best(
    totals: &[f64],
    touched: &[u32],
    k: usize,
    accept: &mut impl FnMut(u32) -> bool,
) -> Option<f32> {
    let mut best: BinaryHeap<Reverse<u32>> = BinaryHeap::with_capacity(k.min(1024) + 1);
    for slot in touched {
        let total = totals[*slot as usize] as f32;
        if total <= 0.0 || total.is_nan() {
            continue;
        }
        let bits = total.to_bits();
        let full = best.len() == k;
        if full && best.peek().is_some_and(|Reverse(kth)| bits <= *kth) {
            continue;
        }
        if !accept(*slot) {
            continue;
        }
        if full {
            if let Some(mut kth) = best.peek_mut() {
                *kth = Reverse(bits);
            }
        } else {
            best.push(Reverse(bits));
        }
    }
    if best.len() < k {
        return None;
    }
    best.peek().map(|Reverse(kth)| f32::from_bits(*kth))
}
