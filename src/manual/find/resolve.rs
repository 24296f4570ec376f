//! Resolution of the references `links` extracts: which section each one points at,
//! indexed in both directions, with every link's text attached to its target.
//!
//! A link resolves the way the sites manuals are published from resolve it: relative to
//! the linking file (as a file folder, and for pages served as folders as the page
//! itself), or to the manual's root for `/…` paths and for URLs of any host whose path
//! names a file of the manual; `x`, `x.md`, `x/_index.md`, `x/index.md` and
//! `x/README.md` all name page `x`; `#anchor` is matched against `{#id}` attributes and
//! GitHub-style heading slugs, and a missing anchor falls back to the page. A textual
//! reference resolves to sections titled as quoted (「…」), to numbered sections
//! (`2.3節`), to chapter files (`第2章` -> `02-….md`) and to titles written unquoted in
//! the prose around the cue. Links to other sites are dropped; a link into the manuals or
//! a quoted or numbered reference that finds nothing is kept as unresolved (a gap).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::derived::{CorpusFile, Label, NodeKey, RawReference, RawTarget};
use super::links::{leading_digits, section_number};
use crate::machine::{equal_parts, over_parts};
use crate::manual::ManualFile;
use crate::text::lines::LineNo;
use crate::text::units::{script, Script};

/// A title found in prose must have this many characters to count as a reference, so
/// common short words (概要, FAQ) are not mistaken for one.
const MIN_UNQUOTED_TITLE_CHARS: usize = 3;
/// A title shared by more sections than this is too ambiguous to follow.
const MAX_TITLE_TARGETS: usize = 3;

/// One resolved reference: `to` is `None` when the target could not be found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reference {
    pub from: NodeKey,
    pub line: LineNo,
    pub to: Option<NodeKey>,
    /// Index into the source file's `references`, for describing it.
    pub raw: u32,
}

impl Reference {
    /// The same reference with its file numbers moved up by `offset`.
    fn shifted(&self, offset: u32) -> Reference {
        let shift = |key: NodeKey| NodeKey {
            file: key.file + offset,
            node: key.node,
        };
        Reference {
            from: shift(self.from),
            line: self.line,
            to: self.to.map(shift),
            raw: self.raw,
        }
    }
}

/// The resolved references of one manual, with files numbered from the manual's first
/// file (0) instead of the corpus's. A reference never leaves its manual (every table
/// resolution reads is per manual), so this part depends only on the manual's own files:
/// it is what `refstore` keeps per manual, and what a sync reuses for a manual none of
/// whose files changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ManualReferences {
    /// In the order of the corpus's references: by file, then by raw reference.
    pub references: Vec<Reference>,
    /// The texts of the links pointing at each section, one per line, by section.
    pub link_texts: Vec<(NodeKey, Label)>,
}

/// Every reference of the corpus, resolved, with both directions indexed and link texts
/// attached to their targets. The references and texts stay in their manuals' parts,
/// shared with the cache that keeps them between syncs (so a sync holds them once); the
/// graph adds only the indexes, in corpus numbering.
#[derive(Debug, Default)]
pub(crate) struct ReferenceGraph {
    /// Each manual's part with the corpus index of its first file, in corpus order.
    parts: Vec<(u32, Arc<ManualReferences>)>,
    /// Where each part's references start in the corpus numbering of references.
    starts: Vec<u32>,
    outbound: ByNode,
    inbound: ByNode,
    /// Section -> (part, index of its link text in the part).
    link_texts: FxHashMap<NodeKey, (u32, u32)>,
}

/// Reference numbers by section, each section's in corpus order: one sorted table rather
/// than a map of vectors (issue 16: a start at 220 MB spent ~50 ms of its first call
/// growing a vector per section and hashing into the maps).
#[derive(Debug, Default)]
struct ByNode {
    /// Sorted by section; a section's numbers in the order they were added.
    entries: Vec<(NodeKey, u32)>,
}

