//! Manual and vault files as MCP resources: `manual://<manual_id>/<path>` for a manual
//! file, `manual://<manual_id>/<path>#L<line>` for the section at a heading line, and
//! `vault://<path>` for a vault file.
//!
//! Every listing and read is a call of the tool that already does it (`manual_ls`,
//! `vault_ls`, `manual_read`, `vault_read`) through `App::call_with`, so a resource obeys
//! exactly the tools' bounds, path checks, policies and logs: there is no second path
//! check here, only URI syntax. Path segments are percent-encoded (RFC 3986) in the URIs
//! we hand out and decoded on the way in; a decoded path is then judged by the tools like
//! any client path (an encoded `..` decodes to `..` and is refused there).
//!
//! Plain Rust: the server converts these types to MCP's.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Map, Value};

use crate::app::App;
use crate::call::CallContext;
use crate::contract::types::{
    ManualLsOutput, ManualReadOutput, ManualTocOutput, TruncatedReason, VaultLsOutput,
    VaultReadOutput,
};
use crate::error::{ToolError, ToolResult};
use crate::manual::FileType;
use crate::text::lines::{line_no, LineNo};

const MANUAL_SCHEME: &str = "manual://";
const VAULT_SCHEME: &str = "vault://";

/// Resources per `resources/list` page: the tools' default page.
const PAGE_SIZE: u64 = 200;

/// Characters kept as they are in a URI path: RFC 3986 unreserved ones and `/`.
const PATH_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// A resource template: its RFC 6570 URI template and what it names.
pub(crate) struct Template {
    pub uri_template: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The template's variables, in order; completion offers values for each.
    pub variables: &'static [&'static str],
}

pub(crate) const MANUAL_SECTION_TEMPLATE: &str = "manual://{manual_id}/{path}#L{line}";
pub(crate) const MANUAL_FILE_TEMPLATE: &str = "manual://{manual_id}/{path}";
pub(crate) const VAULT_FILE_TEMPLATE: &str = "vault://{path}";

pub(crate) const TEMPLATES: &[Template] = &[
    Template {
        uri_template: MANUAL_SECTION_TEMPLATE,
        name: "manual-section",
        title: "Manual section",
        description: "The section of a manual file at a heading line (descendants included), as manual_read scope=section reads it: line from manual_toc or manual_hits.",
        variables: &["manual_id", "path", "line"],
    },
    Template {
        uri_template: MANUAL_FILE_TEMPLATE,
        name: "manual-file",
        title: "Manual file",
        description: "A manual file, bounded as manual_read bounds it: scope file when ALLOW_FILE_SCOPE is on or the file is JSON, else scope sections from its first section (at most 20 sections, 8,000 characters; _meta.lines says where to continue).",
        variables: &["manual_id", "path"],
    },
    Template {
        uri_template: VAULT_FILE_TEMPLATE,
        name: "vault-file",
        title: "Vault file",
        description: "A vault text file from line 1, bounded as vault_read full=true bounds it (HARD_MAX_CHARS).",
        variables: &["path"],
    },
];

/// What a resource URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResourceUri {
    ManualFile {
        manual_id: String,
        path: String,
    },
    ManualSection {
        manual_id: String,
        path: String,
        line: LineNo,
    },
    VaultFile {
        path: String,
    },
}

