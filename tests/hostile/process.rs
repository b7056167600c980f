//! What this process holds, read from `/proc`: the server runs in it, so its descriptors and memory are the
//! server's (and the test's own clients').

/// Open file descriptors.
pub(crate) fn descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| entries.count())
        .unwrap_or(0)
}

/// Resident memory in bytes.
pub(crate) fn resident_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kib| kib << 10)
}
