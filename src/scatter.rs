//! A stable scatter by a small integer key (a counting sort), shared by the tables that
//! group many entries by a dense number: postings by section
//! (`find::candidates::PostingLists`), references by file (`find::resolve::ByNode`) and
//! synonym sites by trigger (`text::synonyms::Triggers`). One definition so the three
//! cannot drift apart in the order they keep.

/// Places the values of `keyed` (each with its key) into `out` grouped by key in key
/// order, each key's values in their order in `keyed`: what a stable sort by key gives,
/// in two linear passes instead of a comparison sort. Sets `starts` to where each key's
/// values start in `out` (`starts[key]..starts[key + 1]`, `groups + 1` numbers).
///
/// Returns `false`, leaving `out` and `starts` unspecified, when a key is `groups` or
/// more, so that a caller whose keys are not known to be dense can fall back to a sort.
/// `keyed` is walked twice (counting, then placing), so it should be cheap to clone.
/// Both buffers are reused: a caller keeping them across calls allocates only to grow.
#[must_use = "a key past `groups` leaves `out` unplaced"]
pub(crate) fn by_key<V: Copy>(
    keyed: impl Iterator<Item = (usize, V)> + Clone,
    groups: usize,
    starts: &mut Vec<u32>,
    out: &mut Vec<V>,
) -> bool {
    // Counted two places up, so that after the prefix sums `starts[key + 1]` is where
    // `key`'s values start; placing advances it to where they end, which is where the
    // next key's start: `starts[..=groups]` is then the table returned.
    starts.clear();
    starts.resize(groups + 2, 0);
    out.clear();
    let mut fill = None;
    for (key, value) in keyed.clone() {
        if key >= groups {
            return false;
        }
        starts[key + 2] += 1;
        fill.get_or_insert(value);
    }
    for at in 2..starts.len() {
        starts[at] += starts[at - 1];
    }
    if let Some(fill) = fill {
        out.resize(starts[groups + 1] as usize, fill);
    }
    for (key, value) in keyed {
        let at = &mut starts[key + 1];
        out[*at as usize] = value;
        *at += 1;
    }
    starts.truncate(groups + 1);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scattered(keyed: &[(usize, char)], groups: usize) -> Option<(Vec<u32>, Vec<char>)> {
        // Buffers that held something else, as a reused one does.
        let mut starts = vec![7; 9];
        let mut out = vec!['?'; 4];
        by_key(keyed.iter().copied(), groups, &mut starts, &mut out).then_some((starts, out))
    }

    /// The result is a stable sort by key, and `starts` bounds each key's values,
    /// empty keys included (first, inner and last).
    #[test]
    fn values_are_grouped_by_key_keeping_their_order() {
        let keyed = [(3, 'a'), (1, 'b'), (3, 'c'), (1, 'd'), (4, 'e'), (1, 'f')];
        let (starts, out) = scattered(&keyed, 6).expect("every key is below 6");
        let mut sorted = keyed.to_vec();
        sorted.sort_by_key(|&(key, _)| key);
        let expected: Vec<char> = sorted.iter().map(|&(_, value)| value).collect();
        assert_eq!(out, expected);
        assert_eq!(out, ['b', 'd', 'f', 'a', 'c', 'e']);
        assert_eq!(starts, [0, 0, 3, 3, 5, 6, 6]);
        for (key, bounds) in starts.windows(2).enumerate() {
            let group = &out[bounds[0] as usize..bounds[1] as usize];
            let values: Vec<char> = keyed
                .iter()
                .filter(|&&(k, _)| k == key)
                .map(|&(_, value)| value)
                .collect();
            assert_eq!(group, values, "key {key}");
        }
    }

    #[test]
    fn no_values_give_empty_groups() {
        assert_eq!(scattered(&[], 3), Some((vec![0; 4], vec![])));
        assert_eq!(scattered(&[], 0), Some((vec![0], vec![])));
    }

    /// A key past the groups is refused, not placed out of bounds, wherever it comes.
    #[test]
    fn a_key_past_the_groups_is_refused() {
        assert_eq!(scattered(&[(2, 'a')], 2), None);
        assert_eq!(scattered(&[(0, 'a'), (1, 'b'), (5, 'c')], 2), None);
    }
}
