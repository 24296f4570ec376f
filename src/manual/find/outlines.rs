//! Every file's [`FileOutline`] kept under `CACHE_DIR`, so that a start over unchanged
//! manuals neither normalises a title nor decodes a stored outline from the section
//! index's JSON (issue 16: at 220 MB of manuals those two were about 30 % of the first
//! call; the labels alone normalise 200 000 titles twice).
//!
//! Per file, keyed by its [`file_id`](super::index::file_id) and its version (the stamp fingerprint the catalog
//! and the section index trust): a file whose version differs is derived again, the
//! others are read back. The rules whose output is stored (normalisation, the outline
//! rules that give titles, the extraction of references) are the envelope's rules
//! fingerprint, so another build never reads what the old rules made. An outline made
//! while its file could not be read ([`FileOutline::unread`]) is never stored.
//!
//! The file is `${CACHE_DIR}/outlines.bin`, a [`cache_file`](crate::manual::cache_file)
//! (magic `MVOUTL\0\0`) whose payload is:
//!
//! ```text
//! files u32, then per file: file_id u64, version u64, length u32 of the rest:
//!   part 1: page text, page loose, labels u32, per label: text, loose, parent u32
//!   (u32::MAX: none); body_bytes u64, node_bytes u32, per node u32;
//!   part 2: references u32, per reference: node u32, line u32, then 0 destination text,
//!   or 1 quoted u32 (strings), chapter (0, or 1 u32), section (0, or 1 string), window
//! ```
//!
//! Each part keeps its strings apart from its numbers ([`Writer::strings_apart`]): the
//! part's strings are checked as UTF-8 in one pass, not one by one. The references' part
//! is kept as its bytes until used ([`RawReferences`]).
//!
//! A start decodes every entry at once, on every core, before it lists any file (a server
//! does so beside the manual index's build); anything malformed in an entry means "derive
//! that file again", never an error.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::derived::{
    FileOutline, Label, NodeLabel, RawReference, RawReferences, RawTarget, StoredOutline,
};
use crate::machine::over_parts;
use crate::manual::cache_file::{CacheFile, Envelope, Reader, Writer};
use crate::manual::ManualFile;

/// The byte layout above; bump it with any change there.
const FORMAT_VERSION: u32 = 2;
/// Name under `CACHE_DIR`.
const FILE_NAME: &str = "outlines.bin";
/// `parent` of a label without one.
const NO_PARENT: u32 = u32::MAX;

/// The outline file of one cache folder.
pub(crate) struct OutlineStore {
    file: CacheFile,
}

/// The stored outlines as read, decoded, by file id with the version they were made at;
/// a malformed entry is `None` (its file is derived again). Decoded whole when read, not
/// when a sync asks for a file: a server reads them on a thread of its own while the
/// manual index is built (`CorpusCache::prepare`), before any file is listed.
#[derive(Default)]
pub(crate) struct StoredOutlines {
    entries: HashMap<u64, (u64, Option<FileOutline>)>,
}

impl OutlineStore {
    /// The store in `cache_dir`; `None` (logged) when the folder cannot be used. Inside
    /// `vault_root` the path is walked from the vault root without following links.
    pub(crate) fn open(cache_dir: &Path, vault_root: Option<&Path>) -> Option<OutlineStore> {
        let envelope = Envelope {
            magic: b"MVOUTL\0\0",
            format: FORMAT_VERSION,
            rules: rules_fingerprint(),
            holds: "the file outlines",
            without: "reading them from the section index and normalising every title",
        };
        let vault_root = vault_root.unwrap_or(cache_dir);
        let file = CacheFile::locate(cache_dir, vault_root, FILE_NAME, envelope)?;
        Some(OutlineStore { file })
    }

    /// The stored outlines, decoded on `threads` threads; empty when there is no file or
    /// it cannot be used.
    pub(crate) fn read(&self, threads: usize) -> StoredOutlines {
        self.file
            .read(|payload| StoredOutlines::decode(payload, threads))
            .unwrap_or_default()
    }

    /// Replaces the file with the outlines of `files` ([`file_id`](super::index::file_id), file, outline); those
    /// made from an unread file are left out. A failure is logged and costs only the next
    /// start's work.
    pub(crate) fn save<'a>(
        &self,
        files: impl Iterator<Item = (u64, &'a ManualFile, &'a FileOutline)>,
    ) {
        let mut out = self.file.writer();
        encode(&mut out, files);
        self.file.save(out);
    }
}

