//! The resolved reference graph kept under `CACHE_DIR`, per manual, so that a start over
//! unchanged manuals resolves no reference (issue 16: resolving 60 000 links and 7 000
//! cues was about 170 ms of a start at 55 MB of manuals, most of what a start over a
//! current section index still did per file).
//!
//! Why per manual: every lookup table of the resolution (paths, titles, section numbers,
//! chapter files, anchors) is keyed by manual, so a manual's resolved references depend
//! on its own files and nothing else. A file's own resolution reads every other file's
//! path and titles, so a changed, added or deleted file can change the targets of any
//! file of its manual, and of no other: the manual is the smallest unit that a change
//! invalidates without tracking which titles each reference looked up. Each manual's part
//! is keyed by [`manual_fingerprint`]: its id, every file's path and version (the stamp
//! fingerprint the catalog and the section index trust), and the sources of the rules
//! whose output is stored. A manual whose key differs is resolved again; the others are
//! read back.
//!
//! The file is `${CACHE_DIR}/references.bin`:
//!
//! ```text
//! "MVREFS\0\0" | format u32 | payload length u64 | CRC-32 of payload u32
//! payload: manuals u32, then per manual: manual_id, key u64, references u32, per
//!   reference: from file u32, from node u32, line u32, raw u32, target (0, or 1 then
//!   file u32, node u32); link texts u32, per text: file u32, node u32, text, loose
//! strings: length u32, UTF-8 bytes; integers little-endian; files numbered from the
//!   manual's first file
//! ```
//!
//! Anything unexpected (magic, format, length, CRC, a malformed part, a number outside
//! the manual) means "resolve again": never an error, never a wrong graph. Written whole
//! through [`crate::paths`] (temporary file, rename in the same folder) after a sync that
//! resolved a manual or found one gone; a sync that resolved nothing leaves it alone.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::derived::{CorpusFile, Label, NodeKey};
use super::resolve::{ManualRange, ManualReferences, Reference};
use crate::error::ErrorCode;
use crate::manual::ManualFile;
use crate::paths::{locate_file, RelPath, Root};

const MAGIC: &[u8; 8] = b"MVREFS\0\0";
/// The byte layout above; bump it with any change there.
const FORMAT_VERSION: u32 = 1;
/// Name under `CACHE_DIR`.
const FILE_NAME: &str = "references.bin";
/// Magic, format, payload length, CRC.
const HEADER_BYTES: usize = 8 + 4 + 8 + 4;

/// A manual's resolved references and the key they were resolved under.
pub(crate) type KeyedReferences = (u64, Arc<ManualReferences>);

/// The reference file of one cache folder.
pub(crate) struct ReferenceStore {
    root: Root,
    file: RelPath,
}

impl ReferenceStore {
    /// The store in `cache_dir`; `None` (logged) when the folder cannot be used, so every
    /// start resolves every reference as it would without a cache. Inside `vault_root`
    /// the path is walked from the vault root without following links (as the manual
    /// catalog's); a cache folder elsewhere is the operator's and is created as the
    /// section index creates its own.
    pub(crate) fn open(cache_dir: &Path, vault_root: Option<&Path>) -> Option<ReferenceStore> {
        let vault_root = vault_root.unwrap_or(cache_dir);
        if !cache_dir.starts_with(vault_root) {
            // Errors show up in the locate below.
            let _ = std::fs::create_dir_all(cache_dir);
        }
        match locate_file(&cache_dir.join(FILE_NAME), vault_root, "CACHE_DIR") {
            Ok(located) => Some(ReferenceStore {
                root: located.root,
                file: located.file,
            }),
            Err(problem) => {
                tracing::warn!(%problem, "the resolved references are not kept: every start resolves them");
                None
            }
        }
    }

