//! `manvault serve --http`: bearer tokens (401), rate limits (429), the refusal to serve a
//! non-loopback address without tokens, separate sessions per client, and a SIGTERM in
//! the middle of a bridge copy. The built binary is driven over real HTTP.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http_server::HttpServer;
use crate::support::workspace::example_copy;
use crate::support::{assert_temporary_folder_empty, big_manual, folder_names};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";

/// A tokens file naming alice and bob, inside `workspace`.
fn tokens_file(workspace: &Path) -> String {
    let path = workspace.join("tokens.txt");
    fs::write(&path, format!("# team tokens\nalice:{ALICE}\nbob:{BOB}\n")).unwrap();
    path.to_str().unwrap().to_owned()
}

fn start(workspace: &Path, address: &str, env: &[(&str, &str)]) -> HttpServer {
    HttpServer::start(workspace, address, env)
        .unwrap_or_else(|(status, log)| panic!("server exited {status}: {log:#?}"))
}

fn ping(id: u64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "ping" })
}

#[test]
fn requests_without_a_valid_token_get_401_with_a_bearer_challenge() {
    let workspace = example_copy();
    let server = start(
        workspace.path(),
        "127.0.0.1:0",
        &[("MANVAULT_HTTP_TOKEN", ALICE)],
    );
    let missing = server.post(None, None, &ping(1));
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate"),
        Some("Bearer realm=\"manvault\"")
    );
    for wrong in ["nope-nope-nope-nope", BOB, &format!("{ALICE}x")] {
        let refused = server.post(Some(wrong), None, &ping(1));
        assert_eq!(refused.status, 401);
        let challenge = refused.header("www-authenticate").unwrap();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert!(!refused.body.contains(wrong));
    }
    let session = server.open_session(Some(ALICE));
    let answer = server.call_tool(Some(ALICE), &session, 1, "manual_list", json!({}));
    assert!(
        answer["result"]["structuredContent"]["items"].is_array(),
        "{answer}"
    );
    let call_line = server
        .log_once(|lines| lines.iter().any(|line| line["tool"] == "manual_list"))
        .into_iter()
        .find(|line| line["tool"] == "manual_list")
        .expect("a log line for the call");
    assert_eq!(call_line["actor"], "default");
}