impl StoredOutlines {
    /// Reads the per-file table of `payload` and decodes its entries on `threads`
    /// threads; `None` when the table is malformed.
    fn decode(payload: &[u8], threads: usize) -> Option<StoredOutlines> {
        let mut reader = Reader::new(payload);
        let count = reader.u32()?;
        let mut table = Vec::with_capacity((count as usize).min(payload.len() / 20));
        for _ in 0..count {
            let id = reader.u64()?;
            let version = reader.u64()?;
            let len = reader.u32()? as usize;
            table.push((id, version, reader.take(len)?));
        }
        if !reader.is_empty() {
            return None;
        }
        let share = table.len().div_ceil(threads.max(1)).max(1);
        let entries = over_parts(table.chunks(share).collect(), |part| {
            // The outlines take about as much as their entries' bytes, in small
            // allocations (the labels' texts, their vectors, the references' bytes).
            let bytes = part.iter().map(|&(_, _, entry)| entry.len()).sum::<usize>();
            crate::allocator::reserve_thread_heap(bytes + bytes / 2);
            part.iter()
                .map(|&(id, version, entry)| (id, (version, decode_outline(entry))))
                .collect::<Vec<_>>()
        })
        .into_iter()
        .flatten()
        .collect();
        Some(StoredOutlines { entries })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The outline of `file` (whose [`file_id`](super::index::file_id) is `id`) as stored for its current
    /// version, taken out; `None` when it is not stored, stored for another version, or
    /// malformed.
    pub(crate) fn take(&mut self, id: u64, file: &ManualFile) -> Option<FileOutline> {
        let (version, outline) = self.entries.get_mut(&id)?;
        if *version != file.version() {
            return None;
        }
        let mut outline = outline.take()?;
        outline.generation = file.generation();
        (outline.node_count() == file.nodes().len()).then_some(outline)
    }
}

/// The sources of everything whose output is stored: those of the resolved references
/// (which cover the outline, its labels, the extraction of references, normalisation and
/// the outline rules giving titles), the catalog's parser (the nodes whose titles become
/// labels: a new parser re-parses a file whose version did not change), the front matter
/// giving page titles, and this layout.
fn rules_fingerprint() -> u64 {
    static RULES: OnceLock<u64> = OnceLock::new();
    *RULES.get_or_init(|| {
        crate::text::fingerprint(&[
            &super::refstore::rules_fingerprint().to_le_bytes(),
            &crate::manual::catalog_store::parser_fingerprint().to_le_bytes(),
            include_bytes!("outlines.rs"),
            include_bytes!("../front_matter.rs"),
        ])
    })
}

fn encode<'a>(
    out: &mut Writer,
    files: impl Iterator<Item = (u64, &'a ManualFile, &'a FileOutline)>,
) {
    let count_at = out.placeholder_u32();
    let mut count = 0u32;
    for (id, file, outline) in files.filter(|(_, _, outline)| !outline.unread) {
        count += 1;
        out.u64(id);
        out.u64(file.version());
        let len_at = out.placeholder_u32();
        let start = out.bytes.len();
        encode_outline(out, outline);
        let len = (out.bytes.len() - start) as u32;
        out.patch_u32(len_at, len);
    }
    out.patch_u32(count_at, count);
}

fn put_label(out: &mut Writer, label: &Label) {
    out.str(label.text());
    out.str(label.loose());
}

/// The next label of the labels' part, whose strings are `strings`: two places in them.
fn read_label(reader: &mut Reader<'_>, strings: &Arc<str>) -> Option<Label> {
    let text = reader.str_span()?;
    let loose = reader.str_span()?;
    Label::within(Arc::clone(strings), text, loose)
}

fn put_option<T>(out: &mut Writer, value: Option<T>, put: impl FnOnce(&mut Writer, T)) {
    match value {
        None => out.u8(0),
        Some(value) => {
            out.u8(1);
            put(out, value);
        }
    }
}

fn read_option<'a, T>(
    reader: &mut Reader<'a>,
    read: impl FnOnce(&mut Reader<'a>) -> Option<T>,
) -> Option<Option<T>> {
    match reader.u8()? {
        0 => Some(None),
        1 => Some(Some(read(reader)?)),
        _ => None,
    }
}

fn encode_outline(out: &mut Writer, outline: &FileOutline) {
    out.strings_apart(|out| encode_labels(out, outline));
    match outline.stored.references.stored_bytes() {
        Some(bytes) => out.bytes.extend_from_slice(bytes),
        None => out.strings_apart(|out| encode_references(out, outline.stored.references.get())),
    }
}