impl ResourceUri {
    /// Parses a URI of one of our schemes; anything else is `invalid_parameter` naming
    /// `uri` and the accepted forms.
    pub(crate) fn parse(uri: &str) -> ToolResult<ResourceUri> {
        if let Some(rest) = uri.strip_prefix(MANUAL_SCHEME) {
            let (manual_id, path_and_line) = rest
                .split_once('/')
                .ok_or_else(|| bad_uri(uri, "a manual URI is manual://<manual_id>/<path>"))?;
            let (path, line) = match path_and_line.split_once('#') {
                None => (path_and_line, None),
                Some((path, fragment)) => {
                    let line = fragment
                        .strip_prefix('L')
                        .filter(|digits| {
                            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
                        })
                        .and_then(|digits| digits.parse::<u64>().ok())
                        .ok_or_else(|| bad_uri(uri, "a section fragment is #L<line>"))?;
                    (path, Some(line))
                }
            };
            let manual_id = decode(uri, manual_id)?;
            let path = decode(uri, path)?;
            return Ok(match line {
                None => ResourceUri::ManualFile { manual_id, path },
                Some(line) => ResourceUri::ManualSection {
                    manual_id,
                    path,
                    line: line_no(line),
                },
            });
        }
        if let Some(path) = uri.strip_prefix(VAULT_SCHEME) {
            if path.contains('#') {
                return Err(bad_uri(uri, "a vault URI has no fragment"));
            }
            return Ok(ResourceUri::VaultFile {
                path: decode(uri, path)?,
            });
        }
        Err(bad_uri(
            uri,
            "expected manual://<manual_id>/<path>[#L<line>] or vault://<path>",
        ))
    }

    /// The URI, path segments percent-encoded.
    pub(crate) fn to_uri(&self) -> String {
        match self {
            ResourceUri::ManualFile { manual_id, path } => {
                format!("{MANUAL_SCHEME}{}/{}", encode(manual_id), encode(path))
            }
            ResourceUri::ManualSection {
                manual_id,
                path,
                line,
            } => format!(
                "{MANUAL_SCHEME}{}/{}#L{line}",
                encode(manual_id),
                encode(path)
            ),
            ResourceUri::VaultFile { path } => format!("{VAULT_SCHEME}{}", encode(path)),
        }
    }
}

fn encode(segment: &str) -> String {
    utf8_percent_encode(segment, PATH_KEEP).to_string()
}

fn decode(uri: &str, segment: &str) -> ToolResult<String> {
    let decoded = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| bad_uri(uri, "percent-encoded bytes must be UTF-8"))?;
    if decoded.is_empty() {
        return Err(bad_uri(uri, "the manual id and the path must not be empty"));
    }
    Ok(decoded.into_owned())
}

fn bad_uri(uri: &str, rule: &str) -> ToolError {
    let shown: String = uri.chars().take(200).collect();
    ToolError::invalid_parameter(format!("resource URI {shown:?} is not accepted: {rule}"))
        .with_details(json!({ "field": "uri", "rule": rule }))
}

/// One listed resource.
pub(crate) struct Listed {
    pub uri: String,
    pub name: String,
    pub mime_type: &'static str,
    pub size: Option<u64>,
}

pub(crate) struct ListPage {
    pub resources: Vec<Listed>,
    pub next_cursor: Option<String>,
}

/// What `resources/read` answers: the text, its type, and how it was bounded.
pub(crate) struct ReadText {
    pub uri: String,
    pub mime_type: &'static str,
    pub text: String,
    /// `lines` (first and last line returned) and `truncated`, so a client knows when a
    /// limit cut the text and where to continue.
    pub meta: Map<String, Value>,
}

/// The listings a page walks through in order: every manual file, then every vault file.
#[derive(Clone, Copy)]
enum Source {
    Manuals,
    Vault,
}

impl Source {
    const ORDER: [Source; 2] = [Source::Manuals, Source::Vault];

    fn tag(self) -> char {
        match self {
            Source::Manuals => 'm',
            Source::Vault => 'v',
        }
    }
}

/// Where a page starts: a source and an offset in its listing (`m0`, `v200`).
fn parse_cursor(cursor: Option<&str>) -> ToolResult<(usize, u64)> {
    let Some(cursor) = cursor else {
        return Ok((0, 0));
    };
    let mut chars = cursor.chars();
    let source = chars
        .next()
        .and_then(|tag| Source::ORDER.iter().position(|s| s.tag() == tag));
    match (source, chars.as_str().parse::<u64>()) {
        (Some(source), Ok(offset)) => Ok((source, offset)),
        _ => Err(ToolError::invalid_parameter(
            "unknown cursor; pass the nextCursor of the previous page",
        )
        .with_details(json!({ "field": "cursor" }))),
    }
}