    /// The stored parts by manual id; empty when there is no file or it cannot be used.
    pub(crate) fn read(&self) -> HashMap<Arc<str>, KeyedReferences> {
        let mut bytes = Vec::new();
        match self.root.open_file(&self.file) {
            Ok(mut opened) => {
                if let Err(error) = opened.read_to_end(&mut bytes) {
                    tracing::warn!(error = %error.kind(), "the resolved references cannot be read; resolving them");
                    return HashMap::new();
                }
            }
            Err(error) if error.code == ErrorCode::NotFound => return HashMap::new(),
            Err(error) => {
                tracing::warn!(
                    code = error.code.as_str(),
                    "the resolved references cannot be opened; resolving them"
                );
                return HashMap::new();
            }
        }
        decode(&bytes).unwrap_or_else(|| {
            tracing::info!(
                "the resolved references were written by another version or are damaged; resolving them"
            );
            HashMap::new()
        })
    }

    /// Replaces the file with `manuals`. A failure is logged and costs only the next
    /// start's resolution.
    pub(crate) fn save<'a>(&self, manuals: impl Iterator<Item = (&'a str, &'a KeyedReferences)>) {
        match self.root.write_whole(&self.file, &encode(manuals)) {
            Ok(bytes) => tracing::debug!(bytes, "resolved references written"),
            Err(error) => tracing::warn!(
                code = error.code.as_str(),
                "the resolved references cannot be written: the next start resolves them"
            ),
        }
    }
}

/// The key of `manual`'s resolved references: see the module documentation.
pub(crate) fn manual_fingerprint(manual: &ManualRange, manual_files: &[&ManualFile]) -> u64 {
    let mut listing = Vec::new();
    listing.extend_from_slice(&rules_fingerprint().to_le_bytes());
    listing.extend_from_slice(manual.manual_id.as_bytes());
    for file in &manual_files[manual.files.clone()] {
        listing.push(0);
        listing.extend_from_slice(file.path().as_bytes());
        listing.push(0);
        listing.extend_from_slice(&file.version().to_le_bytes());
    }
    crate::text::fingerprint(&[&listing])
}

/// The sources of everything whose output decides a resolution: the resolution itself,
/// the references and labels it reads (extraction, outline, normalisation) and the
/// outline rules that give titles and anchors, so a build with other rules never reads
/// references resolved by the old ones.
fn rules_fingerprint() -> u64 {
    static RULES: OnceLock<u64> = OnceLock::new();
    *RULES.get_or_init(|| {
        crate::text::fingerprint(&[
            include_bytes!("resolve.rs"),
            include_bytes!("links.rs"),
            include_bytes!("derived.rs"),
            include_bytes!("../../text/normalize.rs"),
            include_bytes!("../../text/loose.rs"),
            include_bytes!("../heading.rs"),
            include_bytes!("../node.rs"),
            include_bytes!("../sections.rs"),
            include_bytes!("../../../Cargo.toml"),
        ])
    })
}

/// Whether every key of `part` names a section of the manual's `files` (a stored part
/// whose key matched always does; this keeps a damaged one from being followed).
pub(crate) fn fits(part: &ManualReferences, files: &[CorpusFile]) -> bool {
    let inside = |key: &NodeKey| {
        files
            .get(key.file as usize)
            .is_some_and(|file| (key.node as usize) < file.outline.node_count())
    };
    part.references.iter().all(|reference| {
        inside(&reference.from)
            && reference.to.as_ref().is_none_or(inside)
            && files[reference.from.file as usize]
                .outline
                .references()
                .get(reference.raw as usize)
                .is_some()
    }) && part.link_texts.iter().all(|(key, _)| inside(key))
}