fn encode_labels(out: &mut Writer, outline: &FileOutline) {
    put_label(out, &outline.page);
    out.u32(outline.labels.len() as u32);
    for label in &outline.labels {
        put_label(out, &label.title);
        out.u32(label.parent.unwrap_or(NO_PARENT));
    }
    let stored = &outline.stored;
    out.u64(stored.body_bytes);
    out.u32(stored.node_bytes.len() as u32);
    for &bytes in &stored.node_bytes {
        out.u32(bytes);
    }
}

fn encode_references(out: &mut Writer, references: &[RawReference]) {
    out.u32(references.len() as u32);
    for reference in references {
        out.u32(reference.node);
        out.u32(reference.line);
        match &reference.target {
            RawTarget::Link { destination, text } => {
                out.u8(0);
                out.str(destination);
                out.str(text);
            }
            RawTarget::Cue {
                quoted,
                chapter,
                section,
                window,
            } => {
                out.u8(1);
                out.u32(quoted.len() as u32);
                for title in quoted {
                    out.str(title);
                }
                put_option(out, *chapter, Writer::u32);
                put_option(out, section.as_deref(), Writer::str);
                out.str(window);
            }
        }
    }
}

/// One file's outline from its whole `entry`, of generation 0 until a file claims it;
/// `None` when malformed (a count beyond the entry fails a read). The references are
/// checked and kept as their bytes ([`RawReferences`]).
fn decode_outline(entry: &[u8]) -> Option<FileOutline> {
    let reader = &mut Reader::new(entry);
    // Every label's text in one allocation, which the labels share.
    let strings: Arc<str> = reader.strings_apart()?.into();
    let page = read_label(reader, &strings)?;
    let nodes = reader.u32()?;
    // A label takes at least 12 bytes (two lengths and a parent).
    let mut labels = Vec::with_capacity((nodes as usize).min(entry.len() / 12));
    for _ in 0..nodes {
        let title = read_label(reader, &strings)?;
        let parent = match reader.u32()? {
            NO_PARENT => None,
            parent if parent < nodes => Some(parent),
            _ => return None,
        };
        labels.push(NodeLabel { title, parent });
    }
    let body_bytes = reader.u64()?;
    let node_bytes = (0..reader.u32()?)
        .map(|_| reader.u32())
        .collect::<Option<Vec<u32>>>()?;
    if !node_bytes.is_empty() && node_bytes.len() != nodes as usize {
        return None;
    }
    let references = &entry[entry.len() - reader.remaining()..];
    reader.strings_apart()?;
    let count = reader.u32()?;
    for _ in 0..count {
        if read_reference(reader)?.node >= nodes {
            return None;
        }
    }
    if !reader.is_empty() {
        return None;
    }
    Some(FileOutline {
        generation: 0,
        labels,
        page,
        stored: StoredOutline {
            body_bytes,
            node_bytes,
            references: RawReferences::encoded(references.into(), count, decode_references),
        },
        unread: false,
    })
}

/// Reads one reference, its strings borrowed; `None` when malformed.
fn read_reference<'a>(reader: &mut Reader<'a>) -> Option<RawReference<&'a str>> {
    let node = reader.u32()?;
    let line = reader.u32()?;
    let target = match reader.u8()? {
        0 => RawTarget::Link {
            destination: reader.str()?,
            text: reader.str()?,
        },
        1 => RawTarget::Cue {
            quoted: (0..reader.u32()?)
                .map(|_| reader.str())
                .collect::<Option<Vec<&str>>>()?,
            chapter: read_option(reader, Reader::u32)?,
            section: read_option(reader, Reader::str)?,
            window: reader.str()?,
        },
        _ => return None,
    };
    Some(RawReference { node, line, target })
}

