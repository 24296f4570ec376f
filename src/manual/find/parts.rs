//! Work cut into parts for threads: shared by the scan (sections by text size) and the
//! reference resolution (files by reference count), which both join their parts' results
//! in order. A module of its own so neither imports the other for it.

/// `items` cut into at most `parts` consecutive ranges of about equal `weight`, so
/// threads given one each finish together and their results join in item order.
pub(crate) fn equal_parts<T>(
    items: &[T],
    parts: usize,
    weight: impl Fn(&T) -> usize,
) -> Vec<std::ops::Range<usize>> {
    let total: usize = items.iter().map(&weight).sum();
    let mut cut = Vec::with_capacity(parts);
    let (mut start, mut taken) = (0, 0);
    for (index, item) in items.iter().enumerate() {
        taken += weight(item);
        if taken * parts >= total * (cut.len() + 1) && cut.len() + 1 < parts {
            cut.push(start..index + 1);
            start = index + 1;
        }
    }
    cut.push(start..items.len());
    cut
}
