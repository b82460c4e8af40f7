//! `agent-memory serve`: the HTTP API, its OpenAPI document, health, metrics, and the MCP
//! server on `/mcp`.
//!
//! On SQLite, reads run on connections of their own (`--sqlite-readers`, the backend's
//! [`read_connections`](agent_memory::SqliteOptions::read_connections)), so recalls run
//! beside each other and beside the writes.
//!
//! A client of `/mcp` cannot take the server's connections: an MCP event stream (`GET
//! /mcp`) holds its connection for as long as its client keeps it open, kept alive by pings
//! so no deadline ends it, so a session keeps at most one standalone stream (a second gets
//! 409), and the streams open at once are bounded by half of
//! `--max-connections`, a tenant's by its share of that (503 past either): the other half
//! of the connections stays for every other request. A session without a stream holds no
//! connection, so the sessions' own bound (`--max-mcp-sessions`) is one of memory, not of
//! connections.
//!
//! Every write answers only once the store has it. On SIGINT or SIGTERM the server stops
//! accepting connections, finishes the requests in flight, writes pending recall statistics
//! and exits, so no acknowledged write is lost.

mod api;
mod auth;
mod connections;
mod metrics;

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_memory::Memory;
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde_json::json;
use utoipa::OpenApi;

pub(crate) use self::api::dialogue::{DialogueRequest, remember_turns};
pub(crate) use self::api::graph::related_view;
use self::api::{admin, dialogue, facts, graph, memories, pages, presented_key, recall};
pub(crate) use self::auth::Caller;
use self::auth::Keys;
use self::metrics::Metrics;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::backend::{StoreLocation, Tuning};
use crate::cli::{Compat, ServeArgs};
use crate::commands::{Outcome, Settings};
use crate::config::{self, DEFAULT_LISTEN, DEFAULT_MAX_BODY_BYTES, DEFAULT_REQUEST_TIMEOUT_MS};
use crate::failure::{ErrorKind, Failure};
use crate::mcp::MemoryServer;

/// Recall events per write of recall statistics in a server.
const RECALL_BATCH: usize = 1024;
/// The SQLite connections for reads beside the one that writes, by default (the library's).
const DEFAULT_READERS: usize = agent_memory::sqlite::DEFAULT_READ_CONNECTIONS;
/// The most of them.
const MAX_READERS: usize = agent_memory::sqlite::MAX_READ_CONNECTIONS;

/// What every handler shares.
#[derive(Clone, Debug)]
pub(crate) struct AppState(Arc<Shared>);

/// The shared parts of the server.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The memory.
    pub(crate) memory: Arc<Memory>,
    /// The API keys.
    pub(crate) keys: Keys,
    /// Request metrics.
    metrics: Metrics,
    /// The deadline of one request.
    timeout: Duration,
    /// The largest request body taken (`--max-body-bytes`).
    max_body: usize,
    /// The most MCP sessions open at once (`--max-mcp-sessions`).
    max_mcp_sessions: usize,
    /// The most MCP event streams open at once ([`most_mcp_streams`] of
    /// `--max-connections`).
    max_mcp_streams: usize,
    /// The results of a recall that asks for no number (the configuration file's
    /// `[retriever]` `max_results`, else 10), over HTTP and MCP.
    pub(crate) recall_limit: usize,
}

/// The MCP sessions kept open at once unless `--max-mcp-sessions` says otherwise: each
/// costs tens of kilobytes until it has been idle five minutes, so without a bound a
/// client opening sessions in a loop grew the server's memory until it ran out.
///
/// It may be more than `--max-connections`: a session holds no connection between its
/// requests, only its event stream does, and those are bounded by the connections
/// ([`most_mcp_streams`]), not by this.
pub(crate) const DEFAULT_MAX_MCP_SESSIONS: usize = 1024;

/// The MCP event streams (`GET /mcp`) a server keeping `max_connections` connections keeps
/// open at once: half of them (none of a server keeping one connection, which a stream
/// would hold). A stream holds its connection for as long as its client keeps it open
/// (pinged every 15 seconds, so no deadline ends it): without a bound, one tenant opening
/// streams took every connection and no other request was served until its sessions idled
/// out. The other half stays for every other request.
pub(crate) fn most_mcp_streams(max_connections: usize) -> usize {
    max_connections / 2
}

