//! What a benchmark reads of another process from `/proc` (Linux only): its CPU time and its memory.

use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Clock ticks per second, the unit of `/proc/<pid>/stat`'s times.
fn clock_ticks() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// User plus system CPU time of process `pid` so far: fields 14 and 15 of `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|error| panic!("reading /proc/{pid}/stat: {error}"));
    let after_name = stat
        .rfind(')')
        .map(|end| &stat[end + 1..])
        .expect("/proc/<pid>/stat names the command in parentheses");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |index: usize| -> f64 {
        fields
            .get(index)
            .and_then(|value| value.parse().ok())
            .expect("utime and stime in /proc/<pid>/stat")
    };
    Duration::from_secs_f64((field(11) + field(12)) / clock_ticks())
}

/// Resident memory of process `pid` now, in MiB (`VmRSS`).
pub fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

/// The most resident memory process `pid` ever held, in MiB (`VmHWM`).
pub fn peak_mib(pid: u32) -> f64 {
    status_mib(pid, "VmHWM:")
}

/// A memory figure of `/proc/<pid>/status`, in MiB.
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|error| panic!("reading /proc/{pid}/status: {error}"));
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.split_whitespace().next())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/<pid>/status"));
    kib / 1024.0
}
