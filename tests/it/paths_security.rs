//! Attacks on a real root in a temporary folder, and the guarantees of the writers.
//!
//! Beside the root (`base/vault`) lie `base/elsewhere/` and a sibling `base/vault-evil/`
//! whose name extends the root's. Every security test checks with an [`OutsideWatch`]
//! that nothing outside the root was read, listed, created or changed: it records the
//! outside tree, sets every access time there to 1970 and, afterwards, requires those
//! access times untouched (Linux `relatime` refreshes an access time that old on any read
//! or listing) and the tree identical.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::outside_watch::OutsideWatch;
use manvault::error::{ErrorCode, ToolError};
use manvault::paths::{parse_relative, FileKind, RelPath, Root};
use tempfile::TempDir;

struct Fixture {
    _temp: TempDir,
    base: PathBuf,
    vault: PathBuf,
    outside: PathBuf,
    root: Root,
}

impl Fixture {
    fn new() -> Fixture {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let vault = base.join("vault");
        let outside = base.join("elsewhere");
        fs::create_dir_all(vault.join("notes")).unwrap();
        fs::write(vault.join("notes/a.md"), "alpha\n").unwrap();
        fs::create_dir_all(outside.join("dir")).unwrap();
        fs::write(outside.join("secret.txt"), "outside secret\n").unwrap();
        fs::write(outside.join("dir/inner.txt"), "inner secret\n").unwrap();
        fs::create_dir_all(base.join("vault-evil")).unwrap();
        fs::write(base.join("vault-evil/secret.txt"), "evil secret\n").unwrap();
        let root = Root::open(&vault).unwrap();
        Fixture {
            _temp: temp,
            base,
            vault,
            outside,
            root,
        }
    }

    fn link(&self, target: impl AsRef<Path>, name: &str) {
        symlink(target, self.vault.join(name)).unwrap();
    }

    fn watch_outside(&self) -> OutsideWatch {
        OutsideWatch::arm(&self.base, &self.vault)
    }

    /// The error `result` must be, checked never to reveal a server path or what lies
    /// outside the root.
    #[track_caller]
    fn refused<T: std::fmt::Debug>(
        &self,
        result: Result<T, ToolError>,
        code: ErrorCode,
    ) -> ToolError {
        let error = result.expect_err("the operation should be refused");
        assert_eq!(error.code, code, "{error:?}");
        let body = error.to_json().to_string();
        for revealing in [self.base.to_str().unwrap(), "elsewhere", "secret", "/tmp"] {
            assert!(
                !body.contains(revealing),
                "error reveals {revealing:?}: {body}"
            );
        }
        error
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.vault.join(rel)).unwrap()
    }

    /// Names of the server's temporary files left anywhere under the root.
    fn leftover_temp_files(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut pending = vec![self.vault.clone()];
        while let Some(folder) = pending.pop() {
            for entry in fs::read_dir(folder).unwrap() {
                let entry = entry.unwrap();
                if entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".manvault-tmp-")
                {
                    found.push(entry.path().display().to_string());
                }
                if entry.file_type().unwrap().is_dir() {
                    pending.push(entry.path());
                }
            }
        }
        found
    }
}

fn rel(input: &str) -> RelPath {
    parse_relative(input).unwrap()
}

/// Runs every operation of [`Root`] on `path`, discarding successful results.
fn every_operation(root: &Root, path: &RelPath) -> Vec<(&'static str, Result<(), ToolError>)> {
    vec![
        ("open_file", root.open_file(path).map(drop)),
        ("stat", root.stat(path).map(drop)),
        (
            "read_dir_recursive",
            root.read_dir_recursive(path).map(drop),
        ),
        (
            "create_new",
            root.create_new(path, b"planted\n", false).map(drop),
        ),
        (
            "create_new with parents",
            root.create_new(path, b"planted\n", true).map(drop),
        ),
        ("replace", root.replace(path, b"planted\n", None).map(drop)),
        ("append", root.append(path, b"planted\n").map(drop)),
    ]
}

/// Asserts every operation on `path` is `forbidden` because `link` (a prefix) is a link.
#[track_caller]
fn assert_forbidden_everywhere(fixture: &Fixture, path: &str, link: &str) {
    for (operation, result) in every_operation(&fixture.root, &rel(path)) {
        let error = fixture.refused(result, ErrorCode::Forbidden);
        let details = error.details.unwrap();
        assert_eq!(details["component"], link, "{operation} on {path:?}");
        assert_eq!(details["path_rule"], "symlink", "{operation} on {path:?}");
    }
}