/// One tenant's share of `most` sessions or streams: an eighth, and at least 16 (or all,
/// when fewer), so that one tenant cannot hold all of them and keep the others out.
fn tenant_share(most: usize) -> usize {
    (most / 8).max(most.min(16))
}

/// The most `--max-mcp-sessions` may be.
pub(crate) const MAX_MCP_SESSIONS: usize = 65_536;

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// Serves the HTTP API until SIGINT or SIGTERM.
pub(crate) async fn run(settings: &Settings, args: ServeArgs) -> Result<Outcome, Failure> {
    let file = &settings.file;
    let listen = config::pick(args.listen, file.listen.clone(), DEFAULT_LISTEN.to_owned());
    let admin_key = args.admin_key.or_else(|| file.admin_key.clone());
    // Given by flag or environment, either way wins over the file's (`false` too).
    let open = config::pick(args.no_auth, file.no_auth, false);
    let max_body = config::pick(
        args.max_body_bytes,
        file.max_body_bytes,
        DEFAULT_MAX_BODY_BYTES,
    );
    let timeout_ms = config::pick(
        args.request_timeout_ms,
        file.request_timeout_ms,
        DEFAULT_REQUEST_TIMEOUT_MS,
    );
    let max_connections = config::pick(
        args.max_connections,
        file.max_connections,
        connections::DEFAULT_MAX_CONNECTIONS,
    );
    if !(1..=connections::MAX_CONNECTIONS).contains(&max_connections) {
        return Err(Failure::invalid(
            "max_connections",
            format!(
                "{max_connections} connections: the server keeps 1 to {} open",
                connections::MAX_CONNECTIONS
            ),
        )
        .with_hint(
            "connections past the limit wait until one closes; each holds a file descriptor",
        ));
    }
    let max_mcp_sessions = config::pick(
        args.max_mcp_sessions,
        file.max_mcp_sessions,
        DEFAULT_MAX_MCP_SESSIONS,
    );
    if !(1..=MAX_MCP_SESSIONS).contains(&max_mcp_sessions) {
        return Err(Failure::invalid(
            "max_mcp_sessions",
            format!(
                "{max_mcp_sessions} MCP sessions: the server keeps 1 to {MAX_MCP_SESSIONS} open"
            ),
        ));
    }
    if max_body == 0 {
        return Err(Failure::invalid(
            "max_body_bytes",
            "a body limit of 0 bytes refuses every write",
        ));
    }
    if timeout_ms == 0 {
        return Err(Failure::invalid(
            "request_timeout_ms",
            "a request deadline of 0 ms leaves no request time to arrive",
        ));
    }
    if admin_key.as_deref().is_some_and(|key| key.len() < 16) {
        return Err(
            Failure::invalid("admin_key", "the admin key is shorter than 16 characters")
                .with_hint("choose a long random admin key, e.g. `openssl rand -hex 32`"),
        );
    }
    if admin_key.is_none() && !open {
        tracing::warn!(
            "no admin key: API keys cannot be created; pass --admin-key (or AGENT_MEMORY_ADMIN_KEY)"
        );
    }
    // Reads on SQLite run on connections of their own, beside each other and the writes
    // (WAL readers see every committed write).
    let readers = match settings.store {
        StoreLocation::Sqlite(_) => {
            config::pick(args.sqlite_readers, file.sqlite_readers, DEFAULT_READERS)
        }
        StoreLocation::Postgres(_) | StoreLocation::InMemory => 0,
    };
    if readers > MAX_READERS {
        return Err(Failure::invalid(
            "sqlite_readers",
            format!("{readers} SQLite readers is more than {MAX_READERS}"),
        )
        .with_hint("a few readers keep recalls apart; each is a connection with its own cache"));
    }
    // Recall statistics are written a batch at a time, each write holding SQLite's writing
    // connection for a commit: under load, fewer and larger batches keep writes from
    // queueing behind them (they are written at a stop too, and are statistics only).
    let tuning = Tuning {
        recall_batch: Some(RECALL_BATCH),
        sqlite_readers: Some(readers),
        ..Tuning::default()
    };
    // Every request is admin without keys: anyone who can reach the address could read and
    // write every namespace, so such a server listens on loopback only. Checked before the
    // store is opened (or created), so a refusal leaves nothing behind; an address that does
    // not resolve is the bind's to report.
    if open
        && let Ok(mut addresses) = tokio::net::lookup_host(&listen).await
        && let Some(reachable) = addresses.find(|address| !address.ip().is_loopback())
    {
        return Err(Failure::invalid(
            "no_auth",
            format!(
                "--no-auth lets every request in as admin, and {reachable} is reachable from other machines"
            ),
        )
        .with_hint("listen on loopback (--listen 127.0.0.1:PORT), or serve with --admin-key and API keys"));
    }
    let recall_limit = file.recall_limit()?;
    let memory = Arc::new(settings.open_tuned(tuning).await?);
    let state = AppState(Arc::new(Shared {
        memory: Arc::clone(&memory),
        keys: Keys::new(admin_key, open)?,
        metrics: Metrics::default(),
        timeout: Duration::from_millis(timeout_ms),
        max_body,
        max_mcp_sessions,
        max_mcp_streams: most_mcp_streams(max_connections),
        recall_limit,
    }));
    let (app, stop_streams) = router(state.clone(), max_body, args.mcp_compat);
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|error| {
            Failure::invalid("listen", format!("cannot listen on {listen}: {error}"))
                .with_hint("choose a free address with --listen HOST:PORT (port 0 picks one)")
        })?;
    let address = listener
        .local_addr()
        .map_err(|error| Failure::internal(error.to_string()))?;
    // Before the server says it listens: a signal from then on stops it gracefully.
    let signalled = shutdown_signal();
    // The address on stderr, for whoever started the server (port 0 picks a free one).
    // Not `eprintln!`, which panics when stderr is closed.
    let _ = writeln!(
        std::io::stderr(),
        "agent-memory listening on http://{address}"
    );
    tracing::info!(%address, open, readers, "serving");
    let stop = async move {
        signalled.await;
        // Open MCP event streams end, so the stop does not wait on them.
        stop_streams();
    };
    // A stop waits for the requests in flight, each within its deadline, then a second
    // more: a connection that never finishes sending its request is closed by the header
    // deadline, and whatever else still holds one must not keep the recall statistics below
    // from being written. Nothing acknowledged is cut: an answer not sent by then was not
    // given.
    let grace = Duration::from_millis(timeout_ms).saturating_add(Duration::from_secs(1));
    let limits = connections::Limits {
        max_connections,
        header_timeout: Duration::from_millis(timeout_ms).min(connections::MAX_HEADER_TIMEOUT),
    };
    if !connections::serve(listener, app, limits, stop, grace).await {
        tracing::warn!(
            grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
            "stopping with connections still open: none had a request in its deadline"
        );
    }
    // Every request has finished: write what recalls left pending.
    memory.flush().await?;
    tracing::info!("stopped");
    Ok(Outcome {
        json: json!({ "stopped": true, "address": address.to_string() }),
        text: String::new(),
    })
}

