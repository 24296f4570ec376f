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
//! references length u32, then every file's references part, one after the other:
//!   references u32, per reference: node u32, line u32, then 0 destination text, or
//!   1 quoted u32 (strings), chapter (0, or 1 u32), section (0, or 1 string), window;
//! files u32, then per file: file_id u64, version u64, its references part's offset u32
//!   and length u32 (in the references above), length u32 of its labels part:
//!   page text, page loose, labels u32, per label: text, loose, parent u32
//!   (u32::MAX: none); body_bytes u64, node_bytes u32, per node u32
//! ```
//!
//! Each part keeps its strings apart from its numbers ([`Writer::strings_apart`]): the
//! part's strings are checked as UTF-8 in one pass, not one by one. The references are
//! checked when read and kept as their bytes until used ([`RawReferences`]), in the read
//! buffer itself: they come first so that the buffer keeps them and hands the labels'
//! part back once decoded ([`Payload::keep_front`]); copied out one file at a time they
//! were 30 MB of fresh heap pages a start at 220 MB of manuals.
//!
//! A start decodes every entry at once, on every core, before it lists any file (a server
//! does so beside the manual index's build); anything malformed in an entry means "derive
//! that file again", never an error.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::derived::{
    FileOutline, Label, NodeLabel, RawReference, RawReferences, RawTarget, StoredOutline,
};
use crate::machine::over_parts;
use crate::manual::cache_file::{CacheFile, Envelope, Payload, Reader, Writer};
use crate::manual::ManualFile;

/// The byte layout above; bump it with any change there.
const FORMAT_VERSION: u32 = 3;
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
        let Some(payload) = self.file.read_payload() else {
            return StoredOutlines::default();
        };
        let stored = StoredOutlines::decode(payload, threads);
        if stored.is_none() {
            self.file.unusable();
        }
        stored.unwrap_or_default()
    }

    /// Replaces the file with the outlines of `files` ([`file_id`](super::index::file_id), file, outline); those
    /// made from an unread file are left out. A failure is logged and costs only the next
    /// start's work.
    pub(crate) fn save<'a>(
        &self,
        files: impl Iterator<Item = (u64, &'a ManualFile, &'a FileOutline)>,
    ) {
        let mut out = self.file.writer();
        let files = files.map(|(id, file, outline)| (id, file.version(), outline));
        if encode(&mut out, files).is_some() {
            self.file.save(out);
        } else {
            tracing::warn!("the file outlines' references exceed 4 GiB and are not kept");
        }
    }
}

/// One entry of a payload as decoded: its outline without its references, with their
/// count and their place in the payload; no outline when the entry is malformed.
struct DecodedEntry {
    id: u64,
    version: u64,
    outline: Option<(FileOutline, u32, Range<usize>)>,
}

