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
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::error::ErrorCode;
use crate::paths::{locate_file, RelPath, Root};
use crate::text::shared::SharedBytes;

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
        let decoded = decode(self.read_payload()?.bytes());
        if decoded.is_none() {
            self.unusable();
        }
        decoded
    }

    /// The file's payload, not yet decoded, when the file is there and its envelope
    /// checks; else `None`, logged unless the file is simply missing. For a reader that
    /// decodes it later or elsewhere (and calls [`CacheFile::unusable`] when it finds it
    /// malformed).
    pub(crate) fn read_payload(&self) -> Option<Payload> {
        let Envelope { holds, without, .. } = self.envelope;
        let mut bytes = Vec::new();
        match self.root.open_file(&self.file) {
            Ok(mut opened) => {
                // Sized once: a file of tens of megabytes grown by doubling is copied
                // over and over.
                let size = opened.metadata().map_or(0, |metadata| metadata.len());
                bytes.reserve_exact(usize::try_from(size).unwrap_or(0));
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
        if !self.envelope.holds_payload(&bytes) {
            self.unusable();
            return None;
        }
        Some(Payload { bytes })
    }

    /// Logs that the file was found but cannot be used (another version wrote it, or it
    /// is damaged).
    pub(crate) fn unusable(&self) {
        let Envelope { holds, without, .. } = self.envelope;
        tracing::info!("{holds} was written by another version or is damaged; {without}");
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

/// A cache file's payload whose envelope checked (length, CRC), not yet decoded.
pub(crate) struct Payload {
    /// The whole file, header included.
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "Payload({} bytes)", self.bytes.len())
    }
}

impl Payload {
    /// The payload's bytes, after the header.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[HEADER_BYTES..]
    }

    /// Keeps the payload's first `len` bytes for values read back as places in them
    /// ([`KeptPayload::slice`]) and drops the rest: a file whose front holds what a
    /// reader keeps (bytes it decodes later) and whose back what it decodes at once is
    /// read into one buffer, its back handed back to the allocator (a shrink in place for
    /// a buffer of many megabytes), and its front neither copied nor held twice. `None`
    /// when the payload is shorter.
    pub(crate) fn keep_front(mut self, len: usize) -> Option<KeptPayload> {
        let end = HEADER_BYTES.checked_add(len)?;
        if end > self.bytes.len() {
            return None;
        }
        self.bytes.truncate(end);
        self.bytes.shrink_to_fit();
        Some(KeptPayload {
            bytes: Arc::new(self.bytes),
        })
    }
}

/// The front of a payload kept by [`Payload::keep_front`].
pub(crate) struct KeptPayload {
    /// The whole buffer, header included.
    bytes: Arc<Vec<u8>>,
}

impl KeptPayload {
    /// The bytes at `range` of the kept payload (offsets as in [`Payload::bytes`]), sharing
    /// its buffer; `None` when the range is not inside it.
    pub(crate) fn slice(&self, range: Range<usize>) -> Option<SharedBytes> {
        let start = HEADER_BYTES.checked_add(range.start)?;
        let end = HEADER_BYTES.checked_add(range.end)?;
        SharedBytes::within(Arc::clone(&self.bytes), start..end)
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
/// u32 length and their UTF-8 bytes, or inside [`Writer::strings_apart`] as a u32 length
/// in place and their bytes in the part's text.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
    /// The strings of the part being written by [`Writer::strings_apart`].
    text: Option<String>,
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
        match &mut self.text {
            Some(text) => text.push_str(value),
            None => self.bytes.extend_from_slice(value.as_bytes()),
        }
    }