fn mime_of(path: &str) -> &'static str {
    match FileType::from_path(path) {
        Some(FileType::Md) => "text/markdown",
        Some(FileType::Json) => "application/json",
        None => "text/plain",
    }
}

impl App {
    /// One page of `resources/list`: manual files (`manual_ls`), then vault files
    /// (`vault_ls`), `PAGE_SIZE` at a time.
    pub(crate) fn list_resources(
        &self,
        cursor: Option<&str>,
        context: &CallContext,
    ) -> ToolResult<ListPage> {
        let (mut source, mut offset) = parse_cursor(cursor)?;
        let mut resources = Vec::new();
        while source < Source::ORDER.len() {
            let room = PAGE_SIZE - resources.len() as u64;
            let arguments = json!({ "offset": offset, "limit": room });
            let next_offset = match Source::ORDER[source] {
                Source::Manuals => {
                    let page: ManualLsOutput = self.call_for("manual_ls", arguments, context)?;
                    resources.extend(page.items.into_iter().map(|item| {
                        let mime_type = mime_of(&item.path);
                        let manual_id = item
                            .manual_id
                            .expect("a listing of every manual names each file's manual");
                        Listed {
                            name: format!("{manual_id}/{}", item.path),
                            uri: ResourceUri::ManualFile {
                                manual_id,
                                path: item.path,
                            }
                            .to_uri(),
                            mime_type,
                            size: None,
                        }
                    }));
                    page.next_offset
                }
                Source::Vault => {
                    let page: VaultLsOutput = self.call_for("vault_ls", arguments, context)?;
                    resources.extend(page.items.into_iter().map(|item| {
                        Listed {
                            uri: ResourceUri::VaultFile {
                                path: item.path.clone(),
                            }
                            .to_uri(),
                            mime_type: mime_of(&item.path),
                            name: item.path,
                            size: Some(item.size_bytes),
                        }
                    }));
                    page.next_offset
                }
            };
            match next_offset {
                Some(next) => {
                    offset = next;
                    if resources.len() as u64 == PAGE_SIZE {
                        break;
                    }
                }
                None => {
                    source += 1;
                    offset = 0;
                }
            }
        }
        let next_cursor = (source < Source::ORDER.len())
            .then(|| format!("{}{offset}", Source::ORDER[source].tag()));
        Ok(ListPage {
            resources,
            next_cursor,
        })
    }

    /// `resources/read`: the tool read the URI stands for, with the tool's defaults.
    pub(crate) fn read_resource(&self, uri: &str, context: &CallContext) -> ToolResult<ReadText> {
        let resource = ResourceUri::parse(uri)?;
        match &resource {
            ResourceUri::ManualFile { manual_id, path } => {
                let whole_file = self.config.allow_file_scope
                    || FileType::from_path(path) == Some(FileType::Json);
                let arguments = if whole_file {
                    json!({
                        "ref": { "manual_id": manual_id, "path": path, "start_line": 1 },
                        "scope": "file",
                        "limits": { "allow_file": true },
                    })
                } else {
                    // From the first section on: front matter belongs to no section.
                    let toc: ManualTocOutput = self.call_for(
                        "manual_toc",
                        json!({ "manual_id": manual_id, "path": path, "limit": 1 }),
                        context,
                    )?;
                    let first_line = toc.items.first().map_or(1, |node| node.line_start);
                    json!({
                        "ref": { "manual_id": manual_id, "path": path, "start_line": first_line },
                        "scope": "sections",
                    })
                };
                self.read_manual(&resource, path, arguments, context)
            }
            ResourceUri::ManualSection {
                manual_id,
                path,
                line,
            } => {
                let arguments = json!({
                    "ref": { "manual_id": manual_id, "path": path, "start_line": line },
                    "scope": "section",
                });
                self.read_manual(&resource, path, arguments, context)
            }
            ResourceUri::VaultFile { path } => {
                let read: VaultReadOutput =
                    self.call_for("vault_read", json!({ "path": path, "full": true }), context)?;
                let lines = (read.applied_range.start_line, read.applied_range.end_line);
                Ok(ReadText::of(
                    &resource,
                    path,
                    read.text,
                    lines,
                    matches!(
                        read.truncated_reason,
                        Some(TruncatedReason::MaxChars) | Some(TruncatedReason::HardLimit)
                    ),
                ))
            }
        }
    }

