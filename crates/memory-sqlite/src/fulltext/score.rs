//! BM25F scoring of a query's candidates, with the statistics of each candidate's own
//! namespace, exactly as `memory-inmem` scores them: those that can make a top k
//! ([`FullText::top`], MaxScore over the blocks), or those above a score
//! ([`FullText::above`], the same walk).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use memory_core::search::{bm25_idf, bm25f, length_factors};
use memory_core::{Result, Scope};
use rusqlite::{Connection, params_from_iter};

use super::FullText;
use super::blocks::{Posting, decode};
use crate::error::Context;
use crate::sql::Sql;
use crate::terms::QueryTerms;

/// A namespace in scope: its id, record count and total field lengths.
struct Namespace<const N: usize> {
    nid: i64,
    docs: f32,
    total_len: [u64; N],
}

/// A stored block as a search reads it: its key, size, bounds and undecoded postings.
struct Block<const N: usize> {
    first: i64,
    count: u64,
    max_tf: [u16; N],
    min_len: [u32; N],
    data: Vec<u8>,
}

/// Loosens a score bound so that float rounding never prunes a record that could tie.
fn loosen(bound: f32) -> f32 {
    bound * 1.0001 + 1e-6
}

/// The candidates of a pruned search ([`FullText::top`]).
#[derive(Debug)]
pub(crate) struct Top {
    /// `(score, rid)` of every record scoring at least the `k`-th best score, in no order
    /// (ties at the cut included, so a caller can order them by id).
    pub(crate) candidates: Vec<(f32, i64)>,
    /// Whether these are every match: fewer than `k` records matched, nothing was pruned.
    pub(crate) complete: bool,
    /// The candidates holding a query term in their first field, sorted: for memories, their
    /// own words, not only the context beside them.
    pub(crate) own_words: Vec<i64>,
}

/// The `k` best scores seen (as bits: scores are positive, so their bits order as they do),
/// and every record that scored at least the `k`-th when it was seen.
struct Held {
    k: usize,
    /// The least score held whatever `k` allows (`NEG_INFINITY` for none).
    floor: f32,
    best: BinaryHeap<Reverse<u32>>,
    candidates: Vec<(f32, i64)>,
    /// Every record held whose first field holds a query term (see [`Top::own_words`]).
    own_words: Vec<i64>,
    /// The number of candidates past which they are pruned again: twice what the last
    /// prune kept, at least `4k + 64`. Records tied at the cut are all kept, so a prune
    /// may keep thousands; pruning again at once for every record after them made a search
    /// of many equal texts quadratic.
    prune_at: usize,
    /// How many prunes were made (each reads every candidate held).
    #[cfg(test)]
    prunes: usize,
}

impl Held {
    fn new(k: usize) -> Self {
        Self {
            k,
            floor: f32::NEG_INFINITY,
            best: BinaryHeap::with_capacity(k.min(4096) + 1),
            candidates: Vec::new(),
            own_words: Vec::new(),
            prune_at: Self::least_prune_at(k),
            #[cfg(test)]
            prunes: 0,
        }
    }

    /// Every record scoring at least `floor`, however many.
    fn above(floor: f32) -> Self {
        Self {
            k: usize::MAX,
            floor,
            best: BinaryHeap::new(),
            candidates: Vec::new(),
            own_words: Vec::new(),
            prune_at: usize::MAX,
            #[cfg(test)]
            prunes: 0,
        }
    }

    /// The fewest candidates held before a prune: `4k + 64`.
    fn least_prune_at(k: usize) -> usize {
        k.saturating_mul(4).saturating_add(64)
    }

    /// The score a record must reach to be held (ties included).
    fn threshold(&self) -> f32 {
        match self.best.peek() {
            Some(Reverse(bits)) if self.best.len() >= self.k => {
                f32::from_bits(*bits).max(self.floor)
            }
            _ => self.floor,
        }
    }

    /// Holds `rid` if `score` reaches the cut; `own` tells whether its first field holds
    /// a query term.
    fn offer(&mut self, score: f32, rid: i64, own: bool) {
        if score < self.threshold() {
            return;
        }
        if own {
            self.own_words.push(rid);
        }
        if self.k == usize::MAX {
            self.candidates.push((score, rid));
            return;
        }
        let bits = score.max(0.0).to_bits();
        if self.best.len() < self.k {
            self.best.push(Reverse(bits));
        } else if self.best.peek().is_some_and(|Reverse(min)| bits > *min) {
            self.best.pop();
            self.best.push(Reverse(bits));
        }
        self.candidates.push((score, rid));
        if self.candidates.len() > self.prune_at {
            self.prune();
            self.prune_at = self
                .candidates
                .len()
                .saturating_mul(2)
                .max(Self::least_prune_at(self.k));
        }
    }