/// A future that ends at the first SIGINT or SIGTERM. The handlers are installed when it
/// is made, not when it is first polled: the server says it listens before it serves, and a
/// signal sent between the two must stop it gracefully, not kill it.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let (mut interrupt, mut terminate) = signals;
            let interrupt = async {
                match interrupt.as_mut() {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            };
            let terminate = async {
                match terminate.as_mut() {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = interrupt => {},
                () = terminate => {},
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("stopping: finishing the requests in flight");
    }
}

/// Ends the MCP event streams.
type StopStreams = Box<dyn FnOnce() + Send>;

/// The routes, and what ends the MCP streams at shutdown.
pub(crate) fn router(state: AppState, max_body: usize, compat: Compat) -> (Router, StopStreams) {
    let mut config = StreamableHttpServerConfig::default();
    config.max_request_body_bytes = max_body;
    // Keys guard every request, so any Host may reach the server it listens as; without keys
    // (`--no-auth`), `addressed_directly` guards every route, this one included.
    config = config.disable_allowed_hosts();
    let token = config.cancellation_token.clone();
    let served = state.clone();
    let sessions = Arc::new(LocalSessionManager::default());
    let mcp = StreamableHttpService::new(
        move || {
            Ok(MemoryServer::new(Arc::clone(&served.memory), compat, None)
                .with_deadline(served.timeout)
                .with_recall_limit(served.recall_limit))
        },
        Arc::clone(&sessions),
        config,
    );
    // The key is checked first (the outer layer), then the bounds of sessions and streams.
    let bound = Arc::new(McpSessions {
        sessions,
        most: state.max_mcp_sessions,
        opened_by: std::sync::Mutex::default(),
        most_streams: state.max_mcp_streams,
        streams: std::sync::Mutex::default(),
    });
    let mcp = Router::new()
        .route_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&bound),
            mcp_sessions_bound,
        ))
        .layer(middleware::from_fn_with_state(bound, mcp_streams_bound))
        .layer(middleware::from_fn_with_state(state.clone(), mcp_auth));
    let v1 = Router::new()
        .route(
            "/memories",
            post(memories::remember).get(memories::list_memories),
        )
        .route("/memories/batch", post(memories::remember_batch))
        .route("/dialogue", post(dialogue::remember_dialogue))
        .route("/memories/forget", post(memories::forget_scope))
        .route("/memories/reembed", post(memories::reembed))
        .route(
            "/memories/{id}",
            get(memories::get_memory)
                .delete(memories::forget_memory)
                .patch(memories::update_memory)
                .put(memories::put_memory),
        )
        .route("/memories/{id}/history", get(facts::history))
        .route("/memories/{id}/retract", post(facts::retract))
        .route("/memories/{id}/supersede", post(facts::supersede))
        .route("/memories/consolidate", post(facts::consolidate))
        .route("/conflicts", get(facts::conflicts))
        .route("/recall", post(recall::recall))
        .route("/context", post(recall::context))
        .route("/stats", get(recall::stats))
        .route("/pages", get(pages::list_pages))
        .route(
            "/pages/{id}",
            put(pages::put_page)
                .get(pages::get_page)
                .delete(pages::delete_page),
        )
        .route(
            "/graph/entities",
            get(graph::list_entities).post(graph::put_entity),
        )
        .route(
            "/graph/entities/{id}",
            get(graph::get_entity).delete(graph::delete_entity),
        )
        .route("/graph/entities/{id}/related", get(graph::related_entities))
        .route(
            "/graph/relations",
            get(graph::list_relations).post(graph::add_relation),
        )
        .route("/graph/relations/delete", post(graph::delete_relation))
        .route("/keys", post(admin::create_key).get(admin::list_keys))
        .route("/keys/{id}", delete(admin::revoke_key));
    let app = Router::new()
        .nest("/v1", v1)
        .merge(mcp)
        .route("/healthz", get(admin::healthz))
        .route("/readyz", get(admin::readyz))
        .route("/metrics", get(metrics_text))
        .route("/openapi.json", get(openapi))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            addressed_directly,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            declared_length,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state);
    // The router sets a 405's `Allow` after the route's layers (`observe` among them) have
    // run: its body is written out here, where the header is known.
    let app = Router::new()
        .fallback_service(app)
        .layer(middleware::map_response(method_not_allowed));
    (app, Box::new(move || token.cancel()))
}

