//! Recall feedback: recall events written to the store in batches, off the query path.

use std::sync::{Arc, Mutex, PoisonError};

use memory_core::{MemoryStore, RecallEvent, Result};

use crate::background::{BackgroundWrites, RETRIES, retried};

/// Most events reserved for at once when a batch starts.
const RESERVED_EVENTS: usize = 1024;

/// Batches recall events and writes them with [`MemoryStore::record_recalls`].
///
/// A recall only appends to a buffer; when a recall's events would bring it to
/// `batch_size`, the buffer is written by a task spawned on the caller's tokio runtime (or
/// inline when there is none), so the query never waits for the write, and that recall's
/// events start the next batch (written at once when nothing was pending, as with a
/// `batch_size` of 1). A store whose batch write is cheap
/// ([`MemoryStore::records_recalls_inline`], the in-memory store) is written in line: the
/// task's wake-up, and the events freed on another thread than the one that made them, cost
/// the recall more than the write (in-memory recall on 10,000 memories: about 32 µs with a
/// task per batch of 64, 20 µs with no write at all). A background write that fails for a
/// reason that may pass (the backend unreachable, a timeout, a conflicting transaction) is
/// tried again, three times at most, 50, 200 and 800 ms after the try before failed.
/// [`flush`](Self::flush) writes what is pending and waits for writes in flight; it returns
/// the failure of a background write that was given up, even of one that finished long
/// before.
#[derive(Debug)]
pub struct RecallRecorder {
    store: Arc<dyn MemoryStore>,
    pending: Mutex<Vec<RecallEvent>>,
    in_flight: BackgroundWrites,
    batch_size: usize,
}

impl RecallRecorder {
    /// A recorder writing to `store` every `batch_size` events (at least 1).
    pub fn new(store: Arc<dyn MemoryStore>, batch_size: usize) -> Self {
        Self {
            store,
            pending: Mutex::new(Vec::new()),
            in_flight: BackgroundWrites::new("recall feedback task"),
            batch_size: batch_size.max(1),
        }
    }

    /// Queues events; starts a background write when a batch is full.
    ///
    /// # Errors
    /// Store errors, only when there is no runtime and the write happens inline.
    pub async fn record(&self, events: Vec<RecallEvent>) -> Result<()> {
        let batch = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if pending.len() + events.len() < self.batch_size {
                if pending.capacity() == 0 {
                    // A large batch grows as its events come.
                    pending.reserve(self.batch_size.min(RESERVED_EVENTS));
                }
                pending.extend(events);
                return Ok(());
            }
            if pending.is_empty() {
                events
            } else {
                // The batch is what earlier recalls left; this recall's events wait for the
                // next one. Its caller still holds the results, so writing them now would
                // make a store that shares items with its results (the in-memory one) copy
                // each of them before counting the recall.
                let mut next = Vec::with_capacity(self.batch_size.max(events.len()));
                next.extend(events);
                std::mem::replace(&mut *pending, next)
            }
        };
        self.write(batch).await
    }

    /// Writes `batch`: inline on a store that records recalls inline, else as a background
    /// task on a tokio runtime (tried again while it fails for a reason that may pass, and
    /// not lost when the caller stops waiting), else once, here.
    async fn write(&self, batch: Vec<RecallEvent>) -> Result<()> {
        if self.store.records_recalls_inline() {
            return self.store.record_recalls(&batch).await;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let store = Arc::clone(&self.store);
                self.in_flight.spawn(&handle, async move {
                    retried(RETRIES, || store.record_recalls(&batch)).await
                });
                Ok(())
            }
            Err(_) => self.store.record_recalls(&batch).await,
        }
    }

    /// Writes every pending event and waits for background writes. On a tokio runtime the
    /// pending batch is written as a background one, tried again as it is when it fails for
    /// a reason that may pass: the batch is out of the buffer, a flush is often the last
    /// chance to write it (before a stop), and a flush whose caller stops waiting (a
    /// request's deadline) must not lose it.
    ///
    /// # Errors
    /// The first store error of the pending write or of a background write given up since
    /// the last flush (a batch given up is not written again).
    pub async fn flush(&self) -> Result<()> {
        let batch =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let written = if batch.is_empty() {
            Ok(())
        } else {
            self.write(batch).await
        };
        let waited = self.in_flight.wait().await;
        written.and(waited)
    }

    /// Events waiting for a batch to fill.
    pub fn pending(&self) -> usize {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
