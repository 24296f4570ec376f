//! Vectors by content hash: in memory, and in an append-only file under `CACHE_DIR`.
//!
//! A vector depends only on the text embedded and on the vector space (the model, who adds
//! the role prefixes, the dimensions), so the key is the SHA-256 of the text and each space
//! has its own file, `${CACHE_DIR}/vectors/<model>-<hash of the space>.bin`. Identical
//! sections (copies of a manual, repeated boilerplate) share one vector, an edited section
//! gets a new key, and a restart reuses everything on disk.
//!
//! The file: a header line (`manvault-vectors 1`), a JSON line naming the space, then
//! fixed-size records `[sha256 32][scale f32 le 4][values i8 × dims][0xA5]`. New vectors
//! are appended in one locked, whole write a batch through [`Root::append`], so a server
//! and `manvault index` filling the same cache never interleave within a record. A crash
//! can leave at most a partial last record; loading drops it (and any record without its
//! end marker) and rewrites the file atomically ([`Root::replace`]) before appending again.
//! A file of another format or space is replaced by an empty one. The cache is derived
//! data: if `CACHE_DIR` cannot be used, vectors live in memory only, with a warning.
//!
//! Key ids are dense `u32`s handed out per hash for the life of the process, so the
//! sections of a manual refer to their vector by id and never change when a vector arrives.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::json;
use sha2::{Digest, Sha256};

use super::quantized::{Arena, Quantized};
use crate::error::ErrorCode;
use crate::paths::{parse_relative, RelPath, Root};

pub(crate) type ContentHash = [u8; 32];

const MAGIC: &str = "manvault-vectors 1";
const END_MARKER: u8 = 0xA5;
const FOLDER: &str = "vectors";
/// Records beyond the live ones (superseded, duplicated by two writers) tolerated before a
/// compaction rewrites the file.
const SLACK_RECORDS: usize = 1024;

pub(crate) fn content_hash(text: &str) -> ContentHash {
    Sha256::digest(text.as_bytes()).into()
}

/// Which vectors can be compared with which: the model as named by the configuration or
/// the server, who adds the role prefixes, and the length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Space {
    pub model: String,
    pub prefixes: String,
    pub dims: usize,
}

impl Space {
    fn header(&self) -> String {
        let space = json!({ "model": self.model, "prefixes": self.prefixes, "dims": self.dims, "quantization": "i8" });
        format!("{MAGIC}\n{space}\n")
    }

    /// `vectors/<model, file-name safe>-<8 hex digits of the space>.bin`.
    fn file_name(&self) -> String {
        let safe: String = self
            .model
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
                _ => '_',
            })
            .take(64)
            .collect();
        let digest = Sha256::digest(self.header().as_bytes());
        let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        format!("{FOLDER}/{}-{tag}.bin", safe.trim_start_matches('.'))
    }

    fn record_len(&self) -> usize {
        32 + 4 + self.dims + 1
    }
}

pub(crate) struct VectorStore {
    ids: HashMap<ContentHash, u32>,
    hashes: Vec<ContentHash>,
    space: Option<Space>,
    arena: Arena,
    file: Option<CacheFile>,
}

struct CacheFile {
    root: Root,
    rel: RelPath,
    /// Records in the file, counting duplicates and superseded ones.
    records: usize,
}

impl Default for VectorStore {
    fn default() -> Self {
        VectorStore {
            ids: HashMap::new(),
            hashes: Vec::new(),
            space: None,
            arena: Arena::new(0),
            file: None,
        }
    }
}

impl VectorStore {
    /// The id of `hash`, handed out on first sight.
    pub(crate) fn id(&mut self, hash: &ContentHash) -> u32 {
        if let Some(&id) = self.ids.get(hash) {
            return id;
        }
        let id = self.hashes.len() as u32;
        self.hashes.push(*hash);
        self.ids.insert(*hash, id);
        id
    }

    /// Ids handed out so far: every id is below.
    pub(crate) fn keys(&self) -> usize {
        self.hashes.len()
    }

    pub(crate) fn hash(&self, id: u32) -> &ContentHash {
        &self.hashes[id as usize]
    }

    pub(crate) fn space(&self) -> Option<&Space> {
        self.space.as_ref()
    }

    /// The vectors as they are now, to publish to readers (chunks are shared, not copied).
    pub(crate) fn arena(&self) -> &Arena {
        &self.arena
    }

    pub(crate) fn has(&self, id: u32) -> bool {
        self.arena.has(id)
    }

    /// Fixes the vector space (after the provider's first answer) and loads its cache file
    /// from `cache_dir`. A different space than before drops every vector held: vectors of
    /// two models are not comparable.
    pub(crate) fn attach(&mut self, space: Space, cache_dir: Option<&Path>) {
        if self.space.as_ref() == Some(&space) {
            return;
        }
        if let Some(previous) = &self.space {
            tracing::warn!(
                before = %previous.model,
                now = %space.model,
                dims = space.dims,
                "the embeddings model changed; section vectors are computed again"
            );
        }
        self.arena = Arena::new(space.dims);
        self.file = cache_dir.and_then(|folder| self.load(folder, &space));
        self.space = Some(space);
    }

