//! The search's view of the manuals: every section's own text normalised and loosened
//! once, its labels (title, page title, path words), and the references between
//! sections, so a query only scans memory.
//!
//! Deriving this costs about as much as parsing the manuals, so it is done once per file
//! and kept until the file changes: [`CorpusCache::sync`] compares each file's
//! generation with the one its derived data was built from and rebuilds only what
//! changed (in parallel on the available cores). The cross-file part (references
//! resolved to sections, link texts attached to their targets) is rebuilt whenever any
//! file changed, from the per-file data, without touching text again.
//!
//! Own text is normalised line by line, so a match maps to its line with a binary search
//! and numbers stay attached to their line (conflict detection reads them). A term broken
//! by a line wrap is still found by the loose text, which joins the lines of a section.

use std::collections::HashMap;
use std::sync::Arc;

use super::derived::{CorpusFile, FileDerived};
use super::links::extract_references;
use super::resolve::ReferenceGraph;
use crate::manual::{FileType, ManualFile, ManualIndex};

/// A consistent view of every manual for one index generation. Files are in the index's
/// (manual_id, path) order, so `files[i]` is `index.files(None)[i]`.
#[derive(Debug)]
pub(crate) struct Corpus {
    pub generation: u64,
    pub files: Vec<CorpusFile>,
    pub references: ReferenceGraph,
    pub node_count: usize,
    /// Mean bytes of a section's own normalised text (BM25's length normalisation).
    pub mean_node_bytes: f32,
}

impl Corpus {
    pub(crate) fn file_index(&self, manual_id: &str, path: &str) -> Option<u32> {
        self.files
            .binary_search_by(|file| (&*file.manual_id, &*file.path).cmp(&(manual_id, path)))
            .ok()
            .map(|index| index as u32)
    }
}

/// Keeps derived data between calls; see the module documentation.
#[derive(Default)]
pub(crate) struct CorpusCache {
    by_file: HashMap<(Arc<str>, Arc<str>), Arc<FileDerived>>,
    current: Option<Arc<Corpus>>,
}

impl CorpusCache {
    /// The corpus for `index` as it is now, rebuilding what changed since the last call.
    pub(crate) fn sync(&mut self, index: &ManualIndex) -> Arc<Corpus> {
        if let Some(current) = &self.current {
            if current.generation == index.generation() {
                return Arc::clone(current);
            }
        }
        let listed = index.files(None).expect("listing every manual cannot fail");
        let mut files = Vec::with_capacity(listed.len());
        let mut stale = Vec::new();
        let mut previous = std::mem::take(&mut self.by_file);
        for (position, entry) in listed.iter().enumerate() {
            let key: (Arc<str>, Arc<str>) = (entry.manual_id.into(), entry.file.path().into());
            match previous.remove(&key) {
                Some(derived) if derived.generation == entry.file.generation() => {
                    files.push(Some(derived))
                }
                _ => {
                    stale.push(position);
                    files.push(None);
                }
            }
        }
        let rebuilt = derive_parallel(stale.iter().map(|&position| listed[position].file));
        for (position, derived) in stale.into_iter().zip(rebuilt) {
            files[position] = Some(Arc::new(derived));
        }
        let files: Vec<CorpusFile> = listed
            .iter()
            .zip(files)
            .map(|(entry, derived)| CorpusFile {
                manual_id: entry.manual_id.into(),
                path: entry.file.path().into(),
                derived: derived.expect("every stale file was rebuilt"),
            })
            .collect();
        self.by_file = files
            .iter()
            .map(|file| {
                (
                    (Arc::clone(&file.manual_id), Arc::clone(&file.path)),
                    Arc::clone(&file.derived),
                )
            })
            .collect();
        let file_refs: Vec<&ManualFile> = listed.iter().map(|entry| entry.file).collect();
        let references = ReferenceGraph::resolve(&files, &file_refs);
        let node_count: usize = files.iter().map(|file| file.derived.node_count()).sum();
        let body_bytes: usize = files.iter().map(|file| file.derived.body.len()).sum();
        let corpus = Arc::new(Corpus {
            generation: index.generation(),
            node_count,
            mean_node_bytes: body_bytes as f32 / node_count.max(1) as f32,
            files,
            references,
        });
        self.current = Some(Arc::clone(&corpus));
        corpus
    }
}

