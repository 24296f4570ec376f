//! Every fixed rule of `manual_read` (spec_manuals §4).

use manvault::contract::types::RefTarget;
use manvault::error::{ErrorCode, ToolResult};
use manvault::manual::{
    manual_read, Expand, ManualIndex, ManualRef, ReadLimits, ReadOutput, ReadRequest, ReadScope,
    RequestedLimits, SNIPPET_CHARS,
};

use super::fixture::{error_code, Fixture};

const GUIDE: &str = "\
---
title: Guide
---
# One
one text
## One.a
a text
### One.a.i
i text
# Two
two text
# Three
three text
";

fn request(path: &str, start_line: Option<u32>, scope: Option<ReadScope>) -> ReadRequest {
    ReadRequest {
        reference: ManualRef {
            target: RefTarget::Manual,
            manual_id: Some("m".into()),
            path: path.into(),
            start_line,
        },
        scope,
        limits: RequestedLimits::default(),
        expand: Expand::default(),
    }
}

struct Reader {
    _fixture: Fixture,
    index: ManualIndex,
    limits: ReadLimits,
}

impl Reader {
    fn new(files: &[(&str, &str)]) -> Self {
        let fixture = Fixture::new();
        for (path, content) in files {
            fixture.write(&format!("m/{path}"), content);
        }
        let index = fixture.index();
        Reader {
            _fixture: fixture,
            index,
            limits: ReadLimits::default(),
        }
    }

    fn read(&self, request: &ReadRequest) -> ToolResult<ReadOutput> {
        manual_read(&self.index, request, &self.limits)
    }

    fn ok(&self, request: &ReadRequest) -> ReadOutput {
        self.read(request).expect("read succeeds")
    }
}

fn span(output: &ReadOutput) -> (u32, u32) {
    (output.lines.start_line, output.lines.end_line)
}

#[test]
fn default_scope_is_snippet_for_markdown_and_file_for_json() {
    let reader = Reader::new(&[("g.md", GUIDE), ("d.json", "{\n \"a\": 1\n}")]);
    let md = reader.ok(&request("g.md", Some(4), None));
    assert_eq!(md.applied.scope, ReadScope::Snippet);
    let json = reader.ok(&request("d.json", None, None));
    assert_eq!(json.applied.scope, ReadScope::File);
    assert_eq!(json.text, "{\n \"a\": 1\n}");
    assert_eq!((span(&json), json.truncated), ((1, 3), false));
}

#[test]
fn snippet_starts_at_any_line_and_is_bounded() {
    let long_line = "あ".repeat(1000);
    let text = format!("# H\nfirst\n{long_line}\nlast\n");
    let reader = Reader::new(&[("a.md", &text)]);

    let at_body = reader.ok(&request("a.md", Some(2), None));
    assert!(at_body.text.starts_with("first\nあ"));
    assert_eq!(at_body.text.chars().count(), SNIPPET_CHARS);
    assert_eq!((span(&at_body), at_body.truncated), ((2, 3), false));

    let short_file = Reader::new(&[("a.md", "# H\nbody\n")]).ok(&request("a.md", None, None));
    assert_eq!(
        (short_file.text.as_str(), span(&short_file)),
        ("# H\nbody", (1, 2))
    );
}

#[test]
fn expand_adds_context_within_max_chars() {
    let reader = Reader::new(&[("a.md", "# H\nabcdef\nghijkl\nmnopqr\n")]);
    let mut wide = request("a.md", Some(3), Some(ReadScope::Snippet));
    wide.expand = Expand {
        before_chars: Some(3),
        after_chars: Some(5),
    };
    let output = reader.ok(&wide);
    assert_eq!(output.text, "ef\nghijkl\nmnopqr");
    assert_eq!((span(&output), output.truncated), ((2, 4), false));

    let mut capped = request("a.md", Some(3), Some(ReadScope::Snippet));
    capped.expand = Expand {
        before_chars: Some(3),
        after_chars: Some(0),
    };
    capped.limits.max_chars = Some(8);
    let output = reader.ok(&capped);
    assert_eq!(
        output.text, "ghijkl\nm",
        "the part from start_line is served before the part above it"
    );
    assert!(output.truncated);
}