#[test]
fn over_the_rate_limit_a_token_gets_429_with_retry_after() {
    let workspace = example_copy();
    let tokens = tokens_file(workspace.path());
    let server = start(
        workspace.path(),
        "127.0.0.1:0",
        &[
            ("MANVAULT_HTTP_TOKENS_FILE", &tokens),
            ("MANVAULT_HTTP_RATE_LIMIT", "3"),
            ("MANVAULT_HTTP_RATE_WINDOW_SEC", "60"),
        ],
    );
    let session = server.open_session(Some(ALICE)); // two requests
    let third = server.post(Some(ALICE), Some(&session), &ping(1));
    assert_eq!(third.status, 200);
    assert_eq!(third.header("x-ratelimit-limit"), Some("3"));
    assert_eq!(third.header("x-ratelimit-remaining"), Some("0"));
    let over = server.post(Some(ALICE), Some(&session), &ping(2));
    assert_eq!(over.status, 429);
    let retry_after: u64 = over.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(over.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(
        over.header("x-ratelimit-reset"),
        Some(retry_after.to_string().as_str())
    );
    // The limit is per token: bob is not held back by alice.
    let bob = server.post(Some(BOB), None, &ping(3));
    assert_ne!(bob.status, 429);
    assert_eq!(bob.header("x-ratelimit-remaining"), Some("2"));
}

#[test]
fn a_non_loopback_address_without_tokens_refuses_to_start() {
    let workspace = example_copy();
    let (status, log) = HttpServer::start(workspace.path(), "0.0.0.0:0", &[])
        .err()
        .expect("the server must not start");
    assert_eq!(status.code(), Some(2));
    let said = log.join("\n");
    assert!(said.contains("MANVAULT_HTTP_TOKEN"), "{said}");
    // With tokens it serves, and loopback clients still reach it.
    let tokens = tokens_file(workspace.path());
    let mut server = start(
        workspace.path(),
        "0.0.0.0:0",
        &[("MANVAULT_HTTP_TOKENS_FILE", &tokens)],
    );
    server.url = server.url.replace("0.0.0.0", "127.0.0.1");
    server.open_session(Some(BOB));
}

#[test]
fn two_clients_get_separate_sessions_bound_to_their_tokens() {
    let workspace = example_copy();
    let tokens = tokens_file(workspace.path());
    let server = start(
        workspace.path(),
        "127.0.0.1:0",
        &[("MANVAULT_HTTP_TOKENS_FILE", &tokens)],
    );
    let alice = server.open_session(Some(ALICE));
    let bob = server.open_session(Some(BOB));
    assert_ne!(alice, bob);
    let alice_answer = server.call_tool(
        Some(ALICE),
        &alice,
        1,
        "vault_create",
        json!({ "path": "notes/alice.md", "content": "# alice\n" }),
    );
    assert_eq!(alice_answer["result"]["isError"], false, "{alice_answer}");
    let bob_answer = server.call_tool(Some(BOB), &bob, 1, "vault_ls", json!({}));
    assert!(
        bob_answer["result"]["structuredContent"]["total"]
            .as_u64()
            .unwrap()
            >= 1
    );
    // A session belongs to the token that opened it.
    let hijack = server.post(Some(BOB), Some(&alice), &ping(2));
    assert_eq!(hijack.status, 404);
    let called = |lines: &[Value], tool: &str| lines.iter().any(|line| line["tool"] == tool);
    let actors: Vec<(String, String)> = server
        .log_once(|lines| called(lines, "vault_create") && called(lines, "vault_ls"))
        .into_iter()
        .filter(|line| line["tool"].is_string())
        .map(|line| {
            (
                line["tool"].as_str().unwrap().to_owned(),
                line["actor"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        actors.contains(&("vault_create".into(), "alice".into())),
        "{actors:?}"
    );
    assert!(
        actors.contains(&("vault_ls".into(), "bob".into())),
        "{actors:?}"
    );
}

#[test]
fn sigterm_during_a_bridge_copy_finishes_it_and_leaves_old_or_new_file() {
    let workspace = example_copy();
    let manual = big_manual(8_000_000);
    let manuals = workspace.path().join("manuals/big");
    fs::create_dir_all(&manuals).unwrap();
    fs::write(manuals.join("big.md"), &manual).unwrap();
    let dest = workspace.path().join("vault/notes/big.txt");
    fs::write(&dest, "old\n").unwrap();
    let temp = tempfile::tempdir().unwrap();
    let mut server = start(
        workspace.path(),
        "127.0.0.1:0",
        &[("TMPDIR", temp.path().to_str().unwrap())],
    );
    let session = server.open_session(None);
    let answer = std::thread::scope(|scope| {
        let copy = scope.spawn(|| {
            server.call_tool(
                None,
                &session,
                1,
                "bridge_copy_file",
                json!({ "manual_id": "big", "path": "big.md", "dest_path": "notes/big.txt", "mode": "overwrite" }),
            )
        });
        // The first manual call builds the index of 8 MB first: seconds in a debug build.
        std::thread::sleep(Duration::from_millis(300));
        server.terminate();
        std::thread::sleep(Duration::from_millis(100));
        let refused = server.post(None, Some(&session), &ping(2));
        assert_eq!(
            refused.status, 503,
            "new requests are refused while draining"
        );
        copy.join().unwrap()
    });
    let status = server
        .wait(Duration::from_secs(60))
        .expect("the server exits");
    assert!(status.success(), "{status}");
    let shutdown = server
        .log()
        .into_iter()
        .find(|line| line["message"] == "shutting down: finishing the calls in flight")
        .expect("a shutdown line");
    assert!(
        shutdown["in_flight"].as_u64().unwrap() >= 1,
        "the copy was not in flight at SIGTERM: {shutdown}"
    );
    // The call in flight finished and its answer was delivered.
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let written = fs::read_to_string(&dest).unwrap();
    assert!(
        written == "old\n" || written == manual,
        "a half-written file"
    );
    assert_eq!(written, manual, "the finished copy is the new file");
    let leftovers: Vec<String> = folder_names(dest.parent().unwrap())
        .into_iter()
        .filter(|name| name.starts_with(".manvault-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The change watch stopped: its barrier folder is gone from the temporary folder.
    assert_temporary_folder_empty(temp.path());
}

#[test]
fn an_idle_server_exits_on_sigterm() {
    let workspace = example_copy();
    let mut server = start(workspace.path(), "127.0.0.1:0", &[]);
    server.terminate();
    let status = server
        .wait(Duration::from_secs(30))
        .expect("an idle server exits at once");
    assert!(status.success(), "{status}");
}

/// A second SIGTERM while the server waits for the calls in flight ends it at once with
/// 143 (128 + SIGTERM), instead of being swallowed until the grace period (here 600 s)
/// is over. The call held in flight is a POST whose body never finishes: it counts as
/// in flight from its headers (the gate counts it before rmcp reads the body), and the
/// rate limit's count shows when the gate has taken it, so nothing here races a timer.
#[test]
fn a_second_sigterm_during_the_graceful_end_exits_at_once_with_143() {
    use std::io::Write;
    let workspace = example_copy();
    let mut server = start(
        workspace.path(),
        "127.0.0.1:0",
        &[
            ("MANVAULT_HTTP_SHUTDOWN_GRACE_SEC", "600"),
            ("MANVAULT_HTTP_RATE_WINDOW_SEC", "86400"),
        ],
    );
    let remaining = || -> u64 {
        let reply = server.post(None, None, &ping(1));
        reply
            .header("x-ratelimit-remaining")
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = remaining();
    let address = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut held = std::net::TcpStream::connect(address).unwrap();
    write!(
        held,
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
    )
    .unwrap();
    held.flush().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut probes = 1;
    while before - remaining() == probes {
        probes += 1;
        assert!(
            std::time::Instant::now() < deadline,
            "the held request never reached the gate"
        );
    }
    server.terminate();
    server.log_once(|lines| {
        lines.iter().any(|line| {
            line["message"] == "shutting down: finishing the calls in flight"
                && line["in_flight"] == 1
        })
    });
    server.terminate();
    let status = server.wait(Duration::from_secs(10));
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(143),
        "the second SIGTERM did not end the server at once: {status:?}"
    );
}