    /// Lets go of the candidates below the cut, and of what was noted of them.
    fn prune(&mut self) {
        #[cfg(test)]
        {
            self.prunes += 1;
        }
        let threshold = self.threshold();
        self.candidates.retain(|(score, _)| *score >= threshold);
        let held: std::collections::HashSet<i64> =
            self.candidates.iter().map(|(_, rid)| *rid).collect();
        self.own_words.retain(|rid| held.contains(rid));
    }

    fn finish(mut self) -> Top {
        self.prune();
        self.own_words.sort_unstable();
        Top {
            complete: self.best.len() < self.k,
            candidates: self.candidates,
            own_words: self.own_words,
        }
    }
}

/// A term's blocks being walked in row-id order, decoded one at a time when needed.
struct Cursor<'b, const N: usize> {
    idf: f32,
    blocks: &'b [Block<N>],
    /// Per block, the best score any of its postings can have (loosened).
    block_bounds: Vec<f32>,
    /// The best of `block_bounds`.
    bound: f32,
    /// The block in hand.
    block: usize,
    /// Its postings once decoded (`decoded_block == block`).
    decoded: Vec<Posting<N>>,
    decoded_block: usize,
    /// The next posting of the decoded block.
    at: usize,
}

impl<const N: usize> Cursor<'_, N> {
    fn move_to(&mut self, block: usize) {
        if block != self.block {
            self.block = block;
            self.at = 0;
        }
    }

    fn decode_current(&mut self) -> Result<()> {
        if self.decoded_block != self.block {
            self.decoded.clear();
            let block = &self.blocks[self.block];
            decode(block.first, &block.data, &mut self.decoded)?;
            self.decoded_block = self.block;
            self.at = 0;
        }
        Ok(())
    }

    /// The next posting, skipping without decoding the blocks whose bound is below `floor`;
    /// `None` at the end.
    fn current(&mut self, floor: f32) -> Result<Option<Posting<N>>> {
        loop {
            if self.block >= self.blocks.len() {
                return Ok(None);
            }
            if self.decoded_block != self.block {
                if self.block_bounds[self.block] < floor {
                    self.move_to(self.block + 1);
                    continue;
                }
                self.decode_current()?;
            }
            if let Some(posting) = self.decoded.get(self.at) {
                return Ok(Some(*posting));
            }
            self.move_to(self.block + 1);
        }
    }

    /// The block at or after the one in hand that would hold `rid`.
    fn block_of(&self, rid: i64) -> usize {
        let from = self.block.min(self.blocks.len());
        from + self.blocks[from..]
            .partition_point(|block| block.first <= rid)
            .saturating_sub(1)
    }

    /// The bound of the block that would hold `rid` (0 when none can).
    fn bound_at(&self, rid: i64) -> f32 {
        let block = self.block_of(rid);
        match self.blocks.get(block) {
            Some(found) if found.first <= rid => self.block_bounds[block],
            _ => 0.0,
        }
    }

    /// The posting of `rid`, if this term has one; moves past it. `rid` is never below a
    /// row id asked for before.
    fn seek(&mut self, rid: i64) -> Result<Option<Posting<N>>> {
        let block = self.block_of(rid);
        if self.blocks.get(block).is_none_or(|found| found.first > rid) {
            return Ok(None);
        }
        self.move_to(block);
        self.decode_current()?;
        let rest = &self.decoded[self.at..];
        self.at += rest.partition_point(|posting| posting.rid < rid);
        match self.decoded.get(self.at) {
            Some(posting) if posting.rid == rid => {
                self.at += 1;
                Ok(Some(*posting))
            }
            _ => Ok(None),
        }
    }
}

/// Blocks of each term a rarest-terms search sums before it knows whether the term can be
/// among the rarest (see `FullText::searched_terms`).
const SEEN_BLOCKS: i64 = 4;

