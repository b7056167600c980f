//! Starting on a full disk: `kmm-tui serve` must stop at once and say which directory has no room and why, rather
//! than fail later with SQLite's "disk I/O error", half written, or without naming the path.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start that must fail may take.
const FAIL_WITHIN: Duration = Duration::from_secs(20);

/// A tmpfs of `size` mounted on a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// None (with the reason printed) where mounting is not allowed, e.g. not as root or in a restricted container.
    fn mount(at: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(at).expect("a mount point");
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output();
        match output {
            Ok(output) if output.status.success() => Some(Self(at.to_owned())),
            Ok(output) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs: {}",
                    String::from_utf8_lossy(&output.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: cannot run mount: {e}");
                None
            }
        }
    }

    /// Fill the filesystem, then free `free` bytes again.
    fn fill_leaving(&self, free: u64) {
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).expect("a filler file");
        let chunk = vec![1u8; 4096];
        while file.write_all(&chunk).is_ok() {}
        let length = file.metadata().expect("its size").len();
        file.set_len(length.saturating_sub(free)).expect("freeing");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn starting_on_a_full_disk_fails_at_once_naming_the_directory_and_the_cause() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // Nothing of the tests in the tmpfs' way: 2 MiB, filled completely, or with room for a store's first pages.
    for free in [0, 256 << 10] {
        let Some(disk) = Tmpfs::mount(&dir.path().join(format!("disk-{free}")), "2m") else {
            return;
        };
        disk.fill_leaving(free);
        let state = disk.0.join("state");
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
            .args(["serve", "--scenario", "empty", "--listen", "127.0.0.1:0"])
            .arg("--state-dir")
            .arg(&state)
            .arg("--kubeconfig-out")
            .arg(dir.path().join("kubeconfig"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting kmm-tui serve");
        let status = loop {
            if let Some(status) = child.try_wait().expect("waiting") {
                break status;
            }
            if started.elapsed() > FAIL_WITHIN {
                let _ = child.kill();
                panic!("with {free} bytes free, still running after {FAIL_WITHIN:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        eprintln!(
            "{free} bytes free: {status} after {:?}: {stderr}",
            started.elapsed()
        );
        assert_eq!(status.code(), Some(1), "with {free} bytes free: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            stderr.contains(&state.display().to_string()),
            "the state directory is named: {stderr}"
        );
        assert!(
            stderr.contains("No space left on device"),
            "the cause is given: {stderr}"
        );
    }
}
