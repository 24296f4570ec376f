//! The syntactic half of path safety: turning a client's path string into a [`RelPath`].
//!
//! Nothing here touches the file system. A `RelPath` is only a promise about spelling: it
//! names something *below* a root by plain components. Whether that something is a link,
//! a file or missing is decided by [`super::Root`] when it walks the components.

use std::cmp::Ordering;

use serde_json::json;
use unicode_normalization::UnicodeNormalization;

use crate::error::{ErrorCode, ToolError};

/// Longest accepted path, in bytes after normalisation. Keeps every accepted path well
/// under Linux's `PATH_MAX` and bounds how deep a walk (and its open descriptors) can go.
pub const MAX_PATH_BYTES: usize = 1024;

/// Longest accepted component, in bytes: `NAME_MAX` on every Linux file system we serve.
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Names the atomic writers give their temporary files. Clients may not name such a file,
/// so no tool can read, append to or replace a half-written temporary while another call
/// is still filling it.
pub(super) const TEMP_FILE_PREFIX: &str = ".manvault-tmp-";

/// Percent-encoded dots and separators, including the double-encoded (`%252e`) and
/// overlong UTF-8 (`%c0%ae`) spellings. We never decode them, but a client, a proxy or a
/// later layer might, turning an innocent-looking name into `../`; refusing them keeps a
/// path's meaning the same for every reader.
const ENCODED_DOTS_AND_SEPARATORS: [&str; 6] = ["%2e", "%2f", "%5c", "%c0%ae", "%c0%af", "%c1%9c"];

/// Stems Windows maps to devices whatever the extension (`con.txt` opens the console).
/// Refused so that a vault synced to or opened on Windows cannot contain files that hang or
/// misbehave there.
const WINDOWS_DEVICE_STEMS: [&str; 6] = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
/// Device stems followed by one digit: `COM0`..`COM9`, `LPT0`..`LPT9`.
const WINDOWS_NUMBERED_DEVICE_STEMS: [&str; 2] = ["COM", "LPT"];

/// A path below a root: `/`-separated, NFKC-normalised components, none of which is empty,
/// `.` or `..`. Built only by [`parse_relative`], [`RelPath::root`] or, for names found on
/// disk, the same checks, so holding one proves the spelling cannot climb out of a root.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelPath {
    joined: String,
}

impl RelPath {
    /// The root folder itself. Deliberately separate from parsing: an empty client path is
    /// far more often a forgotten argument than a request for the whole root.
    pub fn root() -> RelPath {
        RelPath {
            joined: String::new(),
        }
    }

    pub fn is_root(&self) -> bool {
        self.joined.is_empty()
    }

    /// The `/`-joined form (`""` for the root): what tools report back to clients.
    pub fn as_str(&self) -> &str {
        &self.joined
    }

    /// The components in order; none for the root. Policy code compares these (after its
    /// own casefolding) instead of matching on the joined string, so `a/b.md` never passes
    /// for a folder named `a/b`.
    pub fn components(&self) -> impl Iterator<Item = &str> + '_ {
        self.joined
            .split('/')
            .filter(|component| !component.is_empty())
    }

    /// The last component, or `None` for the root.
    pub fn file_name(&self) -> Option<&str> {
        self.components().last()
    }

    /// Each component with the path up to and including it (`a`, `a/b`, ...). Errors name
    /// these prefixes so a client learns which component was refused without ever seeing
    /// a server path.
    pub(super) fn components_with_prefixes(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let mut prefix_end = 0;
        self.components().map(move |component| {
            let start = if prefix_end == 0 { 0 } else { prefix_end + 1 };
            prefix_end = start + component.len();
            (component, &self.joined[..prefix_end])
        })
    }

    /// `self/name` for a `name` read from a directory, if a client could have spelled it.
    /// Names that fail a rule, or that normalisation would change (a client asking for
    /// them would reach a different name), are unreachable by tools and so not listed;
    /// the error says which rule, for the log.
    pub(super) fn child(&self, name: &str) -> Result<RelPath, &'static str> {
        let spelled = if self.is_root() {
            name.to_owned()
        } else {
            format!("{}/{}", self.joined, name)
        };
        match parse(&spelled) {
            Ok(child) if child.joined == spelled => Ok(child),
            Ok(_) => Err("not_normalised"),
            Err(violation) => Err(violation.rule.name()),
        }
    }
}

