//! Every refused spelling of a client path is one row of data: (input, code, rule).
//! Adding an attack is adding a row.

use manvault::error::ErrorCode;
use manvault::paths::{parse_relative, RelPath, MAX_COMPONENT_BYTES, MAX_PATH_BYTES};
use proptest::prelude::*;

const INVALID: ErrorCode = ErrorCode::InvalidPath;
const OUTSIDE: ErrorCode = ErrorCode::OutOfScope;

const REFUSED: &[(&str, ErrorCode, &str)] = &[
    ("", INVALID, "empty"),
    // Anchors: the path names somewhere other than the root.
    ("/etc/passwd", OUTSIDE, "absolute"),
    ("/", OUTSIDE, "absolute"),
    ("\\windows\\win.ini", OUTSIDE, "absolute"),
    ("／etc／passwd", OUTSIDE, "absolute"),
    ("//srv/share", OUTSIDE, "unc"),
    ("//srv", OUTSIDE, "unc"),
    ("\\\\srv\\share\\x", OUTSIDE, "unc"),
    ("＼＼srv＼share", OUTSIDE, "unc"),
    // Climbing above the root.
    ("..", OUTSIDE, "escapes_root"),
    ("../x", OUTSIDE, "escapes_root"),
    ("./../x", OUTSIDE, "escapes_root"),
    ("a/../../x", OUTSIDE, "escapes_root"),
    ("a/b/../../../x", OUTSIDE, "escapes_root"),
    ("..\\x", OUTSIDE, "escapes_root"),
    ("a\\..\\..\\x", OUTSIDE, "escapes_root"),
    ("．．／x", OUTSIDE, "escapes_root"),
    ("．．\\x", OUTSIDE, "escapes_root"),
    ("‥/x", OUTSIDE, "escapes_root"),
    ("../con", OUTSIDE, "escapes_root"),
    // `..` that stays inside is still a malformed spelling.
    ("a/../b", INVALID, "dot_dot"),
    ("a/..", INVALID, "dot_dot"),
    ("a/b/../c", INVALID, "dot_dot"),
    ("a/‥", INVALID, "dot_dot"),
    // Drive letters, streams and other colons.
    ("C:", INVALID, "drive_letter"),
    ("c:\\x", INVALID, "drive_letter"),
    ("C:/x", INVALID, "drive_letter"),
    ("c:x", INVALID, "drive_letter"),
    ("Ｃ：\\x", INVALID, "drive_letter"),
    ("file.txt:stream", INVALID, "colon"),
    ("file.txt::$DATA", INVALID, "colon"),
    ("a/c:", INVALID, "colon"),
    ("a/b：c", INVALID, "colon"),
    // Home directories.
    ("~", INVALID, "home_directory"),
    ("~/x", INVALID, "home_directory"),
    ("~root/.ssh/id_rsa", INVALID, "home_directory"),
    ("./~", INVALID, "home_directory"),
    ("～/x", INVALID, "home_directory"),
    // Control characters: C0, DEL, C1.
    ("a\0b", INVALID, "control_character"),
    ("a\nb", INVALID, "control_character"),
    ("a\rb", INVALID, "control_character"),
    ("a\tb", INVALID, "control_character"),
    ("a\u{1b}[31m", INVALID, "control_character"),
    ("a\u{7f}", INVALID, "control_character"),
    ("a\u{85}b", INVALID, "control_character"),
    ("a\u{9b}b", INVALID, "control_character"),
    ("/etc/passwd\0", INVALID, "control_character"),
    // Bidirectional controls reorder how a name is displayed (`a\u{202e}dm.exe` shows as
    // `aexe.md`), line and paragraph separators break it over lines in logs and listings.
    ("a\u{202a}b.md", INVALID, "bidi_control"),
    ("a\u{202b}b.md", INVALID, "bidi_control"),
    ("a\u{202c}b.md", INVALID, "bidi_control"),
    ("a\u{202d}b.md", INVALID, "bidi_control"),
    ("notes/a\u{202e}dm.exe", INVALID, "bidi_control"),
    ("a\u{2066}b", INVALID, "bidi_control"),
    ("a\u{2067}b", INVALID, "bidi_control"),
    ("a\u{2068}b", INVALID, "bidi_control"),
    ("a\u{2069}b", INVALID, "bidi_control"),
    ("a\u{200e}b", INVALID, "bidi_control"),
    ("a\u{200f}b", INVALID, "bidi_control"),
    ("a\u{61c}b", INVALID, "bidi_control"),
    ("a\u{2028}b.md", INVALID, "line_separator"),
    ("a\u{2029}b.md", INVALID, "line_separator"),
    // Percent-encoded dots and separators, any case, double-encoded, overlong.
    ("%2e%2e/x", INVALID, "percent_encoded"),
    ("%2E%2E%2Fx", INVALID, "percent_encoded"),
    ("a%2fb", INVALID, "percent_encoded"),
    ("a%2Fb", INVALID, "percent_encoded"),
    ("a%5cb", INVALID, "percent_encoded"),
    ("a%5Cb", INVALID, "percent_encoded"),
    ("%252e%252e/x", INVALID, "percent_encoded"),
    ("%25252e%25252e/x", INVALID, "percent_encoded"),
    ("%c0%ae%c0%ae/x", INVALID, "percent_encoded"),
    ("%C0%AF", INVALID, "percent_encoded"),
    ("%c1%9c", INVALID, "percent_encoded"),
    ("％２ｅ％２ｅ／x", INVALID, "percent_encoded"),
    // Windows device names as a stem, any case.
    ("CON", INVALID, "windows_device_name"),
    ("con.txt", INVALID, "windows_device_name"),
    ("a/Nul.md", INVALID, "windows_device_name"),
    ("aux", INVALID, "windows_device_name"),
    ("prn.tar.gz", INVALID, "windows_device_name"),
    ("COM1", INVALID, "windows_device_name"),
    ("com9.log", INVALID, "windows_device_name"),
    ("LPT1", INVALID, "windows_device_name"),
    ("lpt9.md", INVALID, "windows_device_name"),
    ("com¹", INVALID, "windows_device_name"),
    ("CON .txt", INVALID, "windows_device_name"),
    ("conin$", INVALID, "windows_device_name"),
    // Names Windows silently trims.
    ("a ", INVALID, "trailing_space_or_dot"),
    ("a.", INVALID, "trailing_space_or_dot"),
    ("dir./x", INVALID, "trailing_space_or_dot"),
    ("a/b ", INVALID, "trailing_space_or_dot"),
    ("...", INVALID, "trailing_space_or_dot"),
    // The server's own temporary files.
    (".manvault-tmp-1-2", INVALID, "reserved_name"),
    ("a/.manvault-tmp-99-0", INVALID, "reserved_name"),
];

