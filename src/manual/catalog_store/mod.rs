//! The persisted catalog: each manual file's outline (nodes, code blocks, page title) and
//! line table, kept under `CACHE_DIR` so that a start parses only the files that changed.
//!
//! Why: the in-memory index needs every file's nodes and line table before it answers
//! anything, and deriving them (comrak's parse, the line scan) was most of a start's
//! time (0.68 s at 55 MB). A file whose stamp (size, mtime, inode, ctime: the
//! [`FileStamp`](super::catalog::FileStamp) fingerprint the section index also trusts)
//! equals the one recorded here gets its outline and lines from this file instead.
//!
//! The file is `${CACHE_DIR}/catalog.bin` (layout in [`codec`]):
//!
//! ```text
//! "MVCATLG\0" | format u32 | parser u64 | payload length u64 | CRC-32 of payload u32
//! payload: entries u32, then per entry: manual_id, path, version u64, body length u32, body
//! ```
//!
//! Anything unexpected (another magic, format or parser fingerprint, a length or CRC that
//! does not match, a malformed entry) means "parse again": never an error, never a wrong
//! outline. The parser fingerprint hashes the source of every module whose output is
//! stored (and the Cargo manifest that pins comrak), so a build with another outline
//! rule never reads outlines made by the old one. The CRC catches a damaged file; a
//! truncated one fails the length check first.
//!
//! Written whole (temporary file, fsync, rename in the same folder, through
//! [`crate::paths`], so no link is followed at any component of the path inside the
//! vault), after a build that parsed a file or found one gone and after any refresh that
//! changed a file; a start that parsed nothing leaves it alone. Files with a problem are
//! not stored: they are read and checked again, which is what tells when they are fixed.

mod codec;

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use self::codec::{read_parse, ParseRef, Reader, Writer};
use super::file::{ManualFile, StoredParse};
use crate::error::ErrorCode;
use crate::paths::{locate_file, RelPath, Root};

const MAGIC: &[u8; 8] = b"MVCATLG\0";
/// The byte layout of [`codec`]; bump it with any change there.
const FORMAT_VERSION: u32 = 1;
/// Name under `CACHE_DIR`.
const FILE_NAME: &str = "catalog.bin";
/// Magic, format, parser, payload length, CRC.
const HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 4;
/// The longest text whose line lengths fit the packed line table (31 bits).
const MAX_TEXT_BYTES: usize = (u32::MAX >> 1) as usize;

/// The catalog file of one server (or `manvault index`), with the entries it held when
/// opened until the first build has claimed them.
#[derive(Debug)]
pub(crate) struct CatalogStore {
    root: Root,
    file: RelPath,
    unclaimed: StoredEntries,
}

/// The entries of a catalog file, decoded when it is opened: the file's bytes are then
/// dropped before any manual text is read, so they never add to the build's peak memory.
/// Keyed by (manual_id, path), with the version (stamp fingerprint) they were made at.
type StoredEntries = HashMap<(String, String), (u64, StoredParse)>;

impl CatalogStore {
    /// The catalog under `cache_dir`, its entries read when the file is there and
    /// current; `None` (logged) when the folder cannot be used, so the index parses
    /// everything as it would without a cache. Inside the vault the path is walked from
    /// the vault root without following links; a cache folder elsewhere is the
    /// operator's and is created as the section index creates its own.
    pub(crate) fn open(cache_dir: &Path, vault_root: &Path) -> Option<CatalogStore> {
        if !cache_dir.starts_with(vault_root) {
            // Errors show up in the open below.
            let _ = std::fs::create_dir_all(cache_dir);
        }
        let located = match locate_file(&cache_dir.join(FILE_NAME), vault_root, "CACHE_DIR") {
            Ok(located) => located,
            Err(problem) => {
                tracing::warn!(%problem, "the manual catalog is not kept: every start parses every file");
                return None;
            }
        };
        let unclaimed = read_entries(&located.root, &located.file).unwrap_or_default();
        Some(CatalogStore {
            root: located.root,
            file: located.file,
            unclaimed,
        })
    }

    /// The stored outline and lines of `path` in `manual_id` if the catalog holds them for
    /// `version` (the stamp fingerprint); each entry is handed out once.
    pub(crate) fn claim(
        &mut self,
        manual_id: &str,
        path: &str,
        version: u64,
    ) -> Option<StoredParse> {
        let key = (manual_id.to_owned(), path.to_owned());
        let (stored_version, stored) = self.unclaimed.remove(&key)?;
        (stored_version == version).then_some(stored)
    }

    /// Whether entries were left unclaimed (files gone or changed since the file was
    /// written); drops them either way, since only the first build claims any.
    pub(crate) fn drop_unclaimed(&mut self) -> bool {
        let left = !self.unclaimed.is_empty();
        self.unclaimed = StoredEntries::default();
        left
    }

