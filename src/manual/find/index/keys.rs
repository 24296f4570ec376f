//! Which section of the corpus each document of a searcher is: the search reads postings
//! by document id and needs the [`NodeKey`] in a few nanoseconds, so the map is built
//! once per (commit, corpus) from the documents' fast fields.

use std::collections::{HashMap, HashSet};

use tantivy::{DocId, Searcher};

use super::Fields;
use crate::manual::find::derived::NodeKey;

/// No section of the corpus (deleted, of a file the corpus does not hold, or of another
/// version of it).
const NONE: u64 = u64::MAX;

/// The node key of every document, by segment and document id.
#[derive(Debug, Default)]
pub(crate) struct DocKeys {
    segments: Vec<Vec<u64>>,
    /// The corpus files with at least one section document.
    files: HashSet<u32>,
}

/// A file of the corpus as the map needs it.
pub(crate) struct KnownFile {
    pub index: u32,
    pub version: u64,
    pub nodes: u32,
}

impl DocKeys {
    /// The map for `searcher`'s documents; `files` are the corpus files by file id.
    pub(crate) fn build(
        searcher: &Searcher,
        fields: &Fields,
        files: &HashMap<u64, KnownFile>,
    ) -> tantivy::Result<DocKeys> {
        let mut segments = Vec::with_capacity(searcher.segment_readers().len());
        let mut present = HashSet::new();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let name = |field| searcher.schema().get_field_name(field).to_owned();
            let ids = fast.u64(&name(fields.file_id))?;
            let versions = fast.u64(&name(fields.version))?;
            let nodes = fast.u64(&name(fields.node))?;
            let mut keys = vec![NONE; segment.max_doc() as usize];
            for doc in segment.doc_ids_alive() {
                let (Some(id), Some(version), Some(node)) =
                    (ids.first(doc), versions.first(doc), nodes.first(doc))
                else {
                    continue;
                };
                if let Some(file) = files.get(&id) {
                    if file.version == version && node < u64::from(file.nodes) {
                        keys[doc as usize] = (u64::from(file.index) << 32) | node;
                        present.insert(file.index);
                    }
                }
            }
            segments.push(keys);
        }
        Ok(DocKeys {
            segments,
            files: present,
        })
    }

    /// The section document `doc` of segment `segment` is, if it is one of the corpus.
    pub(crate) fn key(&self, segment: usize, doc: DocId) -> Option<NodeKey> {
        let packed = *self.segments.get(segment)?.get(doc as usize)?;
        (packed != NONE).then_some(NodeKey {
            file: (packed >> 32) as u32,
            node: packed as u32,
        })
    }

    /// Whether any section of corpus file `file` has a document.
    pub(crate) fn holds_file(&self, file: u32) -> bool {
        self.files.contains(&file)
    }
}
