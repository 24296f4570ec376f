//! What the search derives from one manual file and keeps until the file changes, in two
//! parts (issue 16: a start over a current section index derives no file's text):
//!
//! - [`FileOutline`], what every search reads from every file: the node count, labels and
//!   raw references, and each node's normalised length (BM25's length normalisation, for
//!   every section the index brings, verified or not). Labels come from the catalog's
//!   titles; the references and the lengths need the normalised body, so the
//!   section index stores them with the file's sections ([`StoredOutline`]) and a file the
//!   index holds in its current version gets its outline without its body being read.
//! - [`FileText`], the normalised body with its line and node starts: what the scan, the
//!   verification and the exception stage read, for candidate files only when the index
//!   serves; derived on first use and kept in a bounded cache (`texts`).
//!
//! Plain data with its accessors, so `corpus` (which builds and caches it), `links` (which
//! extracts the references from it) and `resolve` (which reads it across files) all import
//! it and none of them another for it.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::manual::file::ManualText;
use crate::manual::ManualFile;
use crate::text::lines::LineNo;
use crate::text::loose::loose_normalized;
use crate::text::normalize::normalize_str;
use crate::text::shared::SharedBytes;

/// A section in a corpus: index of its file, index of the node in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct NodeKey {
    pub file: u32,
    pub node: u32,
}

/// What every search needs from a file; see the module documentation.
#[derive(Debug)]
pub(crate) struct FileOutline {
    /// Generation of the [`ManualFile`] this was built from.
    pub generation: u64,
    /// Per node: normalised and loose title, index of the parent node.
    pub labels: Vec<NodeLabel>,
    /// Page title (front matter, else first title, else file stem) and the words of the
    /// file's path, normalised: what a link to the page as a whole is likely to say.
    pub page: Label,
    /// What the body gave: the references and the body's length.
    pub stored: StoredOutline,
    /// Derived while the file could not be read (it changed under the index, or the read
    /// failed): `stored` is empty. Nothing made from it outlives this sync's use: it is
    /// derived again at the next sync, the section index does not get its sections, and
    /// its manual's resolved references are not kept under the manual's key.
    pub unread: bool,
}

/// The part of a [`FileOutline`] that only the normalised body gives, as the section
/// index stores it (JSON in a bytes field of the file's first section).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct StoredOutline {
    /// Bytes of [`FileText::body`]: the nodes' own texts, or the empty lines of a file
    /// without nodes.
    pub body_bytes: u64,
    /// Bytes of each node's own normalised text ([`FileText::own_text`]).
    pub node_bytes: Vec<u32>,
    /// Links and textual references found in the file, not yet resolved.
    pub references: RawReferences,
}

/// A file's raw references. Read back from the outline file (`outlines`) they stay in
/// their stored bytes (a place in the file's read buffer, not a copy), checked
/// well-formed as they were read, and are decoded at their
/// first use: only the resolution of a changed manual and a gap's description read them,
/// and decoded at every start they were 60 % of the stored outlines (265 000 references,
/// most of a million strings at 220 MB of manuals).
#[derive(Debug, Clone, Default)]
pub(crate) struct RawReferences {
    /// The stored bytes, when read back, with the decoder of their layout (the store's:
    /// this plain-data module imports no store).
    encoded: Option<(SharedBytes, DecodeReferences)>,
    /// How many there are, known without decoding them (a stored resolution is checked
    /// against it at every start).
    count: u32,
    decoded: OnceLock<Vec<RawReference>>,
}