/// Paths order component by component, so a folder's contents follow it directly
/// (`a`, `a/b`, `a-b`), which is how listings are sorted.
impl Ord for RelPath {
    fn cmp(&self, other: &Self) -> Ordering {
        self.components().cmp(other.components())
    }
}

impl PartialOrd for RelPath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Checks a client-supplied path and returns it as a [`RelPath`].
///
/// The input is NFKC-normalised first, so that look-alikes (fullwidth `．．／`, `‥`) are
/// judged as what they normalise to, and `\` counts as a separator, so that Windows
/// spellings cannot hide a `..` from us. `.` (or `./`) names the root; `""` is refused.
/// See the module documentation of [`crate::paths`] for the codes.
pub fn parse_relative(input: &str) -> Result<RelPath, ToolError> {
    parse(input).map_err(Violation::into_tool_error)
}

/// One rule a path broke. The name is part of the error contract (`details.path_rule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PathRule {
    Empty,
    ControlCharacter,
    BidiControl,
    LineSeparator,
    PercentEncoded,
    PathTooLong,
    Absolute,
    Unc,
    EscapesRoot,
    DotDot,
    HomeDirectory,
    ComponentTooLong,
    DriveLetter,
    Colon,
    WindowsDeviceName,
    TrailingSpaceOrDot,
    ReservedName,
}

impl PathRule {
    fn name(self) -> &'static str {
        match self {
            PathRule::Empty => "empty",
            PathRule::ControlCharacter => "control_character",
            PathRule::BidiControl => "bidi_control",
            PathRule::LineSeparator => "line_separator",
            PathRule::PercentEncoded => "percent_encoded",
            PathRule::PathTooLong => "path_too_long",
            PathRule::Absolute => "absolute",
            PathRule::Unc => "unc",
            PathRule::EscapesRoot => "escapes_root",
            PathRule::DotDot => "dot_dot",
            PathRule::HomeDirectory => "home_directory",
            PathRule::ComponentTooLong => "component_too_long",
            PathRule::DriveLetter => "drive_letter",
            PathRule::Colon => "colon",
            PathRule::WindowsDeviceName => "windows_device_name",
            PathRule::TrailingSpaceOrDot => "trailing_space_or_dot",
            PathRule::ReservedName => "reserved_name",
        }
    }

    /// `out_of_scope` for spellings that, read lexically, point outside the root;
    /// `invalid_path` for every other malformed spelling.
    fn code(self) -> ErrorCode {
        match self {
            PathRule::Absolute | PathRule::Unc | PathRule::EscapesRoot => ErrorCode::OutOfScope,
            _ => ErrorCode::InvalidPath,
        }
    }

    /// What the client should do instead.
    fn advice(self) -> String {
        match self {
            PathRule::Empty => "the path is empty; use \".\" for the root folder".into(),
            PathRule::ControlCharacter => "the path contains a control character (NUL, newline, tab, DEL, ...); remove it".into(),
            PathRule::BidiControl => "the path contains a bidirectional control (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C), which makes a name display as another; remove it".into(),
            PathRule::LineSeparator => "the path contains a line or paragraph separator (U+2028, U+2029); remove it".into(),
            PathRule::PercentEncoded => "the path contains a percent-encoded dot or separator (%2e, %2f, %5c); write the characters plainly".into(),
            PathRule::PathTooLong => format!("the path is longer than {MAX_PATH_BYTES} bytes"),
            PathRule::Absolute => "the path is absolute; give a path relative to the root, without a leading / or \\".into(),
            PathRule::Unc => "the path is a network (UNC) path; give a path relative to the root".into(),
            PathRule::EscapesRoot => "the path climbs above the root with '..'; give a path inside the root".into(),
            PathRule::DotDot => "'..' is not allowed in a path; write the path without it".into(),
            PathRule::HomeDirectory => "a path may not start with '~' (home directories are not expanded); give a path relative to the root".into(),
            PathRule::ComponentTooLong => format!("a path component is longer than {MAX_COMPONENT_BYTES} bytes"),
            PathRule::DriveLetter => "drive letters are not allowed; give a path relative to the root".into(),
            PathRule::Colon => "':' is not allowed in a name (drive letters and alternate data streams)".into(),
            PathRule::WindowsDeviceName => "the name is a Windows device name (CON, PRN, AUX, NUL, COM1, LPT1, ...), with or without extension; rename it".into(),
            PathRule::TrailingSpaceOrDot => "a name may not end with a space or a dot".into(),
            PathRule::ReservedName => format!("names starting with '{TEMP_FILE_PREFIX}' are reserved for the server's temporary files"),
        }
    }
}

