//! Attacks on the vault tools (and the bridge tools' vault side) through the real tool layer (`App::call`, with input
//! validation and dispatch), against a workspace in a temporary folder. One row per
//! attack, kept as data.
//!
//! Beside the vault (`base/vault`) lie `base/elsewhere/` and a sibling `base/vault-evil/`
//! whose name extends the vault's. Every row asserts the error code, that the answer names
//! no server path and nothing from outside, that nothing outside the vault was read,
//! listed, created or changed (the tripwire of `support/outside_watch.rs`), and, for a
//! refused call, that the vault itself is unchanged.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use manvault::app::App;
use manvault::config::{Config, RootFlags};
use serde_json::{json, Value};

use crate::support::outside_watch::{snapshot, OutsideWatch};

const DAILY: &str = "artifacts/daily/2026-11-25.md";

struct Workspace {
    _temp: tempfile::TempDir,
    base: PathBuf,
    vault: PathBuf,
    outside: PathBuf,
    app: App,
}

impl Workspace {
    fn new() -> Workspace {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap().join("base");
        let vault = base.join("vault");
        let outside = base.join("elsewhere");
        let write = |path: PathBuf, content: &str| {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        };
        write(vault.join("notes/a.md"), "alpha\nbeta\n");
        write(vault.join(DAILY), "# 2026-11-25\n");
        write(vault.join("artifacts/flow.json"), "{\"elements\": []}");
        write(outside.join("secret.txt"), "outside secret\n");
        write(outside.join("dir/inner.txt"), "inner secret\n");
        write(base.join("vault-evil/secret.txt"), "evil secret\n");
        // The manuals bridge copies read from lie beside `base`, out of the watch's sight.
        let manuals = temp.path().canonicalize().unwrap().join("manuals");
        write(manuals.join("m/a.md"), "# A\n\nmanual text\n");
        let links: [(&Path, &str); 8] = [
            (&outside.join("secret.txt"), "to_file"),
            (&outside.join("dir"), "to_folder"),
            (
                Path::new("../../elsewhere/secret.txt"),
                "notes/relative_link",
            ),
            (&outside.join("planted.txt"), "dangling"),
            (Path::new("loop_b"), "loop_a"),
            (Path::new("loop_a"), "loop_b"),
            (Path::new("../vault-evil"), "evil_link"),
            (&outside.join("dir"), "artifacts/daily_link"),
        ];
        for (target, link) in links {
            symlink(target, vault.join(link)).unwrap();
        }
        let flags = RootFlags {
            workspace: Some(base.clone()),
            manuals: Some(manuals),
            vault: Some(vault.clone()),
        };
        // Derived data (the manual catalog a bridge call's first look at the manuals
        // writes) goes beside `base` too, so that "a refused call leaves the vault
        // unchanged" compares the vault's own files.
        let cache = temp.path().canonicalize().unwrap().join("cache");
        let cache = cache.to_str().unwrap().to_owned();
        let lookup = move |name: &str| (name == "CACHE_DIR").then(|| cache.clone());
        let config = Config::load(&lookup, &flags).unwrap();
        Workspace {
            _temp: temp,
            app: App::new(config),
            base,
            vault,
            outside,
        }
    }

    /// A file of the vault that is also a name of an outside file. Only the policy test
    /// plants it: reading through it is allowed (it is a vault file), and any read would
    /// trip the outside watch of the other tests.
    fn hard_link_outside(&self) {
        fs::hard_link(
            self.outside.join("secret.txt"),
            self.vault.join("notes/hard.md"),
        )
        .unwrap();
    }

    fn call(&self, tool: &str, arguments: Value) -> Result<Value, Value> {
        match self.app.call(tool, arguments).expect("a vault tool") {
            Ok(answer) => Ok(answer),
            Err(error) => Err(error.to_json()),
        }
    }

