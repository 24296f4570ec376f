//! What the machine offers the process: the one place that asks the OS how many cores
//! there are, so every parallel pass (builds, scans, reference resolution, vault
//! search, the benches) divides its work by the same number.

/// The cores this process may run on; 1 when the OS cannot say (a search then still
/// runs, on one thread).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
