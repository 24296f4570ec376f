//! `manvault serve --http HOST:PORT`: MCP over streamable HTTP at `/mcp`, rmcp's server
//! (sessions, SSE) under axum, behind one gate per request:
//!
//! 1. while shutting down, new requests get 503;
//! 2. bearer token (`auth`), 401 with `WWW-Authenticate` when missing or wrong; without
//!    configured tokens (allowed on loopback only) every caller is `local`;
//! 3. a session id belongs to the token that opened it: another token gets 404, as for an
//!    unknown session, so a leaked id is no way into someone else's session;
//! 4. per-token rate limit (`rate`), 429 with `Retry-After`; every answer carries the
//!    `X-RateLimit-*` headers;
//! 5. rmcp itself then validates `Host` and `Origin` (DNS rebinding): loopback names, the
//!    bound address and `MANVAULT_HTTP_ALLOWED_HOSTS` only.
//!
//! Binding a non-loopback address without tokens refuses to start. On SIGINT/SIGTERM the
//! server stops taking requests, lets the calls in flight finish and deliver their answers
//! (up to `MANVAULT_HTTP_SHUTDOWN_GRACE_SEC`), then closes the sessions and exits; writes
//! are atomic (temp + rename), so even a call cut by the grace period leaves the old file
//! or the new one. A second signal ends the process at once (`ShutdownSignals` in
//! `mod.rs`), without waiting for the rest of the grace period.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;

use super::auth::{Actor, Tokens, Verdict};
use super::rate::{RateLimiter, Standing};
use super::{McpServer, ShutdownSignals};
use crate::call::LOCAL_ACTOR;
use crate::config::HttpConfig;

/// The path MCP is served at.
pub(crate) const MCP_PATH: &str = "/mcp";

const SESSION_HEADER: &str = "mcp-session-id";

/// Sessions whose owner is remembered; beyond this the oldest is forgotten (its client
/// gets 404 and starts a new session, as after a server restart).
const MAX_SESSIONS: usize = 10_000;

/// How long open connections (idle keep-alives, SSE streams being closed) get to end once
/// the calls in flight are done.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Runs the HTTP server until SIGINT/SIGTERM. Configuration errors (an address that does
/// not resolve, a non-loopback address without tokens, a bad tokens file) are returned
/// before anything is bound.
pub(crate) async fn serve(
    server: McpServer,
    bind: &str,
    settings: HttpConfig,
) -> Result<(), String> {
    let address = resolve(bind)?;
    let tokens = Tokens::load(settings.token.as_deref(), settings.tokens_file.as_deref())?;
    if tokens.is_empty() && !address.ip().is_loopback() {
        return Err(format!(
            "refusing to serve {address} without authentication: it is not a loopback address; \
             set MANVAULT_HTTP_TOKEN or MANVAULT_HTTP_TOKENS_FILE, or bind 127.0.0.1"
        ));
    }
    let hosts = allowed_hosts(address.ip(), &settings.allowed_hosts);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_origins(allowed_origins(&hosts))
        .enforce_origin_validation()
        .with_allowed_hosts(hosts);
    let sessions_closed = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.for_new_session()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let gate = Arc::new(Gate {
        tokens,
        limiter: RateLimiter::new(
            settings.rate_limit,
            Duration::from_secs(settings.rate_window_sec),
        ),
        owners: Mutex::default(),
        drain: Drain::default(),
    });
    let router = Router::new()
        .nest_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(Arc::clone(&gate), admit));
    // Installed before the "serving" line, so a signal sent as soon as a supervisor sees
    // that line finds the handler (a lazily installed one lost early SIGTERMs to the
    // default action, and the server died instead of draining).
    let signals = ShutdownSignals::install().await?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot listen on {address}: {error}"))?;
    let bound = listener
        .local_addr()
        .map_err(|error| format!("cannot listen on {address}: {error}"))?;
    tracing::info!(
        address = %bound,
        path = MCP_PATH,
        authenticated = !gate.tokens.is_empty(),
        "serving MCP over streamable HTTP"
    );
    let drained = Arc::new(Notify::new());
    let shutdown = {
        let drained = Arc::clone(&drained);
        let gate = Arc::clone(&gate);
        let grace = Duration::from_secs(settings.shutdown_grace_sec);
        async move {
            signals.received().await;
            gate.drain.begin();
            tracing::info!(
                in_flight = gate.drain.in_flight(),
                "shutting down: finishing the calls in flight"
            );
            if tokio::time::timeout(grace, gate.drain.finished())
                .await
                .is_err()
            {
                tracing::warn!(
                    in_flight = gate.drain.in_flight(),
                    "shutdown grace period over; leaving calls unfinished"
                );
            }
            sessions_closed.cancel();
            drained.notify_one();
        }
    };
    let serving = axum::serve(listener, router).with_graceful_shutdown(shutdown);
    tokio::select! {
        served = serving => served.map_err(|error| format!("HTTP server failed: {error}"))?,
        () = async { drained.notified().await; tokio::time::sleep(CLOSE_GRACE).await } => {
            tracing::warn!("connections still open after the shutdown; closing them");
        }
    }
    tracing::info!("shut down");
    Ok(())
}