    /// Runs one attack and checks everything a row promises.
    #[track_caller]
    fn attack(&self, row: &str, tool: &str, arguments: Value, expected: &str) {
        // The vault is snapshotted outside the watch: the snapshot reads every file.
        let vault_before = snapshot(&self.vault, Path::new("/nonexistent"));
        let watch = OutsideWatch::arm(&self.base, &self.vault);
        let outcome = self.call(tool, arguments.clone());
        let body = match &outcome {
            Ok(answer) => answer.to_string(),
            Err(error) => error.to_string(),
        };
        let code = match &outcome {
            Ok(_) => "ok",
            Err(error) => error["code"].as_str().unwrap(),
        };
        assert_eq!(code, expected, "{row}: {tool} {arguments} answered {body}");
        for revealing in [self.base.to_str().unwrap(), "elsewhere", "secret", "/tmp"] {
            assert!(
                !body.contains(revealing),
                "{row}: the answer reveals {revealing:?}: {body}"
            );
        }
        watch.assert_untouched();
        if outcome.is_err() {
            assert!(
                snapshot(&self.vault, Path::new("/nonexistent")) == vault_before,
                "{row}: a refused {tool} changed the vault"
            );
        }
    }

    /// The same path given to every vault tool, where each takes it as a file or folder.
    #[track_caller]
    fn attack_every_tool(&self, row: &str, path: &str, expected: &str) {
        let calls = [
            ("vault_ls", json!({ "relative_dir": path })),
            (
                "vault_search",
                json!({ "query": "secret", "scope": { "relative_dir": path } }),
            ),
            ("vault_read", json!({ "path": path, "full": true })),
            ("vault_scan", json!({ "path": path })),
            (
                "vault_create",
                json!({ "path": path, "content": "planted\n" }),
            ),
            (
                "vault_write",
                json!({ "path": path, "content": "planted\n", "mode": "overwrite" }),
            ),
            (
                "vault_write",
                json!({ "path": path, "content": "planted\n", "mode": "append" }),
            ),
            (
                "vault_replace",
                json!({ "path": path, "find": "secret", "replace": "planted" }),
            ),
            ("vault_coverage", json!({ "path": path })),
            (
                "vault_coverage",
                json!({ "path": "notes/a.md", "artifact_paths": [path] }),
            ),
            ("artifact_audit", json!({ "path": path })),
            ("bridge_copy_file", copy_file(path, "create")),
            ("bridge_copy_section", copy_section(path, "create")),
            ("bridge_copy_section", copy_section(path, "overwrite")),
            ("bridge_copy_section", copy_section(path, "append")),
        ];
        for (tool, arguments) in calls {
            self.attack(row, tool, arguments, expected);
        }
    }
}

/// A bridge copy of the manual section `m/a.md#L1` to `dest_path`.
fn copy_section(dest_path: &str, mode: &str) -> Value {
    let reference =
        json!({ "target": "manual", "manual_id": "m", "path": "a.md", "start_line": 1 });
    json!({ "ref": reference, "dest_path": dest_path, "mode": mode })
}

/// A bridge copy of the manual file `m/a.md` to `dest_path`.
fn copy_file(dest_path: &str, mode: &str) -> Value {
    json!({ "manual_id": "m", "path": "a.md", "dest_path": dest_path, "mode": mode })
}

