//! The application: configuration and domain state behind one protocol-agnostic entry
//! point, `App::call(tool, arguments)`. The MCP server and the `manvault call` CLI both
//! go through it, so validation, dispatch and the per-call log line are the same for both.

use std::time::Instant;

use serde_json::Value;

use crate::config::Config;
use crate::contract;
use crate::error::ToolResult;
use crate::manual::index::ManualIndex;
use crate::validate::InputValidators;

pub struct App {
    pub config: Config,
    validators: InputValidators,
    pub manuals: ManualIndex,
}

impl App {
    /// Builds the application; the manual index is loaded lazily by the first call that
    /// needs it so that the server answers `initialize` at once.
    pub fn new(config: Config) -> App {
        let manuals = ManualIndex::new(config.manuals_root.clone());
        App {
            config,
            validators: InputValidators::compile(),
            manuals,
        }
    }

    /// Validates and runs one tool call; `None` when no tool has that name.
    pub fn call(&self, tool: &str, arguments: Value) -> Option<ToolResult<Value>> {
        contract::tool(tool)?;
        let started = Instant::now();
        let result = self.validators.check(tool, &arguments).and_then(|()| {
            contract::dispatch(self, tool, arguments).expect("every listed tool is dispatched")
        });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(_) => tracing::info!(tool, ok = true, elapsed_ms),
            Err(error) => tracing::warn!(tool, ok = false, elapsed_ms, code = error.code.as_str()),
        }
        Some(result)
    }
}