/// Refuses a request whose body, by its `Content-Length`, is larger than the server takes
/// (`--max-body-bytes`), on every route, `/mcp` too: 413 `payload_too_large` at once,
/// without reading any of the body, and the connection closed after the answer. The body
/// limit alone counts bytes only as they arrive: such a request waited for a body the server
/// would refuse (until the request deadline, when its client sent less than it declared),
/// and one sent with `Expect: 100-continue` was told to go on and then had its first
/// `--max-body-bytes` read for nothing. A body without a length (chunked) is still counted
/// as it arrives.
async fn declared_length(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let most = u64::try_from(state.max_body).unwrap_or(u64::MAX);
    match declared {
        Some(length) if length > most => {
            let mut response = Failure::new(
                ErrorKind::PayloadTooLarge,
                format!(
                    "the request's body is {length} bytes (its Content-Length), more than the \
                     {most} this server takes"
                ),
            )
            .into_response();
            // The body is not read: the connection cannot carry another request after it.
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            response
        }
        _ => next.run(request).await,
    }
}

/// Lets an MCP request through with its caller, from its API key, and its body read whole
/// within the request deadline: the MCP stream stays open as long as the client wants, but
/// a client trickling a body would hold a connection for as long as it liked. Read only
/// once the key is known, so a caller without one makes the server hold no body.
async fn mcp_auth(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let caller = state
        .keys
        .caller(&state.memory, presented_key(&parts))
        .await;
    match caller {
        Ok(caller) => {
            parts.extensions.insert(caller);
            match body_within(
                Request::from_parts(parts, body),
                state.timeout,
                state.max_body,
            )
            .await
            {
                Ok(request) => next.run(request).await,
                Err(failure) => failure.into_response(),
            }
        }
        Err(failure) => failure.into_response(),
    }
}