/// A broken rule and, when one component broke it, that component.
#[derive(Debug)]
struct Violation {
    rule: PathRule,
    component: Option<String>,
}

impl Violation {
    fn whole_path(rule: PathRule) -> Violation {
        Violation {
            rule,
            component: None,
        }
    }

    /// The component is clipped: it is echoed to the client, and may be a few hundred
    /// bytes long (the rule broken may be its length).
    fn in_component(rule: PathRule, component: &str) -> Violation {
        Violation {
            rule,
            component: Some(crate::error::clip(component)),
        }
    }

    fn into_tool_error(self) -> ToolError {
        ToolError::new(self.rule.code(), self.rule.advice())
            .with_details(json!({ "path_rule": self.rule.name(), "component": self.component }))
    }
}

/// The checks in order: characters and length of the whole string, then anchors
/// (`/`, `\`, `//`), then climbing with `..`, then each component. `out_of_scope` wins
/// over per-component form errors, so `../con` reports the escape.
fn parse(input: &str) -> Result<RelPath, Violation> {
    if input.is_empty() {
        return Err(Violation::whole_path(PathRule::Empty));
    }
    let normalised: String = input.nfkc().collect();
    if normalised.chars().any(char::is_control) {
        return Err(Violation::whole_path(PathRule::ControlCharacter));
    }
    if normalised.chars().any(is_bidi_control) {
        return Err(Violation::whole_path(PathRule::BidiControl));
    }
    if normalised.contains(['\u{2028}', '\u{2029}']) {
        return Err(Violation::whole_path(PathRule::LineSeparator));
    }
    if contains_encoded_dot_or_separator(&normalised) {
        return Err(Violation::whole_path(PathRule::PercentEncoded));
    }
    if normalised.len() > MAX_PATH_BYTES {
        return Err(Violation::whole_path(PathRule::PathTooLong));
    }
    let unified = normalised.replace('\\', "/");
    if unified.starts_with("//") {
        return Err(Violation::whole_path(PathRule::Unc));
    }
    if unified.starts_with('/') {
        return Err(Violation::whole_path(PathRule::Absolute));
    }
    let components: Vec<&str> = unified
        .split('/')
        .filter(|component| !component.is_empty() && *component != ".")
        .collect();
    check_stays_inside(&components)?;
    for (index, component) in components.iter().enumerate() {
        check_component(component, index == 0)?;
    }
    Ok(RelPath {
        joined: components.join("/"),
    })
}

/// Characters that reorder the display of the text around them (Unicode's bidi embedding,
/// override and isolate controls and the three bidi marks). In a name they make
/// `invoice\u{202e}fdp.exe` display as `invoiceexe.pdf`, in listings, logs and a reviewer's
/// terminal alike; no legitimate file name needs them.
fn is_bidi_control(character: char) -> bool {
    matches!(
        character,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
    )
}

/// Percent sequences are matched after collapsing `%25` (an encoded `%`) repeatedly, so
/// `%252e` and `%25252e` are seen as the `%2e` they decode to.
fn contains_encoded_dot_or_separator(path: &str) -> bool {
    let mut lowered = path.to_ascii_lowercase();
    while lowered.contains("%25") {
        lowered = lowered.replace("%25", "%");
    }
    ENCODED_DOTS_AND_SEPARATORS
        .iter()
        .any(|encoded| lowered.contains(encoded))
}

/// Resolves `..` lexically: a path that would climb above the root points outside it
/// (`out_of_scope`); one that stays inside still uses `..` and is refused later as a
/// malformed spelling.
fn check_stays_inside(components: &[&str]) -> Result<(), Violation> {
    let mut depth = 0usize;
    for component in components {
        if *component == ".." {
            depth = depth
                .checked_sub(1)
                .ok_or_else(|| Violation::in_component(PathRule::EscapesRoot, ".."))?;
        } else {
            depth += 1;
        }
    }
    Ok(())
}

