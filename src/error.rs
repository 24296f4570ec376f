//! The one error type that crosses the tool boundary.
//!
//! Every failure a client can see carries one of the seven codes of spec_v2 §7.1, a short
//! message, and optionally a `details` object that says what to fix. Domain modules build
//! these directly (or convert their own error types into them) so the server layer never
//! has to guess a code.

use serde_json::Value;

/// The seven-word error vocabulary of spec_v2 §7.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidParameter,
    NotFound,
    InvalidPath,
    OutOfScope,
    Forbidden,
    InvalidScope,
    Conflict,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::NotFound => "not_found",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::OutOfScope => "out_of_scope",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::Conflict => "conflict",
        }
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

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParameter, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// The JSON body of an error result.
    pub fn to_json(&self) -> Value {
        let mut body = serde_json::json!({ "code": self.code.as_str(), "message": self.message });
        if let Some(details) = &self.details {
            body["details"] = details.clone();
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