impl<const N: usize> FullText<N> {
    /// The records in `scope` that can rank among the `k` best for the query: every one
    /// scoring at least the `k`-th best score (so ties at the cut are all there), with its
    /// BM25F score. Each record is scored with the statistics of its own namespace (document
    /// count, mean field lengths, document frequencies), as every backend does: a scope over
    /// several namespaces ranks each with its own. Per-term scores are `f32`, summed in
    /// `f64` (exact for a query's terms, so the order they are read in does not matter) and
    /// rounded to `f32` once.
    ///
    /// MaxScore over the blocks: records are visited in row-id order through the terms
    /// whose bounds could still reach the cut on their own; the other terms are only looked
    /// up for those records, and not at all when the bounds of the blocks that would hold
    /// them cannot lift the record to the cut. A block is decoded only when visited or
    /// looked into, and skipped undecoded when its bound plus every other term's cannot
    /// reach the cut. Cost: one statistics row per namespace, one row per block of each query
    /// term, and the decoding of the blocks that can matter.
    pub(crate) fn top(
        &self,
        connection: &Connection,
        scope: &Scope,
        terms: &QueryTerms,
        k: usize,
    ) -> Result<Top> {
        self.walk(connection, scope, terms, Held::new(k.max(1)))
    }

    /// The records in `scope` scoring at least `floor` (every match for `NEG_INFINITY`),
    /// with the scores [`top`](Self::top) gives them, found by the same pruned walk with
    /// `floor` as its cut.
    pub(crate) fn above(
        &self,
        connection: &Connection,
        scope: &Scope,
        terms: &QueryTerms,
        floor: f32,
    ) -> Result<Vec<(f32, i64)>> {
        Ok(self
            .walk(connection, scope, terms, Held::above(floor))?
            .candidates)
    }

    /// The pruned walk of [`top`](Self::top) and [`above`](Self::above), into `held`.
    fn walk(
        &self,
        connection: &Connection,
        scope: &Scope,
        terms: &QueryTerms,
        mut held: Held,
    ) -> Result<Top> {
        for namespace in self.namespaces(connection, scope)? {
            let searched = self.searched_terms(connection, namespace.nid, terms)?;
            let lists = searched
                .iter()
                .map(|term| self.term_blocks(connection, namespace.nid, term))
                .collect::<Result<Vec<_>>>()?;
            self.top_in(&namespace, &lists, &mut held)?;
        }
        Ok(held.finish())
    }

    /// [`top`](Self::top) within one namespace, whose terms' blocks are `lists`.
    fn top_in(
        &self,
        namespace: &Namespace<N>,
        lists: &[Vec<Block<N>>],
        held: &mut Held,
    ) -> Result<()> {
        let length_factor = length_factors(namespace.docs, &namespace.total_len);
        let mut cursors: Vec<Cursor<'_, N>> = Vec::with_capacity(lists.len());
        for blocks in lists {
            let df: u64 = blocks.iter().map(|block| block.count).sum();
            if df == 0 {
                continue;
            }
            let idf = bm25_idf(namespace.docs, df as f32);
            let block_bounds: Vec<f32> = blocks
                .iter()
                .map(|block| {
                    loosen(bm25f(
                        &self.weights,
                        &length_factor,
                        &block.max_tf,
                        &block.min_len,
                        idf,
                    ))
                })
                .collect();
            let bound = block_bounds.iter().copied().fold(0.0f32, f32::max);
            cursors.push(Cursor {
                idf,
                blocks,
                block_bounds,
                bound,
                block: 0,
                decoded: Vec::new(),
                decoded_block: usize::MAX,
                at: 0,
            });
        }
        if cursors.is_empty() {
            return Ok(());
        }
        // Ascending bounds; prefix[i] bounds the score of a record holding only terms 0..=i.
        cursors.sort_by(|a, b| a.bound.total_cmp(&b.bound));
        let mut prefix = Vec::with_capacity(cursors.len());
        let mut sum = 0.0f32;
        for cursor in &cursors {
            sum += cursor.bound;
            prefix.push(sum);
        }
        let total_bound = sum;
        let score = |posting: &Posting<N>, idf: f32| {
            f64::from(bm25f(
                &self.weights,
                &length_factor,
                &posting.tf,
                &posting.len,
                idf,
            ))
        };
        let mut threshold = held.threshold();
        let mut essential = 0usize;
        while essential < cursors.len() && prefix[essential] < threshold {
            essential += 1;
        }
        let mut block_bounds = vec![0.0f32; cursors.len()];
        while essential < cursors.len() {
            // The next record: the lowest row id among the essential terms.
            let mut next: Option<i64> = None;
            for cursor in &mut cursors[essential..] {
                let floor = threshold - (total_bound - cursor.bound);
                if let Some(posting) = cursor.current(floor)?
                    && next.is_none_or(|rid| posting.rid < rid)
                {
                    next = Some(posting.rid);
                }
            }
            let Some(rid) = next else {
                break;
            };
            let mut total = 0.0f64;
            // Whether a term the record holds is in its first field.
            let mut own = false;
            for cursor in &mut cursors[essential..] {
                if cursor.block < cursor.blocks.len()
                    && cursor.decoded_block == cursor.block
                    && let Some(posting) = cursor.decoded.get(cursor.at)
                    && posting.rid == rid
                {
                    total += score(posting, cursor.idf);
                    own |= posting.tf[0] > 0;
                    cursor.at += 1;
                }
            }
            // The other terms, best bound first, while they can still lift it to the cut:
            // first by the bounds of the blocks that would hold it, then by looking.
            let mut pruned = false;
            if essential > 0 && threshold > f32::NEG_INFINITY {
                let mut rest = 0.0f32;
                for (i, cursor) in cursors[..essential].iter().enumerate() {
                    block_bounds[i] = cursor.bound_at(rid);
                    rest += block_bounds[i];
                }
                if (total as f32) + rest < threshold {
                    pruned = true;
                }
            }
            if !pruned {
                for i in (0..essential).rev() {
                    if (total as f32) + prefix[i] < threshold {
                        pruned = true;
                        break;
                    }
                    if let Some(posting) = cursors[i].seek(rid)? {
                        total += score(&posting, cursors[i].idf);
                        own |= posting.tf[0] > 0;
                    }
                }
            }
            let total = total as f32;
            if pruned || total < threshold {
                continue;
            }
            held.offer(total, rid, own);
            let raised = held.threshold();
            if raised > threshold {
                threshold = raised;
                while essential < cursors.len() && prefix[essential] < threshold {
                    essential += 1;
                }
            }
        }
        Ok(())
    }

