//! Drives the built `agent-memory` binary: the commands on a temporary SQLite file, the HTTP
//! API of `serve`, and the MCP server of `mcp`.

mod cli;
mod conversations;
mod embeddings;
mod facts;
mod http;
mod mcp;
mod support;
