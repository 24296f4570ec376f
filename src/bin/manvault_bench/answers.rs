//! `manvault-bench answers`: what the agent pays, in characters and estimated tokens
//! (characters / 4), for the tool list and for every answer it reads.
//!
//! * The tool list: each tool of `tools/list` as served (`server::served_tools`, compact
//!   JSON): its description, input schema, output schema and whole entry, and the list.
//! * The answers: the text block of each answer (the compact JSON of `structuredContent`,
//!   which is what a model reads), through `App::call` as a client would call it, on the
//!   example workspace (copied to a scratch folder) and on `../shared/bench-dah` (its 160
//!   queries, a scratch vault filled with bridge copies). Paged answers are split into
//!   what each item costs (the page minus its empty form) and the page around the items;
//!   reads into the text and what surrounds it (the answer with its text emptied).
//!
//! The memory tools do not depend on the manuals: they run on the example workspace only
//! (its policy and example claims).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use manvault::app::App;
use serde_json::{json, Value};

use super::common::{app_for, call, today, usage_error, Scratch};
use super::find::copy_tree;

/// The example workspace's own questions: one per answer shape of `manual_find` (a
/// conflict, a gap, a reference, an inferred intent).
const EXAMPLE_QUERIES: [(&str, Option<&str>); 4] = [
    ("有給休暇の繰越し", Some("handbook")),
    ("rollback", None),
    ("対象外の経費", None),
    ("繰越し ゼッペリン", None),
];

/// bench-dah queries whose top hits are copied into the vault and searched there.
const DAH_VAULT_QUERIES: usize = 20;

/// Reads per query (the first items of its integrated top), in each scope.
const READS_PER_QUERY: usize = 2;
const READ_SCOPES: [&str; 3] = ["snippet", "section", "sections"];

struct Options {
    example: PathBuf,
    dah: PathBuf,
}

fn options(args: &[String]) -> Result<Options, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut options = Options {
        example: root.join("examples/workspace"),
        dah: root.join("../shared/bench-dah"),
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--example" => {
                options.example = PathBuf::from(iter.next().ok_or("--example needs a folder")?)
            }
            "--dah" => options.dah = PathBuf::from(iter.next().ok_or("--dah needs a folder")?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(options)
}

/// Characters of the text block a client shows the model for `answer`.
fn text_chars(answer: &Value) -> usize {
    answer.to_string().chars().count()
}

/// Sizes of one row in one workspace: `count` answers or items, `chars` in all, the largest.
#[derive(Default, Clone, Copy)]
struct Sizes {
    count: usize,
    chars: usize,
    max: usize,
}

impl Sizes {
    fn add(&mut self, chars: usize) {
        self.add_shared(1, chars);
    }

    /// `chars` shared by `count` items (the max is the largest share).
    fn add_shared(&mut self, count: usize, chars: usize) {
        if count == 0 {
            return;
        }
        self.count += count;
        self.chars += chars;
        self.max = self.max.max(chars / count);
    }

    fn cell(&self) -> String {
        if self.count == 0 {
            return "| – | – | – ".to_owned();
        }
        let mean = self.chars as f64 / self.count as f64;
        format!(
            "| {} | {:.1} / {} | {:.0} ",
            self.count,
            mean,
            self.max,
            mean / 4.0
        )
    }
}

/// The rows of the answers table, in the order they were first measured, with a column
/// per workspace.
#[derive(Default)]
struct Table {
    order: Vec<String>,
    rows: BTreeMap<String, [Sizes; 2]>,
}

/// What one workspace's measurements add to: the table and its column.
struct Column<'a> {
    table: &'a mut Table,
    index: usize,
}

