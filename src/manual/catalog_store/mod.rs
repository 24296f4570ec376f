//! The persisted catalog: each manual file's outline (nodes, code blocks, page title) and
//! line table, kept under `CACHE_DIR` so that a start parses only the files that changed.
//!
//! Why: the in-memory index needs every file's nodes and line table before it answers
//! anything, and deriving them (comrak's parse, the line scan) was most of a start's
//! time (0.68 s at 55 MB). A file whose stamp (size, mtime, inode, ctime: the
//! [`FileStamp`](super::catalog::FileStamp) fingerprint the section index also trusts)
//! equals the one recorded here gets its outline and lines from this file instead.
//!
//! The file is `${CACHE_DIR}/catalog.bin`, a [`cache_file`](super::cache_file) (magic
//! `MVCATLG\0`, the rules fingerprint being the parser's) whose payload is (layout of a
//! body in [`codec`]):
//!
//! ```text
//! entries u32, then per entry: manual_id, path, version u64, body length u32, body
//! ```
//!
//! Anything unexpected (the envelope, a malformed entry) means "parse again": never an
//! error, never a wrong outline. The parser fingerprint hashes the source of every module
//! whose output is stored (and the Cargo manifest that pins comrak), so a build with
//! another outline rule never reads outlines made by the old one.
//!
//! Written after a build that parsed a file or found one gone and after any refresh that
//! changed a file; a start that parsed nothing leaves it alone. Files with a problem are
//! not stored: they are read and checked again, which is what tells when they are fixed.

mod codec;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use rustc_hash::FxHashMap;

use self::codec::{read_parse, ParseRef};
use super::cache_file::{CacheFile, Envelope, Payload, Reader, Writer};
use super::file::{ManualFile, StoredParse};

/// The byte layout of [`codec`]; bump it with any change there.
const FORMAT_VERSION: u32 = 2;
/// Name under `CACHE_DIR`.
const FILE_NAME: &str = "catalog.bin";
/// The longest text whose line lengths fit the packed line table (31 bits).
const MAX_TEXT_BYTES: usize = (u32::MAX >> 1) as usize;

/// The catalog file of one server (or `manvault index`), with the entries it held when
/// opened until the first build has claimed them.
#[derive(Debug)]
pub(crate) struct CatalogStore {
    file: CacheFile,
    /// The payload read when the store was opened, while it is being decoded.
    decoding: Option<Decoding>,
    /// The folders of the stored files, until the first build takes them for its watch.
    folders: Vec<String>,
    unclaimed: StoredEntries,
}

/// The entries of a catalog file, decoded before the first build reads any manual text
/// (the file's bytes are then dropped, so they never add to the build's peak memory).
/// By manual_id, then path, with the version (stamp fingerprint) they were made at.
/// Nested so that a claim looks a file up by borrowed names (a (manual_id, path) key
/// cost two allocations per claim); FxHash because the keys are the operator's file
/// names and SipHash was 10 ms of a start at 20,000 files.
type StoredEntries = FxHashMap<String, FxHashMap<String, (u64, StoredParse)>>;

/// A payload being decoded on a thread of its own from the moment the store is opened
/// until the first claim: decoding is a fifth of the CPU of a 220 MB start to the first
/// answer, and the first build has the change watch to arm and the root to scan before
/// it claims anything, none of which needs the entries (issue 16: the three ran one after
/// the other while the second core waited).
#[derive(Debug)]
enum Decoding {
    /// On a thread of its own, which holds the payload: its bytes are dropped when it is
    /// done, not at the first claim (held through the scan, they added 30 MB to the
    /// peak of a start at 220 MB).
    Thread(JoinHandle<Option<StoredEntries>>),
    /// No thread could be started: decoded at the first claim.
    Waiting(Arc<Payload>),
}