#[test]
fn section_is_the_deepest_node_with_its_descendants() {
    let reader = Reader::new(&[("g.md", GUIDE)]);
    let one = reader.ok(&request("g.md", Some(4), Some(ReadScope::Section)));
    assert_eq!(
        one.text,
        "# One\none text\n## One.a\na text\n### One.a.i\ni text"
    );
    assert_eq!(
        (span(&one), one.truncated, one.applied.max_sections),
        ((4, 9), false, None)
    );

    let from_body_line = reader.ok(&request("g.md", Some(7), Some(ReadScope::Section)));
    assert_eq!(span(&from_body_line), (6, 9));

    let front_matter = reader
        .read(&request("g.md", Some(2), Some(ReadScope::Section)))
        .unwrap_err();
    assert_eq!(front_matter.code, ErrorCode::NotFound);
    assert_eq!(front_matter.details.unwrap()["next_section_line"], 4);
}

#[test]
fn sections_returns_own_lines_of_following_nodes_up_to_max_sections() {
    let reader = Reader::new(&[("g.md", GUIDE)]);
    let mut two = request("g.md", Some(4), Some(ReadScope::Sections));
    two.limits.max_sections = Some(2);
    let output = reader.ok(&two);
    assert_eq!(output.text, "# One\none text\n## One.a\na text");
    assert_eq!(
        (span(&output), output.truncated, output.applied.max_sections),
        ((4, 7), true, Some(2))
    );

    two.reference.start_line = Some(5);
    let from_body = reader.ok(&two);
    assert_eq!(
        from_body.text, "one text\n## One.a\na text",
        "starts at start_line, inside node One"
    );

    let rest = reader.ok(&request("g.md", Some(8), Some(ReadScope::Sections)));
    assert_eq!(
        rest.text,
        "### One.a.i\ni text\n# Two\ntwo text\n# Three\nthree text"
    );
    assert_eq!(
        (span(&rest), rest.truncated, rest.applied.max_sections),
        ((8, 13), false, Some(20))
    );
}

#[test]
fn markdown_file_scope_needs_both_switches() {
    let mut reader = Reader::new(&[("g.md", GUIDE)]);
    let mut asked = request("g.md", None, Some(ReadScope::File));
    for (server, client) in [(false, Some(true)), (true, None), (true, Some(false))] {
        reader.limits.allow_file_scope = server;
        asked.limits.allow_file = client;
        let refused = reader.read(&asked).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        let details = refused.details.unwrap();
        assert_eq!(details["ALLOW_FILE_SCOPE"], server);
        assert_eq!(details["limits.allow_file"], serde_json::json!(client));
    }
    reader.limits.allow_file_scope = true;
    asked.limits.allow_file = Some(true);
    let whole = reader.ok(&asked);
    assert_eq!(whole.text, GUIDE.trim_end());
    assert_eq!((span(&whole), whole.truncated), ((1, 13), false));
}

#[test]
fn file_scope_stops_after_max_sections_nodes() {
    let mut reader = Reader::new(&[("g.md", GUIDE)]);
    reader.limits.allow_file_scope = true;
    let mut asked = request("g.md", None, Some(ReadScope::File));
    asked.limits = RequestedLimits {
        max_sections: Some(2),
        max_chars: None,
        allow_file: Some(true),
    };
    let output = reader.ok(&asked);
    assert_eq!(
        (span(&output), output.truncated),
        ((1, 7), true),
        "front matter, One, One.a"
    );
}

#[test]
fn json_refuses_section_scopes() {
    let reader = Reader::new(&[("d.json", "{}")]);
    for scope in [ReadScope::Section, ReadScope::Sections] {
        assert_eq!(
            error_code(reader.read(&request("d.json", None, Some(scope)))),
            ErrorCode::InvalidScope
        );
    }
    assert!(reader
        .read(&request("d.json", None, Some(ReadScope::Snippet)))
        .is_ok());
}

