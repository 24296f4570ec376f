//! Long-term memory for agents: the pce-memory tools (`pce_memory_tools.md`) served from
//! this binary. Claims (facts, preferences, tasks, policy hints) are stored with their
//! provenance, recalled by hybrid retrieval under a boundary policy that filters before
//! ranking and redacts before sending, rated by feedback, and every call is audited.
//!
//! One `Memory` per server process, opened on the first memory call; several processes
//! may share one database (see `store`). Everything here is protocol-free: the tool layer
//! (`tools/memory.rs`) converts requests and answers, and passes in who is calling and
//! when (`Call`), so time is always a parameter.
//!
//! Units: `store` (SQLite, migrations, transactions), `claims` (rows), `units` and
//! `vector` (what text and vector retrieval match on; the embeddings provider),
//! `backfill` (the index kept in step with the store, missing vectors embedded in the
//! background), `rank` (candidates, fusion, g),
//! `contexts` (active contexts and cursors), `boundary` and `policy`, `recall`
//! (activate and search), `ingest` (upsert), `feedback`, `admin` (policy apply, state),
//! `rate`, `audit`, `hash`.

mod admin;
mod audit;
mod backfill;
pub(crate) mod boundary;
mod claims;
mod contexts;
mod feedback;
pub(crate) mod hash;
mod ingest;
pub(crate) mod policy;
pub(crate) mod rank;
mod rate;
mod recall;
mod store;
#[cfg(test)]
mod tests;
pub(crate) mod units;
pub(crate) mod vector;

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::json;

use crate::config::{MemoryConfig, Secret};
use crate::contract::types::MemoryScope;
use crate::error::{MemoryCode, ToolError, ToolResult};
use crate::paths::locate_file;

pub(crate) use admin::ApplyRequest;
use audit::{AuditLog, Facts, Record};
pub(crate) use claims::UpsertRequest;
use policy::Policy;
use rate::RateLimiter;
pub(crate) use recall::{Page, PageItem, RecallRequest};
use store::Store;
use vector::{ClaimIndex, Vectors};
pub(crate) use vector::{Provider, VectorNote};

/// One memory call in progress: who, when, and what the audit line will say.
pub(crate) struct Call<'a> {
    pub actor: &'a str,
    pub now_ms: i64,
    pub request_id: String,
    pub facts: Facts,
}