impl Column<'_> {
    fn add(&mut self, row: &str, chars: usize) {
        let index = self.index;
        self.row(row)[index].add(chars);
    }

    fn add_shared(&mut self, row: &str, count: usize, chars: usize) {
        let index = self.index;
        self.row(row)[index].add_shared(count, chars);
    }

    /// The row named `row`, added at the end of the table when it is new.
    fn row(&mut self, row: &str) -> &mut [Sizes; 2] {
        if !self.table.rows.contains_key(row) {
            self.table.order.push(row.to_owned());
        }
        self.table.rows.entry(row.to_owned()).or_default()
    }

    /// A whole answer.
    fn answer(&mut self, row: &str, answer: &Value) {
        self.add(row, text_chars(answer));
    }

    /// A page of `key` items: each item (with the comma that separates it), each item with
    /// its share of the page (the page's characters over its items: what a page costs an
    /// item), and the page around them (the answer with no items).
    fn page(&mut self, row: &str, answer: &Value, key: &str) {
        let item_row = format!("{row}, per item");
        self.row(&item_row);
        let items = answer[key].as_array().map_or(&[][..], Vec::as_slice);
        for item in items {
            self.add(&item_row, text_chars(item) + 1);
        }
        self.add_shared(
            &format!("{row}, per item with its page share"),
            items.len(),
            text_chars(answer),
        );
        let mut empty = answer.clone();
        empty[key] = json!([]);
        self.add(&format!("{row}, page without items"), text_chars(&empty));
    }

    /// A read: the answer with its `text` emptied, and the whole answer.
    fn read(&mut self, row: &str, answer: &Value) {
        let mut empty = answer.clone();
        empty["text"] = json!("");
        self.add(&format!("{row}, without the text"), text_chars(&empty));
    }
}

pub fn run(args: &[String]) -> ExitCode {
    let options = match options(args) {
        Ok(options) => options,
        Err(message) => return usage_error("answers", &message),
    };
    println!("# manvault-bench answers: {}\n", today());
    tool_list();

    let mut table = Table::default();
    let example = Scratch::new("answers-example");
    copy_tree(&options.example, &example.0);
    let app = app_for(&example.0.join("manuals"), &example.0, None, &[]);
    let queries: Vec<(String, Option<String>)> = EXAMPLE_QUERIES
        .iter()
        .map(|(query, manual)| (query.to_string(), manual.map(str::to_owned)))
        .collect();
    let mut column = Column {
        table: &mut table,
        index: 0,
    };
    workspace(&app, &mut column, &queries, queries.len());
    memory(&app, &mut column, &options.example);
    drop(app);
    drop(example);

    match dah_queries(&options.dah) {
        Ok(queries) => {
            let scratch = Scratch::new("answers-dah");
            std::fs::create_dir_all(scratch.0.join("vault")).expect("scratch vault");
            let app = app_for(
                &options.dah.join("manuals"),
                &scratch.0,
                None,
                &[("ADAPTIVE_TUNING", "false")],
            );
            let mut column = Column {
                table: &mut table,
                index: 1,
            };
            workspace(&app, &mut column, &queries, DAH_VAULT_QUERIES);
        }
        Err(message) => println!("bench-dah not measured: {message}\n"),
    }
    print_answers(&table);
    ExitCode::SUCCESS
}

/// The tool list as `tools/list` serves it, per tool and in total.
fn tool_list() {
    let tools = manvault::server::served_tools();
    println!("## tools/list: {} tools\n", tools.len());
    println!("| tool | description | input schema | output schema | entry chars | est. tokens |");
    println!("|---|---:|---:|---:|---:|---:|");
    for tool in &tools {
        let entry = serde_json::to_value(tool).expect("a tool serialises");
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            tool.name,
            entry["description"]
                .as_str()
                .map_or(0, |text| text.chars().count()),
            text_chars(&entry["inputSchema"]),
            text_chars(&entry["outputSchema"]),
            text_chars(&entry),
            text_chars(&entry) / 4,
        );
    }
    let list = text_chars(&json!({ "tools": tools }));
    println!("| **tools/list** | | | | **{list}** | **{}** |\n", list / 4);
}

/// bench-dah's queries as (query, manual_id).
fn dah_queries(bench: &Path) -> Result<Vec<(String, Option<String>)>, String> {
    let text = std::fs::read_to_string(bench.join("queries.jsonl"))
        .map_err(|error| format!("{}: {error}", bench.join("queries.jsonl").display()))?;
    Ok(text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let query: Value = serde_json::from_str(line).expect("a query per line");
            (
                query["query"].as_str().expect("query").to_owned(),
                query["manual_id"].as_str().map(str::to_owned),
            )
        })
        .collect())
}

/// Every page of a paged listing (`offset` / `next_offset`), each measured.
fn pages(app: &App, column: &mut Column, row: &str, tool: &str, arguments: Value, key: &str) {
    let mut arguments = arguments;
    loop {
        let answer = call(app, tool, arguments.clone());
        column.page(row, &answer, key);
        match answer["next_offset"].as_u64() {
            Some(next) => arguments["offset"] = json!(next),
            None => break,
        }
    }
}

