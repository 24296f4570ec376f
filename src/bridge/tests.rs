use super::*;
use crate::error::ErrorCode;
use crate::manual::ManualIndex;
use crate::vault::profile::LineCount;

const PAGE: &str = "---\ntitle: 休暇\nsource_refs:\n  - old/a.md#L1-L2\nowner: 人事\n---\n\n# 休暇\n\n## 申請\n\n申請は三日前まで。\n\n### 例外\n\n急病は事後。\n\n## 取消\n\n取消は上長へ。\n";

/// An index over the manual `handbook` holding one file `path` with `text`, and the
/// folder it reads that file from (kept alive with it).
fn manual(path: &str, text: &str) -> (tempfile::TempDir, ManualIndex) {
    let dir = crate::test_support::tree(&[(&format!("handbook/{path}"), text)]);
    let index = ManualIndex::build(dir.path()).expect("index");
    (dir, index)
}

fn span(start_line: LineNo, end_line: LineNo) -> LineSpan {
    LineSpan {
        start_line,
        end_line,
    }
}

fn copy_of(lines: LineSpan) -> Copy {
    let (_dir, index) = manual("leave.md", PAGE);
    let file = index.file("handbook", "leave.md").expect("listed");
    Copy::of("handbook", file, lines).expect("unchanged")
}

#[test]
fn sections_start_at_their_heading_with_or_without_descendants() {
    let (_dir, index) = manual("leave.md", PAGE);
    let file = index.file("handbook", "leave.md").expect("listed");
    let with = Selection::Section {
        include_descendants: true,
    };
    let without = Selection::Section {
        include_descendants: false,
    };
    assert_eq!(select(file, 10, with).unwrap(), span(10, 17));
    assert_eq!(select(file, 12, with).unwrap(), span(10, 17));
    assert_eq!(select(file, 10, without).unwrap(), span(10, 13));
    assert_eq!(select(file, 16, without).unwrap(), span(14, 17));
    assert_eq!(select(file, 8, with).unwrap(), span(8, 20));
    let in_front_matter = select(file, 2, with).unwrap_err();
    assert_eq!(in_front_matter.code, ErrorCode::NotFound);
}

#[test]
fn ranges_are_exact_and_files_whole() {
    let (_dir, index) = manual("leave.md", PAGE);
    let file = index.file("handbook", "leave.md").expect("listed");
    let range = |end_line| select(file, 12, Selection::Range { end_line });
    assert_eq!(range(12).unwrap(), span(12, 12));
    assert_eq!(range(16).unwrap(), span(12, 16));
    for end_line in [11, 21] {
        let error = range(end_line).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter);
        assert_eq!(error.details.unwrap()["field"], "end_line");
    }
    assert_eq!(select(file, 12, Selection::File).unwrap(), span(1, 20));
}

#[test]
fn a_new_markdown_file_opens_with_its_origin() {
    let copy = copy_of(span(10, 12));
    assert_eq!(copy.source_ref(), "handbook/leave.md#L10-L12");
    let composed = compose(&copy, true, Mode::Create, None);
    assert_eq!(
        composed.content,
        "---\nsource_manual_ids: [\"handbook\"]\nsource_refs: [\"handbook/leave.md#L10-L12\"]\n---\n## 申請\n\n申請は三日前まで。\n"
    );
    assert_eq!(composed.origin, CopyOrigin::FrontMatter);
    assert_eq!((composed.first_line, composed.last_line), (5, 7));
}

#[test]
fn a_page_with_front_matter_gets_the_origin_merged_into_it() {
    let composed = compose(&copy_of(span(1, 20)), true, Mode::Overwrite, None);
    let expected_start = "---\nsource_manual_ids: [\"handbook\"]\nsource_refs: [\"handbook/leave.md#L1-L20\"]\ntitle: 休暇\nowner: 人事\n---\n\n# 休暇\n";
    assert!(
        composed.content.starts_with(expected_start),
        "{}",
        composed.content
    );
    assert_eq!(composed.content.matches("---\n").count(), 2);
    assert_eq!((composed.first_line, composed.last_line), (1, 20));
    assert_eq!(composed.content.lines().count(), 20);
    // A range that starts on line 1 but ends inside the block has no block to merge into.
    let partial = compose(&copy_of(span(1, 3)), true, Mode::Create, None);
    assert!(partial.content.starts_with("---\nsource_manual_ids"));
    assert!(partial
        .content
        .ends_with("---\n---\ntitle: 休暇\nsource_refs:\n"));
}

#[test]
fn appends_record_the_origin_in_a_comment_on_a_line_of_their_own() {
    let copy = copy_of(span(20, 20));
    let unterminated = LineCount {
        lines: 3,
        ends_with_newline: false,
    };
    let composed = compose(&copy, true, Mode::Append, Some(unterminated));
    assert_eq!(
        composed.content,
        "\n<!-- source_refs: [\"handbook/leave.md#L20-L20\"] -->\n取消は上長へ。\n"
    );
    assert_eq!(composed.origin, CopyOrigin::Comment);
    assert_eq!((composed.first_line, composed.last_line), (5, 5));
    let terminated = LineCount {
        lines: 3,
        ends_with_newline: true,
    };
    let plain = compose(&copy, false, Mode::Append, Some(terminated));
    assert_eq!(plain.content, "取消は上長へ。\n");
    assert_eq!(
        (plain.origin, plain.first_line, plain.last_line),
        (CopyOrigin::None, 4, 4)
    );
}

#[test]
fn a_ref_cannot_close_the_comment_and_json_stays_json() {
    let mut copy = copy_of(span(20, 20));
    copy.path = "a-->b.md".into();
    let composed = compose(&copy, true, Mode::Append, None);
    assert_eq!(composed.content.matches("-->").count(), 1);
    assert!(composed
        .content
        .contains(r#"["handbook/a--\u003eb.md#L20-L20"]"#));

    let json = "{\n  \"form\": \"leave\"\n}";
    let (_dir, index) = manual("f.json", json);
    let file = index.file("handbook", "f.json").expect("listed");
    let whole = select(file, 1, Selection::File).unwrap();
    let composed = compose(
        &Copy::of("handbook", file, whole).expect("unchanged"),
        false,
        Mode::Create,
        None,
    );
    assert_eq!(composed.content, format!("{json}\n"));
    assert!(serde_json::from_str::<serde_json::Value>(&composed.content).is_ok());
    assert_eq!((composed.first_line, composed.last_line), (1, 3));
}
