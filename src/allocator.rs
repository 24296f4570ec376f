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