/// Refused spellings of a path: (attack, path, code for every tool).
#[rustfmt::skip]
fn refused_spellings(base: &Path) -> Vec<(&'static str, String, &'static str)> {
    let absolute = |rel: &str| base.join(rel).display().to_string();
    let owned = |rows: &[(&'static str, &str, &'static str)]| {
        rows.iter()
            .map(|(row, path, code)| (*row, path.to_string(), *code))
            .collect::<Vec<_>>()
    };
    let mut rows = owned(&[
        ("slash traversal", "../elsewhere/secret.txt", "out_of_scope"),
        ("backslash traversal", "..\\elsewhere\\secret.txt", "out_of_scope"),
        ("mixed traversal", "notes/..\\../elsewhere/secret.txt", "out_of_scope"),
        ("deep traversal", "notes/../../elsewhere/secret.txt", "out_of_scope"),
        ("dot-dot that stays inside", "notes/../notes/a.md", "invalid_path"),
        ("percent-encoded dots", "%2e%2e/elsewhere/secret.txt", "invalid_path"),
        ("double percent-encoded dots", "%252e%252e/elsewhere/secret.txt", "invalid_path"),
        ("percent-encoded slash", "..%2felsewhere%2fsecret.txt", "invalid_path"),
        ("overlong UTF-8 dot", "%c0%ae%c0%ae/elsewhere/secret.txt", "invalid_path"),
        ("fullwidth dots", "．．／elsewhere／secret.txt", "out_of_scope"),
        ("two-dot leader", "‥/elsewhere/secret.txt", "out_of_scope"),
        ("absolute", "/etc/passwd", "out_of_scope"),
        ("backslash absolute", "\\etc\\passwd", "out_of_scope"),
        ("drive letter", "C:\\elsewhere\\secret.txt", "invalid_path"),
        ("drive-relative", "c:notes.md", "invalid_path"),
        ("UNC", "\\\\server\\share\\secret.txt", "out_of_scope"),
        ("slash UNC", "//server/share/secret.txt", "out_of_scope"),
        ("home", "~/secret.txt", "invalid_path"),
        ("other home", "~root/secret.txt", "invalid_path"),
        ("NUL", "notes/a\u{0}.md", "invalid_path"),
        ("escape", "notes/\u{1b}[31ma.md", "invalid_path"),
        ("newline", "notes/a.md\n../../elsewhere", "invalid_path"),
        ("DEL", "notes/\u{7f}a.md", "invalid_path"),
        ("device name", "con", "invalid_path"),
        ("device name with extension", "notes/NUL.md", "invalid_path"),
        ("numbered device", "COM1.txt", "invalid_path"),
        ("console device", "notes/CONIN$", "invalid_path"),
        ("alternate stream", "notes/a.md:hidden", "invalid_path"),
        ("default stream", "notes/a.md::$DATA", "invalid_path"),
        ("trailing dot", "notes/a.md.", "invalid_path"),
        ("trailing space", "notes/a.md ", "invalid_path"),
        ("temporary-file name", "notes/.manvault-tmp-1-1", "invalid_path"),
        ("sibling by traversal", "../vault-evil/secret.txt", "out_of_scope"),
        ("sibling by climbing back", "../vault/../vault-evil/secret.txt", "out_of_scope"),
        (".system", ".system/adaptive_stats.jsonl", "forbidden"),
        (".system in another case", ".SYSTEM/stats.jsonl", "forbidden"),
        (".system deeper", "notes/.System/a.md", "forbidden"),
        (".system fullwidth", "．ｓｙｓｔｅｍ/x.md", "forbidden"),
        ("link to an outside file", "to_file", "forbidden"),
        ("link to an outside file, relative", "notes/relative_link", "forbidden"),
        ("path below a file link", "to_file/x.md", "forbidden"),
        ("link to an outside folder", "to_folder", "forbidden"),
        ("file below a folder link", "to_folder/inner.txt", "forbidden"),
        ("new file below a folder link", "to_folder/new/planted.md", "forbidden"),
        ("dangling link", "dangling", "forbidden"),
        ("below a dangling link", "dangling/x.md", "forbidden"),
        ("looping link", "loop_a", "forbidden"),
        ("below a looping link", "loop_b/x.md", "forbidden"),
        ("link to the sibling", "evil_link/secret.txt", "forbidden"),
        ("link in the artifacts folder", "artifacts/daily_link/inner.txt", "forbidden"),
    ]);
    rows.extend([
        ("absolute into the vault", absolute("vault/notes/a.md"), "out_of_scope"),
        ("absolute outside", absolute("elsewhere/secret.txt"), "out_of_scope"),
        ("absolute sibling", absolute("vault-evil/secret.txt"), "out_of_scope"),
        ("over-long name", format!("notes/{}.md", "a".repeat(256)), "invalid_path"),
        ("over-long path", "abcdefghi/".repeat(103) + "a.md", "invalid_path"),
    ]);
    rows
}