    /// Stores vectors of one batch and appends them to the cache file in one write.
    pub(crate) fn insert(&mut self, vectors: &[(u32, Quantized)]) {
        let Some(space) = &self.space else { return };
        let mut records = Vec::with_capacity(vectors.len() * space.record_len());
        for (id, vector) in vectors {
            if vector.dims() != space.dims {
                continue;
            }
            self.arena.set(*id, vector);
            push_record(&mut records, &self.hashes[*id as usize], vector);
        }
        if let Some(file) = &mut self.file {
            match file.root.append(&file.rel, &records) {
                Ok(_) => file.records += records.len() / space.record_len(),
                Err(error) => {
                    tracing::warn!(
                        code = error.code.as_str(),
                        "CACHE_DIR: section vectors cannot be written; keeping them in memory only"
                    );
                    self.file = None;
                }
            }
        }
    }

    /// Rewrites the cache file with the vectors of `live` ids only, when it holds many more
    /// records than that (edited sections leave their old vectors behind).
    pub(crate) fn compact(&mut self, live: &[u32]) {
        let (Some(space), Some(file)) = (&self.space, &mut self.file) else {
            return;
        };
        if file.records <= live.len() + SLACK_RECORDS.max(live.len()) {
            return;
        }
        let mut bytes = space.header().into_bytes();
        let mut written = 0;
        for &id in live {
            if let Some((scale, values)) = self.arena.get(id) {
                let vector = Quantized {
                    scale,
                    values: values.to_vec(),
                };
                push_record(&mut bytes, &self.hashes[id as usize], &vector);
                written += 1;
            }
        }
        match file.root.replace(&file.rel, &bytes, None) {
            Ok(_) => file.records = written,
            Err(error) => tracing::warn!(
                code = error.code.as_str(),
                "CACHE_DIR: the section vector cache cannot be compacted"
            ),
        }
    }

    /// Bytes of the cache file, if there is one.
    pub(crate) fn file_bytes(&self) -> Option<u64> {
        let file = self.file.as_ref()?;
        file.root.stat(&file.rel).ok().map(|info| info.size)
    }

    /// Opens (creating when missing) the file of `space` under `folder` and takes in its
    /// records; `None` (memory only) when the folder cannot be used.
    fn load(&mut self, folder: &Path, space: &Space) -> Option<CacheFile> {
        let opened = std::fs::create_dir_all(folder).and_then(|()| Root::open(folder));
        let root = match opened {
            Ok(root) => root,
            Err(error) => {
                tracing::warn!(error = %error.kind(), "CACHE_DIR cannot be used; section vectors are kept in memory only");
                return None;
            }
        };
        let rel = parse_relative(&space.file_name()).expect("a plain relative name");
        let (records, clean) = match root.open_file(&rel) {
            Ok(file) => self.read_records(file, space),
            Err(error) if error.code == ErrorCode::NotFound => (0, false),
            Err(error) => {
                tracing::warn!(
                    code = error.code.as_str(),
                    "CACHE_DIR: the section vector cache cannot be read; starting empty"
                );
                (0, false)
            }
        };
        let mut file = CacheFile { root, rel, records };
        if !clean {
            self.rewrite(&mut file, space)?;
        }
        Some(file)
    }

    /// Takes in the records of an open cache file; `clean` is false when the file must be
    /// rewritten (another format or space, or a damaged record).
    fn read_records(&mut self, file: std::fs::File, space: &Space) -> (usize, bool) {
        let mut reader = BufReader::new(file);
        let mut header = String::new();
        for _ in 0..2 {
            if reader.read_line(&mut header).is_err() {
                return (0, false);
            }
        }
        if header != space.header() {
            return (0, false);
        }
        let mut record = vec![0u8; space.record_len()];
        let mut records = 0;
        loop {
            match read_full(&mut reader, &mut record) {
                Ok(true) => {}
                Ok(false) => return (records, true),
                Err(()) => return (records, false),
            }
            let (hash, rest) = record.split_at(32);
            let scale = f32::from_le_bytes(rest[..4].try_into().expect("four bytes"));
            if rest[rest.len() - 1] != END_MARKER || !(scale.is_finite() && scale > 0.0) {
                return (records, false);
            }
            let values = rest[4..rest.len() - 1].iter().map(|&b| b as i8).collect();
            let id = self.id(hash.try_into().expect("32 bytes"));
            self.arena.set(id, &Quantized { scale, values });
            records += 1;
        }
    }

    /// Replaces (or creates) the file with the header and the vectors held now.
    fn rewrite(&mut self, file: &mut CacheFile, space: &Space) -> Option<()> {
        let live: Vec<u32> = (0..self.hashes.len() as u32)
            .filter(|&id| self.arena.has(id))
            .collect();
        let mut bytes = space.header().into_bytes();
        for &id in &live {
            let (scale, values) = self.arena.get(id).expect("filtered");
            let vector = Quantized {
                scale,
                values: values.to_vec(),
            };
            push_record(&mut bytes, &self.hashes[id as usize], &vector);
        }
        let written = file.root.write_whole(&file.rel, &bytes);
        match written {
            Ok(_) => {
                file.records = live.len();
                Some(())
            }
            Err(error) => {
                tracing::warn!(code = error.code.as_str(), "CACHE_DIR: the section vector cache cannot be written; keeping vectors in memory only");
                None
            }
        }
    }
}