/// The MCP sessions on `/mcp`, with who opened each, and their open event streams, for
/// their bounds.
pub(crate) struct McpSessions {
    /// The transport's sessions.
    sessions: Arc<LocalSessionManager>,
    /// The most open at once (`--max-mcp-sessions`).
    most: usize,
    /// The tenant (its key's namespace prefix) that opened each session, by the session's
    /// id; sessions the admin opened are not listed.
    opened_by: std::sync::Mutex<std::collections::HashMap<Arc<str>, String>>,
    /// The most event streams open at once ([`most_mcp_streams`]).
    most_streams: usize,
    /// The open event streams (`GET /mcp`), one at most of each, by [`StreamKey`], with
    /// the tenant whose key opened each (`None`: the admin's).
    streams: std::sync::Mutex<std::collections::HashMap<StreamKey, Option<String>>>,
}

/// Which event stream of which session a `GET /mcp` asks for: the session's id, and, for a
/// resumption of a request's stream (a `Last-Event-ID` with a `/`), a name of its own, so
/// that no resumption is taken for a repeat; without one, the session's own stream (its
/// standalone stream, of notifications and requests from the server).
type StreamKey = (Arc<str>, Option<Arc<str>>);

impl McpSessions {
    /// The most sessions one tenant keeps open at once: its [`tenant_share`] of all.
    fn most_per_tenant(&self) -> usize {
        tenant_share(self.most)
    }

    /// Takes the place of the event stream `key` for `tenant` (`None`: the admin), held
    /// until the [`OpenStream`] is dropped; a [`Failure`] when that stream is open already
    /// (409), or when the server or the tenant has as many open as it keeps (503).
    fn open_stream(
        self: &Arc<Self>,
        key: StreamKey,
        tenant: Option<String>,
    ) -> Result<OpenStream, Failure> {
        let mut streams = self
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if streams.contains_key(&key) {
            return Err(Failure::new(
                ErrorKind::Conflict,
                "this MCP session has its event stream (GET /mcp) open already; a session \
                 keeps one",
            )
            .with_hint(
                "read the session's events on the stream already open, or close it before \
                 opening another",
            ));
        }
        let refusal = if streams.len() >= self.most_streams {
            Some(format!(
                "{} MCP event streams (GET /mcp) are open, the most this server keeps (half of \
                 its --max-connections, so that they leave connections to other requests)",
                self.most_streams
            ))
        } else {
            tenant.as_ref().and_then(|tenant| {
                let most = tenant_share(self.most_streams);
                let held = streams
                    .values()
                    .filter(|held| held.as_ref() == Some(tenant))
                    .count();
                (held >= most).then(|| {
                    format!(
                        "{most} MCP event streams (GET /mcp) of this key's tenant are open, \
                         the most one tenant keeps"
                    )
                })
            })
        };
        if let Some(message) = refusal {
            return Err(Failure::new(ErrorKind::Unavailable, message).with_hint(
                "close an event stream (GET /mcp) or end a session (DELETE /mcp), or retry later",
            ));
        }
        streams.insert(key.clone(), tenant);
        Ok(OpenStream {
            bound: Arc::clone(self),
            key,
        })
    }
}

/// The place of one open MCP event stream among [`McpSessions::streams`], given back when
/// dropped: when the stream ends, or its client goes away.
struct OpenStream {
    /// Where it is counted.
    bound: Arc<McpSessions>,
    /// Which stream of which session.
    key: StreamKey,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.bound
            .streams
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.key);
    }
}

/// A response body that holds the place of its MCP event stream for as long as it is sent.
struct HeldStream {
    /// The stream's events.
    body: axum::body::BodyDataStream,
    /// Its place, given back when the body is dropped.
    _open: OpenStream,
}

impl futures::Stream for HeldStream {
    type Item = Result<axum::body::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::pin::Pin::new(&mut self.body).poll_next(context)
    }
}

