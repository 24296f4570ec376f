//! The section model: which lines are headings, and each node's range, parent and title.

use super::fixture::{index_with, outline};

#[test]
fn nested_headings_cover_their_descendants() {
    let text = "# A\ntext\n## B\n### C\nc\n## D\n# E\ne\n";
    assert_eq!(
        outline("a.md", text),
        [
            "heading 1 1-6 A #a",
            "heading 2 3-5 B #b ^a.md#L1",
            "heading 3 4-5 C #c ^a.md#L3",
            "heading 2 6-6 D #d ^a.md#L1",
            "heading 1 7-8 E #e",
        ]
    );
}

#[test]
fn setext_headings_start_at_their_text_line() {
    let text = "Title\n=====\nbody\n\nSub\n---\nmore\n";
    assert_eq!(
        outline("a.md", text),
        [
            "heading 1 1-7 Title #title",
            "heading 2 5-7 Sub #sub ^a.md#L1"
        ]
    );
    let continued = "para\nstill para\n---\n";
    assert_eq!(
        outline("a.md", continued),
        ["heading 2 1-3 para still para #para-still-para"],
        "a setext heading's text may span lines"
    );
}

#[test]
fn hash_lines_in_code_are_not_headings() {
    let text = "# Real\n```\n# not a heading\n```\n~~~\n## nor this\n~~~\n\n    # indented code\n";
    assert_eq!(outline("a.md", text), ["heading 1 1-9 Real #real"]);
}

#[test]
fn file_without_headings_is_one_level_zero_node() {
    assert_eq!(
        outline("dir/notes.md", "just text\nmore\n"),
        ["heading 0 1-2 notes"]
    );
    assert_eq!(outline("empty.md", ""), ["heading 0 1-1 empty"]);
}

#[test]
fn front_matter_gives_the_title_and_is_neither_section_nor_setext() {
    let text = "---\ntitle: 会計\nweight: 1\n---\n\nbody only\n";
    assert_eq!(outline("_index.md", text), ["heading 0 1-6 会計"]);

    let (_fixture, index) = index_with("_index.md", "---\ntitle: 会計\n---\n# 概要\n");
    let file = index.file("m", "_index.md").unwrap();
    assert_eq!(file.page_title(), Some("会計"));
    assert_eq!(file.nodes().len(), 1, "no preamble for front matter alone");
    assert_eq!(file.nodes()[0].line_start, 4);
    assert!(
        index.node_at("m", "_index.md", 2).unwrap().is_none(),
        "front matter belongs to no node"
    );
}

#[test]
fn text_before_the_first_heading_is_a_preamble() {
    let text = "---\ntitle: T\n---\nintro\n\n# First\nx\n";
    assert_eq!(
        outline("a.md", text),
        ["preamble 0 1-5 T", "heading 1 6-7 First #first"]
    );
    assert_eq!(
        outline("a.md", "\n\n# First\n"),
        ["heading 1 3-3 First #first"],
        "blank lines are no preamble"
    );
}

#[test]
fn titles_are_plain_text_and_keep_custom_ids_as_anchors() {
    let text =
        "# Use **bold** and `code` {#custom-id}\n## [Link](http://x) text\n## 同じ\n## 同じ\n";
    assert_eq!(
        outline("a.md", text),
        [
            "heading 1 1-4 Use bold and code #custom-id",
            "heading 2 2-2 Link text #link-text ^a.md#L1",
            "heading 2 3-3 同じ #同じ ^a.md#L1",
            "heading 2 4-4 同じ #同じ-1 ^a.md#L1",
        ]
    );
}

#[test]
fn json_file_is_one_node() {
    assert_eq!(
        outline("data/config.json", "{\n  \"a\": 1\n}\n"),
        ["json_file 0 1-3 config.json"]
    );
    let (_fixture, index) = index_with("data/config.json", "{}");
    assert_eq!(
        index.file("m", "data/config.json").unwrap().nodes()[0].id("data/config.json"),
        "data/config.json"
    );
}

#[test]
fn node_at_is_the_deepest_node_containing_the_line() {
    let (_fixture, index) = index_with("a.md", "# A\n## B\nb\n# C\n");
    let at = |line| {
        index
            .node_at("m", "a.md", line)
            .unwrap()
            .map(|node| node.id("a.md"))
    };
    assert_eq!(at(1).as_deref(), Some("a.md#L1"));
    assert_eq!(at(3).as_deref(), Some("a.md#L2"));
    assert_eq!(at(4).as_deref(), Some("a.md#L4"));
    assert_eq!(at(9), None);
}
