//! The binary files the manual domain keeps under `CACHE_DIR` beside the section index
//! (the catalog of outlines, the resolved reference graph): where they live, their
//! envelope, and the byte layout their payloads are written in.
//!
//! Every such file is derived data that saves a start some work, so it is never an
//! error to lack it: whatever is unexpected about it (missing, unreadable, another magic,
//! format or rules fingerprint, a length or CRC that does not match) means "derive it
//! again", logged without any manual text. The envelope:
//!
//! ```text
//! magic [u8; 8] | format u32 | rules fingerprint u64 | payload length u64 | CRC-32 u32
//! ```
//!
//! The CRC catches a damaged file; a truncated one fails the length check first. Written
//! whole (temporary file, fsync, rename in the same folder, through [`crate::paths`], so
//! no link is followed at any component of the path inside the vault); a failed write is
//! a warning that costs only the next start's work.
//!
//! Why a hand-written little-endian layout: a start decodes thousands of entries (one per
//! manual file, or per reference) at memory speed, with no parser, no per-field
//! allocation beside the strings the caller keeps, and one integrity check over the whole
//! payload.

use std::io::Read;
use std::path::Path;

use crate::error::ErrorCode;
use crate::paths::{locate_file, RelPath, Root};

/// Magic, format, rules fingerprint, payload length, CRC.
const HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 4;

/// What a cache file is and which writer made it: a file whose header differs is ignored.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub magic: &'static [u8; 8],
    /// The payload's layout; bump it with any change there.
    pub format: u32,
    /// A fingerprint of the rules whose output is stored (their sources), so a build with
    /// other rules never reads what the old ones made.
    pub rules: u64,
    /// What the file holds and what a start does without it, for the logs ("the manual
    /// catalog", "parsing every file").
    pub holds: &'static str,
    pub without: &'static str,
}

/// One cache file, located but not read.
#[derive(Debug)]
pub(crate) struct CacheFile {
    root: Root,
    file: RelPath,
    envelope: Envelope,
}

impl CacheFile {
    /// The file `name` in `cache_dir`; `None` (logged) when the folder cannot be used.
    /// Inside `vault_root` the path is walked from the vault root without following
    /// links; a cache folder elsewhere is the operator's and is created as the section
    /// index creates its own.
    pub(crate) fn locate(
        cache_dir: &Path,
        vault_root: &Path,
        name: &str,
        envelope: Envelope,
    ) -> Option<CacheFile> {
        if !cache_dir.starts_with(vault_root) {
            // Errors show up in the locate below.
            let _ = std::fs::create_dir_all(cache_dir);
        }
        match locate_file(&cache_dir.join(name), vault_root, "CACHE_DIR") {
            Ok(located) => Some(CacheFile {
                root: located.root,
                file: located.file,
                envelope,
            }),
            Err(problem) => {
                tracing::warn!(%problem, "{} is not kept: {}", envelope.holds, envelope.without);
                None
            }
        }
    }

    /// `decode` of the file's payload when the file is there and its envelope checks;
    /// else, or when `decode` finds it malformed, `None`, logged unless the file is simply
    /// missing. The file's bytes are dropped before this returns, so they never add to
    /// the peak of the work that follows.
    pub(crate) fn read<T>(&self, decode: impl FnOnce(&[u8]) -> Option<T>) -> Option<T> {
        let Envelope { holds, without, .. } = self.envelope;
        let mut bytes = Vec::new();
        match self.root.open_file(&self.file) {
            Ok(mut opened) => {
                if let Err(error) = opened.read_to_end(&mut bytes) {
                    tracing::warn!(error = %error.kind(), "{holds} cannot be read; {without}");
                    return None;
                }
            }
            Err(error) if error.code == ErrorCode::NotFound => return None,
            Err(error) => {
                tracing::warn!(
                    code = error.code.as_str(),
                    "{holds} cannot be opened; {without}"
                );
                return None;
            }
        }
        let decoded = self
            .envelope
            .holds_payload(&bytes)
            .then(|| decode(&bytes[HEADER_BYTES..]))
            .flatten();
        if decoded.is_none() {
            tracing::info!("{holds} was written by another version or is damaged; {without}");
        }
        decoded
    }

    /// A writer for this file's payload, its header left to [`CacheFile::save`].
    pub(crate) fn writer(&self) -> Writer {
        let mut out = Writer::default();
        out.bytes.extend_from_slice(self.envelope.magic);
        out.u32(self.envelope.format);
        out.u64(self.envelope.rules);
        out.u64(0); // payload length
        out.u32(0); // CRC-32
        out
    }

