//! The MCP server, on the official Rust SDK (rmcp): on standard input and output
//! (`agent-memory mcp`) and over Streamable HTTP on `/mcp` of `agent-memory serve`.
//!
//! Two tool sets: this library's (remember, recall, context, forget and graph operations)
//! and, with `--compat server-memory`, the nine tools of the reference MCP memory server on
//! top of this library. Every write answers once it is stored; every read is bounded
//! (a page at a time, with a cursor). The tenant is the `--namespace` flag on stdio and the
//! API key's prefix over HTTP.

mod compat;
mod native;
mod stdio_lines;

use std::sync::Arc;
use std::time::Duration;

use agent_memory::Memory;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::cli::{Compat, McpArgs};
use crate::commands::{Outcome, Settings};
use crate::failure::{ErrorKind, Failure};
use crate::serve::Caller;

/// The MCP server over one memory.
#[derive(Clone, Debug)]
pub(crate) struct MemoryServer {
    memory: Arc<Memory>,
    compat: Compat,
    /// The caller on stdio; over HTTP the caller comes with each request.
    fixed: Option<Caller>,
    /// How long one tool call may take (over HTTP, the server's request deadline: the MCP
    /// stream stays open as long as the client wants, each call within the deadline).
    deadline: Option<Duration>,
    /// The results of a `recall` that asks for no number, before the tool's cap of 50 (the
    /// configuration file's `[retriever]` `max_results`, else 10).
    recall_limit: usize,
}

impl MemoryServer {
    /// A server over `memory` offering `compat`'s tools; `fixed` is the caller for every
    /// request (stdio), or `None` to take it from each HTTP request.
    pub(crate) fn new(memory: Arc<Memory>, compat: Compat, fixed: Option<Caller>) -> Self {
        Self {
            memory,
            compat,
            fixed,
            deadline: None,
            recall_limit: crate::config::DEFAULT_RECALL_LIMIT,
        }
    }

    /// The server with `limit` results for a `recall` that asks for no number (capped at
    /// the tool's most, 50).
    pub(crate) fn with_recall_limit(mut self, limit: usize) -> Self {
        self.recall_limit = limit;
        self
    }

    /// The server with a deadline for each tool call: a call that takes longer fails with
    /// a `timeout` tool error, as an HTTP request past its deadline gets 504.
    pub(crate) fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    fn tools(&self) -> Vec<Tool> {
        match self.compat {
            Compat::Native => native::tools(),
            Compat::ServerMemory => compat::tools(),
        }
    }

    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Caller, Failure> {
        if let Some(caller) = &self.fixed {
            return Ok(caller.clone());
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| {
                Failure::new(ErrorKind::Unauthorized, "no API key came with the request")
            })
    }
}

/// A tool's input schema from its JSON.
pub(crate) fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(object) => Arc::new(object),
        _ => Arc::new(Map::new()),
    }
}

/// A tool's arguments deserialized, or an invalid-input failure naming the argument at
/// fault (`text`, `tags[2]`; a missing or unknown one by its name), `arguments` when none
/// can be named.
pub(crate) fn arguments<T: serde::de::DeserializeOwned>(
    arguments: Option<Map<String, Value>>,
) -> Result<T, Failure> {
    serde_path_to_error::deserialize(Value::Object(arguments.unwrap_or_default())).map_err(
        |error: serde_path_to_error::Error<serde_json::Error>| {
            let path = error.path().to_string();
            let inner = error.inner().to_string();
            let named = ["unknown field `", "missing field `"]
                .iter()
                .find_map(|quoted| {
                    let at = inner.find(quoted)?;
                    inner[at + quoted.len()..].split('`').next()
                });
            let field = match (path.as_str(), named) {
                ("." | "", Some(name)) => name.to_owned(),
                ("." | "", None) => "arguments".to_owned(),
                // A field missing or unknown inside an element: `turns[0].text`.
                (path, Some(name)) => format!("{path}.{name}"),
                (path, None) => path.to_owned(),
            };
            Failure::invalid(
                &field,
                format!("the arguments do not fit the tool's schema: {field}: {inner}"),
            )
        },
    )
}

/// A successful result: the JSON as text (for every client) and, when it is an object, as
/// structured content (MCP allows only objects there).
pub(crate) fn success(value: Value) -> CallToolResult {
    let text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string());
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if value.is_object() {
        result.structured_content = Some(value);
    }
    result
}

/// A failed call: the message, kind and hint as text (for the model), and the error as the
/// HTTP API shapes it (`{"error": {"kind", "message", "field", "hint"}}`) as structured
/// content, so a program reads the field at fault without parsing the text.
fn failure_result(failure: &Failure) -> CallToolResult {
    let text = format!(
        "{} ({}). {}",
        failure.message,
        kind_name(failure.kind),
        failure.hint
    );
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(serde_json::json!({ "error": failure }));
    result
}