    /// The terms one namespace is searched with: all of them, or its
    /// [`rarest`](QueryTerms::rarest), chosen as `memory_core::search::rarest_terms` chooses
    /// for every backend, from the block counts alone (no block is read).
    ///
    /// A frequent term has many blocks, and summing them all for every term of a long text
    /// is most of the cost. So each term's first [`SEEN_BLOCKS`] blocks are summed first: a
    /// term with fewer is counted exactly, and a term with more holds at least that sum.
    /// When `n` exactly counted terms are rarer than that bound, the term cannot be among
    /// the `n` rarest; only the others are counted in full. The choice is the same as with
    /// every count in full.
    fn searched_terms<'t>(
        &self,
        connection: &Connection,
        nid: i64,
        terms: &'t QueryTerms,
    ) -> Result<Vec<&'t str>> {
        let Some(n) = terms.rarest else {
            return Ok(terms.terms.iter().map(String::as_str).collect());
        };
        let count = terms.terms.len();
        let mut dfs = vec![0u64; count];
        let mut capped = vec![false; count];
        let all: Vec<usize> = (0..count).collect();
        self.term_dfs(
            connection,
            nid,
            terms,
            &all,
            Some(SEEN_BLOCKS),
            |at, df, blocks| {
                dfs[at] = df;
                capped[at] = blocks >= SEEN_BLOCKS;
            },
        )?;
        if capped.iter().any(|capped| *capped) {
            // The n-th rarest of the exactly counted terms, by (count, position).
            let mut exact: Vec<(u64, usize)> = (0..count)
                .filter(|&at| !capped[at] && dfs[at] > 0)
                .map(|at| (dfs[at], at))
                .collect();
            let bar = if n > 0 && exact.len() >= n {
                exact.select_nth_unstable(n - 1);
                Some(exact[n - 1])
            } else {
                None
            };
            let mut unsure = Vec::new();
            for at in (0..count).filter(|&at| capped[at]) {
                if bar.is_some_and(|bar| (dfs[at], at) > bar) {
                    // At least n terms are rarer than its lower bound.
                    dfs[at] = u64::MAX;
                } else {
                    unsure.push(at);
                }
            }
            if !unsure.is_empty() {
                self.term_dfs(connection, nid, terms, &unsure, None, |at, df, _| {
                    dfs[at] = df;
                })?;
            }
        }
        let kept = memory_core::search::rarest_terms(&terms.terms, n, |at, _| dfs[at]);
        Ok(kept
            .into_iter()
            .map(|at| terms.terms[at].as_str())
            .collect())
    }

    /// Calls `found(at, count, blocks)` for each term `terms.terms[at]`, `at` in `which`,
    /// with how many records of namespace `nid` hold it and over how many blocks, in one
    /// statement; with `seen`, from at most that many of its first blocks.
    fn term_dfs(
        &self,
        connection: &Connection,
        nid: i64,
        terms: &QueryTerms,
        which: &[usize],
        seen: Option<i64>,
        mut found: impl FnMut(usize, u64, i64),
    ) -> Result<()> {
        let what = || format!("searching the {} index", self.prefix);
        let list = serde_json::to_string(
            &which
                .iter()
                .filter_map(|&at| terms.terms.get(at))
                .collect::<Vec<_>>(),
        )
        .map_err(|error| memory_core::MemoryError::serialization("encoding query terms", error))?;
        let mut statement = connection
            .prepare_cached(&self.sql.term_dfs)
            .context(what)?;
        let mut rows = statement
            .query((nid, list, seen.unwrap_or(-1)))
            .context(what)?;
        while let Some(row) = rows.next().context(what)? {
            let index: i64 = row.get(0).context(what)?;
            let df: i64 = row.get(1).context(what)?;
            let blocks: i64 = row.get(2).context(what)?;
            if let Some(&at) = usize::try_from(index).ok().and_then(|i| which.get(i)) {
                found(at, u64::try_from(df).unwrap_or(0), blocks);
            }
        }
        Ok(())
    }

    /// The blocks of `term` in namespace `nid`, in order.
    fn term_blocks(&self, connection: &Connection, nid: i64, term: &str) -> Result<Vec<Block<N>>> {
        let what = || format!("searching the {} index", self.prefix);
        let mut statement = connection
            .prepare_cached(&self.sql.term_blocks)
            .context(what)?;
        let mut rows = statement.query((nid, term)).context(what)?;
        let mut blocks = Vec::new();
        while let Some(row) = rows.next().context(what)? {
            let mut block = Block {
                first: row.get(0).context(what)?,
                count: u64::try_from(row.get::<_, i64>(1).context(what)?).unwrap_or(0),
                max_tf: [0; N],
                min_len: [0; N],
                data: Vec::new(),
            };
            for field in 0..N {
                block.max_tf[field] =
                    u16::try_from(row.get::<_, i64>(2 + field).context(what)?).unwrap_or(u16::MAX);
                block.min_len[field] =
                    u32::try_from(row.get::<_, i64>(2 + N + field).context(what)?).unwrap_or(0);
            }
            block.data = row.get(2 + 2 * N).context(what)?;
            blocks.push(block);
        }
        Ok(blocks)
    }

    /// The namespaces in `scope` that hold records, with their statistics.
    fn namespaces(&self, connection: &Connection, scope: &Scope) -> Result<Vec<Namespace<N>>> {
        let mut sql = Sql::new(&self.sql.stats_in);
        sql.and_scope("s.ns", scope);
        connection
            .prepare_cached(&sql.text)
            .and_then(|mut statement| {
                statement
                    .query_map(params_from_iter(sql.params.iter()), |row| {
                        let mut total_len = [0u64; N];
                        for (field, total) in total_len.iter_mut().enumerate() {
                            *total = u64::try_from(row.get::<_, i64>(2 + field)?).unwrap_or(0);
                        }
                        Ok(Namespace {
                            nid: row.get(0)?,
                            docs: row.get::<_, i64>(1)? as f32,
                            total_len,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .context(|| format!("reading the {} index statistics", self.prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::Held;

    /// Records tied at the cut are all held, and pruning again at once for every record
    /// after them read all of them each time: 20,000 equal texts took 20,000 prunes of
    /// 20,000 candidates. The prunes now come as the held set doubles.
    #[test]
    fn records_tied_at_the_cut_are_pruned_as_their_number_doubles() {
        let mut held = Held::new(3);
        for rid in 0..20_000 {
            held.offer(1.5, rid, rid % 2 == 0);
        }
        assert!(held.prunes <= 12, "{} prunes", held.prunes);
        let top = held.finish();
        assert_eq!(top.candidates.len(), 20_000, "every tie is held");
        assert_eq!(top.own_words.len(), 10_000);
    }

    /// Between ties, better records still push the cut up and the rest out.
    #[test]
    fn better_records_still_prune_the_rest() {
        let mut held = Held::new(2);
        for rid in 0..1_000 {
            held.offer(1.0, rid, true);
        }
        for rid in 1_000..1_200 {
            held.offer(2.0 + rid as f32, rid, false);
        }
        let top = held.finish();
        let mut rids: Vec<i64> = top.candidates.iter().map(|(_, rid)| *rid).collect();
        rids.sort_unstable();
        assert_eq!(rids, [1_198, 1_199]);
        assert!(top.own_words.is_empty());
    }
}
