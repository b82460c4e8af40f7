//! Group commit: writes that wait for the writing connection at the same time share one
//! transaction and one commit ([`Database::write`](super::Database::write)).
//!
//! Each write is queued with the channel its caller waits on, then asks for the connection
//! on the blocking pool. Whoever gets the connection takes every queued write (its own
//! among them: it was queued before it asked) and runs them in one `BEGIN IMMEDIATE`
//! transaction, each inside a savepoint, then commits once. Results reach their callers only
//! after the commit: a write is acknowledged once it is durable, never before. The others
//! find the queue empty, or holding writes queued later, which they commit in turn.

use std::sync::{Mutex, PoisonError};

use memory_core::Result;
use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::oneshot;

use crate::error::sql_error;

/// The savepoint each write of a group runs in: opened, released, or rolled back to.
const SAVEPOINT: &str = "SAVEPOINT agent_memory_write";
const RELEASE: &str = "RELEASE agent_memory_write";
const ROLLBACK: &str = "ROLLBACK TO agent_memory_write";

/// Writes waiting for the connection.
#[derive(Default)]
pub(super) struct Queue {
    waiting: Mutex<Vec<Box<dyn Queued>>>,
}

/// A queued write: its operation, and where its result goes.
trait Queued: Send {
    /// Runs the operation in `transaction`. On success, returns how to deliver the result
    /// once the commit is known; on failure, delivers the error at once and returns `None`
    /// (the caller rolls the write back).
    fn run(self: Box<Self>, transaction: &Transaction<'_>) -> Option<Box<dyn Ran>>;

    /// The transaction could not begin: delivers that error.
    fn abandon(self: Box<Self>, error: &rusqlite::Error);
}

/// A write that ran, waiting for its group's commit.
trait Ran: Send {
    /// Delivers the result (after a commit) or the commit's error.
    fn finish(self: Box<Self>, commit: std::result::Result<(), &rusqlite::Error>);
}

struct Write<T, F> {
    what: &'static str,
    operation: F,
    done: oneshot::Sender<Result<T>>,
}

struct Written<T> {
    what: &'static str,
    value: T,
    done: oneshot::Sender<Result<T>>,
}

impl<T, F> Queued for Write<T, F>
where
    F: FnOnce(&Transaction<'_>) -> Result<T> + Send,
    T: Send + 'static,
{
    fn run(self: Box<Self>, transaction: &Transaction<'_>) -> Option<Box<dyn Ran>> {
        let Write {
            what,
            operation,
            done,
        } = *self;
        // Nobody waits for it any more (the caller's future was dropped, or its call to the
        // blocking pool failed and it was told so): it is not run, so no write that its
        // caller saw fail or never saw finish is committed later.
        if done.is_closed() {
            return None;
        }
        match operation(transaction) {
            Ok(value) => Some(Box::new(Written { what, value, done })),
            Err(error) => {
                // The caller may have given up waiting; its write is rolled back either way.
                let _ = done.send(Err(error));
                None
            }
        }
    }

    fn abandon(self: Box<Self>, error: &rusqlite::Error) {
        let what = self.what;
        let _ = self.done.send(Err(sql_error(
            format!("{what}: beginning a transaction"),
            copy_of(error),
        )));
    }
}

impl<T: Send> Ran for Written<T> {
    fn finish(self: Box<Self>, commit: std::result::Result<(), &rusqlite::Error>) {
        let Written { what, value, done } = *self;
        let _ = done.send(match commit {
            Ok(()) => Ok(value),
            Err(error) => Err(sql_error(format!("{what}: committing"), copy_of(error))),
        });
    }
}

/// The same error again, for each write of a group that it failed: a SQLite failure keeps
/// its code (so a busy database is a conflict for every one of them), anything else its
/// message.
fn copy_of(error: &rusqlite::Error) -> rusqlite::Error {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

impl Queue {
    /// Queues `operation`; the receiver gets its result once its group has committed.
    pub(super) fn push<T, F>(
        &self,
        what: &'static str,
        operation: F,
    ) -> oneshot::Receiver<Result<T>>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let (done, receiver) = oneshot::channel();
        self.lock().push(Box::new(Write {
            what,
            operation,
            done,
        }));
        receiver
    }

    /// A panic while the lock was held cannot leave the list half-changed (a push or a
    /// take), so a poisoned lock is safe to take over.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Box<dyn Queued>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits every write queued now, as one group, on `connection` (the writing
    /// connection, held by the caller).
    pub(super) fn commit_waiting(&self, connection: &mut Connection) {
        let writes = std::mem::take(&mut *self.lock());
        if writes.is_empty() {
            return;
        }
        #[cfg(test)]
        tests::GROUPS.with(|groups| groups.borrow_mut().push(writes.len()));
        let transaction = match connection.transaction_with_behavior(TransactionBehavior::Immediate)
        {
            Ok(transaction) => transaction,
            Err(error) => {
                for write in writes {
                    write.abandon(&error);
                }
                return;
            }
        };
        let alone = writes.len() == 1;
        let mut ran: Vec<Box<dyn Ran>> = Vec::with_capacity(writes.len());
        let mut writes = writes.into_iter();
        while let Some(write) = writes.next() {
            if alone {
                match write.run(&transaction) {
                    Some(done) => ran.push(done),
                    // Dropping the transaction rolls it back.
                    None => return,
                }
                continue;
            }
            let outcome = savepoint(&transaction, SAVEPOINT)
                .map(|()| write.run(&transaction))
                .and_then(|done| match done {
                    Some(done) => savepoint(&transaction, RELEASE).map(|()| Some(done)),
                    None => savepoint(&transaction, ROLLBACK)
                        .and_then(|()| savepoint(&transaction, RELEASE))
                        .map(|()| None),
                });
            match outcome {
                Ok(Some(done)) => ran.push(done),
                Ok(None) => {}
                // The transaction is in an unknown state: none of the group is committed
                // (dropping it rolls back), and every write not yet delivered gets the error.
                Err(error) => {
                    for done in ran {
                        done.finish(Err(&error));
                    }
                    for write in writes {
                        write.abandon(&error);
                    }
                    return;
                }
            }
        }
        match transaction.commit() {
            Ok(()) => {
                for done in ran {
                    done.finish(Ok(()));
                }
            }
            Err(error) => {
                for done in ran {
                    done.finish(Err(&error));
                }
            }
        }
    }
}

/// Runs one of the savepoint statements.
fn savepoint(transaction: &Transaction<'_>, statement: &str) -> rusqlite::Result<()> {
    transaction.execute_batch(statement)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use memory_core::MemoryError;
    use tokio::sync::oneshot::error::TryRecvError;

    use super::*;

    thread_local! {
        /// The sizes of the groups committed on this thread, for the tests.
        pub(super) static GROUPS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    fn table(connection: &Connection) {
        connection
            .execute_batch("CREATE TABLE t (x INTEGER NOT NULL)")
            .unwrap_or_else(|error| panic!("{error}"));
    }

    fn rows(connection: &Connection) -> Vec<i64> {
        let mut statement = connection
            .prepare("SELECT x FROM t ORDER BY x")
            .unwrap_or_else(|error| panic!("{error}"));
        statement
            .query_map([], |row| row.get(0))
            .and_then(Iterator::collect)
            .unwrap_or_else(|error| panic!("{error}"))
    }

    /// Queues a write inserting `x`, which then fails if `fail` (its row written first).
    fn insert(queue: &Queue, x: i64, fail: bool) -> oneshot::Receiver<Result<i64>> {
        queue.push("inserting", move |transaction| {
            transaction
                .execute("INSERT INTO t (x) VALUES (?1)", [x])
                .map_err(|error| MemoryError::storage("inserting", error))?;
            if fail {
                return Err(MemoryError::invalid("x", format!("{x} is refused")));
            }
            Ok(x * 10)
        })
    }

    fn result(receiver: &mut oneshot::Receiver<Result<i64>>) -> Result<i64> {
        receiver
            .try_recv()
            .unwrap_or_else(|error| panic!("no result delivered: {error}"))
    }

    #[test]
    fn waiting_writes_commit_as_one_group_and_answer_after_it() {
        let mut connection = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        table(&connection);
        let queue = Queue::default();
        let mut receivers: Vec<_> = (1..=5).map(|x| insert(&queue, x, false)).collect();
        assert!(matches!(receivers[0].try_recv(), Err(TryRecvError::Empty)));
        GROUPS.with(|groups| groups.borrow_mut().clear());
        queue.commit_waiting(&mut connection);
        assert_eq!(GROUPS.with(|groups| groups.borrow().clone()), [5]);
        for (x, receiver) in (1..=5).zip(&mut receivers) {
            assert_eq!(result(receiver).unwrap_or_else(|e| panic!("{e}")), x * 10);
        }
        assert_eq!(rows(&connection), [1, 2, 3, 4, 5]);
        // Nothing queued: nothing to do.
        queue.commit_waiting(&mut connection);
        assert_eq!(GROUPS.with(|groups| groups.borrow().len()), 1);
    }

    #[test]
    fn a_failing_write_is_rolled_back_alone() {
        let mut connection = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        table(&connection);
        let queue = Queue::default();
        let mut receivers = [
            insert(&queue, 1, false),
            insert(&queue, 2, true),
            insert(&queue, 3, false),
        ];
        queue.commit_waiting(&mut connection);
        assert_eq!(result(&mut receivers[0]).ok(), Some(10));
        assert!(matches!(
            result(&mut receivers[1]),
            Err(MemoryError::InvalidInput { .. })
        ));
        assert_eq!(result(&mut receivers[2]).ok(), Some(30));
        assert_eq!(rows(&connection), [1, 3], "the failed write's row is gone");

        // Alone, a failing write leaves nothing either.
        let mut receiver = insert(&queue, 4, true);
        queue.commit_waiting(&mut connection);
        assert!(result(&mut receiver).is_err());
        assert_eq!(rows(&connection), [1, 3]);
    }

    /// A write whose caller stopped waiting before it ran is not run.
    #[test]
    fn a_write_nobody_waits_for_is_not_run() {
        let mut connection = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        table(&connection);
        let queue = Queue::default();
        let mut kept = insert(&queue, 1, false);
        drop(insert(&queue, 2, false));
        queue.commit_waiting(&mut connection);
        assert_eq!(result(&mut kept).ok(), Some(10));
        assert_eq!(rows(&connection), [1]);
        drop(insert(&queue, 3, false));
        queue.commit_waiting(&mut connection);
        assert_eq!(rows(&connection), [1], "alone, it is not run either");
    }

    /// When the group's transaction cannot begin (another connection holds the write lock),
    /// every write of the group gets a conflict and none is written.
    #[test]
    fn a_group_that_cannot_begin_fails_every_write() {
        let path = std::env::temp_dir().join(format!(
            "agent-memory-group-{}-{:?}.db",
            std::process::id(),
            std::thread::current().id()
        ));
        let remove = || {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        };
        remove();
        let mut connection = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        connection
            .busy_timeout(std::time::Duration::from_millis(10))
            .unwrap_or_else(|e| panic!("{e}"));
        table(&connection);
        let mut other = Connection::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let held = other
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap_or_else(|e| panic!("{e}"));
        let queue = Queue::default();
        let mut receivers = [insert(&queue, 1, false), insert(&queue, 2, false)];
        queue.commit_waiting(&mut connection);
        for receiver in &mut receivers {
            let error = result(receiver).err();
            assert!(
                matches!(error, Some(MemoryError::Conflict { .. })),
                "{error:?}"
            );
        }
        drop(held);
        assert!(rows(&connection).is_empty());
        drop((connection, other));
        remove();
    }
}
