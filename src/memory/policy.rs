//! The memory policy: parsed from YAML, validated against the published schema
//! (`schemas/common/memory_policy.json`), compiled into what retrieval and the boundary
//! use, and kept append-only in the store (the newest revision is in force).
//!
//! `policy_version` is the document's declared `MAJOR.MINOR` with the revision number
//! appended (`0.1` applied as revision 3 is `0.1.3`), so every applied document has its
//! own version even when its author did not bump it, and versions sort by revision.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{json, Value};

use super::boundary::{Boundary, ClassRule, MemoryEscalation};
use crate::contract::types::{
    MemoryClassRule, MemoryKind, MemoryPolicy, MemoryPolicyVersion, MemoryScope, MemoryScopeRule,
};
use crate::error::{MemoryCode, ToolError};

const SCHEMA: &str = include_str!("../../schemas/common/memory_policy.json");

/// At most this many changes are listed by a dry run (the rest are counted).
pub(crate) const MAX_LISTED_CHANGES: usize = 50;

/// A scope's rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScopeRule {
    /// Lifetime of the scope's claims and longest life of an active context over it;
    /// `None` for `inf`.
    pub ttl_ms: Option<i64>,
    pub max_tokens: Option<u64>,
}

/// Ranking parameters, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Retrieval {
    pub alpha: f64,
    pub k_txt: usize,
    pub k_vec: usize,
    pub k_final: usize,
    pub min_score: f64,
    pub use_quality: bool,
    /// The policy's `recency_half_life_days` (default 30), reported with every ranking.
    pub recency_half_life_days: f64,
    /// Half-lives of fact, preference, task, policy_hint: the kind's own, else
    /// `recency_half_life_days` when the policy sets it, else 120, 90, 14, 365 days.
    half_life_days_by_kind: [f64; 4],
}

impl Retrieval {
    pub(crate) fn half_life_days(&self, kind: MemoryKind) -> f64 {
        let at = match kind {
            MemoryKind::Fact => 0,
            MemoryKind::Preference => 1,
            MemoryKind::Task => 2,
            MemoryKind::PolicyHint => 3,
        };
        self.half_life_days_by_kind[at]
    }
}

/// A policy in force (or about to be).
pub(crate) struct Policy {
    /// `policy_version`: declared MAJOR.MINOR and the revision.
    pub version: String,
    pub revision: i64,
    /// The parsed document, for dry-run diffs.
    pub document: Value,
    pub scopes: BTreeMap<MemoryScope, ScopeRule>,
    pub boundary: Boundary,
    pub retrieval: Retrieval,
}

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("the policy schema is JSON");
        jsonschema::validator_for(&schema).expect("the policy schema compiles")
    })
}

fn invalid(message: impl Into<String>, details: Value) -> ToolError {
    ToolError::memory(MemoryCode::InvalidPolicy, message, details)
}

/// Milliseconds of a `ttl` the schema accepted (`7d`, `90m`, `inf`).
fn ttl_ms(ttl: &str) -> Option<i64> {
    if ttl == "inf" {
        return None;
    }
    let (number, unit) = ttl.split_at(ttl.len() - 1);
    let seconds_per_unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => 86_400,
    };
    number
        .parse::<i64>()
        .ok()
        .map(|n| n * seconds_per_unit * 1000)
}

/// The declared `MAJOR.MINOR` (a YAML number `0.1` reads as 0.1; 1.0 reads as `1.0`).
fn declared_version(version: &MemoryPolicyVersion) -> String {
    match version {
        MemoryPolicyVersion::String(text) => text.clone(),
        MemoryPolicyVersion::Number(number) if number.fract() == 0.0 => format!("{number:.1}"),
        MemoryPolicyVersion::Number(number) => number.to_string(),
    }
}

fn class_rule(rule: &MemoryClassRule) -> ClassRule {
    ClassRule {
        allow: rule.allow.clone(),
        redact: rule.redact.clone(),
        escalation: rule.escalation.unwrap_or(MemoryEscalation::None),
    }
}