impl Decoding {
    /// Starts decoding `payload` and lists the folders of its files meanwhile.
    fn start(payload: Payload) -> (Decoding, Vec<String>) {
        let payload = Arc::new(payload);
        let shared = Arc::clone(&payload);
        let thread = std::thread::Builder::new()
            .name("catalog-decode".into())
            .spawn(move || {
                // Its entries take about twice the payload's size in small allocations.
                crate::allocator::reserve_thread_heap(2 * shared.bytes().len());
                decode(shared.bytes())
            });
        let folders = stored_folders(payload.bytes());
        let decoding = match thread {
            Ok(thread) => Decoding::Thread(thread),
            Err(_) => Decoding::Waiting(payload),
        };
        (decoding, folders)
    }

    /// The decoded entries (`None`: malformed), once the thread is done.
    fn finish(self) -> Option<StoredEntries> {
        match self {
            // A panic while decoding (a bug) leaves the files to be parsed again.
            Decoding::Thread(thread) => thread.join().ok().flatten(),
            Decoding::Waiting(payload) => decode(payload.bytes()),
        }
    }
}

impl CatalogStore {
    /// The catalog under `cache_dir`, its payload read and its decoding started (see
    /// [`Decoding`]) when the file is there and current; `None` (logged) when the folder
    /// cannot be used, so the index parses everything as it would without a cache. Inside
    /// the vault the path is walked from the vault root without following links; a cache
    /// folder elsewhere is the operator's and is created as the section index creates its
    /// own.
    pub(crate) fn open(cache_dir: &Path, vault_root: &Path) -> Option<CatalogStore> {
        let file = CacheFile::locate(cache_dir, vault_root, FILE_NAME, envelope())?;
        let (decoding, folders) = match file.read_payload() {
            Some(payload) => {
                // The scan and the claims that follow on this thread allocate about two
                // thirds of the catalog's size (measured at 220 MB of manuals).
                let reserve = payload.bytes().len() * 2 / 3;
                let (decoding, folders) = Decoding::start(payload);
                crate::allocator::reserve_thread_heap(reserve);
                (Some(decoding), folders)
            }
            None => (None, Vec::new()),
        };
        Some(CatalogStore {
            file,
            decoding,
            folders,
            unclaimed: StoredEntries::default(),
        })
    }

    /// The decoded entries, once the decoding started at open is done.
    fn entries(&mut self) -> &mut StoredEntries {
        if let Some(decoding) = self.decoding.take() {
            match decoding.finish() {
                Some(entries) => self.unclaimed = entries,
                None => self.file.unusable(),
            }
        }
        &mut self.unclaimed
    }

    /// The stored outline and lines of `path` in `manual_id` if the catalog holds them for
    /// `version` (the stamp fingerprint); each entry is handed out once.
    pub(crate) fn claim(
        &mut self,
        manual_id: &str,
        path: &str,
        version: u64,
    ) -> Option<StoredParse> {
        let (stored_version, stored) = self.entries().get_mut(manual_id)?.remove(path)?;
        (stored_version == version).then_some(stored)
    }

    /// The folders above the files the catalog holds (see [`stored_folders`]), handed
    /// out once: what the first build's watch covers before its scan.
    pub(crate) fn take_folders(&mut self) -> Vec<String> {
        std::mem::take(&mut self.folders)
    }

    /// Whether entries were left unclaimed (files gone or changed since the file was
    /// written); drops them either way, since only the first build claims any.
    pub(crate) fn drop_unclaimed(&mut self) -> bool {
        let left = self.entries().values().any(|files| !files.is_empty());
        self.unclaimed = StoredEntries::default();
        left
    }

    /// Replaces the catalog file with `files` (manual_id, file). A failure is logged and
    /// costs only the next start's parse.
    pub(crate) fn save<'a>(&self, files: impl Iterator<Item = (&'a str, &'a ManualFile)>) {
        let mut out = self.file.writer();
        encode(&mut out, files);
        self.file.save(out);
    }
}

/// The catalog file's envelope.
fn envelope() -> Envelope {
    Envelope {
        magic: b"MVCATLG\0",
        format: FORMAT_VERSION,
        rules: parser_fingerprint(),
        holds: "the manual catalog",
        without: "parsing every file",
    }
}