fn push_record(bytes: &mut Vec<u8>, hash: &ContentHash, vector: &Quantized) {
    bytes.extend_from_slice(hash);
    bytes.extend_from_slice(&vector.scale.to_le_bytes());
    bytes.extend(vector.values.iter().map(|&v| v as u8));
    bytes.push(END_MARKER);
}

/// Fills `buffer` whole: `Ok(true)`; at the end of the file before any byte: `Ok(false)`;
/// a partial record or a read error: `Err`.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> Result<bool, ()> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(()),
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(dims: usize) -> Space {
        Space {
            model: "e5/small:q4".to_owned(),
            prefixes: "input_type".to_owned(),
            dims,
        }
    }

    fn store_with(folder: &Path, texts: &[&str]) -> VectorStore {
        let mut store = VectorStore::default();
        store.attach(space(3), Some(folder));
        let batch: Vec<(u32, Quantized)> = texts
            .iter()
            .enumerate()
            .map(|(at, text)| {
                let id = store.id(&content_hash(text));
                (id, Quantized::new(&[at as f32 + 1.0, 1.0, 0.0]))
            })
            .collect();
        store.insert(&batch);
        store
    }

    fn cache_file(folder: &Path) -> std::path::PathBuf {
        folder.join(space(3).file_name())
    }

    #[test]
    fn vectors_survive_a_restart_under_their_hash() {
        let folder = tempfile::tempdir().unwrap();
        drop(store_with(folder.path(), &["a", "b"]));
        let name = space(3).file_name();
        assert!(name.starts_with("vectors/e5_small_q4-"), "{name}");
        let mut again = VectorStore::default();
        again.attach(space(3), Some(folder.path()));
        let b = again.id(&content_hash("b"));
        let c = again.id(&content_hash("c"));
        assert!(again.has(b) && !again.has(c));
        assert_eq!(again.file.as_ref().unwrap().records, 2);
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_the_file_repaired() {
        let folder = tempfile::tempdir().unwrap();
        drop(store_with(folder.path(), &["a", "b"]));
        let path = cache_file(folder.path());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let mut again = VectorStore::default();
        again.attach(space(3), Some(folder.path()));
        let (a, b) = (again.id(&content_hash("a")), again.id(&content_hash("b")));
        assert!(again.has(a) && !again.has(b));
        // Repaired: the next append lands on a record boundary.
        let batch = vec![(b, Quantized::new(&[0.0, 1.0, 0.0]))];
        again.insert(&batch);
        let mut third = VectorStore::default();
        third.attach(space(3), Some(folder.path()));
        let b = third.id(&content_hash("b"));
        assert!(third.has(b));
        assert_eq!(third.file.as_ref().unwrap().records, 2);
    }

    #[test]
    fn another_space_or_format_starts_empty() {
        let folder = tempfile::tempdir().unwrap();
        drop(store_with(folder.path(), &["a"]));
        let path = cache_file(folder.path());
        let text = std::fs::read(&path).unwrap();
        let edited =
            String::from_utf8_lossy(&text).replacen("manvault-vectors 1", "manvault-vectors 9", 1);
        std::fs::write(&path, edited.as_bytes()).unwrap();
        let mut again = VectorStore::default();
        again.attach(space(3), Some(folder.path()));
        let a = again.id(&content_hash("a"));
        assert!(!again.has(a));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            space(3).header().into_bytes()
        );
    }

    #[test]
    fn a_changed_space_drops_vectors_held() {
        let folder = tempfile::tempdir().unwrap();
        let mut store = store_with(folder.path(), &["a"]);
        let a = store.id(&content_hash("a"));
        store.attach(space(4), Some(folder.path()));
        assert!(!store.has(a));
        assert_eq!(store.arena().dims(), 4);
    }

    #[test]
    fn compaction_keeps_only_live_vectors() {
        let folder = tempfile::tempdir().unwrap();
        let texts: Vec<String> = (0..SLACK_RECORDS + 10).map(|n| n.to_string()).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut store = store_with(folder.path(), &refs);
        let live = vec![store.id(&content_hash("7"))];
        store.compact(&live);
        let mut again = VectorStore::default();
        again.attach(space(3), Some(folder.path()));
        assert_eq!(again.file.as_ref().unwrap().records, 1);
        let seven = again.id(&content_hash("7"));
        assert!(again.has(seven));
    }

    #[test]
    fn an_unusable_cache_dir_keeps_vectors_in_memory() {
        let folder = tempfile::tempdir().unwrap();
        let blocked = folder.path().join("file");
        std::fs::write(&blocked, "not a folder").unwrap();
        let store = store_with(&blocked, &["a"]);
        assert!(store.file.is_none());
        assert!(store.has(0));
    }
}