impl StoredOutlines {
    /// Decodes `payload` on `threads` threads, keeping its references' part as read for
    /// the outlines to share; `None` when the table is malformed.
    fn decode(payload: Payload, threads: usize) -> Option<StoredOutlines> {
        let (decoded, references_end) = decode_entries(payload.bytes(), threads)?;
        let kept = payload.keep_front(references_end)?;
        let entries = decoded
            .into_iter()
            .map(|entry| {
                let outline = entry.outline.and_then(|(mut outline, count, place)| {
                    let bytes = kept.slice(place)?;
                    outline.stored.references =
                        RawReferences::encoded(bytes, count, decode_references);
                    Some(outline)
                });
                (entry.id, (entry.version, outline))
            })
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

/// Reads the per-file table of `payload` and decodes its entries on `threads` threads;
/// `None` when the table is malformed. Returns where the references' part ends.
fn decode_entries(payload: &[u8], threads: usize) -> Option<(Vec<DecodedEntry>, usize)> {
    let mut reader = Reader::new(payload);
    let references_len = reader.u32()? as usize;
    let references = reader.take(references_len)?;
    let references_start = payload.len() - reader.remaining() - references_len;
    let count = reader.u32()?;
    // An entry takes at least 28 bytes (its ids, place and length).
    let mut table = Vec::with_capacity((count as usize).min(payload.len() / 28));
    for _ in 0..count {
        let id = reader.u64()?;
        let version = reader.u64()?;
        let start = reader.u32()? as usize;
        let place = start..start.checked_add(reader.u32()? as usize)?;
        let labels_len = reader.u32()? as usize;
        table.push((id, version, place, reader.take(labels_len)?));
    }
    if !reader.is_empty() {
        return None;
    }
    let share = table.len().div_ceil(threads.max(1)).max(1);
    let entries = over_parts(table.chunks(share).collect(), |part| {
        // The outlines take about as much as their labels' bytes, in small allocations
        // (the labels' texts and vectors).
        let bytes = part.iter().map(|(.., labels)| labels.len()).sum::<usize>();
        crate::allocator::reserve_thread_heap(bytes + bytes / 2);
        part.iter()
            .map(|(id, version, place, labels)| {
                let outline = references.get(place.clone()).and_then(|references| {
                    let (outline, count) = decode_outline(labels, references)?;
                    let start = references_start + place.start;
                    Some((outline, count, start..start + place.len()))
                });
                DecodedEntry {
                    id: *id,
                    version: *version,
                    outline,
                }
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    Some((entries, references_start + references_len))
}

/// Appends the payload: the outlines of `files` ([`file_id`](super::index::file_id),
/// version, outline) but those made from an unread file. `None` when the references take
/// more than a u32 offset reaches.
fn encode<'a>(
    out: &mut Writer,
    files: impl Iterator<Item = (u64, u64, &'a FileOutline)>,
) -> Option<()> {
    let files: Vec<_> = files.filter(|(_, _, outline)| !outline.unread).collect();
    let references_at = out.placeholder_u32();
    let references_start = out.bytes.len();
    let mut places = Vec::with_capacity(files.len());
    for (_, _, outline) in &files {
        let start = out.bytes.len();
        encode_references_of(out, outline);
        places.push((
            u32::try_from(start - references_start).ok()?,
            u32::try_from(out.bytes.len() - start).ok()?,
        ));
    }
    let references_len = u32::try_from(out.bytes.len() - references_start).ok()?;
    out.patch_u32(references_at, references_len);
    out.u32(files.len() as u32);
    for (&(id, version, outline), (offset, len)) in files.iter().zip(places) {
        out.u64(id);
        out.u64(version);
        out.u32(offset);
        out.u32(len);
        let len_at = out.placeholder_u32();
        let start = out.bytes.len();
        out.strings_apart(|out| encode_labels(out, outline));
        let len = (out.bytes.len() - start) as u32;
        out.patch_u32(len_at, len);
    }
    Some(())
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

/// A file's references part: as read, when they were read back and not decoded.
fn encode_references_of(out: &mut Writer, outline: &FileOutline) {
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

/// One file's outline from its labels' part `entry`, of generation 0 until a file claims
/// it, without its references, which are checked in `references` and counted; `None`
/// when malformed (a count beyond the entry fails a read).
fn decode_outline(entry: &[u8], references: &[u8]) -> Option<(FileOutline, u32)> {
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
    if !reader.is_empty() || (!node_bytes.is_empty() && node_bytes.len() != nodes as usize) {
        return None;
    }
    let outline = FileOutline {
        generation: 0,
        labels,
        page,
        stored: StoredOutline {
            body_bytes,
            node_bytes,
            references: RawReferences::default(),
        },
        unread: false,
    };
    Some((outline, count_references(references, nodes)?))
}

/// How many references a file's references part holds, each checked to be well formed
/// and of one of the file's `nodes`; `None` when one is not.
fn count_references(bytes: &[u8], nodes: u32) -> Option<u32> {
    let reader = &mut Reader::new(bytes);
    reader.strings_apart()?;
    let count = reader.u32()?;
    for _ in 0..count {
        if read_reference(reader)?.node >= nodes {
            return None;
        }
    }
    reader.is_empty().then_some(count)
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

/// A file's references as [`encode_references_of`] writes them (and [`count_references`]
/// checked them); `None` when malformed.
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

    /// `outlines` encoded as a whole payload, with ids 1.. and version 7.
    fn payload(outlines: &[&FileOutline]) -> Vec<u8> {
        let mut out = Writer::default();
        let files = outlines
            .iter()
            .zip(1..)
            .map(|(outline, id)| (id, 7, *outline));
        encode(&mut out, files).unwrap();
        out.bytes
    }

    /// `payload` read back as a start reads the file holding it.
    fn read_back(payload: &[u8]) -> Option<StoredOutlines> {
        let folder = tempfile::tempdir().unwrap();
        let store = OutlineStore::open(folder.path(), None).unwrap();
        let mut out = store.file.writer();
        out.bytes.extend_from_slice(payload);
        store.file.save(out);
        StoredOutlines::decode(store.file.read_payload()?, 2)
    }

    fn outline(stored: &StoredOutlines, id: u64) -> Option<&FileOutline> {
        stored.entries[&id].1.as_ref()
    }

    #[test]
    fn a_payload_cut_short_reads_as_nothing_and_a_malformed_entry_as_no_outline() {
        let (_dir, index) = testing::index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let (first, second) = (&corpus.files[0].outline, &corpus.files[1].outline);
        let bytes = payload(&[first, second]);
        let read = read_back(&bytes).unwrap();
        assert!(same(outline(&read, 1).unwrap(), first));
        assert!(same(outline(&read, 2).unwrap(), second));
        for end in 0..bytes.len() {
            assert!(decode_entries(&bytes[..end], 2).is_none(), "cut at {end}");
        }
        // The first entry's references reaching past the references' part.
        let references_len = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        let first_place = 4 + references_len as usize + 4 + 16;
        let mut out_of_range = bytes.clone();
        out_of_range[first_place + 4..first_place + 8]
            .copy_from_slice(&(references_len + 1).to_le_bytes());
        let read = read_back(&out_of_range).unwrap();
        assert!(outline(&read, 1).is_none());
        assert!(same(outline(&read, 2).unwrap(), second));
        // The first entry's references being the second's, whose nodes it lacks.
        let second_first = &corpus.files[2].outline;
        assert!(second_first.labels.len() < second.references()[0].node as usize + 1);
        let bytes = payload(&[second_first, second]);
        let references_len = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        let first_place = 4 + references_len as usize + 4 + 16;
        let second_place = first_place
            + 12
            + {
                let len_at = first_place + 8;
                u32::from_le_bytes(bytes[len_at..len_at + 4].try_into().unwrap()) as usize
            }
            + 16;
        let mut foreign = bytes.clone();
        foreign.copy_within(second_place..second_place + 8, first_place);
        let read = read_back(&foreign).unwrap();
        assert!(outline(&read, 1).is_none());
        assert!(same(outline(&read, 2).unwrap(), second));
    }

    #[test]
    fn references_read_back_stay_in_the_read_buffer_until_used_and_are_written_back_as_read() {
        let (_dir, index) = testing::index(FILES);
        let corpus = CorpusCache::default().sync(&index);
        let (first, second) = (&corpus.files[0].outline, &corpus.files[1].outline);
        assert!(!first.references().is_empty());
        let bytes = payload(&[first, second]);
        let read = read_back(&bytes).unwrap();
        let (read_first, read_second) = (outline(&read, 1).unwrap(), outline(&read, 2).unwrap());
        let stored = read_first.stored.references.stored_bytes().unwrap();
        assert_eq!(stored, &bytes[4..4 + stored.len()]);
        // One buffer holds both files' references, one after the other: no copy each.
        let next = read_second.stored.references.stored_bytes().unwrap();
        assert_eq!(stored.as_ptr_range().end, next.as_ptr());
        assert_eq!(payload(&[read_first, read_second]), bytes);
        assert_eq!(read_first.references(), first.references());
        assert!(read_first.stored.references.stored_bytes().is_none());
        assert_eq!(payload(&[read_first, read_second]), bytes);
    }
}
