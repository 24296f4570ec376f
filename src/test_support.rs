//! Fixtures shared by the unit tests of several modules.

/// A temporary folder holding `files` (`"path/below/it"`, content), folders created.
pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary folder");
    for (path, content) in files {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("a folder")).expect("folders");
        std::fs::write(full, content).expect("write");
    }
    dir
}