/// Makes `path` unchangeable, even for root (the immutable attribute), falling back to
/// permission bits for an unprivileged run. Undone on drop so the temporary folder can be
/// removed.
struct Unwritable {
    file: File,
    previous_mode: Option<u32>,
    path: PathBuf,
}

/// Sets or clears the immutable attribute (Linux: `FS_IOC_SETFLAGS`), which only a
/// privileged process may set; whether that worked.
#[cfg(target_os = "linux")]
fn set_immutable(file: &File, _path: &Path, immutable: bool) -> bool {
    let flags = rustix::fs::ioctl_getflags(file).unwrap();
    let flags = if immutable {
        flags | rustix::fs::IFlags::IMMUTABLE
    } else {
        flags - rustix::fs::IFlags::IMMUTABLE
    };
    rustix::fs::ioctl_setflags(file, flags).is_ok()
}

/// The same with macOS's `chflags` (the owner's immutable flag, which binds root too).
#[cfg(not(target_os = "linux"))]
fn set_immutable(_file: &File, path: &Path, immutable: bool) -> bool {
    std::process::Command::new("chflags")
        .arg(if immutable { "uchg" } else { "nouchg" })
        .arg(path)
        .status()
        .is_ok_and(|status| status.success())
}

impl Unwritable {
    fn new(path: &Path) -> Unwritable {
        let file = File::open(path).unwrap();
        if set_immutable(&file, path, true) {
            return Unwritable {
                file,
                previous_mode: None,
                path: path.to_owned(),
            };
        }
        let previous_mode = fs::metadata(path).unwrap().mode();
        fs::set_permissions(path, fs::Permissions::from_mode(previous_mode & 0o555)).unwrap();
        Unwritable {
            file,
            previous_mode: Some(previous_mode),
            path: path.to_owned(),
        }
    }

    /// Whether even a rename over the path is refused (only the immutable attribute does that).
    fn blocks_rename_over(&self) -> bool {
        self.previous_mode.is_none()
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        match self.previous_mode {
            None => assert!(set_immutable(&self.file, &self.path, false)),
            Some(mode) => {
                fs::set_permissions(&self.path, fs::Permissions::from_mode(mode)).unwrap()
            }
        }
    }
}

#[test]
fn the_tripwire_notices_a_read_or_a_listing_outside() {
    let fixture = Fixture::new();
    let read = || drop(fs::read(fixture.outside.join("secret.txt")).unwrap());
    let list = || {
        assert_eq!(
            fs::read_dir(fixture.outside.join("dir")).unwrap().count(),
            1
        )
    };
    let touches: [&dyn Fn(); 2] = [&read, &list];
    for touch in touches {
        let watch = fixture.watch_outside();
        touch();
        let caught =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| watch.assert_untouched()));
        assert!(
            caught.is_err(),
            "a touch outside the root went unnoticed: the other tests would prove nothing"
        );
    }
}

#[test]
fn links_to_an_outside_file_are_refused_as_last_and_middle_component() {
    let fixture = Fixture::new();
    fixture.link(fixture.outside.join("secret.txt"), "to_file");
    fixture.link("../../elsewhere/secret.txt", "notes/relative_to_file");
    let watch = fixture.watch_outside();
    assert_forbidden_everywhere(&fixture, "to_file", "to_file");
    assert_forbidden_everywhere(&fixture, "to_file/x", "to_file");
    assert_forbidden_everywhere(&fixture, "notes/relative_to_file", "notes/relative_to_file");
    watch.assert_untouched();
}

#[test]
fn links_to_an_outside_folder_are_refused_as_last_and_middle_component() {
    let fixture = Fixture::new();
    fixture.link(fixture.outside.join("dir"), "to_folder");
    fixture.link("../../elsewhere/dir", "notes/relative_to_folder");
    let watch = fixture.watch_outside();
    assert_forbidden_everywhere(&fixture, "to_folder", "to_folder");
    assert_forbidden_everywhere(&fixture, "to_folder/inner.txt", "to_folder");
    assert_forbidden_everywhere(&fixture, "to_folder/new/deeper.md", "to_folder");
    assert_forbidden_everywhere(
        &fixture,
        "notes/relative_to_folder/inner.txt",
        "notes/relative_to_folder",
    );
    watch.assert_untouched();
}

