//! The boundary: which claims a purpose may receive, and what is masked before any text
//! leaves the server.
//!
//! Three rules, in this order of precedence (deny > redact > allow):
//! - **deny**: secret claims are never returned; content matching a redact rule of the
//!   secret class (or of any class with `escalation: deny`) is refused wherever it
//!   appears.
//! - **redact**: every match of a redact rule any class lists (`email`, `phone`, or a
//!   policy pattern) is replaced by `[REDACTED:<rule>]` in every answer, whatever the
//!   purpose; the reference redacted only when the request's tags reached the pii class,
//!   so an email went out as it was under `answer:task`.
//! - **allow**: a claim of class C reaches a request whose tags match C's allow list:
//!   `*` matches every tag, a trailing `*` a prefix. Wildcards count on the policy side
//!   only (the reference also expanded the request's `tool:*`, which unlocked
//!   `tool:contact-lookup`). A request without tags reaches only classes allowing `*`.
//!
//! Patterns run over the shared normalisation of the text (NFKC, lowercase, numerals), so
//! full-width digits and letters are caught too; the replaced ranges map back to the
//! original text.

use std::ops::Range;

use regex::{Regex, RegexBuilder};

use crate::contract::types::MemoryBoundaryClass;
use crate::text::normalize::normalize;

/// The classes a request may ever reach, in the order they are listed in answers.
pub(crate) const CLASSES: [MemoryBoundaryClass; 4] = [
    MemoryBoundaryClass::Public,
    MemoryBoundaryClass::Internal,
    MemoryBoundaryClass::Pii,
    MemoryBoundaryClass::Secret,
];

/// Built-in redact rules, matched against normalised (lowercased) text.
const BUILT_IN_RULES: [(&str, &str); 2] = [
    (
        "email",
        r"[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}",
    ),
    (
        "phone",
        r"(?:\+[0-9]{1,3}[- ]?)?(?:\(\b[0-9]{1,4}\)|\b0?[0-9]{1,4})[- ][0-9]{1,4}[- ][0-9]{3,4}\b|\b0[0-9]{9,10}\b|\+[0-9]{10,14}\b",
    ),
];

/// Compiled size limit for one policy pattern: ample for any sensible rule, and a pattern
/// that would explode is refused when the policy is applied, not at query time.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// What detected content of a class needs: the policy schema's `MemoryEscalation`.
pub(crate) use crate::contract::types::MemoryEscalation;

/// One class's rules as the policy states them.
#[derive(Debug, Clone)]
pub(crate) struct ClassRule {
    pub allow: Vec<String>,
    pub redact: Vec<String>,
    pub escalation: MemoryEscalation,
}

struct RedactRule {
    name: String,
    pattern: Regex,
    /// A match refuses the content (a rule of the secret class or of a deny class).
    denies: bool,
    /// A match needs human review (a rule of a class with that escalation).
    needs_review: bool,
}

/// The boundary rules of one policy, compiled.
pub(crate) struct Boundary {
    /// Rules of public, internal, pii, secret, in [`CLASSES`] order.
    classes: [ClassRule; 4],
    rules: Vec<RedactRule>,
}

/// What scanning a text found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Redaction {
    /// The text with every match replaced.
    pub text: String,
    /// Matches replaced, per rule, in rule order.
    pub counts: Vec<(String, usize)>,
    /// Rules whose matches refuse the content.
    pub denied_by: Vec<String>,
    /// Whether a match belongs to a class that asks for human review.
    pub needs_review: bool,
}

impl Redaction {
    pub(crate) fn total(&self) -> usize {
        self.counts.iter().map(|(_, count)| count).sum()
    }
}

/// Whether the policy's allow entry `entry` admits the requested tag `tag`.
pub(crate) fn tag_admits(entry: &str, tag: &str) -> bool {
    entry == "*"
        || entry == tag
        || entry
            .strip_suffix('*')
            .is_some_and(|prefix| tag.starts_with(prefix))
}

