//! Writes that run as tasks off the query path (recall statistics, page and entity
//! accesses), tried again while they fail for a reason that may pass, each failure kept
//! until someone waits for them.

use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use memory_core::{MemoryError, Result};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// The background writes of one recorder: tasks in flight, and the first failure of those
/// already let go.
///
/// A recorder starts a task per full batch and must not hold every finished one until the
/// next flush, so each [`spawn`](Self::spawn) lets go of the tasks that finished. A finished
/// task's outcome is read before it is dropped: a failed write (or a panicked task) is kept
/// and [`wait`](Self::wait) returns it, as it returns the failure of a task still in flight.
#[derive(Debug)]
pub(crate) struct BackgroundWrites {
    /// What the tasks write, named in the error of a task that panicked.
    what: &'static str,
    state: Mutex<State>,
    /// Held by a [`wait`](Self::wait) while it waits: a second one waits behind it, then
    /// for what is left, so it too returns once every write started before it has ended
    /// (it found the tasks taken, and returned at once, before).
    waiting: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    tasks: Vec<JoinHandle<Result<()>>>,
    /// The first failure of a task let go before anyone waited for it.
    failed: Option<MemoryError>,
}

impl BackgroundWrites {
    /// No writes yet; `what` names them in the error of a task that panicked.
    pub(crate) fn new(what: &'static str) -> Self {
        Self {
            what,
            state: Mutex::new(State::default()),
            waiting: tokio::sync::Mutex::new(()),
        }
    }

    /// Runs `write` as a task on `runtime`, after letting go of the tasks that finished
    /// (keeping the first failure among them).
    pub(crate) fn spawn(
        &self,
        runtime: &Handle,
        write: impl Future<Output = Result<()>> + Send + 'static,
    ) {
        let task = runtime.spawn(write);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let State { tasks, failed } = &mut *state;
        tasks.retain_mut(|task| {
            if !task.is_finished() {
                return true;
            }
            // Finished, so ready at once; a task whose poll is put off (the runtime's
            // cooperative budget) is kept for the next pass.
            match task.now_or_never() {
                None => true,
                Some(outcome) => {
                    if let Err(error) = self.outcome(outcome) {
                        failed.get_or_insert(error);
                    }
                    false
                }
            }
        });
        tasks.push(task);
    }

    /// Waits for every task in flight, those another wait is waiting for included.
    ///
    /// # Errors
    /// The first failure: of a task let go since the last wait, else of a task waited for
    /// now. Every task is waited for either way, and the failures are then forgotten.
    pub(crate) async fn wait(&self) -> Result<()> {
        let _turn = self.waiting.lock().await;
        let (count, failed) = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            (state.tasks.len(), state.failed.take())
        };
        let mut first = failed;
        // One task at a time, each left in the list until its turn: a wait whose caller
        // stops waiting leaves the rest for the next (it took them all before, and they
        // ran on unwatched, their failures lost). The tasks started since are not waited
        // for: steady recalls would otherwise keep a flush waiting for ever.
        for _ in 0..count {
            let task = {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                if state.tasks.is_empty() {
                    break;
                }
                state.tasks.remove(0)
            };
            // Put back in its place if this wait is dropped before the task ends.
            let mut waiting = Waiting {
                writes: self,
                task: Some(task),
            };
            let Some(task) = waiting.task.as_mut() else {
                break;
            };
            let joined = task.await;
            waiting.task = None;
            if let Err(error) = self.outcome(joined) {
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// A task's outcome as the write's: a panicked or cancelled task is a storage error.
    fn outcome(
        &self,
        joined: std::result::Result<Result<()>, tokio::task::JoinError>,
    ) -> Result<()> {
        joined.unwrap_or_else(|join| Err(MemoryError::storage(self.what, join)))
    }
}

/// How many times a background write is tried again after a failure that may pass.
pub(crate) const RETRIES: u32 = 3;

/// The wait before a background write's first retry; each later wait is four times the one
/// before (50, 200 and 800 ms: besides the tries themselves, which may each wait out the
/// backend's own timeout, a write is given up about a second after it first failed).
const FIRST_RETRY_WAIT: Duration = Duration::from_millis(50);

/// Whether a write that failed with `error` may succeed if tried again: the backend was
/// unreachable, timed out, or a concurrent transaction conflicted with it (rolled back).
/// Not a missing record, bad input, or a storage failure such as a full disk.
fn may_pass(error: &MemoryError) -> bool {
    matches!(
        error,
        MemoryError::Unavailable { .. } | MemoryError::Timeout(_) | MemoryError::Conflict { .. }
    )
}

/// Runs `write`, and again up to `retries` times (on a tokio runtime; [`RETRIES`] in the
/// background) while it fails for a reason that [may pass](may_pass), waiting longer
/// before each try; returns the last outcome. With no retries it runs `write` once,
/// anywhere.
///
/// A write retried must be all or nothing, as the stores' batch writes are (SQLite's is one
/// transaction, PostgreSQL's one statement): a failed one left nothing to count twice.
///
/// The wait sleeps on the runtime's blocking pool, not its timer: a runtime built without
/// `enable_time` has no timer, and this runs on the caller's runtime.
pub(crate) async fn retried<F, Fut>(retries: u32, mut write: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let mut wait = FIRST_RETRY_WAIT;
    let mut tries = 0;
    loop {
        match write().await {
            Err(error) if tries < retries && may_pass(&error) => {
                tries += 1;
                tracing::debug!(%error, tries, "a background write failed; trying it again");
                // A blocking-pool thread that cannot be had (the runtime shutting down) ends
                // the wait early: the write is then tried again at once.
                let _ = tokio::task::spawn_blocking(move || std::thread::sleep(wait)).await;
                wait = wait.saturating_mul(4);
            }
            outcome => return outcome,
        }
    }
}

/// A task a [`BackgroundWrites::wait`] is waiting for, put back at the front of the list
/// when the wait is dropped before it ends (its caller stopped waiting): the next wait
/// waits for it, and reports its failure.
struct Waiting<'a> {
    writes: &'a BackgroundWrites,
    task: Option<JoinHandle<Result<()>>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            let mut state = self
                .writes
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            state.tasks.insert(0, task);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure() -> MemoryError {
        MemoryError::Timeout("the store is down".into())
    }

    /// A write that failed and finished before the next one started is not forgotten when
    /// its task is let go.
    #[tokio::test]
    async fn a_failure_outlives_its_finished_task() {
        let writes = BackgroundWrites::new("test writes");
        let runtime = Handle::current();
        writes.spawn(&runtime, async { Err(failure()) });
        // On this current-thread runtime the task runs to its end here.
        tokio::task::yield_now().await;
        writes.spawn(&runtime, async { Ok(()) });
        assert_eq!(
            writes.state.lock().map(|state| state.tasks.len()).ok(),
            Some(1),
            "the finished task was let go"
        );
        let error = writes.wait().await.expect_err("the first write failed");
        assert!(matches!(error, MemoryError::Timeout(_)), "{error}");
        writes.wait().await.expect("a failure is returned once");
    }

    /// Two waits at once both return only once the write in flight when they began has
    /// ended: the second found the tasks taken by the first, and returned at once.
    #[tokio::test]
    async fn a_second_wait_waits_for_the_writes_the_first_took() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let writes = Arc::new(BackgroundWrites::new("test writes"));
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let done = Arc::new(AtomicBool::new(false));
        let written = Arc::clone(&done);
        writes.spawn(&Handle::current(), async move {
            let _ = released.await;
            written.store(true, Ordering::SeqCst);
            Ok(())
        });
        let first = {
            let writes = Arc::clone(&writes);
            tokio::spawn(async move { writes.wait().await })
        };
        // The first wait has taken the task.
        while writes.state.lock().map(|state| state.tasks.len()).ok() != Some(0) {
            tokio::task::yield_now().await;
        }
        let second = {
            let writes = Arc::clone(&writes);
            let done = Arc::clone(&done);
            tokio::spawn(async move { writes.wait().await.map(|()| done.load(Ordering::SeqCst)) })
        };
        tokio::task::yield_now().await;
        let _ = release.send(());
        first.await.expect("joined").expect("written");
        assert_eq!(
            second.await.expect("joined").ok(),
            Some(true),
            "the second wait returned after the write"
        );
    }