/// The first address `bind` resolves to (`127.0.0.1:8080`, `[::1]:8080`, `localhost:8080`).
fn resolve(bind: &str) -> Result<SocketAddr, String> {
    bind.to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| format!("--http {bind:?} is not HOST:PORT (e.g. 127.0.0.1:8080)"))
}

/// Names a client may put in `Host`: the loopback names, the bound address (unless it is
/// a wildcard, which names no host) and the configured extra names.
fn allowed_hosts(bound: IpAddr, extra: &[String]) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
    if !bound.is_unspecified() && !bound.is_loopback() {
        hosts.push(bound.to_string());
    }
    hosts.extend(extra.iter().cloned());
    hosts
}

/// Browser origins allowed: the allowed hosts over http and https, on any port unless
/// the host entry names one. A request without `Origin` (any non-browser client) passes.
fn allowed_origins(hosts: &[String]) -> Vec<String> {
    hosts
        .iter()
        .flat_map(|host| {
            let (host, has_port) = if host.parse::<std::net::Ipv6Addr>().is_ok() {
                (format!("[{host}]"), false)
            } else {
                let has_port = host.rsplit_once(':').is_some_and(|(_, port)| {
                    !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                });
                (host.clone(), has_port)
            };
            let any_port = if has_port { "" } else { ":*" };
            ["http", "https"].map(|scheme| format!("{scheme}://{host}{any_port}"))
        })
        .collect()
}

/// What every request passes through before rmcp sees it.
struct Gate {
    tokens: Tokens,
    limiter: RateLimiter,
    owners: Mutex<Owners>,
    drain: Drain,
}

impl Gate {
    fn owners(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Which actor opened each session, and the order they were opened in, so the oldest is
/// forgotten first beyond `MAX_SESSIONS`.
#[derive(Default)]
struct Owners {
    actor_of: HashMap<String, String>,
    /// Session ids, oldest first; ids closed since are dropped lazily.
    opened: VecDeque<String>,
}

impl Owners {
    fn open(&mut self, session: &str, actor: &str) {
        self.actor_of.insert(session.to_owned(), actor.to_owned());
        self.opened.push_back(session.to_owned());
        while self.actor_of.len() > MAX_SESSIONS {
            match self.opened.pop_front() {
                Some(oldest) => self.actor_of.remove(&oldest),
                None => break,
            };
        }
        if self.opened.len() > 2 * MAX_SESSIONS {
            let actor_of = &self.actor_of;
            self.opened.retain(|session| actor_of.contains_key(session));
        }
    }

    fn close(&mut self, session: &str) {
        self.actor_of.remove(session);
    }

    fn owner(&self, session: &str) -> Option<&str> {
        self.actor_of.get(session).map(String::as_str)
    }
}

/// Requests in flight, and whether the server is shutting down.
#[derive(Default)]
struct Drain {
    stopping: AtomicBool,
    in_flight: AtomicUsize,
    idle: Notify,
}

/// Held while one request is in flight, until its answer has been sent (or dropped).
struct InFlight(Arc<Gate>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.drain.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.drain.idle.notify_waiters();
        }
    }
}

