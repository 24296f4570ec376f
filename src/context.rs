//! Who makes a call. stdio has no authentication, so every stdio call is the `local`
//! actor; a transport that authenticates its callers (HTTP bearer tokens) builds a context
//! with the token's name. Tools that rate-limit or audit by caller (`x-tool.context` in
//! their schema) receive it; the rest never see it.

/// The caller of one tool call: a plain value the transport fills and the tool layer
/// passes down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    /// The name the caller is known by in rate limits and audit records.
    pub actor: String,
}

impl CallContext {
    /// The actor of unauthenticated local calls (stdio, `manvault call`).
    pub const LOCAL_ACTOR: &'static str = "local";

    pub fn local() -> CallContext {
        CallContext {
            actor: Self::LOCAL_ACTOR.to_string(),
        }
    }
}

impl Default for CallContext {
    fn default() -> CallContext {
        CallContext::local()
    }
}
