//! `kmm-tui serve` as a child of a benchmark or test: started on a free loopback port, ready once it has written its
//! kubeconfig, killed when dropped, so a panicking run leaves no server behind.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `kmm-tui serve`.
pub struct Serve(Child);

impl Serve {
    /// Run `binary serve` with `args`, logging warnings only, its temporary files in `dir` and its kubeconfig written
    /// to `kubeconfig`; return once the kubeconfig is there (the cluster is ready then). Panics if the server exits
    /// first or is not ready within `limit`.
    pub fn start<I, S>(
        binary: &Path,
        args: I,
        kubeconfig: &Path,
        dir: &Path,
        limit: Duration,
    ) -> Serve
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let started = Instant::now();
        let mut serve = Serve(
            Command::new(binary)
                .arg("serve")
                .args(args)
                .args([
                    "--listen",
                    "127.0.0.1:0",
                    "--log",
                    "warn",
                    "--kubeconfig-out",
                ])
                .arg(kubeconfig)
                .env("TMPDIR", dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("starting kmm-tui serve"),
        );
        while !kubeconfig.exists() {
            serve.assert_running("during start-up");
            assert!(
                started.elapsed() < limit,
                "kmm-tui serve not ready after {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        serve
    }

    /// The server's process id, for reading its figures from /proc.
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// Panic, saying `when`, if the server has exited.
    pub fn assert_running(&mut self, when: &str) {
        if let Ok(Some(status)) = self.0.try_wait() {
            panic!("kmm-tui serve exited {when}: {status}");
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