/// The refs of a page of hits: the items themselves, or (in answers before the diet, so the
/// bench runs on older commits for a comparison) their `ref`.
fn refs_of(page: &Value) -> Vec<Value> {
    page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| match item.get("ref") {
            Some(reference) => reference.is_object().then(|| reference.clone()),
            None => item.get("path").is_some().then(|| item.clone()),
        })
        .collect()
}

/// The manual and vault answers of one workspace: listings, every `query` found and its
/// hits paged and read, the top hits of the first `vault_queries` copied into the vault,
/// which is then listed, searched, found, read, scanned, written, covered and audited.
fn workspace(
    app: &App,
    column: &mut Column,
    queries: &[(String, Option<String>)],
    vault_queries: usize,
) {
    column.answer(
        "get_tooling_guide",
        &call(app, "get_tooling_guide", json!({ "prompt": queries[0].0 })),
    );
    let list = call(app, "manual_list", json!({}));
    column.answer("manual_list", &list);
    let manuals: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["manual_id"].as_str().expect("manual_id").to_owned())
        .collect();
    for manual in &manuals {
        pages(
            app,
            column,
            "manual_ls",
            "manual_ls",
            json!({ "manual_id": manual }),
            "items",
        );
        pages(
            app,
            column,
            "manual_toc",
            "manual_toc",
            json!({ "manual_id": manual }),
            "items",
        );
        let excepts = call(app, "manual_excepts", json!({ "manual_id": manual }));
        column.page("manual_excepts", &excepts, "items");
    }

    let mut copied = Vec::new();
    for (number, (query, manual)) in queries.iter().enumerate() {
        let found = call(
            app,
            "manual_find",
            json!({ "query": query, "manual_id": manual }),
        );
        column.answer("manual_find", &found);
        let trace = found["trace_id"].clone();
        for kind in ["candidates", "integrated_top", "conflicts", "gaps"] {
            pages(
                app,
                column,
                &format!("manual_hits {kind}"),
                "manual_hits",
                json!({ "trace_id": trace, "kind": kind }),
                "items",
            );
        }
        let top = call(
            app,
            "manual_hits",
            json!({ "trace_id": trace, "kind": "integrated_top" }),
        );
        let refs = refs_of(&top);
        for reference in refs.iter().take(READS_PER_QUERY) {
            for scope in READ_SCOPES {
                let read = app
                    .call(
                        "manual_read",
                        json!({ "ref": reference, "scope": scope, "trace_id": trace }),
                    )
                    .expect("a listed tool");
                if let Ok(read) = read {
                    column.read(&format!("manual_read {scope}"), &read);
                }
            }
        }
        if number < vault_queries {
            if let Some(reference) = refs.first() {
                let dest = format!("bench/q{number}.md");
                let copy = call(
                    app,
                    "bridge_copy_section",
                    json!({ "ref": reference, "dest_path": dest, "trace_id": trace }),
                );
                column.answer("bridge_copy_section", &copy);
                copied.push(dest);
                let file_dest = format!(
                    "bench/files/q{number}-{}",
                    reference["path"].as_str().unwrap_or("x.md")
                );
                let file = app
                    .call(
                        "bridge_copy_file",
                        json!({ "manual_id": reference["manual_id"], "path": reference["path"], "dest_path": file_dest }),
                    )
                    .expect("a listed tool");
                if let Ok(file) = file {
                    column.answer("bridge_copy_file", &file);
                }
            }
            let cut = call(
                app,
                "manual_find",
                json!({ "query": query, "manual_id": manual, "budget": { "time_ms": 1 } }),
            );
            pages(
                app,
                column,
                "manual_hits unscanned (time_ms 1)",
                "manual_hits",
                json!({ "trace_id": cut["trace_id"], "kind": "unscanned" }),
                "items",
            );
        }
    }

    pages(app, column, "vault_ls", "vault_ls", json!({}), "items");
    for (query, _) in queries.iter().take(vault_queries) {
        let search_word: String = query
            .split_whitespace()
            .next()
            .unwrap_or(query)
            .chars()
            .take(4)
            .collect();
        let search = call(app, "vault_search", json!({ "query": search_word }));
        column.page("vault_search", &search, "items");
        column.answer(
            "vault_find",
            &call(app, "vault_find", json!({ "query": query })),
        );
    }
    for path in &copied {
        column.read(
            "vault_read",
            &call(
                app,
                "vault_read",
                json!({ "path": path, "range": { "start_line": 1, "end_line": 40 } }),
            ),
        );
        let scan = call(
            app,
            "vault_scan",
            json!({ "path": path, "chunk_lines": 20 }),
        );
        column.read("vault_scan", &scan);
    }
    vault_writes(app, column, &copied);
}

