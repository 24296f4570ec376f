//! What one tool call carries besides its arguments: who makes it. The server creates a
//! `CallContext` per request (from the bearer token over HTTP, `local` on stdio and for
//! the CLI) and hands it through `App::call_with` to the tool layer, so a tool can name
//! the actor (logs, the memory audit) without knowing any transport.
//!
//! Plain Rust: no MCP or HTTP type appears here.

/// The actor of calls that carry no credentials: stdio, the CLI, a loopback HTTP server
/// without tokens.
pub const LOCAL_ACTOR: &str = "local";

/// The per-call context.
#[derive(Debug, Clone)]
pub struct CallContext {
    actor: String,
}

impl CallContext {
    /// A call on behalf of `actor` (a token's name).
    pub fn for_actor(actor: impl Into<String>) -> CallContext {
        CallContext {
            actor: actor.into(),
        }
    }

    /// A call without credentials ([`LOCAL_ACTOR`]).
    pub fn local() -> CallContext {
        CallContext::for_actor(LOCAL_ACTOR)
    }

    /// Who makes the call: a token's name, or [`LOCAL_ACTOR`].
    pub fn actor(&self) -> &str {
        &self.actor
    }
}