#[test]
fn dangling_and_looping_links_are_refused_and_never_created_through() {
    let fixture = Fixture::new();
    fixture.link(fixture.outside.join("planted.txt"), "dangling");
    fixture.link(fixture.outside.join("new_folder"), "dangling_folder");
    fixture.link("loop_b", "loop_a");
    fixture.link("loop_a", "loop_b");
    fixture.link("itself", "itself");
    let watch = fixture.watch_outside();
    for link in ["dangling", "dangling_folder", "loop_a", "loop_b", "itself"] {
        assert_forbidden_everywhere(&fixture, link, link);
        assert_forbidden_everywhere(&fixture, &format!("{link}/x.md"), link);
    }
    // The outside snapshot also shows that `planted.txt` and `new_folder` were not created.
    watch.assert_untouched();
}

#[test]
fn a_folder_swapped_for_a_link_between_operations_is_refused() {
    let fixture = Fixture::new();
    fs::write(fixture.outside.join("dir/a.md"), "outside a\n").unwrap();
    let path = rel("notes/a.md");
    assert_eq!(fixture.root.stat(&path).unwrap().kind, FileKind::File);
    let mut content = String::new();
    fixture
        .root
        .open_file(&path)
        .unwrap()
        .read_to_string(&mut content)
        .unwrap();
    assert_eq!(content, "alpha\n");

    fs::rename(fixture.vault.join("notes"), fixture.vault.join("notes_old")).unwrap();
    fixture.link(fixture.outside.join("dir"), "notes");
    let watch = fixture.watch_outside();
    assert_forbidden_everywhere(&fixture, "notes/a.md", "notes");
    assert_forbidden_everywhere(&fixture, "notes/fresh.md", "notes");
    let listing = fixture.root.read_dir_recursive(&RelPath::root()).unwrap();
    let listed: Vec<&str> = listing.iter().map(|entry| entry.path.as_str()).collect();
    assert_eq!(listed, ["notes_old", "notes_old/a.md"]);
    watch.assert_untouched();
}

#[test]
fn a_sibling_folder_extending_the_roots_name_is_unreachable() {
    let fixture = Fixture::new();
    let absolute = fixture
        .base
        .join("vault-evil/secret.txt")
        .display()
        .to_string();
    let spellings = [
        ("../vault-evil/secret.txt", ErrorCode::OutOfScope),
        ("..\\vault-evil\\secret.txt", ErrorCode::OutOfScope),
        ("notes/../../vault-evil/secret.txt", ErrorCode::OutOfScope),
        ("../vault/../vault-evil/secret.txt", ErrorCode::OutOfScope),
        ("．．／vault-evil／secret.txt", ErrorCode::OutOfScope),
        (absolute.as_str(), ErrorCode::OutOfScope),
        ("%2e%2e/vault-evil/secret.txt", ErrorCode::InvalidPath),
        ("notes/../vault-evil/secret.txt", ErrorCode::InvalidPath),
        // Spellings that would work if the root were matched as a string prefix.
        ("-evil/secret.txt", ErrorCode::NotFound),
        ("./-evil/secret.txt", ErrorCode::NotFound),
        ("vault-evil/secret.txt", ErrorCode::NotFound),
    ];
    let watch = fixture.watch_outside();
    for (spelling, code) in spellings {
        let outcome = parse_relative(spelling).and_then(|path| fixture.root.open_file(&path));
        fixture.refused(outcome, code);
    }
    watch.assert_untouched();
}

#[test]
fn create_new_is_exclusive_and_leaves_no_temporary_file() {
    let fixture = Fixture::new();
    let watch = fixture.watch_outside();
    let path = rel("notes/b.md");
    assert_eq!(
        fixture.root.create_new(&path, b"first\n", false).unwrap(),
        6
    );
    assert_eq!(fixture.read("notes/b.md"), "first\n");
    let error = fixture.refused(
        fixture.root.create_new(&path, b"second\n", false),
        ErrorCode::Conflict,
    );
    assert_eq!(error.details.unwrap()["path"], "notes/b.md");
    assert_eq!(fixture.read("notes/b.md"), "first\n");

    fixture.refused(
        fixture.root.create_new(&rel("new/deep/c.md"), b"x", false),
        ErrorCode::NotFound,
    );
    assert!(!fixture.vault.join("new").exists());
    fixture
        .root
        .create_new(&rel("new/deep/c.md"), b"made\n", true)
        .unwrap();
    assert_eq!(fixture.read("new/deep/c.md"), "made\n");

    let error = fixture.refused(
        fixture.root.create_new(&rel("notes/a.md/x"), b"x", true),
        ErrorCode::InvalidPath,
    );
    assert_eq!(error.details.unwrap()["path_rule"], "not_a_folder");
    fixture.refused(
        fixture.root.create_new(&RelPath::root(), b"x", true),
        ErrorCode::InvalidPath,
    );
    assert_eq!(fixture.leftover_temp_files(), Vec::<String>::new());
    watch.assert_untouched();
}

