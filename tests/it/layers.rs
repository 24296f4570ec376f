//! The layer rules of ARCHITECTURE.md, checked on the source: which module may import
//! which, where `std::fs` may be used, and that no new import cycle appears between
//! modules. Test code (`#[cfg(test)]` modules at the end of a file, `tests.rs`,
//! `testing.rs`, `test_support.rs`) and comments are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["manual", "find", "corpus"]`; the crate root is empty).
type Module = Vec<String>;

struct Source {
    module: Module,
    /// `mod.rs` / `lib.rs`: `super` is the parent of the module itself.
    file: PathBuf,
    code: String,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&root).unwrap().to_path_buf();
            let name = relative.file_stem()?.to_str()?.to_owned();
            if relative.starts_with("bin")
                || relative.components().any(|c| c.as_os_str() == "tests")
                || ["tests", "testing", "test_support", "main"].contains(&name.as_str())
            {
                return None;
            }
            let mut module: Module = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(name.as_str(), "mod" | "lib") {
                module.pop();
            }
            let text = std::fs::read_to_string(&file).unwrap();
            Some(Source {
                module,
                file: relative,
                code: production_code(&text),
            })
        })
        .collect()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// The code before the test module, without comment lines.
fn production_code(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests").unwrap_or(text.len());
    text[..end]
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::`, `super::` and `self::` path in `code`, braces expanded one level
/// (`use super::{a, b::c}` gives `super::a` and `super::b::c`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"]
        .iter()
        .flat_map(|head| code.match_indices(head).map(|(at, _)| at))
    {
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        if start >= 2 && &code[start - 2..start] == "::" {
            continue;
        }
        let rest = &code[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let head: Vec<String> = rest[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if rest[end..].starts_with('{') {
            let group = &rest[end + 1..rest[end..].find('}').map_or(rest.len(), |e| end + e)];
            for item in group.split(',') {
                let item = item.trim().split(" as ").next().unwrap_or("");
                let mut path = head.clone();
                path.extend(
                    item.split("::")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                );
                found.push(path);
            }
        } else {
            found.push(head);
        }
    }
    found
}

/// The module `path` (written in `from`) names: the longest prefix that is a module.
fn target(from: &Source, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut base = from.module.clone();
    let mut rest = &path[1..];
    match path.first()?.as_str() {
        "crate" => base.clear(),
        "self" => {}
        _ => {
            let is_dir_module = matches!(
                from.file.file_stem().and_then(|s| s.to_str()),
                Some("mod" | "lib")
            );
            // In `a/b.rs` (module a::b) `super` is `a`; in `a/mod.rs` (module a) too.
            if !is_dir_module || !base.is_empty() {
                base.pop();
            }
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
    }
    (0..=rest.len()).rev().find_map(|take| {
        let mut candidate = base.clone();
        candidate.extend(rest[..take].iter().cloned());
        modules.contains(&candidate).then_some(candidate)
    })
}

/// Imports between modules: `a -> b` when `a` names `b` and neither contains the other.
fn imports(sources: &[Source]) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut modules: BTreeSet<Module> = sources.iter().map(|s| s.module.clone()).collect();
    // The generated types, an inline module of contract.rs that imports nothing of the
    // crate: the bottom of every layer (the tool table beside it is not).
    modules.insert(vec!["contract".to_owned(), "types".to_owned()]);
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for source in sources {
        for path in paths(&source.code) {
            let Some(to) = target(source, &path, &modules) else {
                continue;
            };
            let nested = to.starts_with(&source.module) || source.module.starts_with(&to);
            if !nested {
                graph.entry(source.module.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

fn name(module: &Module) -> String {
    module.join("::")
}

/// What only the wiring above the domains imports: the tool layer, the protocol, the
/// application and the MCP features beside tools.
const ABOVE_THE_DOMAINS: &[&str] = &[
    "tools",
    "server",
    "app",
    "cli",
    "resources",
    "prompts",
    "completion",
];

/// Each layer below the tool layer, and what it must not import besides
/// [`ABOVE_THE_DOMAINS`]: domain logic knows nothing of the protocol, and the two domains
/// stay apart.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "text",
        &[
            "manual", "vault", "bridge", "artifact", "memory", "embed", "adaptive", "paths",
            "config",
        ],
    ),
    ("manual", &["vault"]),
    ("vault", &["manual"]),
    ("bridge", &[]),
    ("artifact", &["manual", "vault"]),
    ("memory", &["manual", "vault"]),
    ("embed", &["manual", "vault", "memory"]),
    ("adaptive", &["manual", "vault"]),
    ("paths", &["manual", "vault"]),
    ("trace", &["manual", "vault"]),
    ("verdict", &["manual", "vault"]),
    ("proposal", &["manual", "vault"]),
];

#[test]
fn no_layer_imports_one_above_it() {
    let sources = sources();
    let graph = imports(&sources);
    let mut broken = Vec::new();
    for (from, targets) in &graph {
        for (layer, never) in FORBIDDEN {
            if from.first().map(String::as_str) != Some(*layer) {
                continue;
            }
            for to in targets {
                let top = to.first().map_or("", String::as_str);
                if ABOVE_THE_DOMAINS.contains(&top) || never.contains(&top) {
                    broken.push(format!("{} imports {}", name(from), name(to)));
                }
            }
        }
    }
    let tools = vec!["tools".to_owned()];
    for (from, targets) in graph.iter().filter(|(from, _)| from.starts_with(&tools)) {
        for to in targets {
            if to
                .first()
                .is_some_and(|top| top == "server" || top == "cli")
            {
                broken.push(format!("{} imports {}", name(from), name(to)));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The modules that may touch the file system with `std::fs`: the path layer (every
/// file under a root), the manual catalogue and watch, the synonyms file read of the
/// search state, the stores of their own files, and the start-up code.
const FS_ALLOWED: &[&str] = &[
    "paths",
    "manual::catalog",
    "manual::cache_file",
    "manual::watch",
    "manual::find",
    "adaptive::store",
    "embed::store",
    "memory::admin",
    "server::auth",
    "cli",
    "workspace",
];

#[test]
fn std_fs_is_used_only_where_the_architecture_says() {
    let misplaced: Vec<String> = sources()
        .iter()
        .filter(|source| source.code.contains("std::fs") || source.code.contains(" fs::"))
        .map(|source| name(&source.module))
        .filter(|module| {
            !FS_ALLOWED
                .iter()
                .any(|allowed| module == allowed || module.starts_with(&format!("{allowed}::")))
        })
        .collect();
    assert!(misplaced.is_empty(), "std::fs in {misplaced:?}");
}

/// Import cycles known when the rule was introduced, each with why it is left. A cycle
/// not listed fails the test; one that is gone must be taken off the list. None is left:
/// issue 15 broke the last four (manual::find search-semantic and corpus-links-resolve,
/// completion-prompts, app-tools::memory).
const KNOWN_CYCLES: &[&[&str]] = &[];

#[test]
fn no_new_import_cycle() {
    let graph = imports(&sources());
    let cycles: BTreeSet<Vec<String>> = strongly_connected(&graph)
        .into_iter()
        .filter(|component| component.len() > 1)
        .map(|component| {
            let mut names: Vec<String> = component.iter().map(name).collect();
            names.sort();
            names
        })
        .collect();
    let known: BTreeSet<Vec<String>> = KNOWN_CYCLES
        .iter()
        .map(|cycle| {
            let mut names: Vec<String> = cycle.iter().map(|s| s.to_string()).collect();
            names.sort();
            names
        })
        .collect();
    let new: Vec<&Vec<String>> = cycles.difference(&known).collect();
    let gone: Vec<&Vec<String>> = known.difference(&cycles).collect();
    assert!(new.is_empty(), "new import cycles: {new:?}");
    assert!(
        gone.is_empty(),
        "cycles gone, take them off KNOWN_CYCLES: {gone:?}"
    );
}

/// Tarjan's strongly connected components.
fn strongly_connected(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on_stack: BTreeSet<&'a Module>,
        components: Vec<Vec<Module>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a Module) {
        let next = state.index.len();
        state.index.insert(node, next);
        state.low.insert(node, next);
        state.stack.push(node);
        state.on_stack.insert(node);
        for to in state.graph.get(node).into_iter().flatten() {
            if !state.index.contains_key(to) {
                visit(state, to);
                let low = state.low[node].min(state.low[to]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(to) {
                let low = state.low[node].min(state.index[to]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            state.components.push(component);
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.components
}