impl Policy {
    /// Parses and validates `yaml` as revision `revision`; INVALID_POLICY names what is
    /// wrong (the YAML error, or each schema violation's JSON pointer).
    pub(crate) fn parse(yaml: &str, revision: i64) -> Result<Policy, ToolError> {
        let document: Value = serde_saphyr::from_str(yaml).map_err(|error| {
            invalid(
                "the policy is not valid YAML",
                json!({ "yaml_error": error.to_string() }),
            )
        })?;
        let violations = crate::validate::violations(validator(), &document);
        if let Some(first) = crate::validate::first_violation(&violations) {
            return Err(invalid(
                format!("the policy does not fit schemas/common/memory_policy.json: {first}"),
                json!({ "violations": violations }),
            ));
        }
        let typed: MemoryPolicy = serde_json::from_value(document.clone()).map_err(|error| {
            invalid(
                format!("the policy does not fit its schema: {error}"),
                json!({}),
            )
        })?;
        let classes = &typed.boundary_classes;
        let patterns: BTreeMap<String, String> = typed
            .redact_patterns
            .iter()
            .map(|(name, source)| (name.clone(), source.clone()))
            .collect();
        let boundary = Boundary::new(
            [
                class_rule(&classes.public),
                class_rule(&classes.internal),
                class_rule(&classes.pii),
                class_rule(&classes.secret),
            ],
            &patterns,
        )
        .map_err(|problem| invalid(problem, json!({ "pointer": "/boundary_classes" })))?;
        let scope_rule = |rule: &MemoryScopeRule| ScopeRule {
            ttl_ms: ttl_ms(&rule.ttl),
            max_tokens: rule.max_tokens,
        };
        let scopes = [
            (MemoryScope::Session, &typed.scopes.session),
            (MemoryScope::Project, &typed.scopes.project),
            (MemoryScope::Principle, &typed.scopes.principle),
        ]
        .into_iter()
        .filter_map(|(scope, rule)| rule.as_ref().map(|rule| (scope, scope_rule(rule))))
        .collect();
        let retrieval = typed.retrieval.unwrap_or_default();
        let hybrid = retrieval.hybrid.unwrap_or_default();
        let rerank = retrieval.rerank.unwrap_or_default();
        let by_kind = rerank
            .recency
            .and_then(|recency| recency.half_life_days_by_kind)
            .unwrap_or_default();
        let defaults_by_kind = [120.0, 90.0, 14.0, 365.0];
        let given_by_kind = [
            by_kind.fact,
            by_kind.preference,
            by_kind.task,
            by_kind.policy_hint,
        ];
        let retrieval = Retrieval {
            alpha: hybrid.alpha.unwrap_or(0.65),
            k_txt: hybrid.k_txt.unwrap_or(48) as usize,
            k_vec: hybrid.k_vec.unwrap_or(96) as usize,
            k_final: hybrid.k_final.unwrap_or(12) as usize,
            min_score: hybrid.min_score.unwrap_or(0.0),
            use_quality: rerank.use_quality.unwrap_or(false),
            recency_half_life_days: rerank.recency_half_life_days.unwrap_or(30.0),
            half_life_days_by_kind: std::array::from_fn(|at| {
                given_by_kind[at]
                    .or(rerank.recency_half_life_days)
                    .unwrap_or(defaults_by_kind[at])
            }),
        };
        Ok(Policy {
            version: format!("{}.{revision}", declared_version(&typed.version)),
            revision,
            document,
            scopes,
            boundary,
            retrieval,
        })
    }

    /// The rules of `scope`, or INVALID_SCOPE naming the scopes the policy serves.
    pub(crate) fn scope_rule(&self, scope: MemoryScope) -> Result<ScopeRule, ToolError> {
        self.scopes.get(&scope).copied().ok_or_else(|| {
            ToolError::memory(
                MemoryCode::InvalidScope,
                format!("the policy in force defines no {scope} scope"),
                json!({ "scope": scope.to_string(), "accepted": self.scopes.keys().map(ToString::to_string).collect::<Vec<_>>() }),
            )
        })
    }
}

