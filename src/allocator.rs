//! The process's allocator settings, applied once at start by the `manvault` binary and by
//! `manvault-bench` (so the bench measures what the server runs with).
//!
//! glibc's malloc raises its mmap threshold each time a large block is freed (up to
//! 32 MiB), after which blocks of that size come from the heap and stay there when freed;
//! and it returns the top of the heap to the system only above a trim threshold that rises
//! with it. A search allocates hit maps and postings buffers of a few hundred KiB to a few
//! MiB and frees them when it answers, and the background index build frees its indexing
//! arena: with the dynamic thresholds that memory stays with the process, measured at
//! about 20 MB (0.4x the corpus) of the peak at 6 copies of the handbook bench
//! (docs/benchmarks.md). Fixing both thresholds at [`THRESHOLD_BYTES`] makes large blocks
//! their own mappings, unmapped when freed, and trims the heap after frees. This is the
//! `glibc.malloc.mmap_threshold` and `glibc.malloc.trim_threshold` tunables set from the
//! program, so it holds without an environment variable. Elsewhere (other C libraries,
//! other systems) it does nothing.
//!
//! The price is a page fault per 4 KiB written into each fresh large block: the buffers a
//! search fills by the MB at 200 MB of manuals (its posting lists and hits) are therefore
//! kept from one search to the next, bounded (`manual::find::candidates::Kept`).
//!
//! A thread other than the main one allocates from a heap of its own that glibc makes
//! usable (`mprotect`) only as far as each allocation needs: a thread decoding tens of
//! megabytes of small strings and vectors makes one system call per page it grows by
//! (issue 16: ~35,000 a start at 220 MB of manuals, ~160 ms of CPU, each holding the
//! process's memory map lock against the other threads' page faults).
//! [`reserve_thread_heap`] grows it ahead in large steps instead.

/// Blocks at least this large get their own mapping; heap tops above it are given back.
/// glibc's own default before it adapts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const THRESHOLD_BYTES: libc::c_int = 128 << 10;

/// Makes the allocator give freed memory back to the system (see the module docs). Call it
/// once, first thing in `main`, before threads start.
pub fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets two of glibc's malloc parameters; it is called before the
    // process starts other threads, and both values are valid for them.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, THRESHOLD_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, THRESHOLD_BYTES);
    }
}

/// The largest block glibc still carves from a thread's heap (below [`THRESHOLD_BYTES`],
/// where blocks get a mapping of their own): a reservation grows the heap by this much a
/// step, one `mprotect` each instead of one a page.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const RESERVE_STEP_BYTES: usize = (THRESHOLD_BYTES as usize) - (8 << 10);

/// What one reservation grows a heap by at most: below glibc's 64 MiB heap size, past which
/// a thread's arena chains a new heap (that a reservation would only make and drop again).
pub const RESERVE_MAX_BYTES: usize = 56 << 20;

/// Makes the calling thread's malloc heap usable for about `bytes` more (at most
/// [`RESERVE_MAX_BYTES`]) before the thread allocates that much in small pieces, so the
/// heap grows in a few hundred large steps instead of page by page (see the module docs).
/// Nothing stays allocated and no memory is touched beyond one header a step: the blocks
/// are freed in order, glibc merges them into the heap's top and gives their pages back
/// (`MADV_DONTNEED`, the trim threshold of [`return_freed_memory`]) while the heap stays
/// usable, so the resident size and the peak do not change. Costs about 1 ms per 20 MB;
/// does nothing where the allocator is not glibc's.
pub fn reserve_thread_heap(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let steps = bytes.min(RESERVE_MAX_BYTES) / RESERVE_STEP_BYTES;
        let blocks: Vec<Vec<u8>> = (0..steps)
            .map(|_| std::hint::black_box(Vec::with_capacity(RESERVE_STEP_BYTES)))
            .collect();
        // Freed first to last: each block merges with the one freed before it, the last
        // with the heap's top, which is then trimmed once.
        drop(std::hint::black_box(blocks));
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

// Only glibc's heaps grow as a reservation expects.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the process the test starts, whose threads' heaps are all new (in the test
    /// binary's own process another test's thread may have grown the heap already).
    const FRESH_PROCESS: &str = "MANVAULT_TEST_HEAP_RESERVE";
    const TEST_NAME: &str =
        "allocator::tests::a_reserved_heap_is_usable_far_ahead_and_holds_no_memory";

    /// Size and resident size (bytes) of the readable and writable mapping holding `address`.
    fn mapping_of(address: usize) -> (usize, usize) {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let Some((range, rest)) = line.split_once(' ') else {
                continue;
            };
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                continue;
            };
            if (start..end).contains(&address) {
                assert!(rest.starts_with("rw"), "{line}");
                let rss = lines
                    .find_map(|line| line.strip_prefix("Rss:"))
                    .and_then(|kb| kb.trim().strip_suffix("kB")?.trim().parse::<usize>().ok())
                    .unwrap();
                return (end - start, rss << 10);
            }
        }
        panic!("no mapping holds {address:#x}");
    }

    /// The mapping of the calling thread's heap: found by a block of 4 KiB, above what
    /// glibc serves from its per-thread cache (a thread's first small block may come from
    /// the main heap).
    fn heap_mapping() -> (usize, usize) {
        let probe = std::hint::black_box(Vec::<u8>::with_capacity(4 << 10));
        mapping_of(probe.as_ptr() as usize)
    }

    #[test]
    fn a_reserved_heap_is_usable_far_ahead_and_holds_no_memory() {
        if std::env::var_os(FRESH_PROCESS).is_none() {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([TEST_NAME, "--exact", "--test-threads=1", "--nocapture"])
                .env(FRESH_PROCESS, "1")
                .status()
                .unwrap();
            assert!(status.success());
            return;
        }
        return_freed_memory();
        // Whole steps, so that what is usable after can be compared with it.
        let reserved = 320 * RESERVE_STEP_BYTES;
        std::thread::spawn(move || {
            let (before, _) = heap_mapping();
            assert!(
                before < reserved / 4,
                "a new thread's heap starts small: {before}"
            );
            reserve_thread_heap(reserved);
            let (after, resident) = heap_mapping();
            assert!(
                after >= reserved,
                "usable {after} after reserving {reserved}"
            );
            assert!(resident < reserved / 4, "{resident} bytes stayed resident");
        })
        .join()
        .unwrap();
    }
}
