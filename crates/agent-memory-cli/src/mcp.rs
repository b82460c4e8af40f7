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

use std::sync::Arc;

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
}

impl MemoryServer {
    /// A server over `memory` offering `compat`'s tools; `fixed` is the caller for every
    /// request (stdio), or `None` to take it from each HTTP request.
    pub(crate) fn new(memory: Arc<Memory>, compat: Compat, fixed: Option<Caller>) -> Self {
        Self {
            memory,
            compat,
            fixed,
        }
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

/// A tool's arguments deserialized, or an invalid-input failure naming what is wrong.
pub(crate) fn arguments<T: serde::de::DeserializeOwned>(
    arguments: Option<Map<String, Value>>,
) -> Result<T, Failure> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default())).map_err(|error| {
        Failure::invalid(
            "arguments",
            format!("the arguments do not fit the tool's schema: {error}"),
        )
    })
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
            Ok(caller) => match self.compat {
                Compat::Native => {
                    native::call(&self.memory, &caller, &request.name, request.arguments).await
                }
                Compat::ServerMemory => {
                    compat::call(&self.memory, &caller, &request.name, request.arguments).await
                }
            },
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

/// `agent-memory mcp`: serves MCP on standard input and output until the client closes it.
pub(crate) async fn run_stdio(settings: &Settings, args: McpArgs) -> Result<Outcome, Failure> {
    let memory = Arc::new(settings.open().await?);
    let server = MemoryServer::new(
        Arc::clone(&memory),
        args.compat,
        Some(Caller::Tenant(settings.namespace.clone())),
    );
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| Failure::internal(format!("starting the MCP session: {error}")))?;
    running
        .waiting()
        .await
        .map_err(|error| Failure::internal(format!("the MCP session ended: {error}")))?;
    memory.flush().await?;
    // Standard output belongs to the protocol: nothing more is printed on it.
    Ok(Outcome {
        json: Value::Null,
        text: String::new(),
    })
}
