//! The server's connections: how many it keeps open, how long a request's head may take,
//! and how a stop drains them.
//!
//! `axum::serve` accepts every connection and lets each wait for its request's head for as
//! long as the client likes: a client sending its headers a byte at a time, or opening
//! connections and sending nothing, holds a task and a file descriptor for ever, and enough
//! of them take every descriptor the process has. So the server accepts here instead:
//!
//! - at most [`Limits::max_connections`] are open at once; past that, a new connection waits
//!   in the kernel's queue until one closes (a semaphore permit per connection, returned
//!   when it closes);
//! - a request's head (its line and headers) must arrive within
//!   [`Limits::header_timeout`] (the request deadline, at most [`MAX_HEADER_TIMEOUT`]), and
//!   so must the next request's head on a connection kept alive between requests: a
//!   connection that sends nothing in that time is closed (hyper's `header_read_timeout`,
//!   which needs a timer, which `axum::serve` does not give it);
//!
//! The cap bounds what the process holds; it is not a defence against a client that opens
//! connections faster than the header deadline closes them (a few dozen a second hold
//! them all): a server exposed to such clients belongs behind a proxy that limits
//! connections per client.
//! - a stop stops accepting, lets every connection finish the request it is serving and
//!   closes it, and waits for them at most a grace period: the same permits, all returned,
//!   say that every connection has closed.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// The most connections the server may be asked to keep open (`--max-connections`).
pub(crate) const MAX_CONNECTIONS: usize = 100_000;
/// Open connections by default: under the usual limit of 1,024 file descriptors a process
/// may hold, with room for the store's own files and connections.
pub(crate) const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// The longest a request's head may take, whatever the request deadline: a head is a few
/// hundred bytes, sent at once by any client, and the longer a connection may hold its
/// permit doing nothing, the fewer connections a client needs to hold them all.
pub(crate) const MAX_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the loop waits before accepting again when accepting failed (out of file
/// descriptors, say): a retry at once would fail the same way and spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// What the server allows its connections.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// The most connections open at once, 1 to [`MAX_CONNECTIONS`].
    pub(crate) max_connections: usize,
    /// The longest a request's head may take to arrive, from the connection's opening or
    /// the end of its previous request.
    pub(crate) header_timeout: Duration,
}

/// Serves `app` on `listener` within `limits` until `stop` ends, then drains the
/// connections. Returns `true` when every connection closed within `grace` of the stop,
/// `false` when some were still open (a request that never finished arriving, say).
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> bool {
    let max = limits.max_connections.clamp(1, MAX_CONNECTIONS);
    let permits = Arc::new(Semaphore::new(max));
    let (closing, closed) = watch::channel(false);
    let mut stop = std::pin::pin!(stop);
    loop {
        let permit = tokio::select! {
            () = &mut stop => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                // Never closed while the loop runs.
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    if !is_connection_error(&error) {
                        tracing::warn!(%error, "accepting a connection failed; retrying");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let mut closed = closed.clone();
        let header_timeout = limits.header_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(error) = served {
                        tracing::debug!(%error, "connection ended with an error");
                    }
                }
                () = async {
                    let _ = closed.wait_for(|closed| *closed).await;
                } => {
                    // Finish the request being served (if any), then close.
                    connection.as_mut().graceful_shutdown();
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "connection ended with an error");
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = closing.send(true);
    // Each connection returns its permit when it closes: all of them back, all closed.
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    tokio::time::timeout(grace, permits.acquire_many(all))
        .await
        .is_ok_and(|acquired| acquired.is_ok())
}

/// Whether an accept error concerns one connection only (the client gave up before it was
/// accepted), so the next accept may succeed at once.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