impl ByNode {
    /// The table of `entries`, added in corpus order of their numbers (each number once).
    ///
    /// Placed by file first ([`crate::scatter::by_key`] over the corpus's files), then each file's
    /// few entries sorted by node and number: a section's numbers keep their corpus
    /// order, as a stable sort by section keeps them, at about a third of its cost over
    /// the 265,000 references of 220 MB of manuals, where it was on every start's first
    /// call (issue 16).
    fn of(entries: Vec<(NodeKey, u32)>) -> ByNode {
        let files = entries.iter().map(|(key, _)| key.file as usize + 1).max();
        let keyed = entries.iter().map(|&entry| (entry.0.file as usize, entry));
        let (mut starts, mut placed) = (Vec::new(), Vec::new());
        let placed_all =
            crate::scatter::by_key(keyed, files.unwrap_or(0), &mut starts, &mut placed);
        debug_assert!(placed_all, "every file is below the largest plus one");
        for file in starts.windows(2) {
            placed[file[0] as usize..file[1] as usize].sort_unstable();
        }
        ByNode { entries: placed }
    }

    /// The numbers added for `node`, in corpus order.
    fn get(&self, node: NodeKey) -> impl Iterator<Item = u32> + '_ {
        let first = self.entries.partition_point(|&(key, _)| key < node);
        self.entries[first..]
            .iter()
            .take_while(move |&&(key, _)| key == node)
            .map(|&(_, index)| index)
    }
}

impl ReferenceGraph {
    /// Resolves the references of `files` (with `manual_files` the same files' models).
    #[cfg(test)]
    pub(crate) fn resolve(files: &[CorpusFile], manual_files: &[&ManualFile]) -> ReferenceGraph {
        let manuals = manual_ranges(files);
        let resolved = resolve_manuals(files, manual_files, &manuals);
        ReferenceGraph::assemble(
            manuals
                .iter()
                .zip(resolved)
                .map(|(manual, references)| (manual.files.start, Arc::new(references))),
        )
    }

    /// The graph of the manuals `parts` (each with the corpus index of its first file),
    /// in corpus order.
    pub(crate) fn assemble(
        parts: impl Iterator<Item = (usize, Arc<ManualReferences>)>,
    ) -> ReferenceGraph {
        let parts: Vec<(u32, Arc<ManualReferences>)> = parts
            .map(|(first_file, part)| (first_file as u32, part))
            .collect();
        let references = parts.iter().map(|(_, part)| part.references.len()).sum();
        let link_texts = parts.iter().map(|(_, part)| part.link_texts.len()).sum();
        let mut graph = ReferenceGraph {
            parts: Vec::with_capacity(parts.len()),
            starts: Vec::with_capacity(parts.len()),
            link_texts: FxHashMap::with_capacity_and_hasher(link_texts, Default::default()),
            ..ReferenceGraph::default()
        };
        let mut outbound = Vec::with_capacity(references);
        let mut inbound = Vec::with_capacity(references);
        let mut count = 0u32;
        for (part_index, (first_file, part)) in parts.into_iter().enumerate() {
            let shift = |key: NodeKey| NodeKey {
                file: key.file + first_file,
                node: key.node,
            };
            graph.starts.push(count);
            for reference in &part.references {
                outbound.push((shift(reference.from), count));
                if let Some(to) = reference.to {
                    inbound.push((shift(to), count));
                }
                count += 1;
            }
            for (text_index, (key, _)) in part.link_texts.iter().enumerate() {
                graph
                    .link_texts
                    .insert(shift(*key), (part_index as u32, text_index as u32));
            }
            graph.parts.push((first_file, part));
        }
        graph.outbound = ByNode::of(outbound);
        graph.inbound = ByNode::of(inbound);
        graph
    }

    /// Reference `index` of the corpus numbering, in corpus numbering.
    fn reference(&self, index: u32) -> Reference {
        let part = self.starts.partition_point(|&start| start <= index) - 1;
        let (first_file, references) = &self.parts[part];
        references.references[(index - self.starts[part]) as usize].shifted(*first_file)
    }

    /// Every reference, in corpus order (by file, then as written).
    #[cfg(test)]
    pub(crate) fn references(&self) -> Vec<Reference> {
        self.parts
            .iter()
            .flat_map(|(first_file, part)| {
                part.references
                    .iter()
                    .map(|reference| reference.shifted(*first_file))
            })
            .collect()
    }

