//! What the machine offers the process and how work is spread over it: the one place
//! that asks the OS how many cores there are, so every parallel pass (builds, scans,
//! reference resolution, outline decoding, vault search, the benches) divides its work
//! by the same number, and the one way such a pass runs its parts on threads and joins
//! their results in order.

use std::ops::Range;
use std::sync::OnceLock;

/// The cores this process may run on; 1 when the OS cannot say (a search then still
/// runs, on one thread). Asked once a process: the answer reads the cgroup's quota
/// from several files each time, 1.5-4.5 ms of a server start's critical thread
/// (issue 16).
pub fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// `items` cut into at most `parts` consecutive ranges of about equal `weight`, so
/// threads given one each finish together and their results join in item order.
pub fn equal_parts<T>(
    items: &[T],
    parts: usize,
    weight: impl Fn(&T) -> usize,
) -> Vec<Range<usize>> {
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

/// `work` run on each of `parts`, each on a thread of its own, with the results in the
/// parts' order; one part (or none) runs on the calling thread, so a small input spawns
/// nothing. A panic in a part is re-raised on the calling thread as it was, so the caller
/// sees the part's own message.
pub fn over_parts<P: Send, T: Send>(parts: Vec<P>, work: impl Fn(P) -> T + Sync) -> Vec<T> {
    if parts.len() <= 1 {
        return parts.into_iter().map(work).collect();
    }
    let work = &work;
    std::thread::scope(|scope| {
        let running: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || work(part)))
            .collect();
        running
            .into_iter()
            .map(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_parts_cover_every_item_once_in_order_and_balance_weight() {
        let weights = [5, 1, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1];
        let parts = equal_parts(&weights, 2, |&w| w);
        assert_eq!(parts, vec![0..6, 6..12]);
        assert_eq!(equal_parts(&weights, 1, |&w| w), vec![0..12]);
        let empty: [usize; 0] = [];
        assert_eq!(equal_parts(&empty, 4, |&w| w), vec![0..0]);
        let many = equal_parts(&weights, 5, |&w| w);
        assert!(many.len() <= 5);
        let covered: Vec<usize> = many.into_iter().flatten().collect();
        assert_eq!(covered, (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn over_parts_joins_results_in_part_order_from_several_threads() {
        let threads = over_parts((0..4).collect(), |part: usize| {
            (part, std::thread::current().id())
        });
        assert_eq!(
            threads.iter().map(|&(part, _)| part).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        let distinct: std::collections::HashSet<_> = threads.iter().map(|&(_, id)| id).collect();
        assert_eq!(distinct.len(), 4, "each part runs on a thread of its own");
        let alone = over_parts(vec![7], |part: usize| (part, std::thread::current().id()));
        assert_eq!(
            alone,
            vec![(7, std::thread::current().id())],
            "one part runs on the caller"
        );
    }

    #[test]
    #[should_panic(expected = "part 2 failed")]
    fn over_parts_re_raises_a_part_s_panic_with_its_message() {
        over_parts((0..3).collect(), |part: usize| {
            if part == 2 {
                panic!("part {part} failed");
            }
        });
    }
}