/// The fingerprint of everything that decides what is stored: the sources of the outline
/// and line rules, and the manifest that pins comrak's version.
pub(crate) fn parser_fingerprint() -> u64 {
    crate::text::fingerprint(&[
        include_bytes!("../sections.rs"),
        include_bytes!("../heading.rs"),
        include_bytes!("../front_matter.rs"),
        include_bytes!("../node.rs"),
        include_bytes!("../file.rs"),
        include_bytes!("../../text/lines.rs"),
        include_bytes!("../../../Cargo.toml"),
    ])
}

/// Appends the payload: the entries of `files` that can be stored.
fn encode<'a>(out: &mut Writer, files: impl Iterator<Item = (&'a str, &'a ManualFile)>) {
    // One buffer, lengths patched in at the end: a second copy of a catalog of many
    // megabytes would add to the peak of the build that writes it.
    let count_at = out.placeholder_u32();
    let mut count = 0u32;
    for (manual_id, file) in files {
        let text_len = file.text_len();
        if file.problem().is_some() || text_len > MAX_TEXT_BYTES {
            continue;
        }
        out.str(manual_id);
        out.str(file.path());
        out.u64(file.version());
        let body_at = out.placeholder_u32();
        out.parse(&ParseRef {
            file_type: file.file_type(),
            text_len,
            lines: file.line_table(),
            outline: file.outline(),
        });
        let body_len = (out.bytes.len() - body_at - 4) as u32;
        out.patch_u32(body_at, body_len);
        count += 1;
    }
    out.patch_u32(count_at, count);
}

/// Decodes every entry of a payload; `None` when one is malformed.
fn decode(payload: &[u8]) -> Option<StoredEntries> {
    let mut reader = Reader::new(payload);
    let count = reader.u32()? as usize;
    let mut entries = StoredEntries::default();
    for _ in 0..count {
        let manual_id = reader.str()?;
        let path = reader.str()?.to_owned();
        let version = reader.u64()?;
        let body_len = reader.u32()? as usize;
        let stored = read_parse(reader.take(body_len)?)?;
        entries
            .entry(manual_id.to_owned())
            .or_default()
            .insert(path, (version, stored));
    }
    reader.is_empty().then_some(entries)
}

/// The folders above the files of a payload (each manual's own and every one between it
/// and a file), relative to the manuals root as a scan names them, sorted: what the first
/// scan of an unchanged tree walks, so the change watch can cover them before it runs.
/// Read from the payload's names alone, while it is being decoded. A folder holding no
/// stored file is missing; the watch then asks for one more walk, as it would without
/// this list; so does a payload whose names cannot be read (none listed).
fn stored_folders(payload: &[u8]) -> Vec<String> {
    // Each file's folders from the deepest up, stopping at one already seen (its
    // ancestors were added with it): about one set lookup per file, where a set of
    // formatted paths cost a start 60 ms at 20,000 files.
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for (manual_id, path) in stored_names(payload).unwrap_or_default() {
        let mut folder = path;
        while let Some((parent, _)) = folder.rsplit_once('/') {
            if !seen.insert((manual_id, parent)) {
                break;
            }
            folder = parent;
        }
        seen.insert((manual_id, ""));
    }
    let mut folders: Vec<String> = seen
        .into_iter()
        .map(|(manual_id, folder)| match folder {
            "" => manual_id.to_owned(),
            folder => format!("{manual_id}/{folder}"),
        })
        .collect();
    folders.sort_unstable();
    folders
}

/// The (manual_id, path) of every entry of a payload, its bodies skipped; `None` when
/// the names cannot be read.
fn stored_names(payload: &[u8]) -> Option<Vec<(&str, &str)>> {
    let mut reader = Reader::new(payload);
    let count = reader.u32()? as usize;
    let mut names = Vec::with_capacity(count.min(payload.len() / 20));
    for _ in 0..count {
        let manual_id = reader.str()?;
        let path = reader.str()?;
        reader.u64()?;
        let body_len = reader.u32()? as usize;
        reader.take(body_len)?;
        names.push((manual_id, path));
    }
    reader.is_empty().then_some(names)
}

#[cfg(test)]
mod tests;
