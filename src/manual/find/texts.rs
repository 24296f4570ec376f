//! The normalised texts of the files the section index holds, derived when a search first
//! reads one (a candidate's file, Stage 3's neighbours, the exception stage) and kept
//! while the file is unchanged, within a byte budget (issue 16).
//!
//! Why lazily: a start over a current index would otherwise normalise every file before
//! its first answer, though a search reads only its candidates' files. Why kept: the
//! same files come back across searches (a topic's sections), and normalising a file
//! costs more than searching it. Why bounded: a server's memory must not grow to the
//! whole corpus's text again, which is what the index exists to avoid; past
//! [`BUDGET_BYTES`] the least recently read texts are dropped, and read again (derived)
//! when a later search needs them. Searches still holding a dropped text keep it alive
//! through their `Arc` until they end.
//!
//! Texts are keyed by file names and checked against the file's generation, so one cache
//! serves every corpus the [`CorpusCache`](super::corpus::CorpusCache) makes: a text of
//! an unchanged file survives a change elsewhere.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::derived::{read_original, FileText};
use crate::manual::ManualFile;

/// Bytes of text (with its line and node tables) the cache keeps at most: about twice the
/// text of a large search's candidate files, and room for a corpus of ~100 MB of manuals
/// to stay whole once searched, so a warm search over that normalises nothing.
const BUDGET_BYTES: usize = 128 << 20;

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct TextCache {
    budget: usize,
    state: Mutex<State>,
    /// Files derived since the cache was made (tests count them).
    derived: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<(Arc<str>, Arc<str>), Entry>,
    bytes: usize,
    /// Counts reads, so the least recent has the smallest `used`.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    text: Arc<FileText>,
    used: u64,
}

impl Default for TextCache {
    fn default() -> TextCache {
        TextCache::with_budget(BUDGET_BYTES)
    }
}

impl TextCache {
    pub(crate) fn with_budget(budget: usize) -> TextCache {
        TextCache {
            budget,
            state: Mutex::default(),
            derived: AtomicUsize::new(0),
        }
    }

    /// The text of `source`, named `(manual_id, path)`: kept, or derived now and kept.
    /// Derived outside the lock, so scan threads derive their files at the same time. A
    /// file that changed since indexed gets a blank text, not kept: the refresh its read
    /// asked for brings the new version, derived then.
    pub(crate) fn get(
        &self,
        manual_id: &Arc<str>,
        path: &Arc<str>,
        source: &ManualFile,
    ) -> Arc<FileText> {
        let key = (Arc::clone(manual_id), Arc::clone(path));
        if let Some(text) = self.lookup(&key, source.generation()) {
            return text;
        }
        let Some(original) = read_original(source) else {
            return Arc::new(FileText::derive(source, None));
        };
        let text = Arc::new(FileText::derive(source, Some(&original)));
        self.derived.fetch_add(1, Ordering::Relaxed);
        self.insert(key, Arc::clone(&text));
        text
    }

    /// Keeps `text` (derived elsewhere) for the file named `(manual_id, path)`.
    pub(crate) fn keep(&self, manual_id: &Arc<str>, path: &Arc<str>, text: Arc<FileText>) {
        self.insert((Arc::clone(manual_id), Arc::clone(path)), text);
    }

    /// Files this cache derived so far.
    #[cfg(test)]
    pub(crate) fn derived_count(&self) -> usize {
        self.derived.load(Ordering::Relaxed)
    }

    /// Whether the cache holds a text of the file named `(manual_id, path)`.
    #[cfg(test)]
    pub(crate) fn holds(&self, manual_id: &str, path: &str) -> bool {
        let key: (Arc<str>, Arc<str>) = (manual_id.into(), path.into());
        self.lock().entries.contains_key(&key)
    }

    fn lookup(&self, key: &(Arc<str>, Arc<str>), generation: u64) -> Option<Arc<FileText>> {
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        let entry = state.entries.get_mut(key)?;
        if entry.text.generation != generation {
            return None;
        }
        entry.used = clock;
        Some(Arc::clone(&entry.text))
    }

    fn insert(&self, key: (Arc<str>, Arc<str>), text: Arc<FileText>) {
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        state.bytes += text.heap_bytes();
        if let Some(old) = state.entries.insert(key, Entry { text, used }) {
            state.bytes -= old.text.heap_bytes();
        }
        // Evictions are rare (the budget holds many searches' files), so a walk for the
        // oldest entry costs less than keeping an order on every read.
        while state.bytes > self.budget && state.entries.len() > 1 {
            let oldest = state
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| key.clone())
                .expect("more than one entry");
            let dropped = state.entries.remove(&oldest).expect("found above");
            state.bytes -= dropped.text.heap_bytes();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent entries (each update is
        // complete before the next statement), so the cache stays usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::testing::index;

    #[test]
    fn texts_are_kept_until_the_file_changes_and_within_the_budget() {
        let (dir, mut index) = index(&[("m/a.md", "# A\n\nalpha\n"), ("m/b.md", "# B\n\nbeta\n")]);
        let (m, a, b): (Arc<str>, Arc<str>, Arc<str>) = ("m".into(), "a.md".into(), "b.md".into());
        let cache = TextCache::default();
        fn file<'a>(index: &'a crate::manual::ManualIndex, path: &str) -> &'a ManualFile {
            index.file("m", path).expect("listed")
        }
        let first = cache.get(&m, &a, file(&index, "a.md"));
        assert!(Arc::ptr_eq(
            &first,
            &cache.get(&m, &a, file(&index, "a.md"))
        ));
        assert_eq!(cache.derived_count(), 1);
        std::fs::write(dir.path().join("m/a.md"), "# A\n\nchanged\n").unwrap();
        assert!(index.refresh().unwrap());
        let second = cache.get(&m, &a, file(&index, "a.md"));
        assert_eq!(cache.derived_count(), 2, "a changed file is derived again");
        assert!(second.body.contains("changed"));

        let small = TextCache::with_budget(second.heap_bytes());
        small.get(&m, &a, file(&index, "a.md"));
        small.get(&m, &b, file(&index, "b.md"));
        small.get(&m, &b, file(&index, "b.md"));
        assert_eq!(small.derived_count(), 2, "the most recent text stays");
        small.get(&m, &a, file(&index, "a.md"));
        assert_eq!(
            small.derived_count(),
            3,
            "the oldest was dropped for the budget"
        );
    }

    #[test]
    fn a_file_changed_under_the_index_gets_a_blank_text_that_is_not_kept() {
        let (dir, mut index) = index(&[("m/a.md", "# A\n\nalpha\n")]);
        let (m, a): (Arc<str>, Arc<str>) = ("m".into(), "a.md".into());
        let cache = TextCache::default();
        std::fs::write(dir.path().join("m/a.md"), "# A\n\nomega\n").unwrap();
        let file = index.file("m", "a.md").unwrap();
        let blank = cache.get(&m, &a, file);
        assert_eq!(blank.body, "\n".repeat(file.line_count() as usize));
        assert!(!cache.holds("m", "a.md"));
        assert_eq!(cache.derived_count(), 0);
        assert!(index.refresh().unwrap());
        let text = cache.get(&m, &a, index.file("m", "a.md").unwrap());
        assert!(text.body.contains("omega"));
        assert!(cache.holds("m", "a.md"));
    }
}