    /// References written in `node`'s own text.
    pub(crate) fn outbound(&self, node: NodeKey) -> impl Iterator<Item = Reference> + '_ {
        self.outbound.get(node).map(|index| self.reference(index))
    }

    /// References that point at `node`.
    pub(crate) fn inbound(&self, node: NodeKey) -> impl Iterator<Item = Reference> + '_ {
        self.inbound.get(node).map(|index| self.reference(index))
    }

    /// Every section links point at, with their texts.
    pub(crate) fn link_texts(&self) -> impl Iterator<Item = (NodeKey, &Label)> {
        self.link_texts.iter().map(|(key, &(part, text))| {
            (
                *key,
                &self.parts[part as usize].1.link_texts[text as usize].1,
            )
        })
    }

    /// Texts of the links pointing at `node`, one per line.
    pub(crate) fn link_text(&self, node: NodeKey) -> Option<&Label> {
        let &(part, text) = self.link_texts.get(&node)?;
        Some(&self.parts[part as usize].1.link_texts[text as usize].1)
    }
}

/// One manual's files in a corpus: consecutive, since files are in (manual_id, path)
/// order.
#[derive(Debug, Clone)]
pub(crate) struct ManualRange {
    pub manual_id: Arc<str>,
    pub files: Range<usize>,
}

/// The manuals of `files` in corpus order.
pub(crate) fn manual_ranges(files: &[CorpusFile]) -> Vec<ManualRange> {
    let mut manuals: Vec<ManualRange> = Vec::new();
    for (index, file) in files.iter().enumerate() {
        match manuals.last_mut() {
            Some(last) if last.manual_id == file.manual_id => last.files.end = index + 1,
            _ => manuals.push(ManualRange {
                manual_id: Arc::clone(&file.manual_id),
                files: index..index + 1,
            }),
        }
    }
    manuals
}

/// Resolves the references of the manuals `wanted` (ranges of `files`, whose models are
/// `manual_files`), one [`ManualReferences`] per wanted manual in the same order. Only
/// the wanted manuals' files are read, for the lookup tables as for the references.
pub(crate) fn resolve_manuals(
    files: &[CorpusFile],
    manual_files: &[&ManualFile],
    wanted: &[ManualRange],
) -> Vec<ManualReferences> {
    if wanted.is_empty() {
        return Vec::new();
    }
    let targets = Targets::new(files, manual_files, wanted);
    let resolved = resolve_in_parallel(&targets, files, wanted);
    wanted
        .iter()
        .map(|manual| {
            let first = manual.files.start;
            let mut part = ManualReferences::default();
            let mut link_texts: Vec<(NodeKey, Vec<&str>)> = Vec::new();
            let mut link_at: HashMap<NodeKey, usize> = HashMap::new();
            for file_index in manual.files.clone() {
                let file = &files[file_index];
                for (raw_index, resolved) in &resolved[&file_index] {
                    let raw = &file.outline.references()[*raw_index];
                    let local = |key: NodeKey| NodeKey {
                        file: key.file - first as u32,
                        node: key.node,
                    };
                    let from = NodeKey {
                        file: file_index as u32,
                        node: raw.node,
                    };
                    let reference = |to: Option<NodeKey>| Reference {
                        from: local(from),
                        line: raw.line,
                        to: to.map(local),
                        raw: *raw_index as u32,
                    };
                    if resolved.nodes.is_empty() && resolved.expected {
                        part.references.push(reference(None));
                    }
                    for &to in &resolved.nodes {
                        if to == from {
                            continue;
                        }
                        part.references.push(reference(Some(to)));
                        if let RawTarget::Link { text, .. } = &raw.target {
                            if !text.is_empty() {
                                let at = *link_at.entry(local(to)).or_insert_with(|| {
                                    link_texts.push((local(to), Vec::new()));
                                    link_texts.len() - 1
                                });
                                let texts = &mut link_texts[at].1;
                                if !texts.contains(&text.as_str()) {
                                    texts.push(text);
                                }
                            }
                        }
                    }
                }
            }
            part.link_texts = link_texts
                .into_iter()
                .map(|(node, texts)| (node, Label::new(texts.join("\n"))))
                .collect();
            part
        })
        .collect()
}