/// A file's references as [`encode_outline`] writes them (and [`decode_outline`] checked
/// them); `None` when malformed.
fn decode_references(bytes: &[u8]) -> Option<Vec<RawReference>> {
    let mut reader = Reader::new(bytes);
    reader.strings_apart()?;
    let count = reader.u32()?;
    // Sized exactly: kept for the server's life, and a reference is ~90 bytes.
    let mut references = Vec::with_capacity((count as usize).min(bytes.len() / 9));
    for _ in 0..count {
        references.push(read_reference(&mut reader)?.owned());
    }
    reader.is_empty().then_some(references)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::corpus::CorpusCache;
    use crate::manual::find::index::{file_id, SectionIndex};
    use crate::manual::find::testing;
    use crate::manual::ManualIndex;

    const FILES: &[(&str, &str)] = &[
        (
            "m/guide/a.md",
            "---\ntitle: Ｇuide Ａ\n---\n# A\n\n[to b](b.md#second), 「申請手続き」参照。2.3節と第2章を参照\n\n## 申請手続き\n\n三万円\n",
        ),
        ("m/guide/b.md", "# B\n\n## Second\n\n[back](a.md)\n### 2.3 手順\n\nx\n"),
        ("n/empty.md", "no heading at all\n"),
        ("n/x.txt", "plain text\n"),
    ];

    fn same(left: &FileOutline, right: &FileOutline) -> bool {
        left.labels == right.labels && left.page == right.page && left.stored == right.stored
    }

    /// What a start over `cache_dir` syncs: the section index there, kept current.
    fn start(cache_dir: &Path) -> CorpusCache {
        CorpusCache::with_sections(SectionIndex::open(Some(cache_dir)), cache_dir, cache_dir)
    }

    #[test]
    fn a_start_reads_back_the_outlines_it_would_derive_and_never_a_stale_or_damaged_one() {
        let (dir, mut index) = testing::index(FILES);
        let cache_dir = tempfile::tempdir().unwrap();
        let derived = start(cache_dir.path()).sync(&index);
        let store = OutlineStore::open(cache_dir.path(), None).unwrap();
        let mut stored = store.read(2);
        assert_eq!(stored.len(), derived.files.len());
        let listed = index.files(None).unwrap();
        for (entry, file) in listed.iter().zip(&derived.files) {
            let id = file_id(entry.manual_id, entry.file.path());
            let read = stored.take(id, entry.file).expect("stored");
            assert!(same(&read, &file.outline), "{}", entry.file.path());
        }
        assert!(derived.files[0].outline.references().len() >= 3);
        let restored = start(cache_dir.path()).sync(&index);
        for (left, right) in restored.files.iter().zip(&derived.files) {
            assert!(same(&left.outline, &right.outline));
            assert!(left.pinned.is_none(), "held by the section index");
        }

        // An edited file is derived again, and the file rewritten with its new outline.
        std::fs::write(dir.path().join("m/guide/b.md"), "# B two\n\n[a](a.md)\n").unwrap();
        assert!(index.refresh().unwrap());
        let edited = start(cache_dir.path()).sync(&index);
        assert_eq!(edited.files[1].outline.labels[0].title.text(), "b two");
        let listed = index.files(None).unwrap();
        let b = store
            .read(2)
            .take(
                file_id(listed[1].manual_id, listed[1].file.path()),
                listed[1].file,
            )
            .unwrap();
        assert!(same(&b, &edited.files[1].outline));

        // A damaged or foreign file reads as nothing; the next start writes it whole.
        let path = cache_dir.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(store.read(2).is_empty());
        let index = ManualIndex::build(dir.path()).unwrap();
        let again = start(cache_dir.path()).sync(&index);
        for (left, right) in again.files.iter().zip(&edited.files) {
            assert!(same(&left.outline, &right.outline));
        }
        assert_eq!(store.read(2).len(), again.files.len());
    }

    #[test]
    fn an_entry_cut_short_or_out_of_range_reads_as_nothing() {
        let (_dir, index) = testing::index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let outline = &corpus.files[0].outline;
        let mut out = Writer::default();
        encode_outline(&mut out, outline);
        let read = decode_outline(&out.bytes).unwrap();
        assert!(same(&read, outline));
        for end in 0..out.bytes.len() {
            assert!(decode_outline(&out.bytes[..end]).is_none(), "cut at {end}");
        }
    }

    #[test]
    fn references_read_back_stay_encoded_until_used_and_are_written_back_as_read() {
        let (_dir, index) = testing::index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let outline = &corpus.files[0].outline;
        assert!(!outline.references().is_empty());
        let mut out = Writer::default();
        encode_outline(&mut out, outline);
        let read = decode_outline(&out.bytes).unwrap();
        assert!(read.stored.references.stored_bytes().is_some());
        let mut again = Writer::default();
        encode_outline(&mut again, &read);
        assert_eq!(again.bytes, out.bytes);
        assert_eq!(read.references(), outline.references());
        assert!(read.stored.references.stored_bytes().is_none());
        let mut decoded = Writer::default();
        encode_outline(&mut decoded, &read);
        assert_eq!(decoded.bytes, out.bytes);
    }
}