/// One difference between two documents.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub pointer: String,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Every leaf that differs between `before` and `after` (objects are compared key by
/// key, anything else as a whole), in key order.
pub(crate) fn changes(before: Option<&Value>, after: &Value) -> Vec<Change> {
    fn walk(pointer: String, before: Option<&Value>, after: Option<&Value>, out: &mut Vec<Change>) {
        match (before, after) {
            (Some(Value::Object(old)), Some(Value::Object(new))) => {
                let keys: std::collections::BTreeSet<&String> =
                    old.keys().chain(new.keys()).collect();
                for key in keys {
                    let escaped = key.replace('~', "~0").replace('/', "~1");
                    walk(
                        format!("{pointer}/{escaped}"),
                        old.get(key),
                        new.get(key),
                        out,
                    );
                }
            }
            (old, new) if old != new => out.push(Change {
                pointer: if pointer.is_empty() {
                    "/".into()
                } else {
                    pointer
                },
                before: old.cloned(),
                after: new.cloned(),
            }),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(String::new(), before, Some(after), &mut out);
    out
}

/// The newest applied policy's revision and YAML.
pub(crate) fn latest(connection: &Connection) -> rusqlite::Result<Option<(i64, String)>> {
    connection
        .query_row(
            "SELECT revision, yaml FROM policies ORDER BY revision DESC LIMIT 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
}

/// The newest revision number (0 when none was applied): a cheap check of whether the
/// policy this process holds is still the one in force.
pub(crate) fn latest_revision(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row(
        "SELECT coalesce(max(revision), 0) FROM policies",
        [],
        |row| row.get(0),
    )
}

/// What is recorded with a revision besides the document.
pub(crate) struct Applied<'a> {
    pub yaml: &'a str,
    pub actor: &'a str,
    pub approver: Option<&'a str>,
    pub signature: Option<&'a str>,
    pub now_ms: i64,
}

/// Appends `policy` (parsed as the next revision) inside the caller's transaction.
pub(crate) fn append(
    connection: &Connection,
    policy: &Policy,
    applied: &Applied,
) -> rusqlite::Result<()> {
    connection.execute(
        "INSERT INTO policies (revision, version, yaml, document, applied_ms, actor, approver, signature) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            policy.revision,
            policy.version,
            applied.yaml,
            policy.document.to_string(),
            applied.now_ms,
            applied.actor,
            applied.approver,
            applied.signature,
        ],
    )?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::ErrorCode;

    /// The seed's example policy (pce_memory_tools.md §2.6), verbatim.
    pub(crate) const SEED_POLICY: &str = "\n# policy with retrieval parameters\nversion: 0.1\nscopes:\n  session:   { ttl: '7d',    max_tokens: 20000 }\n  project:   { ttl: '120d',  max_tokens: 50000 }\n  principle: { ttl: 'inf',   max_tokens: 100000 }\nboundary_classes:\n  public:   { allow: ['*'] }\n  internal: { allow: ['answer:task','tool:*'] }\n  pii:      { allow: ['tool:contact-lookup'], redact: ['email','phone'], escalation: 'human_review' }\n  secret:   { allow: [], escalation: 'deny' }\nretrieval:\n  hybrid:\n    alpha: 0.65\n    k_txt: 48\n    k_vec: 96\n    k_final: 12\n  rerank:\n    use_quality: false\n    recency_half_life_days: 30\n    recency:\n      half_life_days_by_kind:\n        fact: 120\n        task: 14\n        preference: 90\n        policy_hint: 365\n";

    #[test]
    fn the_seed_example_validates() {
        let policy = Policy::parse(SEED_POLICY, 3).unwrap();
        assert_eq!(policy.version, "0.1.3");
        assert_eq!(
            policy.scopes[&MemoryScope::Session].ttl_ms,
            Some(7 * 86_400_000)
        );
        assert_eq!(policy.scopes[&MemoryScope::Principle].ttl_ms, None);
        assert_eq!(policy.retrieval.k_txt, 48);
        assert_eq!(policy.retrieval.half_life_days(MemoryKind::Task), 14.0);
    }

    #[test]
    fn errors_point_at_the_problem() {
        let error = Policy::parse("version: [", 1).err().unwrap();
        assert_eq!(error.code, ErrorCode::Memory(MemoryCode::InvalidPolicy));
        assert!(error.details.unwrap()["yaml_error"].is_string());
        let wrong_ttl = SEED_POLICY.replace("'7d'", "'7 days'");
        let error = Policy::parse(&wrong_ttl, 1).err().unwrap();
        assert_eq!(
            error.details.unwrap()["violations"][0]["pointer"],
            "/scopes/session/ttl"
        );
        let typo = SEED_POLICY.replace("half_life_days_by_kind", "half_life_days_by_lind");
        assert!(Policy::parse(&typo, 1).is_err());
        let unknown_rule = SEED_POLICY.replace("'email','phone'", "'email','ssn'");
        let error = Policy::parse(&unknown_rule, 1).err().unwrap();
        assert!(error.message.contains("ssn"), "{}", error.message);
    }

    #[test]
    fn versions_are_declared_plus_revision() {
        let minimal = "version: '1.10'\nscopes: {project: {ttl: inf}}\nboundary_classes: {public: {allow: ['*']}, internal: {allow: []}, pii: {allow: []}, secret: {allow: []}}\n";
        let policy = Policy::parse(minimal, 7).unwrap();
        assert_eq!(policy.version, "1.10.7");
        assert_eq!(policy.retrieval.alpha, 0.65);
        assert_eq!(policy.retrieval.half_life_days(MemoryKind::Fact), 120.0);
        assert!(policy.scope_rule(MemoryScope::Session).is_err());
        let whole = Policy::parse(&minimal.replace("'1.10'", "2"), 1).unwrap();
        assert_eq!(whole.version, "2.0.1");
    }

    #[test]
    fn changes_list_leaves() {
        let before = json!({"a": 1, "b": {"c": 2, "d": [1]}});
        let after = json!({"a": 1, "b": {"c": 3, "e": true}});
        let found = changes(Some(&before), &after);
        let pointers: Vec<&str> = found.iter().map(|c| c.pointer.as_str()).collect();
        assert_eq!(pointers, ["/b/c", "/b/d", "/b/e"]);
        assert_eq!(found[1].after, None);
        assert_eq!(changes(None, &after)[0].pointer, "/");
    }
}