fn encode<'a>(manuals: impl Iterator<Item = (&'a str, &'a KeyedReferences)>) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    put_u32(&mut out, FORMAT_VERSION);
    out.extend_from_slice(&[0; 12]); // payload length, CRC
    let count_at = out.len();
    put_u32(&mut out, 0);
    let mut count = 0u32;
    for (manual_id, (key, part)) in manuals {
        count += 1;
        put_str(&mut out, manual_id);
        out.extend_from_slice(&key.to_le_bytes());
        put_u32(&mut out, part.references.len() as u32);
        for reference in &part.references {
            put_key(&mut out, reference.from);
            put_u32(&mut out, reference.line);
            put_u32(&mut out, reference.raw);
            match reference.to {
                None => out.push(0),
                Some(to) => {
                    out.push(1);
                    put_key(&mut out, to);
                }
            }
        }
        put_u32(&mut out, part.link_texts.len() as u32);
        for (key, label) in &part.link_texts {
            put_key(&mut out, *key);
            put_str(&mut out, &label.text);
            put_str(&mut out, &label.loose);
        }
    }
    out[count_at..count_at + 4].copy_from_slice(&count.to_le_bytes());
    let payload_len = (out.len() - HEADER_BYTES) as u64;
    let crc = crc32fast::hash(&out[HEADER_BYTES..]);
    out[12..20].copy_from_slice(&payload_len.to_le_bytes());
    out[20..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
    out
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_key(out: &mut Vec<u8>, key: NodeKey) {
    put_u32(out, key.file);
    put_u32(out, key.node);
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    put_u32(out, text.len() as u32);
    out.extend_from_slice(text.as_bytes());
}

/// Checks the header and the CRC, then decodes every part; `None` when anything is off.
fn decode(bytes: &[u8]) -> Option<HashMap<Arc<str>, KeyedReferences>> {
    let mut header = Bytes(bytes);
    if header.take(MAGIC.len())? != MAGIC || header.u32()? != FORMAT_VERSION {
        return None;
    }
    let payload_len = usize::try_from(header.u64()?).ok()?;
    let crc = header.u32()?;
    let payload = header.0;
    if payload.len() != payload_len || crc32fast::hash(payload) != crc {
        return None;
    }
    let mut reader = Bytes(payload);
    let count = reader.u32()?;
    let mut manuals = HashMap::new();
    for _ in 0..count {
        let manual_id: Arc<str> = reader.str()?.into();
        let key = reader.u64()?;
        let mut part = ManualReferences::default();
        for _ in 0..reader.u32()? {
            let from = reader.key()?;
            let line = reader.u32()?;
            let raw = reader.u32()?;
            let to = match reader.take(1)?[0] {
                0 => None,
                1 => Some(reader.key()?),
                _ => return None,
            };
            part.references.push(Reference {
                from,
                line,
                to,
                raw,
            });
        }
        for _ in 0..reader.u32()? {
            let node = reader.key()?;
            let label = Label {
                text: reader.str()?.to_owned(),
                loose: reader.str()?.to_owned(),
            };
            part.link_texts.push((node, label));
        }
        manuals.insert(manual_id, (key, Arc::new(part)));
    }
    reader.0.is_empty().then_some(manuals)
}

/// The unread rest of a byte buffer; every read is `None` past its end.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, count: usize) -> Option<&'a [u8]> {
        if self.0.len() < count {
            return None;
        }
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        Some(taken)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn key(&mut self) -> Option<NodeKey> {
        Some(NodeKey {
            file: self.u32()?,
            node: self.u32()?,
        })
    }

    fn str(&mut self) -> Option<&'a str> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_survive_encoding_and_any_damage_reads_as_nothing() {
        let part = ManualReferences {
            references: vec![
                Reference {
                    from: NodeKey { file: 0, node: 1 },
                    line: 7,
                    to: Some(NodeKey { file: 2, node: 0 }),
                    raw: 3,
                },
                Reference {
                    from: NodeKey { file: 1, node: 0 },
                    line: 2,
                    to: None,
                    raw: 0,
                },
            ],
            link_texts: vec![(
                NodeKey { file: 2, node: 0 },
                Label::new("申請\nform".into()),
            )],
        };
        let keyed: KeyedReferences = (42, Arc::new(part.clone()));
        let bytes = encode([("m", &keyed)].into_iter());
        let decoded = decode(&bytes).expect("what encode wrote decodes");
        assert_eq!(decoded.len(), 1);
        let (key, read) = &decoded[&Arc::from("m")];
        assert_eq!((*key, &**read), (42, &part));
        for at in [0, 9, HEADER_BYTES + 5, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            assert!(decode(&damaged).is_none(), "byte {at} changed");
        }
        assert!(decode(&bytes[..bytes.len() - 1]).is_none(), "truncated");
    }
}
