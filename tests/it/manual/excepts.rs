//! `manual_excepts`: every line with an exception term, paged, narrowed by node.

use manvault::error::ErrorCode;
use manvault::manual::{manual_excepts, ExceptsPage, ExceptsRequest, ManualIndex};

use super::fixture::{error_code, Fixture};

const GUIDE: &str = "\
# A
例外として除く。
```
except in code
```
Note: this applies.
notebook only
## B
ただし書き
";

fn manual() -> (Fixture, ManualIndex) {
    let fixture = Fixture::new();
    fixture
        .write("m/a.md", GUIDE)
        .write("m/b.json", "{\"x\": \"ＵＮＬＥＳＳ paid\"}")
        .write("m/broken.json", "{");
    let index = fixture.index();
    (fixture, index)
}

fn request(node_id: Option<&str>, offset: usize, limit: Option<usize>) -> ExceptsRequest<'_> {
    ExceptsRequest {
        manual_id: "m",
        node_id,
        offset,
        limit,
    }
}

fn rows(page: &ExceptsPage) -> Vec<String> {
    page.items
        .iter()
        .map(|item| {
            format!(
                "{}:{} {} {} | {}",
                item.path,
                item.start_line,
                item.category.as_str(),
                item.term,
                item.snippet
            )
        })
        .collect()
}

#[test]
fn every_prose_line_with_a_term_is_listed_in_order() {
    let (_fixture, index) = manual();
    let page = manual_excepts(&index, &request(None, 0, None)).unwrap();
    assert_eq!(
        rows(&page),
        [
            "a.md:2 exception 例外 | 例外として除く。",
            "a.md:6 caution note | Note: this applies.",
            "a.md:9 condition ただし | ただし書き",
            "b.json:1 condition unless | {\"x\": \"ＵＮＬＥＳＳ paid\"}",
        ]
    );
    assert_eq!((page.total, page.offset, page.limit), (4, 0, 50));
}

#[test]
fn node_id_narrows_to_that_node_and_its_descendants() {
    let (_fixture, index) = manual();
    let only_b = manual_excepts(&index, &request(Some("a.md#L8"), 0, None)).unwrap();
    assert_eq!(rows(&only_b), ["a.md:9 condition ただし | ただし書き"]);
    let whole_a = manual_excepts(&index, &request(Some("a.md#L1"), 0, None)).unwrap();
    assert_eq!(whole_a.total, 3);
    assert_eq!(
        error_code(manual_excepts(&index, &request(Some("a.md#L2"), 0, None))),
        ErrorCode::NotFound
    );
}

#[test]
fn pages_keep_the_total() {
    let (_fixture, index) = manual();
    let middle = manual_excepts(&index, &request(None, 1, Some(2))).unwrap();
    assert_eq!(
        middle
            .items
            .iter()
            .map(|item| item.start_line)
            .collect::<Vec<_>>(),
        [6, 9]
    );
    assert_eq!(middle.total, 4);
    let past_end = manual_excepts(&index, &request(None, 10, None)).unwrap();
    assert_eq!((past_end.items.len(), past_end.total), (0, 4));
    assert_eq!(
        manual_excepts(&index, &request(None, 0, Some(100_000)))
            .unwrap()
            .limit,
        200
    );
}

#[test]
fn snippets_are_bounded_around_the_term() {
    let fixture = Fixture::new();
    let line = format!("{}対象外{}", "前".repeat(300), "後".repeat(300));
    fixture.write("m/long.md", format!("# L\n{line}\n"));
    let index = fixture.index();
    let page = manual_excepts(&index, &request(None, 0, None)).unwrap();
    let snippet = &page.items[0].snippet;
    assert_eq!(snippet.chars().count(), 160);
    assert!(snippet.contains("対象外"));
    assert!(snippet.starts_with('前') && snippet.ends_with('後'));
}

#[test]
fn unknown_manual_is_not_found() {
    let (_fixture, index) = manual();
    let unknown = ExceptsRequest {
        manual_id: "zzz",
        node_id: None,
        offset: 0,
        limit: None,
    };
    assert_eq!(
        error_code(manual_excepts(&index, &unknown)),
        ErrorCode::NotFound
    );
}
