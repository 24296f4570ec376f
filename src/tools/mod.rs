//! The tool layer: implements the generated domain traits on `App` by converting
//! contract types to domain calls and back. No file access and no search logic here.

mod audit;
mod bridge;
use crate::contract::types::NextAction;

mod find;
mod manual;
pub(crate) mod memory;
mod proposal;
pub(crate) use proposal::next_actions;
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

/// `value` rounded to `1 / scale`, computed in f64 so the answer shows `0.9`, not the
/// f32 value's long decimal expansion.
pub(crate) fn rounded(value: f32, scale: f64) -> f64 {
    (f64::from(value) * scale).round() / scale
}

/// `value` to `digits` significant digits: what a score, ratio or rate means, without
/// the noise of its last bits (a small value keeps its digits, where fixed decimals would
/// zero it).
pub(crate) fn significant(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let scale = 10f64.powi(digits - 1 - value.abs().log10().floor() as i32);
    (value * scale).round() / scale
}

/// A count as an answer states it: left out when zero (the schemas declare such counts
/// optional, "absent" reading as 0).
pub(crate) fn nonzero(count: impl TryInto<u64>) -> Option<u64> {
    count.try_into().ok().filter(|&count| count > 0)
}

/// A flag as an answer states it: present only when true.
pub(crate) fn flag(value: bool) -> Option<bool> {
    value.then_some(true)
}

/// Drops the least confident actions of `output` until it serialises within `max_chars`
/// (actions are ordered best first; a search's summary alone always fits), so a search
/// answer stays a few hundred tokens whatever it found.
pub(crate) fn trim_actions<T: serde::Serialize>(
    output: &mut T,
    max_chars: usize,
    actions: impl Fn(&mut T) -> &mut Vec<NextAction>,
) {
    let chars = |output: &T| {
        serde_json::to_string(output)
            .expect("the answer serialises")
            .chars()
            .count()
    };
    while chars(output) > max_chars && actions(output).pop().is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_significant_digits_only() {
        assert_eq!(significant(0.891_234, 2), 0.89);
        assert_eq!(significant(1.099, 2), 1.1);
        assert_eq!(significant(0.004_567, 2), 0.0046);
        assert_eq!(significant(1.0 / 3.0, 3), 0.333);
        assert_eq!(significant(123.456, 3), 123.0);
        assert_eq!(significant(0.0, 3), 0.0);
        assert_eq!(significant(-0.0456, 2), -0.046);
    }

    #[test]
    fn zero_counts_and_false_flags_are_left_out() {
        assert_eq!(nonzero(0usize), None);
        assert_eq!(nonzero(3usize), Some(3));
        assert_eq!(nonzero(-1i64), None);
        assert_eq!(flag(false), None);
        assert_eq!(flag(true), Some(true));
    }
}
