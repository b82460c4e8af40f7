//! `agent-memory mcp`: the MCP server.

use crate::cli::McpArgs;
use crate::commands::{Outcome, Settings};
use crate::failure::Failure;

/// Serves MCP on standard input and output until the client closes it.
pub(crate) async fn run_stdio(_settings: &Settings, _args: McpArgs) -> Result<Outcome, Failure> {
    Err(Failure::internal("mcp is not built yet"))
}
