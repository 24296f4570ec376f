//! The one error type that crosses the tool boundary.
//!
//! Every failure a client can see carries a code, a short message, and optionally a
//! `details` object that says what to fix. The manual, vault, bridge and tooling tools use
//! the seven codes of spec_v2 §7.1; the memory tools use the seed's own vocabulary
//! (pce_memory_tools.md §6, [`MemoryCode`]), because clients of pce-memory branch on those
//! words. Domain modules build these directly (or convert their own error types into them)
//! so the server layer never has to guess a code.

use serde_json::Value;

use crate::contract::types::{MemoryErrorCode, ToolErrorCode};

/// Most characters of a client's value an error repeats. An agent needs to recognise which
/// value was wrong, not to read it back: a 10 MB argument echoed whole (twice, message and
/// details) made a 20 MB answer, over the line limit of MCP clients.
pub(crate) const MAX_ECHO_CHARS: usize = 200;

/// Most characters of an error message: the longest fixed text plus a clipped value and a
/// path of the longest accepted length still fit.
const MAX_MESSAGE_CHARS: usize = 2 * MAX_ECHO_CHARS;

/// `text` if it is at most [`MAX_ECHO_CHARS`] characters, else its start and how long it
/// was. For values from a client that an error repeats.
pub(crate) fn clip(text: &str) -> String {
    clip_to(text, MAX_ECHO_CHARS)
}

/// `text` if it is at most `max_chars` characters, else its start and how long it was, in
/// `max_chars` characters together (so clipping again changes nothing).
pub(crate) fn clip_to(text: &str, max_chars: usize) -> String {
    let length = text.chars().count();
    if length <= max_chars {
        return text.to_string();
    }
    let note = format!("… ({length} characters)");
    let kept = max_chars.saturating_sub(note.chars().count());
    let (start, _) = crate::text::snippet::truncate_chars(text, kept);
    format!("{start}{note}")
}

/// Clips every string in `value` (keys too) to `max_chars`.
fn clip_strings(value: &mut Value, max_chars: usize) {
    match value {
        Value::String(text) if text.chars().count() > max_chars => *text = clip_to(text, max_chars),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| clip_strings(item, max_chars)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                clip_strings(&mut item, max_chars);
                map.insert(clip_to(&key, max_chars), item);
            }
        }
        _ => {}
    }
}

/// The seven-word error vocabulary of spec_v2 §7.1 (`ToolErrorCode`), and the memory
/// tools' own; the words are the schema's (`as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidParameter,
    NotFound,
    InvalidPath,
    OutOfScope,
    Forbidden,
    InvalidScope,
    Conflict,
    /// A memory tool's failure, in the seed's vocabulary.
    Memory(MemoryCode),
}

/// The error vocabulary of pce_memory_tools.md §6 (plus GONE, VALIDATION_ERROR and
/// CONFLICT, DECISIONS.md), each with the HTTP status the seed gives it: stdio has no
/// status line, so it travels as `details.http_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryCode {
    ValidationError,
    /// Over a tool's payload limit: a validation error with status 413.
    PayloadTooLarge,
    InvalidScope,
    BoundaryDenied,
    Duplicate,
    Conflict,
    UnknownClaim,
    Gone,
    PolicyMissing,
    InvalidPolicy,
    RateLimit,
    Unauthorized,
    Internal,
}

impl MemoryCode {
    /// The schema's word for the code (`MemoryErrorCode`); a payload over its limit is a
    /// validation error with its own status.
    pub fn as_str(self) -> &'static str {
        let code = match self {
            MemoryCode::ValidationError | MemoryCode::PayloadTooLarge => {
                MemoryErrorCode::ValidationError
            }
            MemoryCode::InvalidScope => MemoryErrorCode::InvalidScope,
            MemoryCode::BoundaryDenied => MemoryErrorCode::BoundaryDenied,
            MemoryCode::Duplicate => MemoryErrorCode::Duplicate,
            MemoryCode::Conflict => MemoryErrorCode::Conflict,
            MemoryCode::UnknownClaim => MemoryErrorCode::UnknownClaim,
            MemoryCode::Gone => MemoryErrorCode::Gone,
            MemoryCode::PolicyMissing => MemoryErrorCode::PolicyMissing,
            MemoryCode::InvalidPolicy => MemoryErrorCode::InvalidPolicy,
            MemoryCode::RateLimit => MemoryErrorCode::RateLimit,
            MemoryCode::Unauthorized => MemoryErrorCode::Unauthorized,
            MemoryCode::Internal => MemoryErrorCode::Internal,
        };
        code.as_str()
    }

    pub fn http_status(self) -> u16 {
        match self {
            MemoryCode::ValidationError | MemoryCode::InvalidScope | MemoryCode::InvalidPolicy => {
                422
            }
            MemoryCode::PayloadTooLarge => 413,
            MemoryCode::BoundaryDenied => 403,
            MemoryCode::Duplicate | MemoryCode::Conflict => 409,
            MemoryCode::UnknownClaim => 404,
            MemoryCode::Gone => 410,
            MemoryCode::PolicyMissing => 424,
            MemoryCode::RateLimit => 429,
            MemoryCode::Unauthorized => 401,
            MemoryCode::Internal => 500,
        }
    }
}

