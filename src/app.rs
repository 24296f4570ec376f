//! The application: configuration and domain state behind one protocol-agnostic entry
//! point, `App::call(tool, arguments)`. The MCP server and the `manvault call` CLI both
//! go through it, so validation, dispatch and the per-call log line are the same for both.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use serde_json::{json, Value};

use crate::adaptive::Adaptive;
use crate::artifact::Rounds;
use crate::call::CallContext;
use crate::config::Config;
use crate::contract;
use crate::error::{ToolError, ToolResult};
use crate::manual::find::{FindSettings, Finder};
use crate::manual::ManualIndex;
use crate::paths::{Root, STALE_TEMP_AGE};
use crate::validate::InputValidators;
use crate::vault;
use crate::vault::find::VaultFinder;

pub struct App {
    pub config: Config,
    validators: InputValidators,
    /// Built by the first call that needs it (so `initialize` answers at once), then
    /// refreshed before every use so edits to manuals show without a restart.
    manuals: RwLock<Option<ManualIndex>>,
    /// Opened by the first vault call, then held for the life of the server (see
    /// `paths::Root` for why the descriptor is kept); `workspace::prepare` made the folder.
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
}

impl App {
    /// The application over `config`. Starts the sweep of temporary files that killed
    /// writers left in the vault, on its own thread so that nothing waits for the walk.
    pub fn new(config: Config) -> App {
        sweep_vault_in_background(&config);
        App {
            finder: Finder::new(FindSettings::from_config(&config)),
            adaptive: Adaptive::open(&config),
            vault_finder: VaultFinder::new(vault::find::FindSettings::from_config(&config)),
            config,
            validators: InputValidators::compile(),
            manuals: RwLock::new(None),
            vault: OnceLock::new(),
            rounds: Mutex::new(Rounds::default()),
        }
    }

    /// Validates and runs one tool call without credentials (the CLI, benchmarks, tests);
    /// `None` when no tool has that name.
    pub fn call(&self, tool: &str, arguments: Value) -> Option<ToolResult<Value>> {
        self.call_with(tool, arguments, &CallContext::local())
    }

    /// Validates and runs one tool call made in `context`; `None` when no tool has that
    /// name. The log line names the actor.
    pub fn call_with(
        &self,
        tool: &str,
        arguments: Value,
        context: &CallContext,
    ) -> Option<ToolResult<Value>> {
        contract::tool(tool)?;
        let started = Instant::now();
        let result = self.validators.check(tool, &arguments).and_then(|()| {
            contract::dispatch(self, tool, arguments, context)
                .expect("every listed tool is dispatched")
        });
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let actor = context.actor();
        match &result {
            Ok(_) => tracing::info!(tool, actor, ok = true, elapsed_ms),
            Err(_) if context.is_cancelled() => {
                tracing::info!(tool, actor, ok = false, cancelled = true, elapsed_ms)
            }
            Err(error) => {
                tracing::warn!(
                    tool,
                    actor,
                    ok = false,
                    elapsed_ms,
                    code = error.code.as_str()
                )
            }
        }
        Some(result)
    }

    /// Runs a tool on behalf of the server's own features (resources, completion) and
    /// reads its answer as the tool's typed output, so those features go through exactly
    /// the validation, bounds and log line of a client's call.
    pub(crate) fn call_for<O: serde::de::DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
        context: &CallContext,
    ) -> ToolResult<O> {
        let value = self
            .call_with(tool, arguments, context)
            .unwrap_or_else(|| panic!("{tool} is a served tool"))?;
        Ok(serde_json::from_value(value).expect("a tool's answer matches its output schema"))
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

/// Removes the writers' leftovers (`paths::sweep`) from the vault, if it exists yet, on a
/// thread of its own; one log line says what was removed.
fn sweep_vault_in_background(config: &Config) {
    let vault_root = config.vault_root.clone();
    let spawned = std::thread::Builder::new()
        .name("vault-sweep".into())
        .spawn(move || {
            let Ok(root) = Root::open(&vault_root) else {
                return;
            };
            let swept = root.sweep_temp_files(std::time::SystemTime::now(), STALE_TEMP_AGE);
            if swept.removed > 0 {
                tracing::info!(
                    removed = swept.removed,
                    removed_bytes = swept.removed_bytes,
                    "removed temporary files left by interrupted writes"
                );
            }
        });
    if let Err(error) = spawned {
        tracing::warn!(error = %error, "could not start the sweep of temporary files");
    }
}