#[test]
fn concurrent_creates_of_one_name_let_exactly_one_win() {
    let fixture = Fixture::new();
    let path = rel("race.md");
    let winners: Vec<bool> = std::thread::scope(|scope| {
        let racers: Vec<_> = (0..8)
            .map(|racer| {
                let (root, path) = (&fixture.root, &path);
                scope.spawn(move || {
                    root.create_new(path, format!("racer {racer}\n").as_bytes(), false)
                        .is_ok()
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|racer| racer.join().unwrap())
            .collect()
    });
    assert_eq!(winners.iter().filter(|won| **won).count(), 1);
    assert!(fixture.read("race.md").starts_with("racer "));
    assert_eq!(fixture.leftover_temp_files(), Vec::<String>::new());
}

#[test]
fn a_failed_replace_keeps_the_old_content_and_no_temporary_file() {
    let fixture = Fixture::new();
    let path = rel("notes/a.md");
    let watch = fixture.watch_outside();
    {
        // The temporary file cannot be created next to the target.
        let _unwritable = Unwritable::new(&fixture.vault.join("notes"));
        fixture.refused(
            fixture.root.replace(&path, b"new\n", None),
            ErrorCode::Forbidden,
        );
        fixture.refused(
            fixture.root.create_new(&rel("notes/b.md"), b"new\n", false),
            ErrorCode::Forbidden,
        );
    }
    assert_eq!(fixture.read("notes/a.md"), "alpha\n");
    {
        // The temporary file is written, but renaming it over the target fails.
        let unwritable = Unwritable::new(&fixture.vault.join("notes/a.md"));
        if unwritable.blocks_rename_over() {
            fixture.refused(
                fixture.root.replace(&path, b"new\n", None),
                ErrorCode::Forbidden,
            );
        }
    }
    assert_eq!(fixture.read("notes/a.md"), "alpha\n");
    assert_eq!(fixture.leftover_temp_files(), Vec::<String>::new());
    watch.assert_untouched();
}

#[test]
fn replace_is_atomic_keeps_permissions_and_honours_expected() {
    let fixture = Fixture::new();
    let watch = fixture.watch_outside();
    let path = rel("notes/a.md");
    fs::set_permissions(
        fixture.vault.join("notes/a.md"),
        fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let seen = fixture.root.stat(&path).unwrap();
    assert_eq!(
        fixture.root.replace(&path, b"beta\n", Some(&seen)).unwrap(),
        5
    );
    assert_eq!(fixture.read("notes/a.md"), "beta\n");
    assert_eq!(
        fs::metadata(fixture.vault.join("notes/a.md"))
            .unwrap()
            .mode()
            & 0o7777,
        0o640
    );

    // `seen` is now stale: the file was replaced (new inode) since.
    fixture.refused(
        fixture.root.replace(&path, b"gamma\n", Some(&seen)),
        ErrorCode::Conflict,
    );
    assert_eq!(fixture.read("notes/a.md"), "beta\n");

    // An append in between (same inode, new size) makes a read stale too.
    let seen = fixture.root.stat(&path).unwrap();
    fixture.root.append(&path, b"newer line\n").unwrap();
    fixture.refused(
        fixture.root.replace(&path, b"gamma\n", Some(&seen)),
        ErrorCode::Conflict,
    );
    assert_eq!(fixture.read("notes/a.md"), "beta\nnewer line\n");

    fixture.refused(
        fixture.root.replace(&rel("notes/missing.md"), b"x", None),
        ErrorCode::NotFound,
    );
    fixture.refused(
        fixture.root.append(&rel("notes/missing.md"), b"x"),
        ErrorCode::NotFound,
    );
    assert!(!fixture.vault.join("notes/missing.md").exists());
    assert_eq!(fixture.leftover_temp_files(), Vec::<String>::new());
    watch.assert_untouched();
}

#[test]
fn hardlinked_targets_are_never_written() {
    let fixture = Fixture::new();
    fs::hard_link(
        fixture.outside.join("secret.txt"),
        fixture.vault.join("hard.txt"),
    )
    .unwrap();
    let watch = fixture.watch_outside();
    let path = rel("hard.txt");
    for result in [
        fixture.root.replace(&path, b"x", None),
        fixture.root.append(&path, b"x"),
    ] {
        let error = fixture.refused(result, ErrorCode::Forbidden);
        assert_eq!(error.details.unwrap()["path_rule"], "hardlinked");
    }
    assert_eq!(fixture.root.stat(&path).unwrap().nlink, 2);
    watch.assert_untouched();
}

#[test]
fn folders_and_special_files_are_not_opened_as_files() {
    let fixture = Fixture::new();
    // The `mkfifo` command: rustix offers `mkfifoat` on Linux only.
    let made = std::process::Command::new("mkfifo")
        .arg(fixture.vault.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    // On its own thread with its own `Root`, so that a hang fails the test instead of
    // blocking it.
    let (done, finished) = mpsc::channel();
    let vault = fixture.vault.clone();
    std::thread::spawn(move || {
        let root = Root::open(&vault).unwrap();
        let outcomes = [
            root.open_file(&rel("pipe")),
            root.open_file(&rel("notes")),
            root.open_file(&RelPath::root()),
        ];
        done.send(outcomes.map(|outcome| outcome.map(drop).map_err(|error| error.code)))
            .unwrap();
    });
    let outcomes = finished
        .recv_timeout(Duration::from_secs(10))
        .expect("opening a FIFO hung the server");
    assert_eq!(
        outcomes,
        [
            Err(ErrorCode::Forbidden),
            Err(ErrorCode::InvalidPath),
            Err(ErrorCode::InvalidPath)
        ]
    );
    for operation in [
        fixture.root.append(&rel("notes"), b"x"),
        fixture.root.replace(&rel("notes"), b"x", None),
    ] {
        fixture.refused(operation, ErrorCode::InvalidPath);
    }
    let error = fixture.refused(
        fixture.root.read_dir_recursive(&rel("notes/a.md")),
        ErrorCode::InvalidPath,
    );
    assert_eq!(error.details.unwrap()["path_rule"], "not_a_folder");
}

#[test]
fn stat_describes_without_following() {
    let fixture = Fixture::new();
    let info = fixture.root.stat(&rel("notes/a.md")).unwrap();
    assert_eq!((info.kind, info.size, info.nlink), (FileKind::File, 6, 1));
    assert_eq!(
        info.inode,
        fs::metadata(fixture.vault.join("notes/a.md"))
            .unwrap()
            .ino()
    );
    assert_eq!(
        info.mtime,
        fs::metadata(fixture.vault.join("notes/a.md"))
            .unwrap()
            .modified()
            .unwrap()
    );
    assert_eq!(
        fixture.root.stat(&RelPath::root()).unwrap().kind,
        FileKind::Directory
    );
    assert_eq!(
        fixture.root.stat(&rel("notes")).unwrap().kind,
        FileKind::Directory
    );
    let error = fixture.refused(
        fixture.root.stat(&rel("notes/none/x.md")),
        ErrorCode::NotFound,
    );
    assert_eq!(error.details.unwrap()["component"], "notes/none");
}

#[test]
fn listing_is_sorted_skips_links_and_unreachable_names() {
    let fixture = Fixture::new();
    fs::create_dir_all(fixture.vault.join("notes/sub")).unwrap();
    fs::write(fixture.vault.join("notes/sub/z.md"), "z").unwrap();
    fs::write(fixture.vault.join("notes-b.md"), "b").unwrap();
    fs::write(fixture.vault.join("notes/con.txt"), "device name").unwrap();
    fs::write(fixture.vault.join("notes/ｆｕｌｌ.md"), "not normalised").unwrap();
    fs::write(
        fixture.vault.join("notes/.manvault-tmp-1-1"),
        "half written",
    )
    .unwrap();
    fixture.link(fixture.outside.join("dir"), "notes/to_folder");
    fixture.link(fixture.outside.join("secret.txt"), "to_file");
    let watch = fixture.watch_outside();
    let listing = fixture.root.read_dir_recursive(&RelPath::root()).unwrap();
    let listed: Vec<(&str, FileKind)> = listing
        .iter()
        .map(|entry| (entry.path.as_str(), entry.info.kind))
        .collect();
    assert_eq!(
        listed,
        [
            ("notes", FileKind::Directory),
            ("notes/a.md", FileKind::File),
            ("notes/sub", FileKind::Directory),
            ("notes/sub/z.md", FileKind::File),
            ("notes-b.md", FileKind::File),
        ]
    );
    let below = fixture.root.read_dir_recursive(&rel("notes/sub")).unwrap();
    assert_eq!(
        below
            .iter()
            .map(|entry| entry.path.as_str())
            .collect::<Vec<_>>(),
        ["notes/sub/z.md"]
    );
    watch.assert_untouched();
}

#[test]
fn the_root_itself_may_be_reached_through_a_link() {
    let fixture = Fixture::new();
    let configured = fixture.base.join("configured_vault");
    symlink(&fixture.vault, &configured).unwrap();
    let root = Root::open(&configured).unwrap();
    let listed: BTreeSet<String> = root
        .read_dir_recursive(&RelPath::root())
        .unwrap()
        .into_iter()
        .map(|entry| entry.path.as_str().to_owned())
        .collect();
    assert_eq!(
        listed,
        BTreeSet::from(["notes".to_owned(), "notes/a.md".to_owned()])
    );
}

#[test]
fn eight_concurrent_appenders_each_land_every_line_whole() {
    let fixture = Fixture::new();
    fs::write(fixture.vault.join("log.md"), "").unwrap();
    let path = rel("log.md");
    const THREADS: usize = 8;
    const LINES: usize = 100;
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (root, path) = (&fixture.root, &path);
            scope.spawn(move || {
                for line in 0..LINES {
                    // Long lines, so a torn write would show.
                    let text = format!("{thread} {line} {}\n", "x".repeat(4096 + line));
                    assert_eq!(
                        root.append(path, text.as_bytes()).unwrap(),
                        text.len() as u64
                    );
                }
            });
        }
    });
    assert_all_lines_whole(&fixture.read("log.md"), THREADS * LINES);
}

/// Appends racing read-modify-write replaces: with the lock and the check that the name
/// still holds the locked file, every append and every replace survives.
#[test]
fn appends_racing_replaces_lose_nothing() {
    let fixture = Fixture::new();
    fs::write(fixture.vault.join("log.md"), "").unwrap();
    let path = rel("log.md");
    const APPENDERS: usize = 4;
    const LINES: usize = 50;
    const REPLACERS: usize = 2;
    const REPLACES: usize = 10;
    std::thread::scope(|scope| {
        for thread in 0..APPENDERS {
            let (root, path) = (&fixture.root, &path);
            scope.spawn(move || {
                for line in 0..LINES {
                    root.append(path, format!("{thread} {line} x\n").as_bytes())
                        .unwrap();
                }
            });
        }
        for replacer in 0..REPLACERS {
            let (root, path) = (&fixture.root, &path);
            scope.spawn(move || {
                let mut done = 0;
                while done < REPLACES {
                    let seen = root.stat(path).unwrap();
                    let mut content = String::new();
                    root.open_file(path)
                        .unwrap()
                        .read_to_string(&mut content)
                        .unwrap();
                    content.push_str(&format!("{} {done} replaced\n", APPENDERS + replacer));
                    match root.replace(path, content.as_bytes(), Some(&seen)) {
                        Ok(_) => done += 1,
                        Err(error) => assert_eq!(error.code, ErrorCode::Conflict, "{error:?}"),
                    }
                }
            });
        }
    });
    assert_all_lines_whole(
        &fixture.read("log.md"),
        APPENDERS * LINES + REPLACERS * REPLACES,
    );
    assert_eq!(fixture.leftover_temp_files(), Vec::<String>::new());
}

/// Each line is `<writer> <sequence> <payload>`, every (writer, sequence) exactly once and
/// in order per writer.
#[track_caller]
fn assert_all_lines_whole(log: &str, expected_lines: usize) {
    let mut last_by_writer: BTreeMap<usize, usize> = BTreeMap::new();
    let mut count = 0;
    for line in log.lines() {
        let mut fields = line.split(' ');
        let writer: usize = fields
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("torn line {line:.40}"));
        let sequence: usize = fields
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("torn line {line:.40}"));
        let payload = fields
            .next()
            .unwrap_or_else(|| panic!("torn line {line:.40}"));
        assert!(fields.next().is_none(), "two lines merged: {line:.60}");
        assert!(
            payload == "replaced" || payload.bytes().all(|byte| byte == b'x'),
            "torn line {line:.40}"
        );
        let expected_sequence = last_by_writer.get(&writer).map_or(0, |last| last + 1);
        assert_eq!(
            sequence, expected_sequence,
            "writer {writer}: a line was lost or repeated"
        );
        last_by_writer.insert(writer, sequence);
        count += 1;
    }
    assert!(log.is_empty() || log.ends_with('\n'));
    assert_eq!(count, expected_lines);
}
