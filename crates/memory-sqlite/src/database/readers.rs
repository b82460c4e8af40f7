//! The pool of read connections of a file database ([`Database::query`](super::Database)).

use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use memory_core::Result;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use super::{PAGE_CACHE_KIB, STATEMENT_CACHE};
use crate::error::Context;

/// A pool of read connections to the file, opened as reads overlap, up to `max`.
pub(super) struct Readers {
    path: PathBuf,
    busy_timeout: Duration,
    max: usize,
    state: Mutex<ReaderState>,
    /// Signalled when a reader is handed back.
    returned: Condvar,
}

#[derive(Default)]
pub(super) struct ReaderState {
    pub(super) idle: Vec<Connection>,
    /// Connections open, idle or in use.
    pub(super) open: usize,
}

impl Readers {
    /// A pool of up to `max` readers of the file at `path`, none open yet.
    pub(super) fn new(path: PathBuf, busy_timeout: Duration, max: usize) -> Self {
        Self {
            path,
            busy_timeout,
            max,
            state: Mutex::new(ReaderState::default()),
            returned: Condvar::new(),
        }
    }

    pub(super) fn state(&self) -> MutexGuard<'_, ReaderState> {
        // The state is a list and a count, each updated in one step: a panic elsewhere
        // while the lock was held cannot leave it half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An idle reader, a new one while fewer than `max` are open, or else the first one
    /// handed back.
    pub(super) fn lease(&self) -> Result<Lease<'_>> {
        let mut state = self.state();
        loop {
            if let Some(connection) = state.idle.pop() {
                return Ok(Lease {
                    readers: self,
                    connection: Some(connection),
                });
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match self.open_reader() {
                    Ok(connection) => Ok(Lease {
                        readers: self,
                        connection: Some(connection),
                    }),
                    Err(error) => {
                        self.state().open -= 1;
                        self.returned.notify_one();
                        Err(error)
                    }
                };
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A connection to the file that refuses to write (`query_only`), with the writer's
    /// settings for reads: busy timeout, page cache, stable plans, statement cache.
    fn open_reader(&self) -> Result<Connection> {
        let display = self.path.display();
        let what = || format!("opening a read connection to {display}");
        // The writer created the file: a reader never creates one where it has gone.
        let flags = OpenFlags::default().difference(OpenFlags::SQLITE_OPEN_CREATE);
        let connection = Connection::open_with_flags(&self.path, flags).context(what)?;
        connection.busy_timeout(self.busy_timeout).context(what)?;
        connection
            .pragma_update(None, "query_only", "ON")
            .context(what)?;
        connection
            .pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
            .context(what)?;
        connection
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .context(what)?;
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(connection)
    }
}

/// A read connection taken from the pool, handed back when dropped.
pub(super) struct Lease<'a> {
    readers: &'a Readers,
    pub(super) connection: Option<Connection>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            // A read transaction left open by a failed read is ended before reuse: a reader
            // holding a snapshot would keep checkpoints from finishing.
            if !connection.is_autocommit() {
                let _ = connection.execute_batch("ROLLBACK");
            }
            self.readers.state().idle.push(connection);
            self.readers.returned.notify_one();
        }
    }
}