fn check_component(component: &str, is_first: bool) -> Result<(), Violation> {
    let broken = |rule| Err(Violation::in_component(rule, component));
    if component == ".." {
        return broken(PathRule::DotDot);
    }
    if component.len() > MAX_COMPONENT_BYTES {
        return broken(PathRule::ComponentTooLong);
    }
    if is_first && component.starts_with('~') {
        return broken(PathRule::HomeDirectory);
    }
    if is_first && is_drive_letter(component) {
        return broken(PathRule::DriveLetter);
    }
    if component.contains(':') {
        return broken(PathRule::Colon);
    }
    if is_windows_device_name(component) {
        return broken(PathRule::WindowsDeviceName);
    }
    if component.ends_with(' ') || component.ends_with('.') {
        return broken(PathRule::TrailingSpaceOrDot);
    }
    if component.starts_with(TEMP_FILE_PREFIX) {
        return broken(PathRule::ReservedName);
    }
    Ok(())
}

/// `C:`, `c:x`: drive-absolute or drive-relative on Windows.
fn is_drive_letter(component: &str) -> bool {
    let bytes = component.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// Windows ignores everything from the first dot and trailing spaces when it looks for a
/// device, so `con.txt` and `nul .md` are devices too.
fn is_windows_device_name(component: &str) -> bool {
    let stem = component
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end_matches(' ')
        .to_ascii_uppercase();
    WINDOWS_DEVICE_STEMS.contains(&stem.as_str())
        || WINDOWS_NUMBERED_DEVICE_STEMS.iter().any(|device| {
            stem.strip_prefix(device)
                .is_some_and(|digit| digit.len() == 1 && digit.as_bytes()[0].is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_spellings_normalise_to_plain_components() {
        let cases = [
            ("a", "a"),
            ("a/b.md", "a/b.md"),
            ("./a//b/./c", "a/b/c"),
            ("a\\b", "a/b"),
            ("ａ／ｂ", "a/b"),
            ("a/", "a"),
            (".", ""),
            ("./", ""),
            (".hidden/x.md", ".hidden/x.md"),
            ("a/~b", "a/~b"),
            ("console.txt", "console.txt"),
            ("com10", "com10"),
            ("100%.md", "100%.md"),
            ("日本語/マニュアル.md", "日本語/マニュアル.md"),
        ];
        for (input, expected) in cases {
            let parsed =
                parse_relative(input).unwrap_or_else(|error| panic!("{input:?} refused: {error}"));
            assert_eq!(parsed.as_str(), expected, "input {input:?}");
        }
    }

    #[test]
    fn root_is_only_reachable_by_dot_or_the_constructor() {
        assert!(parse_relative(".").unwrap().is_root());
        assert_eq!(parse_relative(".").unwrap(), RelPath::root());
        assert_eq!(RelPath::root().components().count(), 0);
        assert_eq!(RelPath::root().file_name(), None);
        assert_eq!(parse_relative("").unwrap_err().code, ErrorCode::InvalidPath);
    }

    #[test]
    fn components_and_prefixes_follow_the_joined_form() {
        let path = parse_relative("ab/c/def").unwrap();
        assert_eq!(path.components().collect::<Vec<_>>(), ["ab", "c", "def"]);
        assert_eq!(path.file_name(), Some("def"));
        assert_eq!(
            path.components_with_prefixes().collect::<Vec<_>>(),
            [("ab", "ab"), ("c", "ab/c"), ("def", "ab/c/def")]
        );
    }

    #[test]
    fn ordering_keeps_folder_contents_together() {
        let mut paths: Vec<RelPath> = ["a-b", "a/b", "a", "a/b/c", "b"]
            .map(|p| parse_relative(p).unwrap())
            .into();
        paths.sort();
        let sorted: Vec<&str> = paths.iter().map(RelPath::as_str).collect();
        assert_eq!(sorted, ["a", "a/b", "a/b/c", "a-b", "b"]);
    }

    #[test]
    fn child_accepts_only_names_a_client_could_spell() {
        let folder = parse_relative("notes").unwrap();
        assert_eq!(folder.child("x.md").unwrap().as_str(), "notes/x.md");
        assert_eq!(RelPath::root().child("x.md").unwrap().as_str(), "x.md");
        assert_eq!(folder.child("a\\b"), Err("not_normalised"));
        assert_eq!(folder.child("ｆｕｌｌ"), Err("not_normalised"));
        assert_eq!(folder.child("か\u{3099}"), Err("not_normalised"));
        assert_eq!(folder.child("con.txt"), Err("windows_device_name"));
        assert_eq!(folder.child(".manvault-tmp-1-2"), Err("reserved_name"));
        assert_eq!(folder.child("line\nbreak"), Err("control_character"));
    }
}
