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
//! The file is `${CACHE_DIR}/references.bin`, a [`cache_file`](crate::manual::cache_file)
//! (magic `MVREFS\0\0`, the rules fingerprint being [`rules_fingerprint`]) whose payload
//! is:
//!
//! ```text
//! manuals u32, then per manual: manual_id, key u64, references u32, per reference:
//!   from file u32, from node u32, line u32, raw u32, target (0, or 1 then file u32,
//!   node u32); link texts u32, per text: file u32, node u32, text, loose
//! files numbered from the manual's first file
//! ```
//!
//! Anything unexpected (the envelope, a malformed part, a number outside the manual)
//! means "resolve again": never an error, never a wrong graph. Written after a sync that
//! resolved a manual or found one gone; a sync that resolved nothing leaves it alone.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use super::derived::{CorpusFile, Label, NodeKey};
use super::resolve::{ManualRange, ManualReferences, Reference};
use crate::manual::cache_file::{CacheFile, Envelope, Reader, Writer};
use crate::manual::ManualFile;

/// The byte layout above; bump it with any change there.
const FORMAT_VERSION: u32 = 2;
/// Name under `CACHE_DIR`.
const FILE_NAME: &str = "references.bin";

/// A manual's resolved references and the key they were resolved under.
pub(crate) type KeyedReferences = (u64, Arc<ManualReferences>);

/// The reference file of one cache folder.
pub(crate) struct ReferenceStore {
    file: CacheFile,
}

impl ReferenceStore {
    /// The store in `cache_dir`; `None` (logged) when the folder cannot be used, so every
    /// start resolves every reference as it would without a cache. Inside `vault_root`
    /// the path is walked from the vault root without following links (as the manual
    /// catalog's).
    pub(crate) fn open(cache_dir: &Path, vault_root: Option<&Path>) -> Option<ReferenceStore> {
        let envelope = Envelope {
            magic: b"MVREFS\0\0",
            format: FORMAT_VERSION,
            rules: rules_fingerprint(),
            holds: "the resolved references",
            without: "resolving them",
        };
        let vault_root = vault_root.unwrap_or(cache_dir);
        let file = CacheFile::locate(cache_dir, vault_root, FILE_NAME, envelope)?;
        Some(ReferenceStore { file })
    }

    /// The stored parts by manual id; empty when there is no file or it cannot be used.
    pub(crate) fn read(&self) -> HashMap<Arc<str>, KeyedReferences> {
        self.file.read(decode).unwrap_or_default()
    }

    /// Replaces the file with `manuals`. A failure is logged and costs only the next
    /// start's resolution.
    pub(crate) fn save<'a>(&self, manuals: impl Iterator<Item = (&'a str, &'a KeyedReferences)>) {
        let mut out = self.file.writer();
        encode(&mut out, manuals);
        self.file.save(out);
    }
}

/// The key of a manual resolved while one of its files could not be read, which no
/// [`manual_fingerprint`] gives (short of a 64-bit collision): such a part is used by the
/// sync that resolved it, then resolved again.
pub(crate) const UNREAD_KEY: u64 = 0;

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
pub(crate) fn rules_fingerprint() -> u64 {
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
            && (reference.raw as usize)
                < files[reference.from.file as usize]
                    .outline
                    .reference_count()
    }) && part.link_texts.iter().all(|(key, _)| inside(key))
}

/// Appends the payload: every manual's key and part.
fn encode<'a>(out: &mut Writer, manuals: impl Iterator<Item = (&'a str, &'a KeyedReferences)>) {
    let count_at = out.placeholder_u32();
    let mut count = 0u32;
    for (manual_id, (key, part)) in manuals {
        count += 1;
        out.str(manual_id);
        out.u64(*key);
        out.u32(part.references.len() as u32);
        for reference in &part.references {
            put_key(out, reference.from);
            out.u32(reference.line);
            out.u32(reference.raw);
            match reference.to {
                None => out.u8(0),
                Some(to) => {
                    out.u8(1);
                    put_key(out, to);
                }
            }
        }
        out.u32(part.link_texts.len() as u32);
        for (key, label) in &part.link_texts {
            put_key(out, *key);
            out.str(label.text());
            out.str(label.loose());
        }
    }
    out.patch_u32(count_at, count);
}

fn put_key(out: &mut Writer, key: NodeKey) {
    out.u32(key.file);
    out.u32(key.node);
}

fn read_key(reader: &mut Reader<'_>) -> Option<NodeKey> {
    Some(NodeKey {
        file: reader.u32()?,
        node: reader.u32()?,
    })
}

/// Decodes every part of a payload; `None` when one is malformed.
fn decode(payload: &[u8]) -> Option<HashMap<Arc<str>, KeyedReferences>> {
    let mut reader = Reader::new(payload);
    let count = reader.u32()?;
    let mut manuals = HashMap::new();
    for _ in 0..count {
        let manual_id: Arc<str> = reader.str()?.into();
        let key = reader.u64()?;
        let mut part = ManualReferences::default();
        for _ in 0..reader.u32()? {
            let from = read_key(&mut reader)?;
            let line = reader.u32()?;
            let raw = reader.u32()?;
            let to = match reader.u8()? {
                0 => None,
                1 => Some(read_key(&mut reader)?),
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
            let node = read_key(&mut reader)?;
            let text = reader.str()?;
            let label = Label::of(text, reader.str()?);
            part.link_texts.push((node, label));
        }
        manuals.insert(manual_id, (key, Arc::new(part)));
    }
    reader.is_empty().then_some(manuals)
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
        let folder = tempfile::tempdir().unwrap();
        let store = ReferenceStore::open(folder.path(), None).unwrap();
        store.save([("m", &keyed)].into_iter());
        let decoded = store.read();
        assert_eq!(decoded.len(), 1);
        let (key, read) = &decoded[&Arc::from("m")];
        assert_eq!((*key, &**read), (42, &part));
        // The envelope's own checks are cache_file's; a payload cut short is this one's.
        let mut out = Writer::default();
        encode(&mut out, [("m", &keyed)].into_iter());
        assert!(decode(&out.bytes).is_some());
        for end in 0..out.bytes.len() {
            assert!(decode(&out.bytes[..end]).is_none(), "cut at {end}");
        }
        std::fs::write(folder.path().join(FILE_NAME), b"MVREFS\0\0 and more").unwrap();
        assert!(store.read().is_empty(), "damaged");
    }
}