/// The targets of every reference of the `wanted` manuals' files that does not point
/// outside the manuals, with their index in the file's references, by file index
/// (external links, most of a site's, are left out so they are not all held at once).
/// Resolution reads only `targets`, so files are cut into consecutive parts of about
/// equal reference counts, one per core: it is the larger part of a start that cannot
/// reuse a stored resolution (60 000 links and 7 000 cues at 55 MB of manuals).
fn resolve_in_parallel(
    targets: &Targets,
    files: &[CorpusFile],
    wanted: &[ManualRange],
) -> HashMap<usize, Vec<(usize, Resolved)>> {
    let indices: Vec<usize> = wanted
        .iter()
        .flat_map(|manual| manual.files.clone())
        .collect();
    let count = |&file_index: &usize| files[file_index].outline.references().len();
    let total: usize = indices.iter().map(count).sum();
    let threads = crate::machine::cores().min(total / 1000 + 1);
    let parts = equal_parts(&indices, threads, count);
    let resolve_part = |part: &[usize]| -> Vec<(usize, Vec<(usize, Resolved)>)> {
        // A URL resolves the same from every file of a manual, and manuals repeat theirs
        // (a site's home, a tracker): resolved once per manual, not once per link.
        let mut urls: HashMap<(&str, &str), Resolved> = HashMap::new();
        part.iter()
            .map(|&file_index| {
                let file = &files[file_index];
                let from_file = file_index as u32;
                let resolved = file
                    .outline
                    .references()
                    .iter()
                    .enumerate()
                    .filter_map(|(raw_index, raw)| {
                        let resolved = match &raw.target {
                            RawTarget::Link { destination, .. } if is_url(destination) => urls
                                .entry((&file.manual_id, destination))
                                .or_insert_with(|| targets.resolve(from_file, raw))
                                .clone(),
                            _ => targets.resolve(from_file, raw),
                        };
                        (!resolved.external).then_some((raw_index, resolved))
                    })
                    .collect();
                (file_index, resolved)
            })
            .collect()
    };
    over_parts(parts, |part| resolve_part(&indices[part]))
        .into_iter()
        .flatten()
        .collect()
}

/// What one raw reference resolved to.
#[derive(Clone)]
struct Resolved {
    nodes: Vec<NodeKey>,
    /// The reference points outside the manuals (another site): neither followed nor a gap.
    external: bool,
    /// A target was named precisely enough that failing to find it is a gap.
    expected: bool,
}

