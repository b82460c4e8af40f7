//! Recall feedback: recall events written to the store in batches, off the query path.

use std::sync::{Arc, Mutex, PoisonError};

use memory_core::{MemoryStore, RecallEvent, Result};
use tokio::task::JoinHandle;

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
/// task per batch of 64, 20 µs with no write at all). [`flush`](Self::flush) writes what is
/// pending and waits for writes in flight.
#[derive(Debug)]
pub struct RecallRecorder {
    store: Arc<dyn MemoryStore>,
    pending: Mutex<Vec<RecallEvent>>,
    in_flight: Mutex<Vec<JoinHandle<Result<()>>>>,
    batch_size: usize,
}

impl RecallRecorder {
    /// A recorder writing to `store` every `batch_size` events (at least 1).
    pub fn new(store: Arc<dyn MemoryStore>, batch_size: usize) -> Self {
        Self {
            store,
            pending: Mutex::new(Vec::new()),
            in_flight: Mutex::new(Vec::new()),
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
                    pending.reserve(self.batch_size);
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
        if self.store.records_recalls_inline() {
            return self.store.record_recalls(&batch).await;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let store = Arc::clone(&self.store);
                let task = handle.spawn(async move { store.record_recalls(&batch).await });
                let mut in_flight = self
                    .in_flight
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                in_flight.retain(|task| !task.is_finished());
                in_flight.push(task);
                Ok(())
            }
            Err(_) => self.store.record_recalls(&batch).await,
        }
    }

    /// Writes every pending event and waits for background writes.
    ///
    /// # Errors
    /// The first store error of the pending or background writes.
    pub async fn flush(&self) -> Result<()> {
        let batch =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let tasks = std::mem::take(
            &mut *self
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut first_error = None;
        if !batch.is_empty()
            && let Err(error) = self.store.record_recalls(&batch).await
        {
            first_error = Some(error);
        }
        for task in tasks {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    first_error.get_or_insert(error);
                }
                Err(join) => {
                    first_error.get_or_insert(memory_core::MemoryError::storage(
                        "recall feedback task",
                        join,
                    ));
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Events waiting for a batch to fill.
    pub fn pending(&self) -> usize {
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
