//! Bearer tokens for `serve --http`: who may call, and under which name. The name is the
//! actor of the per-call log line (and of the memory audit).
//!
//! Tokens come from `MANVAULT_HTTP_TOKEN` (one token, named `default`) and
//! `MANVAULT_HTTP_TOKENS_FILE` (lines `name:token`; blank lines and `#` comments skipped).
//! Only their SHA-256 digests are kept, and a presented token is compared with every
//! digest without stopping early, so timing says nothing about which bytes matched.
//! Errors name the line of the file, never a token.

use std::path::Path;

use rmcp::model::Extensions;
use sha2::{Digest, Sha256};

/// The name of the token given by `MANVAULT_HTTP_TOKEN`.
pub(crate) const SINGLE_TOKEN_NAME: &str = "default";

/// Shortest token accepted: a guessable token on a network port is worse than none.
const MIN_TOKEN_CHARS: usize = 16;

/// The authenticated caller of an HTTP request, put into the request's extensions by the
/// HTTP layer; rmcp hands the request's parts to the handlers.
#[derive(Debug, Clone)]
pub(crate) struct Actor(pub String);

/// The actor of an MCP request that came over HTTP; `None` on stdio.
pub(crate) fn actor_of(extensions: &Extensions) -> Option<String> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Actor>())
        .map(|actor| actor.0.clone())
}

/// The configured tokens, by name.
pub(crate) struct Tokens {
    entries: Vec<(String, [u8; 32])>,
}

/// What an `Authorization` header proves.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Missing,
    Invalid,
    Valid(String),
}

impl Tokens {
    /// The tokens of the environment; an empty set when none is configured.
    pub(crate) fn load(single: Option<&str>, file: Option<&Path>) -> Result<Tokens, String> {
        let mut tokens = Tokens {
            entries: Vec::new(),
        };
        if let Some(token) = single {
            tokens.add(SINGLE_TOKEN_NAME, token, "MANVAULT_HTTP_TOKEN")?;
        }
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|error| {
                format!("MANVAULT_HTTP_TOKENS_FILE cannot be read: {}", error.kind())
            })?;
            tokens.add_lines(&text)?;
        }
        Ok(tokens)
    }

    fn add_lines(&mut self, text: &str) -> Result<(), String> {
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let place = format!("MANVAULT_HTTP_TOKENS_FILE line {}", index + 1);
            let (name, token) = line
                .split_once(':')
                .ok_or_else(|| format!("{place}: expected name:token"))?;
            self.add(name.trim(), token.trim(), &place)?;
        }
        Ok(())
    }

    fn add(&mut self, name: &str, token: &str, place: &str) -> Result<(), String> {
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b));
        if !name_ok {
            return Err(format!(
                "{place}: a token name is 1 to 64 of A-Z a-z 0-9 - _ . @"
            ));
        }
        if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(char::is_whitespace) {
            return Err(format!(
                "{place}: a token is at least {MIN_TOKEN_CHARS} characters without spaces"
            ));
        }
        let digest = digest(token);
        if self.entries.iter().any(|(n, d)| n == name || *d == digest) {
            return Err(format!("{place}: the name or the token is given twice"));
        }
        self.entries.push((name.to_owned(), digest));
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Judges an `Authorization` header value (`Bearer <token>`).
    pub(crate) fn check(&self, authorization: Option<&str>) -> Verdict {
        let Some(header) = authorization else {
            return Verdict::Missing;
        };
        let token = match header.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
            _ => return Verdict::Invalid,
        };
        let presented = digest(token);
        let mut found = None;
        for (name, known) in &self.entries {
            let same = known
                .iter()
                .zip(presented.iter())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0;
            if same {
                found = Some(name);
            }
        }
        match found {
            Some(name) => Verdict::Valid(name.clone()),
            None => Verdict::Invalid,
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: &str = "alice-token-0123456789";
    const BOB: &str = "bob-token-0123456789ab";

    fn tokens() -> Tokens {
        let mut tokens = Tokens::load(Some(ALICE), None).unwrap();
        tokens.add_lines(&format!("# team\n\nbob:{BOB}\n")).unwrap();
        tokens
    }

    #[test]
    fn a_valid_token_names_its_actor() {
        let tokens = tokens();
        assert_eq!(
            tokens.check(Some(&format!("Bearer {ALICE}"))),
            Verdict::Valid(SINGLE_TOKEN_NAME.into())
        );
        assert_eq!(
            tokens.check(Some(&format!("bearer {BOB}"))),
            Verdict::Valid("bob".into())
        );
    }

    #[test]
    fn missing_and_wrong_tokens_are_told_apart() {
        let tokens = tokens();
        assert_eq!(tokens.check(None), Verdict::Missing);
        for header in [
            "Bearer nope-nope-nope-nope",
            &format!("Basic {ALICE}"),
            ALICE,
            "Bearer ",
            &format!("Bearer {ALICE}x"),
        ] {
            assert_eq!(tokens.check(Some(header)), Verdict::Invalid, "{header}");
        }
    }

    #[test]
    fn bad_files_name_the_line_and_never_the_token() {
        for (text, line) in [
            ("ok:0123456789abcdef\nbroken-line\n", "line 2"),
            ("x:short\n", "line 1"),
            ("bad name:0123456789abcdef\n", "line 1"),
            ("a:0123456789abcdef\na:fedcba9876543210\n", "line 2"),
            ("a:0123456789abcdef\nb:0123456789abcdef\n", "line 2"),
            (":0123456789abcdef\n", "line 1"),
        ] {
            let mut tokens = Tokens::load(None, None).unwrap();
            let error = tokens.add_lines(text).unwrap_err();
            assert!(error.contains(line), "{error}");
            assert!(!error.contains("0123456789abcdef"), "{error}");
            assert!(!error.contains("short"), "{error}");
        }
    }

    #[test]
    fn no_configuration_means_no_tokens() {
        assert!(Tokens::load(None, None).unwrap().is_empty());
        assert!(Tokens::load(Some("too-short"), None).is_err());
    }
}