#[test]
fn every_refused_path_form_is_refused_by_every_tool() {
    let workspace = Workspace::new();
    let rows = refused_spellings(&workspace.base);
    assert!(rows.len() > 50);
    for (row, path, code) in rows {
        workspace.attack_every_tool(row, &path, code);
    }
}

/// Policy rows: (rule, tool, arguments, expected code). `ok` rows are the controls that
/// show the same calls succeed when the rule does not apply.
#[rustfmt::skip]
fn policy_rows() -> Vec<(&'static str, &'static str, Value, &'static str)> {
    let write = |path: &str, content: &str, mode: &str| json!({ "path": path, "content": content, "mode": mode });
    let create = |path: &str, content: &str| json!({ "path": path, "content": content });
    let replace = |path: &str, find: &str, with: &str| json!({ "path": path, "find": find, "replace": with });
    vec![
        ("daily: overwrite", "vault_write", write(DAILY, "gone\n", "overwrite"), "forbidden"),
        ("daily: replace", "vault_replace", replace(DAILY, "2026", "1999"), "forbidden"),
        ("daily: overwrite in another case", "vault_write", write("ARTIFACTS/Daily/2026-11-25.md", "gone\n", "overwrite"), "forbidden"),
        ("daily: replace in another case", "vault_replace", replace("artifacts/DAILY/2026-11-25.md", "2026", "1999"), "forbidden"),
        ("daily: overwrite through ./", "vault_write", write("artifacts/./daily/2026-11-25.md", "gone\n", "overwrite"), "forbidden"),
        ("daily: replace through backslashes", "vault_replace", replace("artifacts\\daily\\2026-11-25.md", "2026", "1999"), "forbidden"),
        ("daily: overwrite through fullwidth", "vault_write", write("ａｒｔｉｆａｃｔｓ/ｄａｉｌｙ/2026-11-25.md", "gone\n", "overwrite"), "forbidden"),
        ("daily: append in another case", "vault_write", write("Artifacts/daily/2026-11-25.md", "x\n", "append"), "forbidden"),
        ("daily: create in another case", "vault_create", create("artifacts/Daily/2026-11-26.md", "x\n"), "forbidden"),
        ("daily: not a calendar date", "vault_create", create("artifacts/daily/2026-02-29.md", "x\n"), "forbidden"),
        ("daily: month 13", "vault_create", create("artifacts/daily/2026-13-01.md", "x\n"), "forbidden"),
        ("daily: short year", "vault_create", create("artifacts/daily/26-11-25.md", "x\n"), "forbidden"),
        ("daily: other name", "vault_create", create("artifacts/daily/notes.md", "x\n"), "forbidden"),
        ("daily: other extension", "vault_create", create("artifacts/daily/2026-11-26.txt", "x\n"), "forbidden"),
        ("daily: upper-case extension", "vault_create", create("artifacts/daily/2026-11-26.MD", "x\n"), "forbidden"),
        ("daily: sub-folder", "vault_create", create("artifacts/daily/team/2026-11-26.md", "x\n"), "forbidden"),
        ("daily: the folder itself", "vault_write", write("artifacts/daily", "x\n", "append"), "forbidden"),
        ("daily: existing file created again", "vault_create", create(DAILY, "again\n"), "conflict"),
        ("artifacts: script", "vault_create", create("artifacts/run.sh", "echo\n"), "forbidden"),
        ("artifacts: no extension", "vault_create", create("artifacts/sub/README", "x\n"), "forbidden"),
        ("artifacts: text file in another case", "vault_create", create("Artifacts/x.txt", "x\n"), "forbidden"),
        ("artifacts: invalid JSON created", "vault_create", create("artifacts/new.json", "{"), "invalid_parameter"),
        ("artifacts: JSON overwritten invalid", "vault_write", write("artifacts/flow.json", "nope", "overwrite"), "invalid_parameter"),
        ("artifacts: JSON appended invalid", "vault_write", write("artifacts/flow.json", ",", "append"), "invalid_parameter"),
        ("artifacts: JSON replaced invalid", "vault_replace", replace("artifacts/flow.json", "[]", "["), "invalid_parameter"),
        ("hard link: overwrite", "vault_write", write("notes/hard.md", "planted\n", "overwrite"), "forbidden"),
        ("hard link: append", "vault_write", write("notes/hard.md", "planted\n", "append"), "forbidden"),
        ("hard link: replace", "vault_replace", replace("notes/hard.md", "secret", "planted"), "forbidden"),
        ("write creates nothing", "vault_write", write("notes/new.md", "x\n", "append"), "not_found"),
        ("replace of absent text", "vault_replace", replace("notes/a.md", "gamma", "delta"), "not_found"),
        ("control: daily append", "vault_write", write(DAILY, "- entry\n", "append"), "ok"),
        ("control: daily create", "vault_create", create("artifacts/daily/2024-02-29.md", "# leap day\n"), "ok"),
        ("control: JSON kept valid", "vault_replace", replace("artifacts/flow.json", "[]", "[1]"), "ok"),
        ("control: Markdown artifact", "vault_create", create("artifacts/notes/summary.md", "x\n"), "ok"),
        ("control: any extension outside artifacts", "vault_create", create("drafts/run.sh", "echo\n"), "ok"),
        ("bridge: daily overwrite", "bridge_copy_section", copy_section(DAILY, "overwrite"), "forbidden"),
        ("bridge: daily append in another case", "bridge_copy_file", copy_file("artifacts/Daily/2026-11-25.md", "append"), "forbidden"),
        ("bridge: daily created under another name", "bridge_copy_section", copy_section("artifacts/daily/notes.md", "create"), "forbidden"),
        ("bridge: artifact script", "bridge_copy_file", copy_file("artifacts/run.sh", "create"), "forbidden"),
        ("bridge: Markdown into a JSON artifact", "bridge_copy_section", copy_section("artifacts/new.json", "create"), "invalid_parameter"),
        ("bridge: appended to a JSON artifact", "bridge_copy_file", copy_file("artifacts/flow.json", "append"), "invalid_parameter"),
        ("bridge: hard link overwrite", "bridge_copy_section", copy_section("notes/hard.md", "overwrite"), "forbidden"),
        ("bridge: hard link append", "bridge_copy_file", copy_file("notes/hard.md", "append"), "forbidden"),
        ("bridge: overwrite creates nothing", "bridge_copy_file", copy_file("notes/new.md", "overwrite"), "not_found"),
        ("bridge: existing file created again", "bridge_copy_section", copy_section("notes/a.md", "create"), "conflict"),
        ("bridge control: Markdown artifact", "bridge_copy_section", copy_section("artifacts/notes/copied.md", "create"), "ok"),
    ]
}