    fn read_manual(
        &self,
        resource: &ResourceUri,
        path: &str,
        arguments: Value,
        context: &CallContext,
    ) -> ToolResult<ReadText> {
        let read: ManualReadOutput = self.call_for("manual_read", arguments, context)?;
        let lines = (read.lines.start_line, read.lines.end_line);
        Ok(ReadText::of(
            resource,
            path,
            read.text,
            lines,
            read.truncated.unwrap_or(false),
        ))
    }
}

impl ReadText {
    /// The text a tool read for `resource`, with the lines it spans and whether a limit
    /// cut it.
    fn of(
        resource: &ResourceUri,
        path: &str,
        text: String,
        (start_line, end_line): (u64, u64),
        truncated: bool,
    ) -> ReadText {
        let mut meta = Map::new();
        meta.insert(
            "lines".into(),
            json!({ "start_line": start_line, "end_line": end_line }),
        );
        meta.insert("truncated".into(), json!(truncated));
        ReadText {
            uri: resource.to_uri(),
            mime_type: mime_of(path),
            text,
            meta,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_with_encoded_segments() {
        let cases = [
            ResourceUri::ManualFile {
                manual_id: "handbook".into(),
                path: "leave/annual leave.md".into(),
            },
            ResourceUri::ManualSection {
                manual_id: "手引き".into(),
                path: "休暇/有給#1.md".into(),
                line: 42,
            },
            ResourceUri::VaultFile {
                path: "drafts/100%.md".into(),
            },
        ];
        for resource in cases {
            let uri = resource.to_uri();
            assert!(uri.is_ascii(), "{uri}");
            assert_eq!(ResourceUri::parse(&uri).unwrap(), resource, "{uri}");
        }
        assert_eq!(
            ResourceUri::ManualSection {
                manual_id: "m".into(),
                path: "a/b.md".into(),
                line: 3
            }
            .to_uri(),
            "manual://m/a/b.md#L3"
        );
    }

    #[test]
    fn unencoded_utf8_is_read_as_written() {
        assert_eq!(
            ResourceUri::parse("vault://notes/日報.md").unwrap(),
            ResourceUri::VaultFile {
                path: "notes/日報.md".into()
            }
        );
    }

    #[test]
    fn malformed_uris_are_invalid_parameters_naming_uri() {
        for uri in [
            "file:///etc/passwd",
            "manual://handbook",
            "manual:///a.md",
            "manual://m/",
            "manual://m/a.md#section",
            "manual://m/a.md#L",
            "manual://m/a.md#L-1",
            "manual://m/a.md#L99999999999999999999999",
            "vault://",
            "vault://a.md#L1",
            "vault://%ff.md",
        ] {
            let error = ResourceUri::parse(uri).unwrap_err();
            assert_eq!(error.code.as_str(), "invalid_parameter", "{uri}");
            assert_eq!(error.details.unwrap()["field"], "uri", "{uri}");
        }
    }

    #[test]
    fn encoded_traversal_reaches_the_tools_decoded() {
        // The tools refuse it (tests/it/resources.rs); the URI layer only decodes.
        assert_eq!(
            ResourceUri::parse("vault://%2e%2e/secret").unwrap(),
            ResourceUri::VaultFile {
                path: "../secret".into()
            }
        );
    }

    #[test]
    fn cursors_name_a_source_and_an_offset() {
        assert_eq!(parse_cursor(None).unwrap(), (0, 0));
        assert_eq!(parse_cursor(Some("v200")).unwrap(), (1, 200));
        for bad in ["", "x1", "m", "m-1", "v1.5"] {
            assert!(parse_cursor(Some(bad)).is_err(), "{bad}");
        }
    }
}