    /// A task that panicked, finished or still in flight, is a storage error naming what it
    /// wrote.
    #[tokio::test]
    async fn a_panicked_write_is_an_error() {
        let writes = BackgroundWrites::new("test writes");
        let runtime = Handle::current();
        writes.spawn(&runtime, async { panic!("a bug in the write") });
        tokio::task::yield_now().await;
        writes.spawn(&runtime, async { Ok(()) });
        let error = writes.wait().await.expect_err("the task panicked");
        assert!(matches!(error, MemoryError::Storage { .. }), "{error}");
        assert!(error.to_string().contains("test writes"), "{error}");
        writes.spawn(&runtime, async { panic!("a bug in the write") });
        let error = writes.wait().await.expect_err("the task panicked");
        assert!(matches!(error, MemoryError::Storage { .. }), "{error}");
    }

    /// A write is tried again while it fails for a reason that may pass, as often as it is
    /// allowed; a failure that cannot pass, or no retries, ends it at once.
    #[tokio::test]
    async fn retried_tries_again_only_what_may_pass() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let tries = AtomicUsize::new(0);
        let failing = |times: usize, error: fn() -> MemoryError| {
            tries.store(0, Ordering::SeqCst);
            let tries = &tries;
            move || async move {
                if tries.fetch_add(1, Ordering::SeqCst) < times {
                    Err(error())
                } else {
                    Ok(())
                }
            }
        };
        let conflict = || MemoryError::Conflict {
            message: "a concurrent transaction".into(),
            source: None,
        };
        retried(RETRIES, failing(2, conflict))
            .await
            .expect("the third try");
        assert_eq!(tries.load(Ordering::SeqCst), 3);
        let error = retried(RETRIES, failing(9, conflict))
            .await
            .expect_err("given up");
        assert!(matches!(error, MemoryError::Conflict { .. }), "{error}");
        assert_eq!(tries.load(Ordering::SeqCst), 1 + RETRIES as usize);
        let invalid = || MemoryError::invalid("id", "empty");
        retried(RETRIES, failing(1, invalid))
            .await
            .expect_err("not tried again");
        assert_eq!(tries.load(Ordering::SeqCst), 1);
        retried(0, failing(1, failure))
            .await
            .expect_err("no retries");
        assert_eq!(tries.load(Ordering::SeqCst), 1);
    }

    /// Of several failures, the first is returned; the writes in flight are all waited for.
    #[tokio::test]
    async fn every_write_is_waited_for() {
        let writes = BackgroundWrites::new("test writes");
        let runtime = Handle::current();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for n in 0..5 {
            let done = std::sync::Arc::clone(&done);
            writes.spawn(&runtime, async move {
                tokio::task::yield_now().await;
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if n == 0 {
                    Err(failure())
                } else {
                    Err(MemoryError::invalid("n", "a later failure"))
                }
            });
        }
        let error = writes.wait().await.expect_err("the writes failed");
        assert!(matches!(error, MemoryError::Timeout(_)), "{error}");
        assert_eq!(done.load(std::sync::atomic::Ordering::SeqCst), 5);
    }
}