impl Drain {
    fn begin(&self) {
        self.stopping.store(true, Ordering::Release);
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Resolves once no request is in flight.
    async fn finished(&self) {
        loop {
            let idle = self.idle.notified();
            if self.in_flight() == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// The gate of every request (see the module comment for the order).
async fn admit(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    if gate.drain.stopping() {
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is shutting down",
        )
        .into_response();
    }
    let actor = if gate.tokens.is_empty() {
        LOCAL_ACTOR.to_owned()
    } else {
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok());
        match gate.tokens.check(authorization) {
            Verdict::Valid(name) => name,
            Verdict::Missing => return unauthorized(None),
            Verdict::Invalid => return unauthorized(Some("invalid_token")),
        }
    };
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(session) = &session {
        if gate.owners().owner(session) != Some(actor.as_str()) {
            return plain(StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
        }
    }
    let standing = gate.limiter.admit(&actor, Instant::now());
    if !standing.allowed {
        let mut response = plain(
            StatusCode::TOO_MANY_REQUESTS,
            "rate limit reached; retry after the number of seconds in Retry-After",
        )
        .into_response();
        set_rate_headers(response.headers_mut(), &standing);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(standing.reset_sec));
        return response;
    }
    let method = request.method().clone();
    // A GET is the client's standing stream for server messages: it lives as long as the
    // session, so it is not a call the shutdown waits for.
    let in_flight = (method != Method::GET).then(|| {
        gate.drain.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(&gate))
    });
    request.extensions_mut().insert(Actor(actor.clone()));
    let mut response = next.run(request).await;
    match (&session, response.headers().get(SESSION_HEADER)) {
        (None, Some(opened)) => {
            if let Ok(opened) = opened.to_str() {
                gate.owners().open(opened, &actor);
            }
        }
        (Some(closed), _) if method == Method::DELETE && response.status().is_success() => {
            gate.owners().close(closed);
        }
        _ => {}
    }
    set_rate_headers(response.headers_mut(), &standing);
    match in_flight {
        // The answer of a call may be a stream that ends only after the call: the request
        // stays in flight until its body is sent or dropped.
        Some(in_flight) => response.map(|body| {
            Body::new(body.map_frame(move |frame| {
                let _held = &in_flight;
                frame
            }))
        }),
        None => response,
    }
}

fn plain(
    status: StatusCode,
    message: &'static str,
) -> (StatusCode, [(HeaderName, &'static str); 1], &'static str) {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
}

fn unauthorized(error: Option<&str>) -> Response {
    let challenge = match error {
        Some(error) => format!("Bearer realm=\"manvault\", error=\"{error}\""),
        None => "Bearer realm=\"manvault\"".to_owned(),
    };
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "a bearer token is required: Authorization: Bearer <token>",
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_str(&challenge).expect("an ASCII challenge"),
    );
    response
}

fn set_rate_headers(headers: &mut HeaderMap, standing: &Standing) {
    for (name, value) in [
        ("x-ratelimit-limit", u64::from(standing.limit)),
        ("x-ratelimit-remaining", u64::from(standing.remaining)),
        ("x-ratelimit-reset", standing.reset_sec),
    ] {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_sessions_are_forgotten_beyond_the_bound() {
        let mut owners = Owners::default();
        for n in 0..MAX_SESSIONS + 2 {
            owners.open(&format!("s{n}"), "alice");
        }
        assert_eq!(owners.owner("s0"), None);
        assert_eq!(owners.owner("s1"), None);
        assert_eq!(owners.owner("s2"), Some("alice"));
        owners.close("s2");
        assert_eq!(owners.owner("s2"), None);
        for n in 0..3 * MAX_SESSIONS {
            owners.open(&format!("t{n}"), "bob");
            owners.close(&format!("t{n}"));
        }
        assert!(owners.opened.len() <= 2 * MAX_SESSIONS + 1);
        assert_eq!(owners.actor_of.len(), MAX_SESSIONS - 1);
    }

    #[test]
    fn hosts_are_loopback_the_bound_address_and_the_configured_names() {
        assert_eq!(
            allowed_hosts("0.0.0.0".parse().unwrap(), &[]),
            ["localhost", "127.0.0.1", "::1"]
        );
        assert_eq!(
            allowed_hosts("10.0.0.5".parse().unwrap(), &["mcp.example.com".into()]),
            [
                "localhost",
                "127.0.0.1",
                "::1",
                "10.0.0.5",
                "mcp.example.com"
            ]
        );
    }

    #[test]
    fn origins_take_any_port_unless_the_host_names_one() {
        let origins = allowed_origins(&["::1".into(), "example.com:8443".into(), "a.test".into()]);
        assert_eq!(
            origins,
            [
                "http://[::1]:*",
                "https://[::1]:*",
                "http://example.com:8443",
                "https://example.com:8443",
                "http://a.test:*",
                "https://a.test:*",
            ]
        );
    }

    #[test]
    fn addresses_resolve_or_say_what_is_expected() {
        assert_eq!(resolve("127.0.0.1:8080").unwrap().port(), 8080);
        assert!(resolve("localhost:9").unwrap().ip().is_loopback());
        assert!(resolve("8080").unwrap_err().contains("HOST:PORT"));
    }
}