fn kind_name(kind: ErrorKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|value| value.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        let instructions = match self.compat {
            Compat::Native => {
                "Long-term memory. Call `recall` (or `context`) before answering anything that may depend on what you were told before; call `remember` for every durable fact, preference or event worth keeping. Graph tools keep entities and how they relate."
            }
            Compat::ServerMemory => {
                "A knowledge graph memory: entities with observations, and relations between them. Read with search_nodes or open_nodes (read_graph pages through everything); write with create_entities, create_relations and add_observations."
            }
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agent-memory",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools().iter().any(|tool| tool.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; tools/list names the tools",
                    request.name
                ),
                None,
            ));
        }
        let outcome = match self.caller(&context) {
            Err(failure) => Err(failure),
            Ok(caller) => {
                let call = async {
                    match self.compat {
                        Compat::Native => {
                            let defaults = native::Defaults {
                                recall_limit: self.recall_limit,
                            };
                            native::call(
                                &self.memory,
                                &caller,
                                &defaults,
                                &request.name,
                                request.arguments,
                            )
                            .await
                        }
                        Compat::ServerMemory => {
                            compat::call(&self.memory, &caller, &request.name, request.arguments)
                                .await
                        }
                    }
                };
                within(self.deadline, call).await
            }
        };
        Ok(match outcome {
            Ok(value) if self.compat == Compat::ServerMemory => {
                // The reference server's text (what most clients read) beside the object.
                let text = compat::text_of(&request.name, &value);
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(value);
                result
            }
            Ok(value) => success(value),
            Err(failure) => failure_result(&failure),
        }
        .into())
    }
}

/// `call`'s outcome, or a [`ErrorKind::Timeout`] failure when it takes longer than
/// `deadline` (the call is then dropped, as an HTTP request past its deadline is).
async fn within<T>(
    deadline: Option<Duration>,
    call: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    let Some(deadline) = deadline else {
        return call.await;
    };
    tokio::time::timeout(deadline, call)
        .await
        .unwrap_or_else(|_| {
            Err(Failure::new(
                ErrorKind::Timeout,
                format!("the tool call took longer than {} ms", deadline.as_millis()),
            ))
        })
}

/// `agent-memory mcp`: serves MCP on standard input and output until the client closes it.
pub(crate) async fn run_stdio(settings: &Settings, args: McpArgs) -> Result<Outcome, Failure> {
    let memory = Arc::new(settings.open().await?);
    let server = MemoryServer::new(
        Arc::clone(&memory),
        args.compat,
        Some(Caller::Tenant(settings.namespace.clone())),
    )
    .with_recall_limit(settings.file.recall_limit()?);
    // Every line gets an answer: one that does not parse a JSON-RPC parse error.
    let stdio_lines::Lines {
        input,
        output,
        written,
    } = stdio_lines::checked(tokio::io::stdin(), tokio::io::stdout());
    let ended = match server.serve((input, output)).await {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .map_err(|error| Failure::internal(format!("the MCP session ended: {error}"))),
        Err(error) => not_started(error),
    };
    // The server's output ended with it (on a failed start too): its last answers are
    // written before the process goes on.
    let _ = written.await;
    ended?;
    memory.flush().await?;
    // Standard output belongs to the protocol: nothing more is printed on it.
    Ok(Outcome {
        json: Value::Null,
        text: String::new(),
    })
}

/// What a session on standard input that never started means for the command: a client
/// that hung up before `initialize` (or an empty input) ends it as a session ended by the
/// client, with nothing to report; one that spoke out of turn (a notification or an answer
/// before `initialize`) is a usage error, exit 2. Only a failure of the
/// transport itself or of the server is internal.
fn not_started(error: rmcp::service::ServerInitializeError) -> Result<(), Failure> {
    use rmcp::service::ServerInitializeError as Error;
    match error {
        Error::ConnectionClosed(_) => Ok(()),
        Error::ExpectedInitializeRequest(_) => {
            Err(Failure::new(
                ErrorKind::Usage,
                "the MCP client sent another message before `initialize`",
            )
            .with_hint(
                "an MCP client sends `initialize`, then `notifications/initialized`, before any other message",
            ))
        }
        error => Err(Failure::internal(format!(
            "starting the MCP session: {error}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call past the deadline fails with `timeout`, naming the deadline; one within it,
    /// or without a deadline, gives its outcome.
    #[tokio::test(start_paused = true)]
    async fn a_tool_call_past_its_deadline_times_out() {
        let deadline = Some(Duration::from_millis(250));
        let stuck = within(deadline, std::future::pending::<Result<(), Failure>>()).await;
        let failure = stuck.expect_err("a call that never ends times out");
        assert_eq!(failure.kind, ErrorKind::Timeout);
        assert!(failure.message.contains("250 ms"), "{}", failure.message);
        let quick = within(deadline, async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, Failure>(7)
        })
        .await;
        assert_eq!(quick.ok(), Some(7));
        let slow = within(None, async {
            tokio::time::sleep(Duration::from_secs(3_600)).await;
            Ok::<_, Failure>(8)
        })
        .await;
        assert_eq!(slow.ok(), Some(8));
    }
}