#[test]
fn every_policy_rule_is_enforced_whatever_the_spelling() {
    let workspace = Workspace::new();
    workspace.hard_link_outside();
    for (row, tool, arguments, code) in policy_rows() {
        workspace.attack(row, tool, arguments, code);
    }
    assert_eq!(
        fs::read_to_string(workspace.vault.join(DAILY)).unwrap(),
        "# 2026-11-25\n- entry\n"
    );
    assert_eq!(
        fs::read_to_string(workspace.vault.join("artifacts/flow.json")).unwrap(),
        "{\"elements\": [1]}"
    );
}

#[test]
fn listings_and_searches_never_show_links_hidden_or_system_entries() {
    let workspace = Workspace::new();
    fs::create_dir_all(workspace.vault.join(".system")).unwrap();
    fs::write(
        workspace.vault.join(".system/stats.jsonl"),
        "secret stats\n",
    )
    .unwrap();
    fs::write(workspace.vault.join("notes/.hidden.md"), "secret hidden\n").unwrap();
    fs::write(workspace.vault.join("notes/b.md"), "secret visible\n").unwrap();
    let watch = OutsideWatch::arm(&workspace.base, &workspace.vault);
    let listed = workspace.call("vault_ls", json!({})).unwrap();
    let paths: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "artifacts/daily/2026-11-25.md",
            "artifacts/flow.json",
            "notes/a.md",
            "notes/b.md",
        ]
    );
    let found = workspace
        .call("vault_search", json!({ "query": "secret" }))
        .unwrap();
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["items"][0]["path"], "notes/b.md");
    watch.assert_untouched();
}