impl RawReferences {
    /// The `count` references kept as `encoded`, bytes that `decode` was checked to decode.
    pub(crate) fn encoded(
        encoded: SharedBytes,
        count: u32,
        decode: DecodeReferences,
    ) -> RawReferences {
        RawReferences {
            encoded: Some((encoded, decode)),
            count,
            decoded: OnceLock::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.count as usize
    }

    /// The stored bytes, when these were read back and not yet decoded: written back as
    /// they are.
    pub(crate) fn stored_bytes(&self) -> Option<&[u8]> {
        self.encoded
            .as_ref()
            .map(|(bytes, _)| bytes.bytes())
            .filter(|_| self.decoded.get().is_none())
    }

    pub(crate) fn get(&self) -> &[RawReference] {
        self.decoded.get_or_init(|| {
            // Checked when read, so this finds every reference; an empty list otherwise.
            self.encoded
                .as_ref()
                .and_then(|(bytes, decode)| decode(bytes.bytes()))
                .unwrap_or_default()
        })
    }
}

/// Turns stored references back into the list; `None` when malformed.
pub(crate) type DecodeReferences = fn(&[u8]) -> Option<Vec<RawReference>>;

impl From<Vec<RawReference>> for RawReferences {
    fn from(references: Vec<RawReference>) -> RawReferences {
        RawReferences {
            encoded: None,
            count: references.len() as u32,
            decoded: OnceLock::from(references),
        }
    }
}

impl PartialEq for RawReferences {
    fn eq(&self, other: &RawReferences) -> bool {
        self.get() == other.get()
    }
}

/// As the list it stands for: the section index keeps it as JSON.
impl Serialize for RawReferences {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawReferences {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<RawReference>::deserialize(deserializer).map(RawReferences::from)
    }
}

impl FileOutline {
    /// The outline of `file` with what its body gave (derived, or read from the index).
    pub(crate) fn new(file: &ManualFile, stored: StoredOutline) -> FileOutline {
        let labels = file
            .nodes()
            .iter()
            .map(|node| NodeLabel {
                title: Label::new(normalize_str(&node.title)),
                parent: node.parent,
            })
            .collect();
        FileOutline {
            generation: file.generation(),
            labels,
            page: Label::new(normalize_str(&page_words(file))),
            stored,
            unread: false,
        }
    }

    pub(crate) fn node_count(&self) -> usize {
        self.labels.len()
    }

    pub(crate) fn references(&self) -> &[RawReference] {
        self.stored.references.get()
    }

    /// How many [`Self::references`] there are, without decoding them.
    pub(crate) fn reference_count(&self) -> usize {
        self.stored.references.len()
    }
}

/// A file's own text normalised, line by line; see the module documentation.
#[derive(Debug)]
pub(crate) struct FileText {
    /// Generation of the [`ManualFile`] this was built from.
    pub generation: u64,
    /// Line number of the first line of `body` (the first node's first line).
    pub first_line: LineNo,
    /// Normalised lines from `first_line` to the end, each followed by `\n` (which
    /// normalisation never leaves inside a line, so no match spans two lines).
    pub body: String,
    /// Byte offset in `body` where each line starts.
    pub line_starts: Vec<u32>,
    /// Byte offset in `body` where each node's own text starts; one more entry closes
    /// the last node.
    pub node_starts: Vec<u32>,
}

/// `file`'s text for a derivation, or `None` when the file changed since the index read
/// it (logged, and the index marked to walk again by the read): the search skips its
/// text until the refresh brings the new version, and must not keep the blank one.
pub(crate) fn read_original(file: &ManualFile) -> Option<ManualText<'_>> {
    file.read_text().ok()
}

/// A short normalised text and its loose form, as two places in a text it shares.
///
/// Why shared: a start reads about 400 000 labels back from the outline file (issue 16),
/// and a `String` for each text and loose form was most of that read's time (allocations,
/// and the heap grown page by page for them). A file's labels read back share the one
/// text the file stores them in; a label made otherwise holds its two forms alone. It is
/// [`crate::text::shared::SharedStr`]'s idea for a pair: two ranges beside one `Arc`
/// (32 bytes, one count) rather than two `SharedStr`s (48 bytes, two counts).
#[derive(Clone, Default)]
pub(crate) struct Label {
    strings: Arc<str>,
    text: (u32, u32),
    loose: (u32, u32),
}

impl Label {
    pub(crate) fn new(normalized: String) -> Label {
        let loose = loose_normalized(&normalized);
        Label::of(&normalized, &loose)
    }

    /// The label of `text` and its loose form `loose`, as given.
    pub(crate) fn of(text: &str, loose: &str) -> Label {
        let strings: Arc<str> = [text, loose].concat().into();
        Label::within(strings, 0..text.len(), text.len()..text.len() + loose.len())
            .expect("both forms lie in their concatenation")
    }

