//! `agent-memory serve`: the HTTP API.

use crate::cli::ServeArgs;
use crate::commands::{Outcome, Settings};
use crate::failure::Failure;

/// Serves the HTTP API until interrupted.
pub(crate) async fn run(_settings: &Settings, _args: ServeArgs) -> Result<Outcome, Failure> {
    Err(Failure::internal("serve is not built yet"))
}
