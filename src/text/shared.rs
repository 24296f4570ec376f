//! [`SharedStr`]: a string that is a place in a text other strings share.
//!
//! Why: a start reads back hundreds of thousands of short strings (every node's title and
//! anchor at 220 MB of manuals), and a `String` each was an allocation each, in fresh
//! heap pages whose faults were most of the catalog's decode time (issue 16). A file's
//! strings are stored one after the other ([`crate::manual::cache_file`]'s parts), so
//! each can be read back as its range in one allocation holding them all.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// A string held as a range of a shared text: cloning it copies no text, and all the
/// strings read from one file's part hold one allocation. Compares and prints as
/// the string it is.
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
        assert!(SharedStr::within(Arc::clone(&text), 1..9).is_none(), "inside 見");
        assert!(SharedStr::within(Arc::clone(&text), 9..16).is_none(), "past the end");
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 9..3;
        assert!(SharedStr::within(text, reversed).is_none());
    }
}