/// Creates, appends, replaces; an artifact citing the first copy, its audit and the copy's
/// coverage.
fn vault_writes(app: &App, column: &mut Column, copied: &[String]) {
    let note = "bench/note.md";
    column.answer(
        "vault_create",
        &call(
            app,
            "vault_create",
            json!({ "path": note, "content": "# note\n\nTODO\n" }),
        ),
    );
    column.answer(
        "vault_write",
        &call(
            app,
            "vault_write",
            json!({ "path": note, "content": "- more\n", "mode": "append" }),
        ),
    );
    column.answer(
        "vault_replace",
        &call(
            app,
            "vault_replace",
            json!({ "path": note, "find": "TODO", "replace": "done" }),
        ),
    );
    let Some(source) = copied.first() else { return };
    let artifact = json!({
        "title": "bench",
        "elements": [
            { "id": "A", "text": "start", "kind": "start",
              "source_lines": [{ "path": source, "start_line": 1, "end_line": 2 }], "next": ["B"] },
            { "id": "B", "text": "end", "kind": "end", "next": [] },
        ],
    });
    let path = "artifacts/bench-flow.json";
    call(
        app,
        "vault_create",
        json!({ "path": path, "content": artifact.to_string() }),
    );
    column.answer(
        "artifact_audit",
        &call(app, "artifact_audit", json!({ "path": path })),
    );
    column.answer(
        "vault_coverage",
        &call(
            app,
            "vault_coverage",
            json!({ "path": source, "artifact_paths": [path] }),
        ),
    );
}

/// The memory tools on the example workspace: its claims upserted, recalled, searched,
/// rated, a boundary check, the policy validated, the state.
fn memory(app: &App, column: &mut Column, example: &Path) {
    let claims =
        std::fs::read_to_string(example.join("memory-claims.jsonl")).expect("example claims");
    let mut first_id = None;
    for line in claims.lines().filter(|line| line.starts_with('{')) {
        let call_line: Value = serde_json::from_str(line).expect("a call a line");
        let answer = call(app, "pce_memory_upsert", call_line["arguments"].clone());
        first_id = first_id.or_else(|| answer["id"].as_str().map(str::to_owned));
        column.answer("pce_memory_upsert", &answer);
    }
    for query in ["webhook", "解約", "命名規約"] {
        let activated = call(
            app,
            "pce_memory_activate",
            json!({ "q": query, "scope": ["project", "principle", "session"], "allow": ["answer:task"] }),
        );
        column.page("pce_memory_activate", &activated, "claims");
        let searched = call(
            app,
            "pce_memory_search",
            json!({ "query": query, "scope": ["project", "principle", "session"], "allow": ["answer:task"] }),
        );
        column.page("pce_memory_search", &searched, "items");
    }
    if let Some(id) = first_id {
        column.answer(
            "pce_memory_feedback",
            &call(
                app,
                "pce_memory_feedback",
                json!({ "claim_id": id, "signal": "helpful" }),
            ),
        );
    }
    column.answer(
        "pce_memory_boundary_validate",
        &call(
            app,
            "pce_memory_boundary_validate",
            json!({ "payload": "Ask taro@example.com about the refund", "allow": ["answer:task"], "scope": "project" }),
        ),
    );
    let policy =
        std::fs::read_to_string(example.join("memory-policy.yaml")).expect("example policy");
    column.answer(
        "pce_memory_policy_apply",
        &call(
            app,
            "pce_memory_policy_apply",
            json!({ "yaml": policy, "validate_only": true }),
        ),
    );
    column.answer(
        "pce_memory_state",
        &call(app, "pce_memory_state", json!({})),
    );
}

fn print_answers(table: &Table) {
    println!("## Answers: text block characters (compact JSON of structuredContent)\n");
    println!("Per row: how many answers or items were measured, mean / max characters each, est. tokens (mean / 4).\n");
    println!("| answer | example n | chars mean / max | est. tokens | bench-dah n | chars mean / max | est. tokens |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for row in &table.order {
        let [example, dah] = table.rows[row];
        println!("| {row} {}{}|", example.cell(), dah.cell());
    }
}