impl Boundary {
    /// Compiles the class rules (public, internal, pii, secret) and the policy's named
    /// patterns; the error names the offending rule.
    pub(crate) fn new(
        classes: [ClassRule; 4],
        patterns: &std::collections::BTreeMap<String, String>,
    ) -> Result<Boundary, String> {
        let mut rules: Vec<RedactRule> = Vec::new();
        for (at, class) in classes.iter().enumerate() {
            let denies = CLASSES[at] == MemoryBoundaryClass::Secret
                || class.escalation == MemoryEscalation::Deny;
            for name in &class.redact {
                let rule = match rules.iter_mut().find(|rule| &rule.name == name) {
                    Some(rule) => rule,
                    None => {
                        let source = BUILT_IN_RULES
                            .iter()
                            .find(|(built_in, _)| built_in == name)
                            .map(|(_, source)| source.to_string())
                            .or_else(|| patterns.get(name).cloned())
                            .ok_or_else(|| {
                                format!("redact rule {name:?} is neither email, phone nor a name under redact_patterns")
                            })?;
                        let pattern = RegexBuilder::new(&source)
                            .size_limit(PATTERN_SIZE_LIMIT)
                            .build()
                            .map_err(|e| format!("redact_patterns.{name} does not compile: {e}"))?;
                        rules.push(RedactRule {
                            name: name.clone(),
                            pattern,
                            denies: false,
                            needs_review: false,
                        });
                        rules.last_mut().expect("just pushed")
                    }
                };
                rule.denies |= denies;
                rule.needs_review |= class.escalation == MemoryEscalation::HumanReview;
            }
        }
        Ok(Boundary { classes, rules })
    }

    fn rule_of(&self, class: MemoryBoundaryClass) -> &ClassRule {
        let at = CLASSES
            .iter()
            .position(|c| *c == class)
            .expect("four classes");
        &self.classes[at]
    }

    /// The classes `tags` reach: never secret, never a class with escalation deny.
    pub(crate) fn reachable(&self, tags: &[String]) -> Vec<MemoryBoundaryClass> {
        CLASSES
            .into_iter()
            .filter(|class| *class != MemoryBoundaryClass::Secret)
            .filter(|class| {
                let rule = self.rule_of(*class);
                rule.escalation != MemoryEscalation::Deny
                    && rule.allow.iter().any(|entry| {
                        if tags.is_empty() {
                            entry == "*"
                        } else {
                            tags.iter().any(|tag| tag_admits(entry, tag))
                        }
                    })
            })
            .collect()
    }