impl<'a> Call<'a> {
    pub(crate) fn new(actor: &'a str, now_ms: i64) -> Call<'a> {
        Call {
            actor,
            now_ms,
            request_id: fresh_id("req"),
            facts: Facts::default(),
        }
    }
}

/// `<prefix>_<16 hex>`, unique across processes and restarts in practice (process id,
/// clock and a counter, hashed).
pub(crate) fn fresh_id(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let seed = format!(
        "{}.{nanos}.{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    format!("{prefix}_{}", &hash::sha256_hex(seed.as_bytes())[..16])
}

/// Settings the operations read.
struct Settings {
    context_max_ttl_ms: i64,
    feedback_bucket_ms: i64,
    policy_secret: Option<Secret>,
    busy_timeout_ms: u64,
    /// Most characters of claim text in one page (HARD_MAX_CHARS).
    max_page_chars: usize,
}

/// The policy in force as this process last read it, checked against the store's newest
/// revision on every use (another call or process may have applied one).
#[derive(Default)]
pub(crate) struct PolicyInForce {
    held: Mutex<Option<Arc<Policy>>>,
}

impl PolicyInForce {
    pub(crate) fn get(&self, store: &Store) -> ToolResult<Option<Arc<Policy>>> {
        let revision = store.read(|c| policy::latest_revision(c).map_err(store::internal))?;
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if revision == 0 {
            return Ok(None);
        }
        if held
            .as_ref()
            .is_some_and(|policy| policy.revision == revision)
        {
            return Ok(held.clone());
        }
        let (revision, yaml) = store
            .read(|c| policy::latest(c).map_err(store::internal))?
            .expect("a revision exists");
        let parsed = Policy::parse(&yaml, revision).map_err(|error| {
            ToolError::memory(
                MemoryCode::Internal,
                "the policy in force no longer parses; apply a new one",
                json!({ "revision": revision, "problem": error.message }),
            )
        })?;
        *held = Some(Arc::new(parsed));
        Ok(held.clone())
    }
}

/// The memory of one server process.
pub(crate) struct Memory {
    store: Arc<Store>,
    /// The embeddings provider and the index of filter fields and vectors of every claim
    /// (grown from the store before each ranking), shared with the backfill worker.
    vectors: Arc<Vectors>,
    policy: Arc<PolicyInForce>,
    rate: RateLimiter,
    audit: AuditLog,
    settings: Settings,
}

/// The worker ends with the memory (it holds the store until its current batch is done).
impl Drop for Memory {
    fn drop(&mut self) {
        self.vectors.stop();
    }
}

impl Memory {
    /// Opens the store (creating the database and its folder through `paths`), applies
    /// MEMORY_POLICY_PATH when it exists and differs from the policy in force, and starts
    /// the worker that embeds claims missing a vector of `provider`'s model.
    /// The error names the setting at fault, never a server path.
    pub(crate) fn open(
        config: &MemoryConfig,
        provider: Provider,
        vault_root: &Path,
        max_page_chars: usize,
    ) -> Result<Memory, String> {
        let database = locate_file(&config.db_path, vault_root, "MEMORY_DB_PATH")?;
        match database.root.stat(&database.file) {
            Ok(_) => {}
            Err(error) if error.code == crate::error::ErrorCode::NotFound => {
                // An empty file is an empty SQLite database; created exclusively and
                // without following links, then opened by SQLite with NOFOLLOW.
                match database.root.create_new(&database.file, b"", true) {
                    Err(error) if error.code != crate::error::ErrorCode::Conflict => {
                        return Err(format!(
                            "MEMORY_DB_PATH cannot be created: {}",
                            error.message
                        ))
                    }
                    _ => {}
                }
            }
            Err(error) => return Err(format!("MEMORY_DB_PATH: {}", error.message)),
        }
        let folder = std::fs::canonicalize(&database.folder)
            .map_err(|error| format!("the folder of MEMORY_DB_PATH: {}", error.kind()))?;
        let store = Store::open(&folder.join(database.file.as_str()), config.busy_timeout_ms)
            .map_err(|error| {
                format!("MEMORY_DB_PATH cannot be opened as a memory store: {error}")
            })?;
        let audit = locate_file(&config.audit_path, vault_root, "MEMORY_AUDIT_PATH")?;
        let memory = Memory {
            store: Arc::new(store),
            vectors: Arc::new(Vectors::new(provider)),
            policy: Arc::new(PolicyInForce::default()),
            rate: RateLimiter::new(config.rate_burst, config.rate_per_sec),
            audit: AuditLog::new(audit.root, audit.file),
            settings: Settings {
                context_max_ttl_ms: (config.context_max_ttl_sec * 1000) as i64,
                feedback_bucket_ms: (config.feedback_bucket_sec * 1000) as i64,
                policy_secret: config.policy_secret.clone(),
                busy_timeout_ms: config.busy_timeout_ms,
                max_page_chars,
            },
        };
        memory.apply_policy_file(&config.policy_path);
        backfill::start(
            Arc::clone(&memory.store),
            Arc::clone(&memory.policy),
            Arc::clone(&memory.vectors),
        );
        Ok(memory)
    }

    /// The policy in force, re-read when another call or process applied a newer one.
    pub(crate) fn current_policy(&self) -> ToolResult<Option<Arc<Policy>>> {
        self.policy.get(&self.store)
    }

    /// The policy in force, or POLICY_MISSING (fail-closed).
    pub(crate) fn policy(&self) -> ToolResult<Arc<Policy>> {
        self.current_policy()?.ok_or_else(|| {
            ToolError::memory(
                MemoryCode::PolicyMissing,
                "no memory policy is applied; every memory tool but pce_memory_policy_apply and pce_memory_state refuses until one is",
                json!({ "hint": "call pce_memory_policy_apply, or put the policy at MEMORY_POLICY_PATH and restart" }),
            )
        })
    }

    /// Takes a token from the caller's bucket, or RATE_LIMIT with `retry_after_s`.
    pub(crate) fn admit(&self, call: &Call) -> ToolResult<()> {
        self.rate.take(call.actor, call.now_ms).map_err(|refused| {
            ToolError::memory(
                MemoryCode::RateLimit,
                format!("too many memory calls from {}; retry after {} s", call.actor, refused.retry_after_s),
                json!({ "retry_after_s": refused.retry_after_s, "limit": refused.limit, "remaining": 0 }),
            )
        })
    }

    /// Writes the audit line of a finished call (`code` of its error, if it failed).
    pub(crate) fn finish(&self, call: &Call, tool: &str, code: Option<&str>) {
        let record = Record {
            ts: crate::clock::rfc3339_millis(call.now_ms),
            request_id: &call.request_id,
            actor: call.actor,
            tool,
            ok: code.is_none(),
            code,
            facts: &call.facts,
        };
        if let Err(error) = self.audit.append(&record) {
            tracing::error!(
                code = error.code.as_str(),
                tool,
                "memory audit: the record could not be written"
            );
        }
    }

    /// The index brought up to the store; wakes the worker when claims lack vectors.
    fn current_index(&self) -> ToolResult<MutexGuard<'_, ClaimIndex>> {
        let mut index = self.vectors.index();
        backfill::refresh(&self.store, &mut index)?;
        if index.pending() > 0 {
            self.vectors.nudge();
        }
        Ok(index)
    }

    /// The scopes a request names (all the policy serves when it names none), each one the
    /// policy must define.
    fn scopes(
        &self,
        policy: &Policy,
        requested: Option<&[MemoryScope]>,
    ) -> ToolResult<Vec<MemoryScope>> {
        match requested {
            None => Ok(policy.scopes.keys().copied().collect()),
            Some(scopes) => {
                for scope in scopes {
                    policy.scope_rule(*scope)?;
                }
                Ok(scopes.to_vec())
            }
        }
    }
}