    /// Writes what `write` writes with its strings apart: the strings' bytes first, one
    /// after the other behind their total length, then the rest with each string's length
    /// where the string was. [`Reader::strings_apart`] reads it back. Parts follow one
    /// another, never nest; placeholders made inside `write` are patched inside it.
    ///
    /// Why: a start reads about a million short strings from the catalog and outline
    /// files, and checking each as UTF-8 on its own cost a start 60-80 ms of CPU at 220 MB
    /// of manuals (inputs under 64 bytes take the byte-by-byte check); one check over a
    /// part's strings runs at SIMD speed.
    pub(crate) fn strings_apart(&mut self, write: impl FnOnce(&mut Writer)) {
        debug_assert!(self.text.is_none(), "parts do not nest");
        let mut part = Writer {
            bytes: Vec::new(),
            text: Some(String::new()),
        };
        write(&mut part);
        let text = part.text.unwrap_or_default();
        self.str(&text);
        self.bytes.extend_from_slice(&part.bytes);
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
    /// The strings not yet read of the part opened by [`Reader::strings_apart`].
    text: Option<&'a str>,
    /// Bytes of the open part's strings, read or not ([`Reader::str_span`]).
    part_len: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            text: None,
            part_len: 0,
        }
    }

    /// Whether everything was read, the strings of an open part included.
    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty() && self.text.is_none_or(str::is_empty)
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

    /// The next string: inline, or inside a part opened by [`Reader::strings_apart`] the
    /// next `len` bytes of its text, which must end on a character boundary.
    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let len = self.u32()?;
        self.str_of_len(len)
    }

    /// [`Reader::str`] once its length `len` has been read.
    pub(crate) fn str_of_len(&mut self, len: u32) -> Option<&'a str> {
        let len = len as usize;
        match &mut self.text {
            Some(text) => {
                let value = text.get(..len)?;
                *text = &text[len..];
                Some(value)
            }
            None => simdutf8::basic::from_utf8(self.take(len)?).ok(),
        }
    }

    /// The next string of the part opened by [`Reader::strings_apart`], as its place in
    /// that part's strings (which `strings_apart` returned): for a reader that keeps the
    /// part's strings as one text and its values as places in it. `None` outside a part,
    /// as for [`Reader::str`].
    pub(crate) fn str_span(&mut self) -> Option<Range<usize>> {
        // Outside a part, read nothing.
        self.part_offset()?;
        let len = self.u32()?;
        self.str_span_of_len(len)
    }

    /// [`Reader::str_span`] once its length `len` has been read.
    pub(crate) fn str_span_of_len(&mut self, len: u32) -> Option<Range<usize>> {
        let start = self.part_offset()?;
        let len = self.str_of_len(len)?.len();
        Some(start..start + len)
    }

    /// Where the next string of the open part starts among that part's strings; `None`
    /// outside a part.
    fn part_offset(&self) -> Option<usize> {
        Some(self.part_len - self.text?.len())
    }

    /// Opens a part written by [`Writer::strings_apart`]: its strings are checked as
    /// UTF-8 at once and the strings read after this come from them. Returns them whole.
    /// `None` when the text is cut short or is not UTF-8, or when the strings of the part
    /// before were not all read.
    pub(crate) fn strings_apart(&mut self) -> Option<&'a str> {
        if !self.text.is_none_or(str::is_empty) {
            return None;
        }
        self.text = None;
        let strings = self.str()?;
        self.text = Some(strings);
        self.part_len = strings.len();
        Some(strings)
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

    #[test]
    fn a_kept_front_holds_only_the_front_and_slices_only_inside_it() {
        let folder = tempfile::tempdir().unwrap();
        let file = CacheFile::locate(folder.path(), folder.path(), "t.bin", envelope()).unwrap();
        std::fs::write(
            folder.path().join("t.bin"),
            sealed(b"front|back", envelope()),
        )
        .unwrap();
        let payload = file.read_payload().unwrap();
        assert!(payload.bytes().len() == 10);
        let kept = payload.keep_front(6).unwrap();
        assert_eq!(kept.bytes.len(), HEADER_BYTES + 6, "the back is dropped");
        assert_eq!(kept.slice(0..5).unwrap().bytes(), b"front");
        assert_eq!(kept.slice(6..6).unwrap().bytes(), b"");
        assert!(kept.slice(5..7).is_none(), "past the front");
        assert!(file.read_payload().unwrap().keep_front(11).is_none());
        assert!(file.read_payload().unwrap().keep_front(10).is_some());
    }

    /// Two parts as the outline file writes them: numbers and strings mixed, the second
    /// part's strings empty and not.
    fn two_parts() -> Vec<u8> {
        let mut out = Writer::default();
        out.strings_apart(|out| {
            out.str("見出し");
            out.u32(7);
            out.str("");
            out.str("loose é");
        });
        out.u8(9);
        out.strings_apart(|out| out.str("二"));
        out.bytes
    }

    fn read_two_parts(bytes: &[u8]) -> Option<(&str, u32, &str, &str, u8, &str)> {
        let reader = &mut Reader::new(bytes);
        reader.strings_apart()?;
        let first = (reader.str()?, reader.u32()?, reader.str()?, reader.str()?);
        let between = reader.u8()?;
        reader.strings_apart()?;
        let last = reader.str()?;
        reader
            .is_empty()
            .then_some((first.0, first.1, first.2, first.3, between, last))
    }

    #[test]
    fn strings_kept_apart_read_back_in_order_and_anything_cut_or_left_reads_as_nothing() {
        let bytes = two_parts();
        assert_eq!(
            read_two_parts(&bytes),
            Some(("見出し", 7, "", "loose é", 9, "二"))
        );
        // The strings come first: "見出し" + "" + "loose é" behind their length.
        assert_eq!(&bytes[4..13], "見出し".as_bytes());
        for end in 0..bytes.len() {
            assert_eq!(read_two_parts(&bytes[..end]), None, "cut at {end}");
        }
        // A string length that ends inside a character.
        let mut inside_a_character = bytes.clone();
        let first_length_at = 4 + "見出しloose é".len();
        inside_a_character[first_length_at] = 2;
        assert_eq!(read_two_parts(&inside_a_character), None);
        // Bytes of a part's text that are not UTF-8.
        let mut not_utf8 = bytes.clone();
        not_utf8[4] = 0xff;
        assert_eq!(read_two_parts(&not_utf8), None);
    }

    #[test]
    fn a_string_read_as_its_span_is_its_place_among_the_parts_strings() {
        let bytes = two_parts();
        let reader = &mut Reader::new(&bytes);
        assert_eq!(reader.str_span(), None, "no part open yet");
        let strings = reader.strings_apart().unwrap();
        assert_eq!(strings, "見出しloose é");
        let first = reader.str_span().unwrap();
        assert_eq!(&strings[first.clone()], "見出し");
        assert_eq!(reader.u32(), Some(7));
        let empty = reader.str_span().unwrap();
        assert_eq!(empty, first.end..first.end);
        let last = reader.str_span().unwrap();
        assert_eq!(&strings[last], "loose é");
        assert_eq!(reader.u8(), Some(9));
        let second = reader.strings_apart().unwrap();
        assert_eq!(second, "二");
        assert_eq!(reader.str_span(), Some(0..second.len()));
        assert!(reader.is_empty());
        assert_eq!(reader.str_span(), None, "nothing left");
    }

    #[test]
    fn a_part_opens_only_once_the_strings_of_the_one_before_are_read() {
        let bytes = two_parts();
        let reader = &mut Reader::new(&bytes);
        reader.strings_apart().unwrap();
        assert_eq!(reader.str(), Some("見出し"));
        assert_eq!(reader.u32(), Some(7));
        assert_eq!(reader.str(), Some(""));
        // "loose é" not read: the part is not done, so what follows is not a part.
        reader.u32().unwrap();
        assert!(!reader.is_empty());
        assert_eq!(reader.u8(), Some(9));
        assert_eq!(reader.strings_apart(), None);
    }
}