    /// Each class with its allow list, for an error that says what tags would work.
    pub(crate) fn allow_lists(&self) -> serde_json::Value {
        CLASSES
            .iter()
            .zip(&self.classes)
            .map(|(class, rule)| (class.to_string(), serde_json::json!(rule.allow)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// Whether `text` holds content a deny rule refuses (cheaper than [`Self::redact`]
    /// when only the verdict matters).
    pub(crate) fn denies(&self, text: &str) -> bool {
        if !self.rules.iter().any(|rule| rule.denies) {
            return false;
        }
        let normalized = normalize(text);
        self.rules
            .iter()
            .any(|rule| rule.denies && rule.pattern.is_match(&normalized.text))
    }

    /// `text` with every match of every rule replaced by `[REDACTED:<rule>]`.
    pub(crate) fn redact(&self, text: &str) -> Redaction {
        if self.rules.is_empty() {
            return Redaction {
                text: text.to_string(),
                ..Redaction::default()
            };
        }
        let normalized = normalize(text);
        let mut spans: Vec<(Range<usize>, usize)> = Vec::new();
        for (at, rule) in self.rules.iter().enumerate() {
            for found in rule.pattern.find_iter(&normalized.text) {
                if !found.range().is_empty() {
                    spans.push((normalized.original_range(found.range()), at));
                }
            }
        }
        spans.sort_by_key(|(range, at)| (range.start, *at));
        let mut redaction = Redaction::default();
        let mut counts = vec![0usize; self.rules.len()];
        let mut copied = 0;
        for (range, at) in spans {
            if range.start < copied {
                continue; // inside a span already replaced
            }
            redaction.text.push_str(&text[copied..range.start]);
            redaction
                .text
                .push_str(&format!("[REDACTED:{}]", self.rules[at].name));
            copied = range.end;
            counts[at] += 1;
        }
        redaction.text.push_str(&text[copied..]);
        for (rule, count) in self.rules.iter().zip(counts) {
            if count > 0 {
                redaction.counts.push((rule.name.clone(), count));
                if rule.denies {
                    redaction.denied_by.push(rule.name.clone());
                }
                redaction.needs_review |= rule.needs_review;
            }
        }
        redaction
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The seed's classes, with an api_key rule on the secret class.
    pub(crate) fn seed_boundary() -> Boundary {
        let rule = |allow: &[&str], redact: &[&str], escalation| ClassRule {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            redact: redact.iter().map(|s| s.to_string()).collect(),
            escalation,
        };
        let patterns = [("api_key".to_string(), r"sk-[a-z0-9]{16,}".to_string())].into();
        Boundary::new(
            [
                rule(&["*"], &[], MemoryEscalation::None),
                rule(&["answer:task", "tool:*"], &[], MemoryEscalation::None),
                rule(
                    &["tool:contact-lookup"],
                    &["email", "phone"],
                    MemoryEscalation::HumanReview,
                ),
                rule(&[], &["api_key"], MemoryEscalation::Deny),
            ],
            &patterns,
        )
        .unwrap()
    }

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn wildcards_work_on_the_policy_side_only() {
        use MemoryBoundaryClass::*;
        let boundary = seed_boundary();
        assert_eq!(boundary.reachable(&[]), vec![Public]);
        assert_eq!(
            boundary.reachable(&tags(&["answer:task"])),
            vec![Public, Internal]
        );
        assert_eq!(
            boundary.reachable(&tags(&["tool:*"])),
            vec![Public, Internal]
        );
        assert_eq!(
            boundary.reachable(&tags(&["tool:contact-lookup"])),
            vec![Public, Internal, Pii]
        );
        assert!(!boundary.reachable(&tags(&["*"])).contains(&Secret));
        assert!(tag_admits("tool:*", "tool:x") && !tag_admits("tool:x", "tool:*"));
    }

    #[test]
    fn redacts_email_and_phone_in_any_spelling() {
        let boundary = seed_boundary();
        let redaction =
            boundary.redact("Mail Taro@Example.co.jp or call ０３－１２３４－５６７８ now");
        assert_eq!(
            redaction.text,
            "Mail [REDACTED:email] or call [REDACTED:phone] now"
        );
        assert_eq!(
            redaction.counts,
            vec![("email".into(), 1), ("phone".into(), 1)]
        );
        assert!(redaction.needs_review && redaction.denied_by.is_empty());
        for (text, count) in [
            ("090-1234-5678", 1),
            ("+81 3 1234 5678", 1),
            ("(555) 123-4567", 1),
            ("09012345678", 1),
            ("2026-11-26 and 192.168.1.100 and v1.2.3", 0),
        ] {
            assert_eq!(boundary.redact(text).total(), count, "{text}");
        }
    }

    #[test]
    fn secret_content_is_denied() {
        let boundary = seed_boundary();
        let text = "the key is SK-ABCDEF0123456789abcd";
        assert!(boundary.denies(text));
        let redaction = boundary.redact(text);
        assert_eq!(redaction.denied_by, vec!["api_key".to_string()]);
        assert_eq!(redaction.text, "the key is [REDACTED:api_key]");
        assert!(!boundary.denies("no key here"));
    }

    #[test]
    fn unknown_or_broken_rules_are_named() {
        let rule = |redact: &[&str]| ClassRule {
            allow: vec![],
            redact: redact.iter().map(|s| s.to_string()).collect(),
            escalation: MemoryEscalation::None,
        };
        let classes = || [rule(&[]), rule(&[]), rule(&["ssn"]), rule(&[])];
        let error = Boundary::new(classes(), &Default::default()).err().unwrap();
        assert!(error.contains("\"ssn\""), "{error}");
        let patterns = [("ssn".to_string(), "(".to_string())].into();
        let error = Boundary::new(classes(), &patterns).err().unwrap();
        assert!(error.contains("redact_patterns.ssn"), "{error}");
    }
}