impl ErrorCode {
    /// The schema's word for the code (`ToolErrorCode`, or the memory tools' own).
    pub fn as_str(self) -> &'static str {
        let code = match self {
            ErrorCode::InvalidParameter => ToolErrorCode::InvalidParameter,
            ErrorCode::NotFound => ToolErrorCode::NotFound,
            ErrorCode::InvalidPath => ToolErrorCode::InvalidPath,
            ErrorCode::OutOfScope => ToolErrorCode::OutOfScope,
            ErrorCode::Forbidden => ToolErrorCode::Forbidden,
            ErrorCode::InvalidScope => ToolErrorCode::InvalidScope,
            ErrorCode::Conflict => ToolErrorCode::Conflict,
            ErrorCode::Memory(code) => return code.as_str(),
        };
        code.as_str()
    }
}

/// A failed tool call: serialised as `{code, message, details?}` (schemas/common/error.json).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
}

impl ToolError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            details: None,
        }
    }

    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParameter, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// A memory tool's failure: `details` (an object, or null for none) gains the code's
    /// `http_status`.
    pub fn memory(code: MemoryCode, message: impl Into<String>, details: Value) -> Self {
        let mut details = match details {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        details.insert("http_status".into(), code.http_status().into());
        Self::new(ErrorCode::Memory(code), message).with_details(Value::Object(details))
    }

    /// A memory tool's input that failed its schema, in the memory vocabulary:
    /// INVALID_SCOPE when a scope is what is wrong (seed §6), else VALIDATION_ERROR; the
    /// details keep the violations.
    pub(crate) fn in_memory_vocabulary(self) -> ToolError {
        let details = self.details.unwrap_or(Value::Null);
        let scope_is_wrong =
            details["violations"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|violation| {
                    violation["pointer"]
                        .as_str()
                        .is_some_and(|p| p.starts_with("/scope"))
                });
        let code = if scope_is_wrong {
            MemoryCode::InvalidScope
        } else {
            MemoryCode::ValidationError
        };
        ToolError::memory(code, self.message, details)
    }

    /// The JSON body of an error result. Whatever a domain put into the message and the
    /// details, no string in the body is longer than the echo bounds: the last line of
    /// defence for [`clip`], which the places that echo a value use first.
    pub fn to_json(&self) -> Value {
        let message = clip_to(&self.message, MAX_MESSAGE_CHARS);
        let mut body = serde_json::json!({ "code": self.code.as_str(), "message": message });
        if let Some(details) = &self.details {
            let mut details = details.clone();
            clip_strings(&mut details, MAX_ECHO_CHARS);
            body["details"] = details;
        }
        body
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ToolError {}

pub type ToolResult<T> = Result<T, ToolError>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_values_are_clipped_with_their_length() {
        assert_eq!(clip("short"), "short");
        let clipped = clip(&"é".repeat(1000));
        assert!(clipped.starts_with(&"é".repeat(MAX_ECHO_CHARS - 30)));
        assert!(clipped.ends_with("é… (1000 characters)"));
        assert_eq!(clipped.chars().count(), MAX_ECHO_CHARS);
        assert_eq!(clip(&clipped), clipped);
    }

    #[test]
    fn no_string_of_an_error_body_exceeds_the_bounds() {
        let huge = "x".repeat(100_000);
        let error = ToolError::invalid_parameter(huge.clone())
            .with_details(json!({ "value": huge, "list": [huge.clone()], huge.clone(): 1 }));
        let body = error.to_json();
        assert!(body.to_string().len() < 4 * MAX_MESSAGE_CHARS);
        assert_eq!(
            body["message"].as_str().unwrap().chars().count(),
            MAX_MESSAGE_CHARS
        );
        assert_eq!(body["details"]["list"][0], body["details"]["value"]);
    }
}