/// Everything the search derives from `file`: the references only in Markdown.
fn derive(file: &ManualFile) -> FileDerived {
    let mut derived = FileDerived::without_references(file);
    if file.file_type() == FileType::Md {
        derived.references = extract_references(file, &derived);
    }
    derived
}

/// Derives `files` on every available core, keeping their order. Files are dealt out
/// round-robin by size so threads finish together.
fn derive_parallel<'a>(files: impl Iterator<Item = &'a ManualFile>) -> Vec<FileDerived> {
    let files: Vec<&ManualFile> = files.collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    if threads <= 1 {
        return files.into_iter().map(derive).collect();
    }
    let mut by_size: Vec<usize> = (0..files.len()).collect();
    by_size.sort_by_key(|&position| std::cmp::Reverse(files[position].text().len()));
    let shares: Vec<Vec<usize>> = (0..threads)
        .map(|thread| {
            by_size
                .iter()
                .skip(thread)
                .step_by(threads)
                .copied()
                .collect()
        })
        .collect();
    let mut results: Vec<Option<FileDerived>> = files.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = shares
            .iter()
            .map(|share| {
                let files = &files;
                scope.spawn(move || {
                    share
                        .iter()
                        .map(|&position| (position, derive(files[position])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            for (position, derived) in handle.join().expect("deriving a file does not panic") {
                results[position] = Some(derived);
            }
        }
    });
    results
        .into_iter()
        .map(|derived| derived.expect("every file was dealt to a thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manual::find::testing::{index, key};

    const GUIDE: &str = "---\ntitle: Guide Ｐage\n---\n# Intro\n\nFirst  line\nwrapped 請求\n書 here\n\n## Details\n\n三万五千円\n";

    #[test]
    fn own_text_is_normalised_line_by_line_and_loose_joins_lines() {
        let (_dir, index) = index(&[("m/docs/guide-one.md", GUIDE)]);
        let corpus = CorpusCache::default().sync(&index);
        let derived = &corpus.files[0].derived;
        let intro = key(&corpus, &index, "m", "docs/guide-one.md", 4).node;
        let details = key(&corpus, &index, "m", "docs/guide-one.md", 10).node;
        assert_eq!(
            derived.own_text(intro),
            "# intro\n\nfirst line\nwrapped 請求\n書 here\n\n"
        );
        assert_eq!(
            derived.own_loose(intro),
            "introfirstlinewrapped請求書here\n"
        );
        assert_eq!(derived.line_text(12), "35000円");
        assert_eq!(derived.line_at(derived.own_text(intro).len() + 2), 10);
        assert_eq!(derived.labels[details as usize].parent, Some(intro));
        assert_eq!(derived.labels[details as usize].title.text, "details");
        assert_eq!(derived.page.text, "guide page docs guide one");
    }

    #[test]
    fn sync_rebuilds_only_changed_files() {
        let (dir, mut index) = index(&[("m/a.md", "# A\n"), ("m/b.md", "# B\n")]);
        let mut cache = CorpusCache::default();
        let first = cache.sync(&index);
        assert!(
            Arc::ptr_eq(&first, &cache.sync(&index)),
            "same generation, same corpus"
        );
        std::fs::write(dir.path().join("m/b.md"), "# B changed\n\nmore\n").unwrap();
        assert!(index.refresh().unwrap());
        let second = cache.sync(&index);
        assert!(Arc::ptr_eq(
            &first.files[0].derived,
            &second.files[0].derived
        ));
        assert!(!Arc::ptr_eq(
            &first.files[1].derived,
            &second.files[1].derived
        ));
        assert_eq!(second.files[1].derived.labels[0].title.text, "b changed");
        std::fs::remove_file(dir.path().join("m/a.md")).unwrap();
        index.refresh().unwrap();
        assert_eq!(cache.sync(&index).files.len(), 1);
    }
}