/// Bounds the MCP event streams (`GET /mcp` in a session): one standalone stream a session
/// (a second is answered 409 Conflict, as Streamable HTTP allows; the transport would keep
/// it as an idle copy that receives nothing; a resumption of a request's stream by
/// `Last-Event-ID` is never refused as a repeat), and at most [`McpSessions::most_streams`] open at once, a
/// tenant's [`tenant_share`] of them (503 past either). A stream's place is held from its
/// request until its body is dropped.
async fn mcp_streams_bound(
    State(bound): State<Arc<McpSessions>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != axum::http::Method::GET {
        return next.run(request).await;
    }
    // Without a (readable) session id the transport refuses the request at once.
    let Some(session) = request
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(Arc::<str>::from)
    else {
        return next.run(request).await;
    };
    let tenant = match request.extensions().get::<Caller>() {
        Some(Caller::Tenant(namespace)) => Some(namespace.to_string()),
        _ => None,
    };
    let last_event = request
        .headers()
        .get("last-event-id")
        .and_then(|value| value.to_str().ok());
    let key = stream_key(session, last_event);
    let open = match bound.open_stream(key, tenant) {
        Ok(open) => open,
        Err(failure) => return failure.into_response(),
    };
    let response = next.run(request).await;
    if !response.status().is_success() {
        // A refusal, sent at once: no stream to hold a place for.
        return response;
    }
    let (parts, body) = response.into_parts();
    let body = axum::body::Body::from_stream(HeldStream {
        body: body.into_data_stream(),
        _open: open,
    });
    Response::from_parts(parts, body)
}

/// The place of the event stream a `GET /mcp` of `session` opens, given its
/// `Last-Event-ID`. `5/2` resumes the stream of the session's request 2, `5` (or none) its
/// own. A resumption has a place of its own, never refused as a repeat: the transport hands
/// the request's events to the newest one and ends the one before, whose connection may
/// look alive for minutes after its client lost it (a client reconnecting then would be
/// refused until its retries ran out). The bounds still count it.
fn stream_key(session: Arc<str>, last_event: Option<&str>) -> StreamKey {
    static RESUMPTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let resumption = last_event.filter(|last| last.contains('/')).map(|_| {
        let n = RESUMPTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::<str>::from(format!("resumption {n}"))
    });
    (session, resumption)
}

/// Refuses a request that would open an MCP session (a POST without a session id) while
/// the server keeps as many as it takes, or its tenant as many as one tenant may keep: 503,
/// until one ends (its client's DELETE, or five idle minutes).
async fn mcp_sessions_bound(
    State(bound): State<Arc<McpSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let opens = request.method() == axum::http::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    if !opens {
        return next.run(request).await;
    }
    let tenant = match request.extensions().get::<Caller>() {
        Some(Caller::Tenant(namespace)) => Some(namespace.to_string()),
        _ => None,
    };
    let refusal = {
        let open = bound.sessions.sessions.read().await;
        let mut opened_by = bound
            .opened_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Sessions that ended are no one's any more.
        opened_by.retain(|session, _| open.contains_key(session));
        if open.len() >= bound.most {
            Some(format!(
                "{} MCP sessions are open, the most this server keeps",
                bound.most
            ))
        } else {
            tenant.as_ref().and_then(|tenant| {
                let most = bound.most_per_tenant();
                let held = opened_by.values().filter(|held| *held == tenant).count();
                (held >= most).then(|| {
                    format!("{most} MCP sessions of this key's tenant are open, the most one tenant keeps")
                })
            })
        }
    };
    if let Some(message) = refusal {
        return Failure::new(ErrorKind::Unavailable, message)
            .with_hint("end a session (DELETE /mcp with its Mcp-Session-Id) or retry later")
            .into_response();
    }
    let response = next.run(request).await;
    if let (Some(tenant), Some(session)) = (
        tenant,
        response
            .headers()
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok()),
    ) {
        bound
            .opened_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(Arc::from(session), tenant);
    }
    response
}

async fn openapi() -> impl IntoResponse {
    axum::Json(api::ApiDoc::openapi())
}

async fn metrics_text(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
}

async fn not_found(request: Request) -> Failure {
    Failure::new(
        ErrorKind::NotFound,
        format!("no route {} {}", request.method(), request.uri().path()),
    )
    .with_hint("GET /openapi.json lists every route")
}

