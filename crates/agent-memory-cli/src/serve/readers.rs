//! The connections that serve recall and context beside the one that writes (SQLite only,
//! whose connection runs one call at a time; PostgreSQL has a pool of its own).
//!
//! Each reader is the same store opened again, with its own connection: WAL readers see
//! every committed write, so a recall after an acknowledged remember finds it whichever
//! reader answers. A recall takes the reader with the fewest recalls in flight (ties in
//! turn), not the next one round: a reader busy with a long search, or writing its batch of
//! recall statistics, is passed over while another is free, which keeps the slow calls of
//! one connection out of the latency of the recalls that would have queued behind them.

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_memory::Memory;

use crate::failure::Failure;

/// The readers, and where the next search for the least busy one starts.
#[derive(Debug, Default)]
pub(crate) struct Readers {
    readers: Vec<Reader>,
    next: AtomicUsize,
}

#[derive(Debug)]
struct Reader {
    memory: Arc<Memory>,
    /// Recalls in flight on it.
    busy: AtomicUsize,
}

/// A reader taken for one request; it counts as busy until dropped.
#[derive(Debug)]
pub(crate) struct Lease<'a> {
    memory: &'a Memory,
    busy: Option<&'a AtomicUsize>,
}

impl Readers {
    /// Readers over `memories` (none: every request reads through the writing memory).
    pub(crate) fn new(memories: Vec<Arc<Memory>>) -> Self {
        Self {
            readers: memories
                .into_iter()
                .map(|memory| Reader {
                    memory,
                    busy: AtomicUsize::new(0),
                })
                .collect(),
            next: AtomicUsize::new(0),
        }
    }

    /// The reader with the fewest recalls in flight, or `writer` when there are no readers.
    pub(crate) fn lease<'a>(&'a self, writer: &'a Memory) -> Lease<'a> {
        let count = self.readers.len();
        if count == 0 {
            return Lease {
                memory: writer,
                busy: None,
            };
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut best = &self.readers[start % count];
        for offset in 1..count {
            let reader = &self.readers[start.wrapping_add(offset) % count];
            if reader.busy.load(Ordering::Relaxed) < best.busy.load(Ordering::Relaxed) {
                best = reader;
            }
        }
        best.busy.fetch_add(1, Ordering::Relaxed);
        Lease {
            memory: &best.memory,
            busy: Some(&best.busy),
        }
    }

    /// Writes the recall statistics every reader holds.
    pub(crate) async fn flush(&self) -> Result<(), Failure> {
        for reader in &self.readers {
            reader.memory.flush().await?;
        }
        Ok(())
    }

    /// How many readers there are.
    pub(crate) fn len(&self) -> usize {
        self.readers.len()
    }
}

impl Deref for Lease<'_> {
    type Target = Memory;

    fn deref(&self) -> &Memory {
        self.memory
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(busy) = self.busy {
            busy.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Arc<Memory> {
        Arc::new(Memory::builder().build().expect("an in-memory memory"))
    }

    #[test]
    fn a_recall_takes_the_least_busy_reader() {
        let writer = memory();
        let none = Readers::default();
        assert!(std::ptr::eq(&*none.lease(&writer), &*writer));
        let (a, b) = (memory(), memory());
        let readers = Readers::new(vec![Arc::clone(&a), Arc::clone(&b)]);
        let first = readers.lease(&writer);
        // The other reader is free: the next recall goes there, and the one after it too
        // while the first is held.
        let second = readers.lease(&writer);
        assert!(!std::ptr::eq(&*first, &*second));
        let third = readers.lease(&writer);
        let fourth = readers.lease(&writer);
        assert!(
            !std::ptr::eq(&*third, &*fourth),
            "one each while both are busy"
        );
        drop((first, third));
        drop(second);
        // Released, both are free again and taken in turn.
        let fifth = readers.lease(&writer);
        let sixth = readers.lease(&writer);
        assert!(!std::ptr::eq(&*fifth, &*sixth));
        assert!([&a, &b].iter().any(|m| std::ptr::eq(m.as_ref(), &*fifth)));
        drop((fourth, fifth, sixth));
        assert!(
            readers
                .readers
                .iter()
                .all(|reader| reader.busy.load(Ordering::Relaxed) == 0)
        );
    }
}