#[test]
fn limits_are_clamped_to_the_hard_maxima_and_zero_is_refused() {
    let reader = Reader::new(&[("g.md", GUIDE)]);
    let mut big = request("g.md", Some(4), Some(ReadScope::Sections));
    big.limits = RequestedLimits {
        max_sections: Some(500),
        max_chars: Some(1_000_000),
        allow_file: None,
    };
    let applied = reader.ok(&big).applied;
    assert_eq!(
        (applied.max_sections, applied.max_chars),
        (Some(20), 20_000)
    );

    let mut tight_server = Reader::new(&[("g.md", GUIDE)]);
    tight_server.limits.hard_max_chars = 100;
    assert_eq!(
        tight_server
            .ok(&request("g.md", Some(4), None))
            .applied
            .max_chars,
        100,
        "default 8000 clamps too"
    );

    for zero in [
        RequestedLimits {
            max_chars: Some(0),
            ..RequestedLimits::default()
        },
        RequestedLimits {
            max_sections: Some(0),
            ..RequestedLimits::default()
        },
    ] {
        let mut asked = request("g.md", Some(4), Some(ReadScope::Sections));
        asked.limits = zero;
        assert_eq!(error_code(reader.read(&asked)), ErrorCode::InvalidParameter);
    }
}

#[test]
fn max_chars_cuts_japanese_text_on_character_boundaries() {
    let body = "固定資産台帳と資産追跡".repeat(3);
    let text = format!("# 固定資産\n{body}\n二行目\n");
    let reader = Reader::new(&[("a.md", &text)]);
    let mut asked = request("a.md", Some(1), Some(ReadScope::Section));

    asked.limits.max_chars = Some(20);
    let whole_line = reader.ok(&asked);
    assert_eq!(
        (
            whole_line.text.as_str(),
            span(&whole_line),
            whole_line.truncated
        ),
        ("# 固定資産", (1, 1), true)
    );

    asked.limits.max_chars = Some(4);
    let inside_line = reader.ok(&asked);
    assert_eq!(
        (inside_line.text.as_str(), span(&inside_line)),
        ("# 固定", (1, 1))
    );

    asked.reference.start_line = Some(2);
    asked.scope = Some(ReadScope::Snippet);
    asked.limits.max_chars = Some(5);
    assert_eq!(reader.ok(&asked).text, "固定資産台");
}

#[test]
fn a_truncated_read_continues_at_the_next_line() {
    let reader = Reader::new(&[("g.md", GUIDE)]);
    let mut asked = request("g.md", Some(4), Some(ReadScope::Sections));
    asked.limits.max_chars = Some(25);
    let mut collected = Vec::new();
    loop {
        let output = reader.ok(&asked);
        collected.push(output.text);
        if !output.truncated {
            break;
        }
        asked.reference.start_line = Some(output.lines.end_line + 1);
    }
    assert_eq!(
        collected.join("\n"),
        GUIDE.lines().skip(3).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn refs_must_be_manual_refs_to_readable_lines() {
    let reader = Reader::new(&[("g.md", GUIDE), ("bad.json", "{")]);
    let mut wrong_target = request("g.md", None, None);
    wrong_target.reference.target = RefTarget::Vault;
    let mut no_manual = request("g.md", None, None);
    no_manual.reference.manual_id = None;
    for invalid in [
        wrong_target,
        no_manual,
        request("g.md", Some(0), None),
        request("g.md", Some(14), None),
    ] {
        assert_eq!(
            error_code(reader.read(&invalid)),
            ErrorCode::InvalidParameter,
            "{invalid:?}"
        );
    }
    let broken = reader.read(&request("bad.json", None, None)).unwrap_err();
    assert_eq!(broken.code, ErrorCode::InvalidParameter);
    assert_eq!(
        broken.details.unwrap()["problem"],
        "invalid JSON: line 1 column 1"
    );
    assert_eq!(
        error_code(reader.read(&request("none.md", None, None))),
        ErrorCode::NotFound
    );
}
