//! Embeddings stored contiguously by slot, so a similarity scan streams memory instead of
//! chasing one allocation per item.

use memory_core::backend::CosineQuery;

/// The embeddings of a namespace's items, one row of `dimension` values per slot.
///
/// The dimension is that of the first embedding stored. An item whose embedding has another
/// length gets no row (it keeps its vector in the item, and a query of that length scans the
/// items instead, see [`Vectors::covers`]). Derived state: [`set`](Self::set) and
/// [`clear`](Self::clear) follow every insert and removal of the slab.
#[derive(Debug, Default)]
pub(crate) struct Vectors {
    dimension: usize,
    values: Vec<f32>,
    present: Vec<bool>,
    /// Items holding an embedding whose length is not `dimension`.
    others: usize,
    /// Per slot: whether the item's embedding is counted in `others`.
    other: Vec<bool>,
}

impl Vectors {
    /// Records the embedding of the item now in `slot` (`None`: it has none).
    pub(crate) fn set(&mut self, slot: u32, embedding: Option<&[f32]>) {
        self.clear(slot);
        let Some(embedding) = embedding else {
            return;
        };
        let slot = slot as usize;
        if self.dimension == 0 {
            self.dimension = embedding.len();
        }
        if self.present.len() <= slot {
            self.present.resize(slot + 1, false);
            self.other.resize(slot + 1, false);
        }
        if embedding.len() != self.dimension {
            self.other[slot] = true;
            self.others += 1;
            return;
        }
        let end = (slot + 1) * self.dimension;
        if self.values.len() < end {
            self.values.resize(end, 0.0);
        }
        self.values[slot * self.dimension..end].copy_from_slice(embedding);
        self.present[slot] = true;
    }

    /// Renumbers the rows as [`Bm25Index::remap`](crate::bm25::Bm25Index::remap) does:
    /// `map[old]` is a live slot's new number, `u32::MAX` a free slot's.
    pub(crate) fn remap(&mut self, map: &[u32]) {
        let dimension = self.dimension;
        let mut values = Vec::with_capacity(self.values.len());
        let mut present = Vec::with_capacity(self.present.len());
        let mut other = Vec::with_capacity(self.other.len());
        for (old, new) in map.iter().enumerate() {
            if *new == u32::MAX {
                continue;
            }
            let is_present = self.present.get(old).copied().unwrap_or(false);
            present.push(is_present);
            other.push(self.other.get(old).copied().unwrap_or(false));
            let row = self
                .values
                .get(old * dimension..(old + 1) * dimension)
                .filter(|_| is_present);
            match row {
                Some(row) => values.extend_from_slice(row),
                None => values.extend(std::iter::repeat_n(0.0, dimension)),
            }
        }
        self.values = values;
        self.present = present;
        self.other = other;
    }

    /// Forgets the embedding of `slot` (its item was removed or replaced).
    pub(crate) fn clear(&mut self, slot: u32) {
        let slot = slot as usize;
        if let Some(present) = self.present.get_mut(slot) {
            *present = false;
        }
        if let Some(other) = self.other.get_mut(slot)
            && std::mem::take(other)
        {
            self.others -= 1;
        }
    }

    /// Whether the rows hold every embedding a query of `length` values can match: the
    /// length is the rows' dimension, or no item has an embedding of another length.
    pub(crate) fn covers(&self, length: usize) -> bool {
        length == self.dimension || self.others == 0
    }

    /// `(slot, cosine)` of every row comparable with `query`, in slot order.
    pub(crate) fn scores<'a>(
        &'a self,
        query: &'a CosineQuery<'_>,
    ) -> impl Iterator<Item = (u32, f32)> + 'a {
        let rows = self
            .values
            .chunks_exact(self.dimension.max(1))
            .zip(&self.present);
        rows.enumerate().filter_map(move |(slot, (row, present))| {
            if !*present {
                return None;
            }
            Some((slot as u32, query.similarity(row)?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_sets_and_clears() {
        let mut vectors = Vectors::default();
        assert!(vectors.covers(3), "empty: nothing to miss");
        vectors.set(2, Some(&[1.0, 0.0, 0.0]));
        vectors.set(0, Some(&[0.0, 1.0, 0.0]));
        vectors.set(1, Some(&[1.0, 1.0]));
        vectors.set(3, None);
        assert!(vectors.covers(3));
        assert!(
            !vectors.covers(2),
            "slot 1's 2-value embedding is not in the rows"
        );
        let query = [1.0, 0.0, 0.0];
        let query = CosineQuery::new(&query);
        let scores: Vec<(u32, f32)> = vectors.scores(&query).collect();
        assert_eq!(scores, [(0, 0.0), (2, 1.0)]);
        vectors.clear(2);
        vectors.set(1, Some(&[0.0, 0.0, 2.0]));
        assert!(vectors.covers(2), "no other length left");
        let scores: Vec<(u32, f32)> = vectors.scores(&query).collect();
        assert_eq!(scores, [(0, 0.0), (1, 0.0)]);
    }
}