    /// The label whose text and loose form are `strings[text]` and `strings[loose]`;
    /// `None` when either is not a text of `strings` (out of it, or cutting a character).
    pub(crate) fn within(
        strings: Arc<str>,
        text: Range<usize>,
        loose: Range<usize>,
    ) -> Option<Label> {
        let place = |range: Range<usize>| {
            strings.get(range.clone())?;
            Some((
                u32::try_from(range.start).ok()?,
                u32::try_from(range.end).ok()?,
            ))
        };
        Some(Label {
            text: place(text)?,
            loose: place(loose)?,
            strings,
        })
    }

    /// The normalised text.
    pub(crate) fn text(&self) -> &str {
        &self.strings[self.text.0 as usize..self.text.1 as usize]
    }

    /// The loose form of [`Label::text`].
    pub(crate) fn loose(&self) -> &str {
        &self.strings[self.loose.0 as usize..self.loose.1 as usize]
    }
}

/// As its two forms: where they are stored does not matter.
impl PartialEq for Label {
    fn eq(&self, other: &Label) -> bool {
        self.text() == other.text() && self.loose() == other.loose()
    }
}

impl std::fmt::Debug for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Label")
            .field("text", &self.text())
            .field("loose", &self.loose())
            .finish()
    }
}

#[derive(Debug, PartialEq)]
pub(crate) struct NodeLabel {
    pub title: Label,
    pub parent: Option<u32>,
}

impl FileText {
    /// Normalises `file`'s text `original` (read by [`read_original`]) line by line;
    /// with no text (the file changed since indexed), a blank text of the file's lines,
    /// in which a search finds nothing rather than a newer text cut by the old lines.
    pub(crate) fn derive(file: &ManualFile, original: Option<&ManualText<'_>>) -> FileText {
        let nodes = file.nodes();
        let first_line = nodes.first().map_or(1, |node| node.line_start);
        let mut body = String::with_capacity(file.text_len() + 64);
        let mut line_starts = Vec::new();
        for line in first_line..=file.line_count() {
            line_starts.push(offset(&body));
            if let Some(original) = original.filter(|_| !nodes.is_empty()) {
                body.push_str(&normalize_str(original.lines(line, line)));
            }
            body.push('\n');
        }
        let mut node_starts = Vec::with_capacity(nodes.len() + 1);
        for node in nodes {
            let start = line_starts[(node.line_start - first_line) as usize];
            node_starts.push(start);
        }
        node_starts.push(offset(&body));
        // Sized for the worst case; the cache may keep it for the server's life.
        body.shrink_to_fit();
        FileText {
            generation: file.generation(),
            first_line,
            body,
            line_starts,
            node_starts,
        }
    }

    /// Bytes of each node's own text.
    pub(crate) fn node_bytes(&self) -> Vec<u32> {
        self.node_starts
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .collect()
    }

    /// Memory this holds, what the text cache's budget counts.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.body.capacity() + 4 * (self.line_starts.capacity() + self.node_starts.capacity())
    }

    /// Normalised own text of node `node` (lines separated by `\n`).
    pub(crate) fn own_text(&self, node: u32) -> &str {
        let node = node as usize;
        &self.body[self.node_starts[node] as usize..self.node_starts[node + 1] as usize]
    }

    /// Loose own text of node `node` (lines joined, separators removed) followed by `\n`,
    /// which loose text never contains. Loosened on demand, not kept: the search loosens
    /// only the sections it verifies, and a second copy of every text would cost as much
    /// memory as the normalised one.
    pub(crate) fn own_loose(&self, node: u32) -> String {
        let mut loose = loose_normalized(self.own_text(node));
        loose.push('\n');
        loose
    }

    /// The normalised text of file line `line` (no terminator).
    pub(crate) fn line_text(&self, line: LineNo) -> &str {
        let index = (line - self.first_line) as usize;
        let start = self.line_starts[index] as usize;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.body.len(), |&next| next as usize);
        self.body[start..end].trim_end_matches('\n')
    }

    /// File line holding byte `at` of `body`.
    pub(crate) fn line_at(&self, at: usize) -> LineNo {
        let index = self
            .line_starts
            .partition_point(|&start| start as usize <= at);
        self.first_line + index.saturating_sub(1) as LineNo
    }

    /// Lines `first..=last` of a node's own text, as (line number, normalised text).
    pub(crate) fn own_lines(
        &self,
        node: u32,
        file: &ManualFile,
    ) -> impl Iterator<Item = (LineNo, &str)> {
        let start = file.nodes()[node as usize].line_start;
        let end = file.own_end(node as usize);
        (start..=end).map(move |line| (line, self.line_text(line)))
    }
}