    /// Seals `out` (from [`CacheFile::writer`]) and replaces the file with it.
    pub(crate) fn save(&self, mut out: Writer) {
        let payload_len = (out.bytes.len() - HEADER_BYTES) as u64;
        let crc = crc32fast::hash(&out.bytes[HEADER_BYTES..]);
        out.bytes[20..28].copy_from_slice(&payload_len.to_le_bytes());
        out.bytes[28..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
        match self.root.write_whole(&self.file, &out.bytes) {
            Ok(bytes) => tracing::debug!(bytes, "{} written", self.envelope.holds),
            Err(error) => tracing::warn!(
                code = error.code.as_str(),
                "{} cannot be written: the next start is {}",
                self.envelope.holds,
                self.envelope.without
            ),
        }
    }
}

impl Envelope {
    /// Whether `bytes` start with this envelope's header and hold the payload it
    /// describes, whole and undamaged.
    fn holds_payload(&self, bytes: &[u8]) -> bool {
        let mut header = Reader::new(bytes);
        let matches = header.take(8) == Some(&self.magic[..])
            && header.u32() == Some(self.format)
            && header.u64() == Some(self.rules);
        let (Some(payload_len), Some(crc)) = (header.u64(), header.u32()) else {
            return false;
        };
        matches
            && usize::try_from(payload_len).ok() == Some(header.remaining())
            && crc32fast::hash(&bytes[HEADER_BYTES..]) == crc
    }
}

/// Appends values in the layout [`Reader`] reads: little-endian integers, strings as a
/// u32 length and their UTF-8 bytes.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    pub(crate) fn u32(&mut self, value: u32) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn str(&mut self, value: &str) {
        self.u32(value.len() as u32);
        self.bytes.extend_from_slice(value.as_bytes());
    }

    /// Writes a u32 placeholder and returns where, for [`Writer::patch_u32`] once the
    /// value (a count, a length) is known.
    pub(crate) fn placeholder_u32(&mut self) -> usize {
        self.u32(0);
        self.bytes.len() - 4
    }

    pub(crate) fn patch_u32(&mut self, at: usize, value: u32) {
        self.bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
}

/// Reads values from a byte slice; every read past the end or of a malformed value is
/// `None`, which the caller turns into "derive it again".
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if len > self.bytes.len() {
            return None;
        }
        let (taken, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Some(taken)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let len = self.u32()?;
        simdutf8::basic::from_utf8(self.take(len as usize)?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope() -> Envelope {
        Envelope {
            magic: b"MVTEST\0\0",
            format: 3,
            rules: 42,
            holds: "the test file",
            without: "deriving it",
        }
    }

    fn sealed(payload: &[u8], envelope: Envelope) -> Vec<u8> {
        let folder = tempfile::tempdir().unwrap();
        let file = CacheFile::locate(folder.path(), folder.path(), "t.bin", envelope).unwrap();
        let mut out = file.writer();
        out.bytes.extend_from_slice(payload);
        file.save(out);
        std::fs::read(folder.path().join("t.bin")).unwrap()
    }

    #[test]
    fn a_payload_reads_back_and_any_other_header_or_damage_reads_as_nothing() {
        let folder = tempfile::tempdir().unwrap();
        let file = CacheFile::locate(folder.path(), folder.path(), "t.bin", envelope()).unwrap();
        let read = || file.read(|payload| Some(payload.to_vec()));
        assert_eq!(read(), None, "missing");
        let bytes = sealed(b"payload", envelope());
        std::fs::write(folder.path().join("t.bin"), &bytes).unwrap();
        assert_eq!(read().as_deref(), Some(&b"payload"[..]));
        assert_eq!(file.read(|_| None::<()>), None, "a malformed payload");
        let mut damaged = vec![bytes[..bytes.len() - 1].to_vec()];
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x10;
            damaged.push(flipped);
        }
        damaged.push(sealed(
            b"payload",
            Envelope {
                format: 4,
                ..envelope()
            },
        ));
        damaged.push(sealed(
            b"payload",
            Envelope {
                rules: 43,
                ..envelope()
            },
        ));
        for bytes in damaged {
            std::fs::write(folder.path().join("t.bin"), &bytes).unwrap();
            assert_eq!(read(), None, "{bytes:?}");
        }
    }
}
