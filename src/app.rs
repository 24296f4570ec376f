//! The application: configuration and domain state behind one protocol-agnostic entry
//! point, `App::call(tool, arguments)`. The MCP server and the `manvault call` CLI both
//! go through it, so validation, dispatch and the per-call log line are the same for both.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use serde_json::{json, Value};

use crate::adaptive::Adaptive;
use crate::artifact::Rounds;
use crate::config::Config;
use crate::context::CallContext;
use crate::contract;
use crate::error::{ToolError, ToolResult};
use crate::manual::find::{FindSettings, Finder};
use crate::manual::ManualIndex;
use crate::memory::Memory;
use crate::paths::Root;
use crate::validate::InputValidators;
use crate::vault;
use crate::vault::find::VaultFinder;

pub struct App {
    pub config: Config,
    validators: InputValidators,
    /// Built by the first call that needs it (so `initialize` answers at once), then
    /// refreshed before every use so edits to manuals show without a restart.
    manuals: RwLock<Option<ManualIndex>>,
    /// Opened (and the folder created if missing) by the first vault call, then held for
    /// the life of the server; see `paths::Root` for why the descriptor is kept.
    vault: OnceLock<Root>,
    /// Search state: derived corpus, traces, synonyms.
    pub finder: Finder,
    /// Search statistics and the tuning of the Stage 4 thresholds (ADAPTIVE_*).
    pub adaptive: Adaptive,
    /// What the agent read from each vault file and what the previous audit rounds saw:
    /// the marginal gain of `vault_coverage`'s stop rule (see `artifact::rounds`).
    rounds: Mutex<Rounds>,
    /// `vault_find` traces (the vault itself is read afresh by every search).
    pub vault_finder: VaultFinder,
    /// The memory store, opened by the first memory call (like the vault root: a failure
    /// is not remembered).
    memory: OnceLock<Memory>,
}

impl App {
    pub fn new(config: Config) -> App {
        App {
            finder: Finder::new(FindSettings::from_config(&config)),
            adaptive: Adaptive::open(&config),
            vault_finder: VaultFinder::new(vault::find::FindSettings::from_config(&config)),
            config,
            validators: InputValidators::compile(),
            manuals: RwLock::new(None),
            vault: OnceLock::new(),
            rounds: Mutex::new(Rounds::default()),
            memory: OnceLock::new(),
        }
    }

    /// Validates and runs one tool call of the local actor; `None` when no tool has that
    /// name.
    pub fn call(&self, tool: &str, arguments: Value) -> Option<ToolResult<Value>> {
        self.call_as(&CallContext::local(), tool, arguments)
    }

    /// Validates and runs one tool call made by `context`'s actor; `None` when no tool
    /// has that name.
    pub fn call_as(
        &self,
        context: &CallContext,
        tool: &str,
        arguments: Value,
    ) -> Option<ToolResult<Value>> {
        let spec = contract::tool(tool)?;
        let started = Instant::now();
        let result = self
            .validators
            .check(tool, &arguments)
            .map_err(|error| match spec.domain {
                "memory" => crate::tools::memory::rejected(self, context, tool, error),
                _ => error,
            })
            .and_then(|()| {
                contract::dispatch(self, context, tool, arguments)
                    .expect("every listed tool is dispatched")
            });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match &result {
            Ok(_) => tracing::info!(tool, ok = true, elapsed_ms),
            Err(error) => tracing::warn!(tool, ok = false, elapsed_ms, code = error.code.as_str()),
        }
        Some(result)
    }

    /// Runs `query` on the manual index, first bringing it in line with the files.
    pub fn with_manuals<T>(
        &self,
        query: impl FnOnce(&ManualIndex) -> ToolResult<T>,
    ) -> ToolResult<T> {
        {
            let mut slot = self.manuals.write().unwrap_or_else(PoisonError::into_inner);
            match slot.as_mut() {
                Some(index) => {
                    index.refresh().map_err(manuals_unreadable)?;
                }
                None => {
                    *slot = Some(
                        ManualIndex::build(&self.config.manuals_root)
                            .map_err(manuals_unreadable)?,
                    )
                }
            }
        }
        let slot = self.manuals.read().unwrap_or_else(PoisonError::into_inner);
        query(slot.as_ref().expect("built above"))
    }
}

impl App {
    /// The vault root, opened on first use. A failure is not remembered, so a vault folder
    /// fixed by the operator works on the next call without a restart.
    pub fn vault(&self) -> ToolResult<&Root> {
        if let Some(root) = self.vault.get() {
            return Ok(root);
        }
        let root = vault::open_root(&self.config.vault_root)?;
        Ok(self.vault.get_or_init(|| root))
    }
}

impl App {
    /// The memory store, opened on first use; INTERNAL naming the setting at fault when
    /// it cannot be (the next call tries again).
    pub(crate) fn memory(&self) -> ToolResult<&Memory> {
        if let Some(memory) = self.memory.get() {
            return Ok(memory);
        }
        // The store and the audit log live under the vault by default: make sure it exists.
        self.vault().map_err(|error| {
            ToolError::memory(
                crate::error::MemoryCode::Internal,
                error.message,
                error.details.unwrap_or_default(),
            )
        })?;
        let memory = Memory::open(
            &self.config.memory,
            &self.config.vault_root,
            self.config.hard_max_chars as usize,
        )
        .map_err(|problem| {
            tracing::error!(problem, "the memory store cannot be opened");
            ToolError::memory(
                crate::error::MemoryCode::Internal,
                "the memory store cannot be opened; check MEMORY_DB_PATH",
                json!({ "problem": problem }),
            )
        })?;
        Ok(self.memory.get_or_init(|| memory))
    }
}

impl App {
    /// The stop rule's bookkeeping; see `artifact::rounds`.
    pub fn rounds(&self) -> MutexGuard<'_, Rounds> {
        self.rounds.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The manuals root itself cannot be read; the message names the setting, never the
/// server path.
fn manuals_unreadable(error: std::io::Error) -> ToolError {
    ToolError::not_found("MANUALS_ROOT cannot be read; check the server's configuration")
        .with_details(json!({ "setting": "MANUALS_ROOT", "error": error.kind().to_string() }))
}