/// The MCP transport's refusals (plain text) as the API's JSON errors. A body it cannot
/// read as JSON-RPC it answers 415, though its media type was right: that is a malformed
/// body, 400.
async fn mcp_error(response: Response) -> Response {
    if response.status() != axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return as_json_error(response).await;
    }
    let (mut parts, body) = response.into_parts();
    let said = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    if said.starts_with(b"fail to deserialize") {
        parts.status = axum::http::StatusCode::BAD_REQUEST;
    }
    as_json_error(Response::from_parts(parts, axum::body::Body::from(said))).await
}

/// `response` with an error body in the API's one shape (`{"error": {"kind", "message",
/// "hint"}}`) when it is an error without a JSON body: the router's own answers (a path
/// segment that is not UTF-8, in plain text) keep their status and headers and say the same
/// in JSON. A 405 of the router is left to [`method_not_allowed`], which sees the `Allow`
/// header the router adds after this runs.
async fn as_json_error(response: Response) -> Response {
    if response.status() == axum::http::StatusCode::METHOD_NOT_ALLOWED {
        return response;
    }
    in_json(response).await
}

/// A 405 (a method a route does not take, with an empty body) as a JSON error naming the
/// methods the route takes (its `Allow` header); every other response as it is.
async fn method_not_allowed(response: Response) -> Response {
    if response.status() == axum::http::StatusCode::METHOD_NOT_ALLOWED {
        in_json(response).await
    } else {
        response
    }
}

/// `response` in the API's error shape, as [`as_json_error`] says, a 405 too.
async fn in_json(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let kind = match status.as_u16() {
        401 => ErrorKind::Unauthorized,
        403 => ErrorKind::Forbidden,
        404 => ErrorKind::NotFound,
        405 => ErrorKind::Usage,
        415 => ErrorKind::UnsupportedMediaType,
        413 => ErrorKind::PayloadTooLarge,
        503 => ErrorKind::Unavailable,
        504 => ErrorKind::Timeout,
        400..=499 => ErrorKind::InvalidInput,
        _ => ErrorKind::Internal,
    };
    let (mut parts, body) = response.into_parts();
    // The router's own bodies are a line; more is not read.
    let said = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let said = String::from_utf8_lossy(&said);
    let message = match (status.as_u16(), said.trim()) {
        (405, _) => match parts
            .headers
            .get(axum::http::header::ALLOW)
            .and_then(|value| value.to_str().ok())
            .filter(|allowed| !allowed.is_empty())
        {
            Some(allowed) => format!(
                "the route does not take this method; it takes {}",
                allowed
                    .split(',')
                    .map(str::trim)
                    .filter(|method| !method.is_empty())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => {
                "the route does not take this method (GET /openapi.json lists each route's methods)"
                    .to_owned()
            }
        },
        (_, "") => status
            .canonical_reason()
            .unwrap_or("the request failed")
            .to_lowercase(),
        (_, said) => said.to_owned(),
    };
    let mut failure = Failure::new(kind, message);
    if kind == ErrorKind::Usage {
        // The command line's hint says nothing to an HTTP client.
        failure = failure.with_hint("GET /openapi.json lists each route and what it takes");
    }
    let body = serde_json::to_vec(&api::ErrorBody { error: failure }).unwrap_or_default();
    parts.headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(body))
}

/// Without keys (`--no-auth`), refuses a request whose `Host` is a name other than
/// `localhost`: a web page whose domain is made to resolve to the server's address (DNS
/// rebinding) would otherwise read and write every memory from the user's browser. A
/// request addressed by IP address (`127.0.0.1:8080`, `[::1]:8080`, a LAN address) or to
/// `localhost` goes on. With keys, every request is guarded by its key instead.
///
/// Every name the request gives is checked: its `Host` and the authority of a request
/// target in absolute form (`GET http://name/...`). A request with several `Host` headers
/// is refused (400, as HTTP/1.1 requires), and so is one whose `Host` is not text (403): either
/// could name a host other than the one checked.
async fn addressed_directly(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if !state.keys.is_open() {
        return next.run(request).await;
    }
    let mut hosts = request.headers().get_all(axum::http::header::HOST).iter();
    let header = hosts.next();
    if hosts.next().is_some() {
        return Failure::new(
            ErrorKind::InvalidInput,
            "the request has several Host headers; it may have one",
        )
        .with_hint("send one Host header, the server's IP address or localhost")
        .into_response();
    }
    let header = match header.map(|value| value.to_str()) {
        None => None,
        Some(Ok(host)) => Some(host),
        Some(Err(_)) => {
            return refused_host("a Host that is not ASCII text").into_response();
        }
    };
    for host in header.into_iter().chain(request.uri().host()) {
        if !is_direct_host(host) {
            return refused_host(&format!("`{host}`")).into_response();
        }
    }
    next.run(request).await
}