/// Lookup tables for resolution, per manual.
struct Targets<'a> {
    files: &'a [CorpusFile],
    manual_files: &'a [&'a ManualFile],
    /// (manual_id, path) -> file index; paths also lowercased.
    paths: HashMap<(&'a str, String), u32>,
    /// (manual_id, normalised title) -> nodes.
    titles: HashMap<(&'a str, &'a str), Vec<NodeKey>>,
    /// (manual_id, dotted number at the start of a title) -> nodes.
    numbered: HashMap<(&'a str, String), Vec<NodeKey>>,
    /// (manual_id, leading number of the file name) -> files.
    chapters: HashMap<(&'a str, u32), Vec<u32>>,
}

impl<'a> Targets<'a> {
    /// The tables of the manuals `wanted` (the others are never looked up).
    fn new(
        files: &'a [CorpusFile],
        manual_files: &'a [&'a ManualFile],
        wanted: &[ManualRange],
    ) -> Targets<'a> {
        let mut targets = Targets {
            files,
            manual_files,
            paths: HashMap::new(),
            titles: HashMap::new(),
            numbered: HashMap::new(),
            chapters: HashMap::new(),
        };
        for file_index in wanted.iter().flat_map(|manual| manual.files.clone()) {
            let file = &files[file_index];
            let manual: &str = &file.manual_id;
            let index = file_index as u32;
            targets.paths.insert((manual, file.path.to_string()), index);
            targets
                .paths
                .entry((manual, file.path.to_lowercase()))
                .or_insert(index);
            let name = file.path.rsplit('/').next().unwrap_or(&file.path);
            if let Ok(number) = leading_digits(name).parse::<u32>() {
                targets
                    .chapters
                    .entry((manual, number))
                    .or_default()
                    .push(index);
            }
            for (node_index, label) in file.outline.labels.iter().enumerate() {
                let key = NodeKey {
                    file: index,
                    node: node_index as u32,
                };
                let title = label.title.text();
                targets.titles.entry((manual, title)).or_default().push(key);
                if let Some(number) = section_number(&format!("section {title}")) {
                    targets
                        .numbered
                        .entry((manual, number))
                        .or_default()
                        .push(key);
                }
            }
        }
        targets
    }

    fn resolve(&self, from_file: u32, raw: &RawReference) -> Resolved {
        match &raw.target {
            RawTarget::Link { destination, .. } => self.resolve_link(from_file, destination),
            RawTarget::Cue {
                quoted,
                chapter,
                section,
                window,
            } => {
                let manual: &str = &self.files[from_file as usize].manual_id;
                let mut nodes = Vec::new();
                for title in quoted {
                    nodes.extend(self.titled(manual, from_file, title));
                }
                if let Some(section) = section {
                    let found = self.numbered.get(&(manual, section.clone()));
                    nodes.extend(self.prefer_file(found, from_file));
                }
                if let Some(chapter) = chapter {
                    let files = self.chapters.get(&(manual, *chapter)).into_iter().flatten();
                    nodes.extend(files.map(|&file| NodeKey { file, node: 0 }));
                }
                for candidate in title_candidates(window) {
                    if candidate.chars().count() >= MIN_UNQUOTED_TITLE_CHARS {
                        nodes.extend(self.titled(manual, from_file, candidate));
                    }
                }
                nodes.sort();
                nodes.dedup();
                Resolved {
                    nodes,
                    external: false,
                    expected: !quoted.is_empty() || section.is_some() || chapter.is_some(),
                }
            }
        }
    }

    /// Nodes titled `title`, those of the referring file first; none when too many.
    fn titled(&self, manual: &str, from_file: u32, title: &str) -> Vec<NodeKey> {
        self.prefer_file(self.titles.get(&(manual, title)), from_file)
    }

    fn prefer_file(&self, found: Option<&Vec<NodeKey>>, from_file: u32) -> Vec<NodeKey> {
        let Some(found) = found else {
            return Vec::new();
        };
        let same_file: Vec<NodeKey> = found
            .iter()
            .copied()
            .filter(|key| key.file == from_file)
            .collect();
        if !same_file.is_empty() {
            return same_file;
        }
        if found.len() > MAX_TITLE_TARGETS {
            return Vec::new();
        }
        found.clone()
    }

    fn resolve_link(&self, from_file: u32, destination: &str) -> Resolved {
        let external = Resolved {
            nodes: Vec::new(),
            external: true,
            expected: false,
        };
        let (location, anchor) = match destination.split_once('#') {
            Some((location, anchor)) => (location, Some(percent_decode(anchor).to_lowercase())),
            None => (destination, None),
        };
        let location = location.split('?').next().unwrap_or("");
        let from = &self.files[from_file as usize];
        let (is_url, path) = match url_path(location) {
            Some(path) => (true, path),
            None if has_scheme(location) => return external,
            None => (false, location),
        };
        let file = if path.is_empty() {
            (!is_url).then_some(from_file)
        } else {
            self.find_file(&from.manual_id, &from.path, &percent_decode(path))
        };
        let Some(file) = file else {
            return if is_url {
                external
            } else {
                Resolved {
                    nodes: Vec::new(),
                    external: false,
                    expected: true,
                }
            };
        };
        let node = match anchor.as_deref() {
            None | Some("") => 0,
            Some(anchor) => self.manual_files[file as usize]
                .nodes()
                .iter()
                .position(|node| {
                    node.anchor
                        .as_deref()
                        .is_some_and(|own| own.eq_ignore_ascii_case(anchor) || own == anchor)
                })
                .unwrap_or(0) as u32,
        };
        Resolved {
            nodes: vec![NodeKey { file, node }],
            external: false,
            expected: true,
        }
    }

    /// The file a link path names, relative to the manual root (`/x`) or to the linking
    /// file (both as a file folder and, for pages served as folders, as the page itself).
    fn find_file(&self, manual: &str, from_path: &str, path: &str) -> Option<u32> {
        let folder = from_path.rsplit_once('/').map_or("", |(folder, _)| folder);
        let page_folder = from_path
            .rsplit_once('.')
            .map_or(from_path, |(stem, _)| stem);
        let bases: Vec<&str> = if path.starts_with('/') {
            vec![""]
        } else {
            vec![folder, page_folder]
        };
        bases.into_iter().find_map(|base| {
            let joined = join(base, path)?;
            page_spellings(&joined).into_iter().find_map(|spelling| {
                self.paths
                    .get(&(manual, spelling.clone()))
                    .or_else(|| self.paths.get(&(manual, spelling.to_lowercase())))
                    .copied()
            })
        })
    }
}