    /// Replaces the catalog file with `files` (manual_id, file). A failure is logged and
    /// costs only the next start's parse.
    pub(crate) fn save<'a>(&self, files: impl Iterator<Item = (&'a str, &'a ManualFile)>) {
        let bytes = encode(files);
        let written = self.root.write_whole(&self.file, &bytes);
        match written {
            Ok(bytes) => tracing::debug!(bytes, "manual catalog written"),
            Err(error) => tracing::warn!(
                code = error.code.as_str(),
                "the manual catalog cannot be written: the next start parses every file"
            ),
        }
    }
}

/// The fingerprint of everything that decides what is stored: the sources of the outline
/// and line rules, and the manifest that pins comrak's version.
fn parser_fingerprint() -> u64 {
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

fn encode<'a>(files: impl Iterator<Item = (&'a str, &'a ManualFile)>) -> Vec<u8> {
    // One buffer, lengths and checksum patched in at the end: a second copy of a catalog
    // of many megabytes would add to the peak of the build that writes it.
    let mut out = Writer::default();
    out.bytes.extend_from_slice(MAGIC);
    out.u32(FORMAT_VERSION);
    out.u64(parser_fingerprint());
    let lengths_at = out.bytes.len();
    out.u64(0); // payload length
    out.u32(0); // CRC-32
    out.u32(0); // entry count
    let mut count = 0u32;
    for (manual_id, file) in files {
        let text_len = file.text_len();
        if file.problem().is_some() || text_len > MAX_TEXT_BYTES {
            continue;
        }
        out.str(manual_id);
        out.str(file.path());
        out.u64(file.version());
        let body_at = out.bytes.len();
        out.u32(0); // body length
        out.parse(&ParseRef {
            file_type: file.file_type(),
            text_len,
            lines: file.line_table().ranges(),
            outline: file.outline(),
        });
        let body_len = (out.bytes.len() - body_at - 4) as u32;
        out.bytes[body_at..body_at + 4].copy_from_slice(&body_len.to_le_bytes());
        count += 1;
    }
    out.bytes[HEADER_BYTES..HEADER_BYTES + 4].copy_from_slice(&count.to_le_bytes());
    let payload_len = (out.bytes.len() - HEADER_BYTES) as u64;
    let crc = crc32fast::hash(&out.bytes[HEADER_BYTES..]);
    out.bytes[lengths_at..lengths_at + 8].copy_from_slice(&payload_len.to_le_bytes());
    out.bytes[lengths_at + 8..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
    out.bytes
}

/// The entries of the catalog file, or `None` when there is none or it cannot be used
/// (logged: the start then parses every file).
fn read_entries(root: &Root, file: &RelPath) -> Option<StoredEntries> {
    let mut bytes = Vec::new();
    match root.open_file(file) {
        Ok(mut opened) => {
            if let Err(error) = opened.read_to_end(&mut bytes) {
                tracing::warn!(error = %error.kind(), "the manual catalog cannot be read; parsing every file");
                return None;
            }
        }
        Err(error) if error.code == ErrorCode::NotFound => return None,
        Err(error) => {
            tracing::warn!(
                code = error.code.as_str(),
                "the manual catalog cannot be opened; parsing every file"
            );
            return None;
        }
    }
    let entries = decode(&bytes);
    if entries.is_none() {
        tracing::info!(
            "the manual catalog was written by another version or is damaged; parsing every file"
        );
    }
    entries
}

/// Checks the header and the CRC, then decodes every entry; `None` when anything is off.
fn decode(bytes: &[u8]) -> Option<StoredEntries> {
    let mut header = Reader::new(bytes);
    if header.take(MAGIC.len())? != MAGIC
        || header.u32()? != FORMAT_VERSION
        || header.u64()? != parser_fingerprint()
    {
        return None;
    }
    let payload_len = usize::try_from(header.u64()?).ok()?;
    let crc = header.u32()?;
    let payload = &bytes[HEADER_BYTES..];
    if payload.len() != payload_len || crc32fast::hash(payload) != crc {
        return None;
    }
    let mut reader = Reader::new(payload);
    let count = reader.u32()? as usize;
    let mut entries = HashMap::with_capacity(count.min(payload.len() / 20));
    for _ in 0..count {
        let manual_id = reader.str()?.to_owned();
        let path = reader.str()?.to_owned();
        let version = reader.u64()?;
        let body_len = reader.u32()? as usize;
        let stored = read_parse(&path, reader.take(body_len)?)?;
        entries.insert((manual_id, path), (version, stored));
    }
    reader.is_empty().then_some(entries)
}

#[cfg(test)]
mod tests;
