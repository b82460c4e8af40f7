//! Postings stored in blocks: a term's postings in one namespace, in row-id order, cut into
//! rows of at most [`FullText::block_size`] postings. Each row carries what bounds the score
//! of any of its postings (the largest term frequency and the shortest length of each field),
//! so a search computes a block's best possible score from one row's columns and decodes the
//! block only when that bound can still make the cut.
//!
//! A block's key is `(nid, term, first)`, where `first` is at most the row id of its first
//! posting (it stays when that posting goes) and above every row id of the block before it:
//! the block that holds or would hold a row id is the last one whose `first` is not above it.
//!
//! The encoding of a block's postings (`data`): per posting, the row id's distance from the
//! previous one (from `first` for the first posting), then its term frequency in each field,
//! then each field's length, all as LEB128 varints.

use memory_core::Result;
use rusqlite::{Connection, OptionalExtension};

use super::FullText;
use crate::error::{Context, corrupt};

/// One record's posting of a term: its row id, the term's frequency in each field, and the
/// record's field lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posting<const N: usize> {
    pub(crate) rid: i64,
    pub(crate) tf: [u16; N],
    pub(crate) len: [u32; N],
}

fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a varint at `*at`, moving past it; `None` when the bytes end first.
#[inline]
fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *bytes.get(*at)?;
        *at += 1;
        if shift < 64 {
            value |= u64::from(byte & 0x7F) << shift;
        }
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// The stored form of `postings` (sorted by row id, none below `first`).
pub(crate) fn encode<const N: usize>(first: i64, postings: &[Posting<N>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(postings.len() * (2 + 2 * N));
    let mut previous = first;
    for posting in postings {
        push_varint(&mut out, posting.rid.abs_diff(previous));
        previous = posting.rid;
        for tf in posting.tf {
            push_varint(&mut out, u64::from(tf));
        }
        for len in posting.len {
            push_varint(&mut out, u64::from(len));
        }
    }
    out
}

/// Appends the postings of a block stored as `data` under key `first` to `out`.
///
/// # Errors
/// [`MemoryError::Serialization`](memory_core::MemoryError::Serialization) when the bytes are
/// cut short.
pub(crate) fn decode<const N: usize>(
    first: i64,
    data: &[u8],
    out: &mut Vec<Posting<N>>,
) -> Result<()> {
    let cut = || corrupt("a block of postings", "it is cut short");
    let mut at = 0;
    let mut rid = first;
    while at < data.len() {
        let delta = read_varint(data, &mut at).ok_or_else(cut)?;
        rid = rid.wrapping_add(delta as i64);
        let mut posting = Posting {
            rid,
            tf: [0; N],
            len: [0; N],
        };
        for tf in &mut posting.tf {
            *tf = u16::try_from(read_varint(data, &mut at).ok_or_else(cut)?).unwrap_or(u16::MAX);
        }
        for len in &mut posting.len {
            *len = u32::try_from(read_varint(data, &mut at).ok_or_else(cut)?).unwrap_or(u32::MAX);
        }
        out.push(posting);
    }
    Ok(())
}

/// What bounds the score of any of `postings`: per field the largest term frequency, and the
/// shortest length among the postings holding the term in that field (`u32::MAX` when none
/// does).
pub(crate) fn bounds<const N: usize>(postings: &[Posting<N>]) -> ([u16; N], [u32; N]) {
    let mut max_tf = [0u16; N];
    let mut min_len = [u32::MAX; N];
    for posting in postings {
        for field in 0..N {
            if posting.tf[field] > 0 {
                max_tf[field] = max_tf[field].max(posting.tf[field]);
                min_len[field] = min_len[field].min(posting.len[field]);
            }
        }
    }
    (max_tf, min_len)
}

/// A stored block, read for a change.
struct Stored<const N: usize> {
    first: i64,
    postings: Vec<Posting<N>>,
}

impl<const N: usize> FullText<N> {
    /// The block of `(nid, term)` that holds or would hold `rid`: the last whose key is not
    /// above it, else the first (whose key must then come down to `rid`). With
    /// `none_after`, the caller knows that no block is keyed above `rid`, and the second
    /// search is not made.
    fn find_block(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        rid: i64,
        none_after: bool,
    ) -> Result<Option<Stored<N>>> {
        let what = || format!("reading the {} postings of {term:?}", self.prefix);
        let read = |sql: &str| -> Result<Option<(i64, Vec<u8>)>> {
            connection
                .prepare_cached(sql)
                .and_then(|mut statement| {
                    statement
                        .query_row((nid, term, rid), |row| Ok((row.get(0)?, row.get(1)?)))
                        .optional()
                })
                .context(what)
        };
        let found = match read(&self.sql.block_at)? {
            Some(found) => Some(found),
            None if none_after => None,
            None => read(&self.sql.block_after)?,
        };
        let Some((first, data)) = found else {
            return Ok(None);
        };
        let mut postings = Vec::new();
        decode(first, &data, &mut postings)?;
        Ok(Some(Stored { first, postings }))
    }

    /// The key of the block after the one keyed `first`, if any.
    fn next_block(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        first: i64,
    ) -> Result<Option<i64>> {
        connection
            .prepare_cached(&self.sql.block_next)
            .and_then(|mut statement| {
                statement
                    .query_row((nid, term, first), |row| row.get(0))
                    .optional()
            })
            .context(|| format!("reading the {} postings of {term:?}", self.prefix))
    }

    /// Writes `postings` (sorted, not empty) as the block keyed `first`, replacing it.
    fn write_block(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        first: i64,
        postings: &[Posting<N>],
    ) -> Result<()> {
        let what = || format!("writing the {} postings of {term:?}", self.prefix);
        let (max_tf, min_len) = bounds(postings);
        let mut statement = connection
            .prepare_cached(&self.sql.put_block)
            .context(what)?;
        statement.raw_bind_parameter(1, nid).context(what)?;
        statement.raw_bind_parameter(2, term).context(what)?;
        statement.raw_bind_parameter(3, first).context(what)?;
        statement
            .raw_bind_parameter(4, postings.len() as i64)
            .context(what)?;
        for field in 0..N {
            statement
                .raw_bind_parameter(5 + field, max_tf[field])
                .context(what)?;
            statement
                .raw_bind_parameter(5 + N + field, i64::from(min_len[field]))
                .context(what)?;
        }
        statement
            .raw_bind_parameter(5 + 2 * N, encode(first, postings))
            .context(what)?;
        statement.raw_execute().context(what)?;
        Ok(())
    }

    fn delete_block(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        first: i64,
    ) -> Result<()> {
        connection
            .prepare_cached(&self.sql.drop_block)
            .and_then(|mut statement| statement.execute((nid, term, first)))
            .context(|| format!("removing the {} postings of {term:?}", self.prefix))?;
        Ok(())
    }

    /// Writes `postings` (sorted) as blocks of at most `block_size`, the first keyed `first`
    /// (at most its first row id), the others by their first row id.
    fn write_blocks(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        first: i64,
        postings: &[Posting<N>],
    ) -> Result<()> {
        for (at, chunk) in postings.chunks(self.block_size).enumerate() {
            let key = if at == 0 { first } else { chunk[0].rid };
            self.write_block(connection, nid, term, key, chunk)?;
        }
        Ok(())
    }

    /// Adds `new` (sorted by row id, none already in the index) to the postings of `term` in
    /// namespace `nid`: each run of them that falls in one block is merged into it with one
    /// read and one write, so a batch of records appending to a term rewrites its last block
    /// once.
    ///
    /// `stored_below`: a row id at least as large as that of every posting the index holds.
    /// Postings above it are new at the end of every list, so no block
    /// can be keyed above them: neither the block after nor the next block's key is
    /// searched for.
    pub(crate) fn add_postings(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        mut new: &[Posting<N>],
        stored_below: i64,
    ) -> Result<()> {
        while let Some(head) = new.first() {
            let at_end = head.rid > stored_below;
            let stored = self.find_block(connection, nid, term, head.rid, at_end)?;
            // No block at all: every new posting starts the term's list.
            let none_stored = stored.is_none();
            let (first, mut postings) = match stored {
                Some(stored) => (stored.first, stored.postings),
                None => (head.rid, Vec::new()),
            };
            // The new postings that fall in this block: below the next block's key.
            let take = if new.len() == 1 {
                1
            } else if none_stored || at_end {
                new.len()
            } else {
                match self.next_block(connection, nid, term, first)? {
                    Some(next) => new.partition_point(|posting| posting.rid < next).max(1),
                    None => new.len(),
                }
            };
            let (run, rest) = new.split_at(take);
            new = rest;
            let key = first.min(run[0].rid);
            if key != first && !postings.is_empty() {
                self.delete_block(connection, nid, term, first)?;
            }
            if postings.last().is_none_or(|last| last.rid < run[0].rid) {
                postings.extend_from_slice(run);
            } else {
                postings.extend_from_slice(run);
                postings.sort_unstable_by_key(|posting| posting.rid);
            }
            self.write_blocks(connection, nid, term, key, &postings)?;
        }
        Ok(())
    }

    /// Removes the posting of `rid` from `term` in namespace `nid` (nothing when it is not
    /// there); a block left empty goes.
    pub(crate) fn remove_posting(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        rid: i64,
    ) -> Result<()> {
        let Some(mut stored) = self.find_block(connection, nid, term, rid, false)? else {
            return Ok(());
        };
        let Ok(at) = stored
            .postings
            .binary_search_by_key(&rid, |posting| posting.rid)
        else {
            return Ok(());
        };
        stored.postings.remove(at);
        if stored.postings.is_empty() {
            self.delete_block(connection, nid, term, stored.first)
        } else {
            self.write_block(connection, nid, term, stored.first, &stored.postings)
        }
    }

    /// The posting of `rid` in `term` of namespace `nid`, if stored (for the check).
    pub(crate) fn read_posting(
        &self,
        connection: &Connection,
        nid: i64,
        term: &str,
        rid: i64,
    ) -> Result<Option<Posting<N>>> {
        Ok(self
            .find_block(connection, nid, term, rid, false)?
            .and_then(|stored| {
                stored
                    .postings
                    .binary_search_by_key(&rid, |posting| posting.rid)
                    .ok()
                    .map(|at| stored.postings[at])
            }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posting(rid: i64, tf: u16, len: u32) -> Posting<2> {
        Posting {
            rid,
            tf: [tf, 0],
            len: [len, 300],
        }
    }

    #[test]
    fn blocks_round_trip_and_bound_their_postings() {
        let postings = [
            posting(5, 1, 10),
            posting(6, 3, 40),
            posting(900, u16::MAX, 2),
        ];
        let data = encode(4, &postings);
        let mut decoded = Vec::new();
        decode(4, &data, &mut decoded).unwrap();
        assert_eq!(decoded, postings);
        assert!(decode::<2>(4, &data[..data.len() - 1], &mut Vec::new()).is_err());
        let (max_tf, min_len) = bounds(&postings);
        assert_eq!(max_tf, [u16::MAX, 0]);
        // The second field holds the term nowhere: no length bounds it.
        assert_eq!(min_len, [2, u32::MAX]);
    }
}
