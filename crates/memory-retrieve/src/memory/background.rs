//! Maintenance that runs itself: [`Memory::spawn_maintenance`] runs [`Memory::maintain`] on a
//! schedule, on the caller's tokio runtime, until its handle stops it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_core::Scope;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::Memory;
use crate::eviction::MaintenanceReport;

/// A maintenance task started by [`Memory::spawn_maintenance`].
///
/// Dropping the handle leaves the task running; [`stop`](Self::stop) ends it cleanly.
#[derive(Debug)]
pub struct MaintenanceHandle {
    stop: Arc<Notify>,
    task: JoinHandle<()>,
    reports: watch::Receiver<Option<PassReport>>,
}

/// What the last scheduled pass did.
#[derive(Clone, Debug, PartialEq)]
pub struct PassReport {
    /// Passes run so far, this one included.
    pub passes: u64,
    /// What the pass did; `None` when it failed (the error is logged).
    pub report: Option<MaintenanceReport>,
    /// How long it took.
    pub took: Duration,
}

impl MaintenanceHandle {
    /// The last pass's report, if one has run.
    pub fn last(&self) -> Option<PassReport> {
        self.reports.borrow().clone()
    }

    /// Waits until at least `passes` passes have run in all (for tests and for a caller
    /// that wants to know the first pass is done). Returns the last report, or `None` if
    /// the task stopped first.
    pub async fn wait_for(&mut self, passes: u64) -> Option<PassReport> {
        loop {
            if let Some(report) = self.reports.borrow_and_update().clone()
                && report.passes >= passes
            {
                return Some(report);
            }
            if self.reports.changed().await.is_err() {
                return self.last();
            }
        }
    }

    /// Stops the task and waits for it: a pass under way finishes first, so no pass is
    /// left half applied.
    pub async fn stop(self) {
        self.stop.notify_one();
        // The task only ends by returning; a panic in a pass is already logged by tokio.
        let _ = self.task.await;
    }
}

impl Memory {
    /// Runs [`maintain`](Memory::maintain) on `scope` every `every` (the first pass right
    /// away), on the caller's tokio runtime, until the handle's
    /// [`stop`](MaintenanceHandle::stop). A pass runs whole: stopping waits for the one under
    /// way. Each pass's counts and duration go to `tracing` (debug level; a failed pass at
    /// warn level) and to [`MaintenanceHandle::last`]. A pass reads and writes through the
    /// stores like any caller, without holding a lock across its awaits, so recall goes on
    /// while it runs.
    ///
    /// # Panics
    /// When called outside a tokio runtime (as `tokio::spawn`).
    pub fn spawn_maintenance(self: &Arc<Self>, every: Duration, scope: Scope) -> MaintenanceHandle {
        let stop = Arc::new(Notify::new());
        let (sender, reports) = watch::channel(None);
        let memory = Arc::clone(self);
        let stopped = Arc::clone(&stop);
        let every = every.max(Duration::from_millis(1));
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut passes = 0u64;
            loop {
                tokio::select! {
                    biased;
                    () = stopped.notified() => break,
                    _ = ticks.tick() => {}
                }
                let started = Instant::now();
                let outcome = memory.maintain(&scope).await;
                passes += 1;
                let took = started.elapsed();
                let report = match outcome {
                    Ok(report) => {
                        tracing::debug!(
                            passes,
                            expired = report.expired,
                            decayed = report.decayed,
                            evicted = report.evicted,
                            took_ms = took.as_secs_f64() * 1000.0,
                            "scheduled maintenance"
                        );
                        Some(report)
                    }
                    Err(error) => {
                        tracing::warn!(%error, passes, "scheduled maintenance failed");
                        None
                    }
                };
                sender.send_replace(Some(PassReport {
                    passes,
                    report,
                    took,
                }));
            }
        });
        MaintenanceHandle {
            stop,
            task,
            reports,
        }
    }
}
