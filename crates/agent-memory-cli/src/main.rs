//! `agent-memory`: long-term memory for LLM agents from the shell, over HTTP and over MCP.
//!
//! One binary, three faces: commands (`remember`, `recall`, `context`, `forget`, `history`,
//! `retract`, `supersede`, `consolidate`, `conflicts`, `stats`, `maintain`, `export`,
//! `import`), an HTTP API (`serve`, with an OpenAPI document and the MCP server on `/mcp`) and an MCP server on standard input and output (`mcp`). The store
//! is one URL or path (`--store`): a SQLite file (the default, `./agent-memory.db`),
//! `postgres://…`, or `memory:`. Exit codes are listed in [`failure::ExitCode`].

mod backend;
mod browse;
mod cli;
mod commands;
mod config;
mod conversations;
mod cursor;
mod entities;
mod exchange;
mod failure;
mod mcp;
mod observations;
mod pages;
mod serve;
mod views;

use std::io::Write;

use clap::Parser;

use crate::cli::Cli;
use crate::failure::{ExitCode, Failure};

fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let json = std::env::args_os().any(|arg| arg == "--json");
            if !error.use_stderr() {
                // Help and version, on stdout; with --json, as the one JSON document it holds.
                if json {
                    let text = error.render().to_string();
                    let kind = if error.kind() == clap::error::ErrorKind::DisplayVersion {
                        "version"
                    } else {
                        "help"
                    };
                    let _ = writeln!(
                        std::io::stdout(),
                        "{}",
                        serde_json::json!({ kind: text.trim_end() })
                    );
                } else {
                    let _ = error.print();
                }
                return ExitCode::Ok.into();
            }
            if json {
                let message = error.render().to_string();
                let message = message.trim().trim_start_matches("error: ");
                Failure::new(failure::ErrorKind::Usage, message).report(true);
            } else {
                let _ = error.print();
            }
            return ExitCode::Usage.into();
        }
    };
    let json = cli.json;
    init_logs(match cli.command {
        cli::Command::Serve(_) => tracing::Level::INFO,
        _ => tracing::Level::WARN,
    });
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::internal(format!("starting the async runtime: {error}")))
        .and_then(|runtime| {
            let outcome = runtime.block_on(commands::run(cli));
            // Every command awaits what it needs before it returns. What may still run is a
            // read of standard input that never ends (the MCP server's, when its session
            // failed to start): dropping the runtime would wait for it, holding the exit
            // until the client closed the pipe.
            runtime.shutdown_timeout(std::time::Duration::from_millis(200));
            outcome
        });
    match outcome {
        Ok(outcome) => {
            let mut stdout = std::io::stdout().lock();
            let written = if outcome.json.is_null() && outcome.text.is_empty() {
                // The MCP server: standard output carried the protocol.
                Ok(())
            } else if json {
                serde_json::to_writer(&mut stdout, &outcome.json)
                    .map_err(std::io::Error::from)
                    .and_then(|()| writeln!(stdout))
            } else if outcome.text.is_empty() {
                Ok(())
            } else {
                writeln!(stdout, "{}", outcome.text.trim_end_matches('\n'))
            };
            match written.and_then(|()| stdout.flush()) {
                Ok(()) => ExitCode::Ok.into(),
                // A closed pipe (`agent-memory recall x | head -1`) is not worth a message.
                Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::Ok.into(),
                Err(error) => {
                    // Not a fault of the program: the output could not be taken.
                    let failure = Failure::new(
                        failure::ErrorKind::Storage,
                        format!("writing the result: {error}"),
                    )
                    .with_hint("check where the output goes: a full disk, a closed file");
                    failure.report(json);
                    failure.exit_code().into()
                }
            }
        }
        Err(failure) => {
            failure.report(json);
            failure.exit_code().into()
        }
    }
}

/// Logs on standard error, at the level `AGENT_MEMORY_LOG` names (`error`, `warn`, `info`,
/// `debug`, `trace`), else `default`: `info` for `serve` (a line per start, stop and
/// failed request), `warn` for the other commands, which print only what went wrong
/// beside their answer (an eviction pass that failed after a write, a recall that went on
/// without its embedding service). Standard output stays the command's, or the MCP
/// protocol's.
fn init_logs(default: tracing::Level) {
    let level = std::env::var("AGENT_MEMORY_LOG")
        .ok()
        .and_then(|level| level.parse::<tracing::Level>().ok())
        .unwrap_or(default);
    // A log line that cannot be written is dropped: by default the subscriber reports the
    // failure with `eprintln!`, which panics when stderr is closed (a log reader that
    // died), inside the request's task, after its write, so the caller got no answer for
    // a write that was stored.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_max_level(level)
        .with_target(false)
        .try_init();
}
