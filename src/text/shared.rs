//! [`SharedStr`] and [`SharedBytes`]: a string or bytes that are a place in a buffer
//! others share.
//!
//! Why: a start reads back hundreds of thousands of short strings (every node's title and
//! anchor at 220 MB of manuals) and tens of megabytes of encoded references, and a copy
//! each was an allocation each, in fresh heap pages whose faults were most of the
//! decoders' time (issue 16). A file's strings are stored one after the other
//! ([`crate::manual::cache_file`]'s parts), so each can be read back as its range in one
//! allocation holding them all; bytes kept as they were read stay in the read buffer.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// A string held as a range of a shared text: cloning it copies no text, and all the
/// strings read from one file's part hold one allocation. Compares and prints as
/// the string it is.
///
/// `find::derived::Label` is the same idea for a pair (a text and its loose form): it
/// keeps both ranges beside one `Arc`, 32 bytes and one reference count a label, where
/// two `SharedStr`s would be 48 bytes and two counts for each of the ~400,000 labels
/// a start reads back.
#[derive(Clone)]
pub struct SharedStr {
    text: Arc<str>,
    start: u32,
    end: u32,
}

impl SharedStr {
    /// The string at `range` of `text`; `None` when the range is outside `text`, does not
    /// fall on character boundaries, or ends past `u32::MAX`.
    pub(crate) fn within(text: Arc<str>, range: Range<usize>) -> Option<SharedStr> {
        text.get(range.clone())?;
        Some(SharedStr {
            start: u32::try_from(range.start).ok()?,
            end: u32::try_from(range.end).ok()?,
            text,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text[self.start as usize..self.end as usize]
    }
}

impl Deref for SharedStr {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for SharedStr {
    fn from(value: &str) -> Self {
        SharedStr {
            end: value.len() as u32,
            start: 0,
            text: value.into(),
        }
    }
}

impl From<String> for SharedStr {
    fn from(value: String) -> Self {
        SharedStr::from(value.as_str())
    }
}

impl PartialEq for SharedStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedStr {}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), formatter)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), formatter)
    }
}

/// Bytes held as a range of a shared buffer (a cache file's payload as read): cloning
/// them copies nothing, and the buffer lives as long as any of its ranges.
#[derive(Clone)]
pub(crate) struct SharedBytes {
    buffer: Arc<Vec<u8>>,
    range: Range<usize>,
}

impl SharedBytes {
    /// The bytes at `range` of `buffer`; `None` when the range is not inside it.
    pub(crate) fn within(buffer: Arc<Vec<u8>>, range: Range<usize>) -> Option<SharedBytes> {
        buffer.get(range.clone())?;
        Some(SharedBytes { buffer, range })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buffer[self.range.clone()]
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "SharedBytes({} bytes)", self.range.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_string_is_its_range_and_only_a_whole_range_inside_the_text_is_one() {
        let text: Arc<str> = "見出しanchor".into();
        let title = SharedStr::within(Arc::clone(&text), 0..9).unwrap();
        let anchor = SharedStr::within(Arc::clone(&text), 9..15).unwrap();
        assert_eq!(title, "見出し");
        assert_eq!(anchor.as_str(), "anchor");
        assert_eq!(&*anchor, "anchor");
        assert_eq!(title, SharedStr::from("見出し".to_owned()));
        assert_ne!(title, anchor);
        assert_eq!(format!("{title} {anchor:?}"), "見出し \"anchor\"");
        let empty = SharedStr::within(Arc::clone(&text), 15..15).unwrap();
        assert_eq!(empty, "");
        assert!(
            SharedStr::within(Arc::clone(&text), 1..9).is_none(),
            "inside 見"
        );
        assert!(
            SharedStr::within(Arc::clone(&text), 9..16).is_none(),
            "past the end"
        );
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 9..3;
        assert!(SharedStr::within(text, reversed).is_none());
    }

    #[test]
    fn shared_bytes_are_their_range_and_only_a_range_inside_the_buffer_is_one() {
        let buffer = Arc::new(b"header|body".to_vec());
        let body = SharedBytes::within(Arc::clone(&buffer), 7..11).unwrap();
        assert_eq!(body.bytes(), b"body");
        assert_eq!(body.clone().bytes(), b"body");
        assert_eq!(
            SharedBytes::within(Arc::clone(&buffer), 11..11)
                .unwrap()
                .bytes(),
            b""
        );
        assert!(SharedBytes::within(Arc::clone(&buffer), 7..12).is_none());
        assert_eq!(format!("{body:?}"), "SharedBytes(4 bytes)");
        drop(buffer);
        assert_eq!(body.bytes(), b"body", "the buffer lives with its ranges");
    }
}