/// Swaps two names atomically (`RENAME_EXCHANGE`): no moment in which neither exists.
fn exchange(a: &Path, b: &Path) {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        a,
        rustix::fs::CWD,
        b,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
}

/// A folder of the path is swapped for a link to the outside (atomically, with
/// `RENAME_EXCHANGE`) again and again while the tools run on files below it: each call
/// works on the real folder or is refused, and nothing outside is touched.
#[test]
fn a_folder_swapped_for_a_link_during_calls_is_never_followed() {
    let workspace = Workspace::new();
    let real = workspace.vault.join("notes");
    let link = workspace.vault.join("notes_link");
    symlink(workspace.outside.join("dir"), &link).unwrap();
    fs::write(workspace.outside.join("dir/a.md"), "outside alpha\n").unwrap();
    let watch = OutsideWatch::arm(&workspace.base, &workspace.vault);
    let stop = std::sync::atomic::AtomicBool::new(false);
    /// Stops the swapper however the calls end: a failed assertion must not leave the
    /// scope waiting for a thread that never finishes.
    struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    let swaps = std::thread::scope(|scope| {
        let swapper = scope.spawn(|| {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                exchange(&real, &link);
                swaps += 1;
            }
            swaps
        });
        let _stop = StopOnDrop(&stop);
        for round in 0..300 {
            let calls = [
                ("vault_read", json!({ "path": "notes/a.md", "full": true })),
                ("vault_scan", json!({ "path": "notes/a.md" })),
                ("vault_ls", json!({ "relative_dir": "notes" })),
                (
                    "vault_search",
                    json!({ "query": "alpha", "scope": { "relative_dir": "notes" } }),
                ),
                (
                    "vault_create",
                    json!({ "path": format!("notes/new-{round}.md"), "content": "planted\n" }),
                ),
                (
                    "vault_write",
                    json!({ "path": "notes/a.md", "content": "more\n", "mode": "append" }),
                ),
                (
                    "vault_replace",
                    json!({ "path": "notes/a.md", "find": "alpha", "replace": "alpha" }),
                ),
                ("bridge_copy_section", copy_section("notes/a.md", "append")),
                ("vault_coverage", json!({ "path": "notes/a.md" })),
            ];
            for (tool, arguments) in calls {
                match workspace.call(tool, arguments) {
                    Ok(answer) => assert!(
                        !answer.to_string().contains("outside"),
                        "{tool} read through the link: {answer}"
                    ),
                    // A refusal, under whatever name the race gave it: a link swapped
                    // back between the refused open and the look that names the refusal
                    // reads as "not a folder" (invalid_path); a replace that finds the
                    // file changed since its read is a conflict.
                    Err(error) => assert!(
                        ["forbidden", "not_found", "conflict", "invalid_path"]
                            .contains(&error["code"].as_str().unwrap()),
                        "{tool}: {error}"
                    ),
                }
            }
        }
        drop(_stop);
        swapper.join().unwrap()
    });
    // Put the real folder back under its name before checking the outside.
    if fs::symlink_metadata(&real)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        exchange(&real, &link);
    }
    assert!(swaps > 100, "the swapper barely ran ({swaps} swaps)");
    watch.assert_untouched();
    assert_eq!(
        fs::read_to_string(workspace.outside.join("dir/a.md")).unwrap(),
        "outside alpha\n"
    );
}
