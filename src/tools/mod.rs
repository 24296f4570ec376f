//! The tool layer: implements the generated domain traits on `App` by converting
//! contract types to domain calls and back. No file access and no search logic here.

mod audit;
mod bridge;
mod find;
mod manual;
mod tooling;
mod vault;

/// One page of `items` and the paging fields every paged answer carries.
pub(crate) struct Page<T> {
    pub items: Vec<T>,
    pub total: u64,
    pub next_offset: Option<u64>,
}

/// Cuts a page out of `items`; `limit` defaults to `default_limit`.
pub(crate) fn page<T>(
    items: impl IntoIterator<Item = T>,
    offset: Option<u64>,
    limit: Option<u64>,
    default_limit: u64,
) -> Page<T> {
    let all: Vec<T> = items.into_iter().collect();
    let total = all.len() as u64;
    let offset = offset.unwrap_or(0);
    let limit = limit.unwrap_or(default_limit);
    let items: Vec<T> = all
        .into_iter()
        .skip(offset as usize)
        .take(limit as usize)
        .collect();
    let end = offset + items.len() as u64;
    Page {
        items,
        total,
        next_offset: (end < total).then_some(end),
    }
}

/// Converts a domain value's wire name into the generated enum of the same vocabulary.
/// The schemas and the domain share these words, so a mismatch is a build defect.
pub(crate) fn wire_enum<T: std::str::FromStr>(word: &str) -> T {
    word.parse()
        .unwrap_or_else(|_| panic!("{word:?} is not in the schema's vocabulary"))
}