fn offset(text: &str) -> u32 {
    u32::try_from(text.len()).expect("a manual file is far below 4 GiB")
}

/// Page title and the words of the path (`finance/travel/sponsored.md` -> `finance travel
/// sponsored`), `_index` and `index` left out since they name no topic.
fn page_words(file: &ManualFile) -> String {
    let title = file
        .page_title()
        .or_else(|| file.nodes().first().map(|node| node.title.as_str()))
        .unwrap_or("");
    let without_extension = file
        .path()
        .rsplit_once('.')
        .map_or(file.path(), |(stem, _)| stem);
    let words: Vec<&str> = without_extension
        .split(['/', '-', '_', '.'])
        .filter(|word| !word.is_empty() && !matches!(*word, "index" | "readme"))
        .collect();
    format!("{title} {}", words.join(" "))
}

/// One file of a [`Corpus`](super::corpus::Corpus).
#[derive(Debug, Clone)]
pub(crate) struct CorpusFile {
    /// [`file_id`](super::index::file_id) of the manual id and path, computed once: a
    /// sync keys the stored outlines, the section index's checks and its view by it.
    pub id: u64,
    pub manual_id: Arc<str>,
    pub path: Arc<str>,
    pub outline: Arc<FileOutline>,
    /// The text, held for the corpus's life when the file is scanned directly (the index
    /// does not hold it, so every search reads it) or being written to the index; `None`
    /// when the index holds the file: its text is then read through the text cache.
    pub pinned: Option<Arc<FileText>>,
}

/// A reference as found in one file, before resolution. Its strings are owned, or
/// borrowed (`S = &str`) while `outlines` checks stored bytes without keeping them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RawReference<S = String> {
    /// Index of the node (in its file) whose own text holds the reference.
    pub node: u32,
    pub line: LineNo,
    pub target: RawTarget<S>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum RawTarget<S = String> {
    /// A Markdown link: its destination as written and its text, normalised.
    Link { destination: S, text: S },
    /// A textual reference: quoted titles, chapter and section numbers, and the prose
    /// around the cue in which a title may appear unquoted (all normalised).
    Cue {
        quoted: Vec<S>,
        chapter: Option<u32>,
        section: Option<S>,
        window: S,
    },
}

impl RawReference<&str> {
    pub(crate) fn owned(&self) -> RawReference {
        let target = match &self.target {
            RawTarget::Link { destination, text } => RawTarget::Link {
                destination: (*destination).to_owned(),
                text: (*text).to_owned(),
            },
            RawTarget::Cue {
                quoted,
                chapter,
                section,
                window,
            } => RawTarget::Cue {
                quoted: quoted.iter().map(|title| (*title).to_owned()).collect(),
                chapter: *chapter,
                section: section.map(str::to_owned),
                window: (*window).to_owned(),
            },
        };
        RawReference {
            node: self.node,
            line: self.line,
            target,
        }
    }
}

impl RawReference {
    /// How the reference reads, for a gap hint.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            RawTarget::Link { destination, .. } => format!("link to {destination}"),
            RawTarget::Cue {
                quoted,
                chapter,
                section,
                window,
            } => {
                if let Some(title) = quoted.first() {
                    format!("reference to 「{title}」")
                } else if let Some(section) = section {
                    format!("reference to section {section}")
                } else if let Some(chapter) = chapter {
                    format!("reference to chapter {chapter}")
                } else {
                    format!("reference \"{window}\"")
                }
            }
        }
    }
}