/// Whether a link destination is an `http(s)://` URL, whose target does not depend on
/// the linking file (its path is absolute, `/` at least).
fn is_url(destination: &str) -> bool {
    let location = destination.split(['#', '?']).next().unwrap_or("");
    url_path(location).is_some()
}

/// Path of an `http(s)://host/path` URL (`/path`), `None` for anything else.
fn url_path(location: &str) -> Option<&str> {
    let rest = location
        .strip_prefix("https://")
        .or_else(|| location.strip_prefix("http://"))?;
    Some(rest.find('/').map_or("/", |slash| &rest[slash..]))
}

/// `mailto:`, `tel:`, `ftp://`… (a drive-less relative path never has `:` before `/`).
fn has_scheme(location: &str) -> bool {
    let before_slash = location.split('/').next().unwrap_or("");
    before_slash.contains(':')
}

/// `base/path` with `.` and `..` applied; `None` when it climbs above the root.
fn join(base: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let start = if path.starts_with('/') { "" } else { base };
    for part in start.split('/').chain(path.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// The file names a page path may have.
fn page_spellings(path: &str) -> Vec<String> {
    let lower = path.to_lowercase();
    if lower.ends_with(".md") || lower.ends_with(".json") {
        return vec![path.to_owned()];
    }
    let stem = path.strip_suffix(".html").unwrap_or(path);
    let mut spellings = vec![format!("{stem}.md")];
    for index in ["_index.md", "index.md", "README.md"] {
        spellings.push(if stem.is_empty() {
            index.to_owned()
        } else {
            format!("{stem}/{index}")
        });
    }
    spellings
}

fn percent_decode(text: &str) -> String {
    if !text.contains('%') {
        return text.to_owned();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Substrings of a cue window that may be a title written without quotes: runs of
/// whole segments, where segments break at punctuation, spaces and script changes
/// (so `経費精算規程の精算手順を` offers `経費精算規程`, `精算手順`, ...).
fn title_candidates(window: &str) -> Vec<&str> {
    let mut bounds: Vec<usize> = vec![0];
    let mut previous: Option<Script> = None;
    for (at, c) in window.char_indices() {
        let kind = match script(c) {
            Script::Other if c == 'ー' => Script::Katakana,
            kind => kind,
        };
        let breaks = c.is_whitespace() || kind == Script::Other || previous != Some(kind);
        if breaks && at > 0 {
            bounds.push(at);
        }
        previous = Some(kind);
    }
    bounds.push(window.len());
    bounds.dedup();
    let trim = |s: &'_ str| -> bool { s == s.trim() && !s.is_empty() };
    let mut candidates = Vec::new();
    for (i, &start) in bounds.iter().enumerate() {
        for &end in bounds.iter().skip(i + 1).take(8) {
            let candidate = &window[start..end];
            if trim(candidate) && !candidate.starts_with(|c: char| script(c) == Script::Other) {
                candidates.push(candidate);
            }
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::corpus::{Corpus, CorpusCache};
    use crate::manual::find::testing::{index, key};

    #[test]
    fn title_candidates_break_at_scripts_and_punctuation() {
        let candidates = title_candidates("詳しくは経費精算規程の精算手順を");
        assert!(candidates.contains(&"経費精算規程"));
        assert!(candidates.contains(&"精算手順"));
        assert!(title_candidates("for who decides.").contains(&"who decides"));
    }

    #[test]
    fn paths_join_and_spell_pages() {
        assert_eq!(join("a/b", "../c/./d").as_deref(), Some("a/c/d"));
        assert_eq!(join("a", "../../x"), None);
        assert_eq!(join("a", "/x/y").as_deref(), Some("x/y"));
        assert_eq!(
            page_spellings("handbook/finance"),
            [
                "handbook/finance.md",
                "handbook/finance/_index.md",
                "handbook/finance/index.md",
                "handbook/finance/README.md"
            ]
        );
        assert_eq!(page_spellings("a/b.MD"), ["a/b.MD"]);
        assert_eq!(page_spellings("a/b.html")[0], "a/b.md");
        assert_eq!(
            url_path("https://handbook.gitlab.com/handbook/x/"),
            Some("/handbook/x/")
        );
        assert!(has_scheme("mailto:a@b.c"));
        assert!(!has_scheme("a/b:c.md"));
        assert_eq!(percent_decode("%E7%94%B3%E8%AB%8B"), "申請");
    }

    const FILES: &[(&str, &str)] = &[
        (
            "m/handbook/a.md",
            "# A\n\n[to b](b.md#second-part), [abs](/handbook/c/), [site](https://example.org/handbook/c/#deep-id)\n\n[gone](missing.md) [out](https://other.example/x) [mail](mailto:x@y.z)\n\n## 申請手続き\n\n「申請手続き」参照。詳細は「無い節」参照。\n",
        ),
        ("m/handbook/b.md", "# B\n\n## Second part\n\nsee who decides.\n\n## Who decides\n\nx\n"),
        ("m/handbook/c/_index.md", "# C\n\n## Deep {#deep-id}\n\n第2章を参照\n"),
        ("m/handbook/02-chapter.md", "# Chapter two\n"),
    ];

    fn targets(from: NodeKey, corpus: &Corpus) -> Vec<Option<NodeKey>> {
        corpus.references.outbound(from).map(|r| r.to).collect()
    }

    #[test]
    fn a_sections_references_come_back_in_the_order_they_were_added_and_no_others() {
        let at = |file, node| NodeKey { file, node };
        let added = [(1, 0), (0, 2), (1, 0), (0, 2), (0, 1), (1, 0)];
        let table = ByNode::of(
            added
                .iter()
                .enumerate()
                .map(|(index, &(file, node))| (at(file, node), index as u32))
                .collect(),
        );
        assert_eq!(table.get(at(1, 0)).collect::<Vec<_>>(), [0, 2, 5]);
        assert_eq!(table.get(at(0, 2)).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(table.get(at(0, 1)).collect::<Vec<_>>(), [4]);
        assert_eq!(table.get(at(0, 0)).count(), 0);
        assert_eq!(table.get(at(2, 0)).count(), 0);
        assert_eq!(ByNode::default().get(at(0, 0)).count(), 0);
    }

    #[test]
    fn links_resolve_relative_absolute_and_by_url_path_with_anchors() {
        let (_dir, index) = index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let a = key(&corpus, &index, "m", "handbook/a.md", 1);
        let second = key(&corpus, &index, "m", "handbook/b.md", 3);
        let c = key(&corpus, &index, "m", "handbook/c/_index.md", 1);
        let deep = key(&corpus, &index, "m", "handbook/c/_index.md", 3);
        assert_eq!(
            targets(a, &corpus),
            [Some(second), Some(c), Some(deep), None]
        );
        assert_eq!(corpus.references.link_text(second).unwrap().text(), "to b");
        assert_eq!(corpus.references.inbound(deep).count(), 1);
    }

    #[test]
    fn textual_references_resolve_by_title_and_number() {
        let (_dir, index) = index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let procedure = key(&corpus, &index, "m", "handbook/a.md", 7);
        assert_eq!(
            targets(procedure, &corpus),
            [None],
            "「申請手続き」 is the section itself; 「無い節」 is a gap"
        );
        let second = key(&corpus, &index, "m", "handbook/b.md", 3);
        let decides = key(&corpus, &index, "m", "handbook/b.md", 7);
        assert_eq!(targets(second, &corpus), [Some(decides)]);
        let deep = key(&corpus, &index, "m", "handbook/c/_index.md", 3);
        let chapter = key(&corpus, &index, "m", "handbook/02-chapter.md", 1);
        assert_eq!(targets(deep, &corpus), [Some(chapter)]);
    }
}