/// The refusal of a request to `host` (as the message names it) by a server without keys.
fn refused_host(host: &str) -> Failure {
    Failure::new(
        ErrorKind::Forbidden,
        format!(
            "a server without keys answers requests to an IP address or localhost, not to {host}"
        ),
    )
    .with_hint("address the server by its IP address or as localhost, or serve with keys")
}

/// Whether `host` (a `Host` header: a name or an address, perhaps with a port) is an IP
/// address or `localhost`.
fn is_direct_host(host: &str) -> bool {
    let name = if let Some(bracketed) = host.strip_prefix('[') {
        // `[::1]:8080`: an IPv6 address.
        return bracketed
            .split_once(']')
            .is_some_and(|(address, _)| address.parse::<std::net::Ipv6Addr>().is_ok());
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

/// `request` with its body read whole, within `deadline` and at most `max_body` bytes
/// (MCP's messages are JSON read whole anyway): a [`ErrorKind::Timeout`] or
/// [`ErrorKind::PayloadTooLarge`] failure otherwise.
async fn body_within(
    request: Request,
    deadline: Duration,
    max_body: usize,
) -> Result<Request, Failure> {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(deadline, axum::body::to_bytes(body, max_body))
        .await
        .map_err(|_| {
            Failure::new(
                ErrorKind::Timeout,
                format!(
                    "the request's body took longer than {} ms to arrive",
                    deadline.as_millis()
                ),
            )
        })?
        .map_err(|error| {
            // The limit's error names it; any other is the connection's.
            let message = error.to_string();
            let kind = if message.contains("length limit") {
                ErrorKind::PayloadTooLarge
            } else {
                ErrorKind::InvalidInput
            };
            Failure::new(
                kind,
                format!("the request's body could not be read: {message}"),
            )
        })?;
    Ok(Request::from_parts(parts, axum::body::Body::from(read)))
}

/// Times out, logs and counts every request.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = metrics::method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    // MCP streams stay open as long as the client wants (each tool call has the deadline,
    // `MemoryServer::with_deadline`); every other request has a deadline.
    // A write past its deadline may still commit: a write the store had begun (in a group
    // commit, on the blocking pool) runs to its end though its caller stopped waiting.
    // Recall and context are reads sent as POST (a query body).
    let writes = !matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    ) && !matches!(route.as_str(), "/v1/recall" | "/v1/context");
    let response = if route.starts_with("/mcp") {
        // Its body, though, has the deadline (read in `mcp_auth`, once the key is known).
        mcp_error(next.run(request).await).await
    } else {
        match tokio::time::timeout(state.timeout, next.run(request)).await {
            Ok(response) => as_json_error(response).await,
            Err(_) if writes => Failure::new(
                ErrorKind::Timeout,
                format!(
                    "the request took longer than {} ms; what it writes may be stored or not",
                    state.timeout.as_millis()
                ),
            )
            .with_hint(
                "read it back before sending it again: sent again, a write without an id \
                 may be stored twice (a remember with an id replaces what it names)",
            )
            .into_response(),
            Err(_) => Failure::new(
                ErrorKind::Timeout,
                format!(
                    "the request took longer than {} ms",
                    state.timeout.as_millis()
                ),
            )
            .into_response(),
        }
    };
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    state.metrics.record(method, &route, status, elapsed);
    tracing::info!(
        method,
        route,
        status,
        micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's own stream has one place, asked for with or without an event id; each
    /// resumption of a request's stream has its own, so none is refused as a repeat.
    #[test]
    fn each_resumption_has_a_place_of_its_own() {
        let session: Arc<str> = Arc::from("s1");
        let own = stream_key(Arc::clone(&session), None);
        assert_eq!(own, stream_key(Arc::clone(&session), Some("5")));
        let first = stream_key(Arc::clone(&session), Some("0/1"));
        let again = stream_key(Arc::clone(&session), Some("0/1"));
        assert_ne!(first, again);
        assert_ne!(first, own);
    }
}