#[test]
fn every_refused_spelling_gets_its_code_and_rule() {
    for (input, code, rule) in REFUSED {
        let error = match parse_relative(input) {
            Ok(path) => panic!("{input:?} accepted as {:?}", path.as_str()),
            Err(error) => error,
        };
        assert_eq!(error.code, *code, "{input:?}: {error:?}");
        let details = error.details.as_ref().expect("details");
        assert_eq!(details["path_rule"], *rule, "{input:?}: {error:?}");
        assert!(
            details.get("component").is_some(),
            "{input:?}: details name the component (or null)"
        );
    }
}

#[test]
fn length_limits_count_bytes_after_normalisation() {
    let longest_name = "a".repeat(MAX_COMPONENT_BYTES);
    assert!(parse_relative(&longest_name).is_ok());
    let rule =
        |input: &str| parse_relative(input).unwrap_err().details.unwrap()["path_rule"].clone();
    assert_eq!(
        rule(&"a".repeat(MAX_COMPONENT_BYTES + 1)),
        "component_too_long"
    );
    // 86 three-byte characters: 258 bytes in 86 characters.
    assert_eq!(rule(&"あ".repeat(86)), "component_too_long");
    let longest_path = format!("{}a", "a/".repeat((MAX_PATH_BYTES - 1) / 2));
    assert_eq!(longest_path.len(), MAX_PATH_BYTES - 1);
    assert!(parse_relative(&longest_path).is_ok());
    assert_eq!(rule(&format!("{longest_path}aa")), "path_too_long");
}

#[test]
fn look_alikes_are_judged_after_normalisation() {
    assert_eq!(
        parse_relative("ｎｏｔｅｓ／ａ．ｍｄ").unwrap().as_str(),
        "notes/a.md"
    );
    assert_eq!(parse_relative("a＼b").unwrap().as_str(), "a/b");
}

/// Characters that matter to the rules, mixed with harmless ones.
fn path_like() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a", "b", ".", "..", "/", "\\", "~", ":", "%2e", " ", "．", "／", "‥", "\0", "c",
    ]);
    prop::collection::vec(pieces, 0..12).prop_map(|pieces| pieces.concat())
}

proptest! {
    /// Whatever is accepted is plain components below the root, and stable: parsing the
    /// canonical form again gives the same path.
    #[test]
    fn accepted_paths_stay_below_the_root(input in path_like()) {
        match parse_relative(&input) {
            Ok(path) => {
                prop_assert!(!path.as_str().starts_with('/'));
                prop_assert!(!path.as_str().contains('\\'));
                for component in path.components() {
                    prop_assert!(component != "." && component != ".." && !component.is_empty());
                }
                let again = if path.is_root() { RelPath::root() } else { parse_relative(path.as_str()).unwrap() };
                prop_assert_eq!(again, path);
            }
            Err(error) => {
                prop_assert!(matches!(error.code, ErrorCode::InvalidPath | ErrorCode::OutOfScope));
            }
        }
    }
}
