//! What the binary writes outside a state directory, with files planted at the names it used to write to in the
//! shared temporary directory: the default kubeconfig of `serve` and the console's log go under the user's home,
//! never through a planted link, and readable by the user only.

#![cfg(unix)]

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a start or a failing console may take.
const LIMIT: Duration = Duration::from_secs(60);

/// A shared temporary directory and a home of the user's, side by side in a fresh directory.
struct Places {
    _root: tempfile::TempDir,
    tmp: PathBuf,
    home: PathBuf,
}

impl Places {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("a temporary directory");
        let tmp = root.path().join("tmp");
        let home = root.path().join("home");
        fs::create_dir(&tmp).expect("TMPDIR");
        fs::create_dir(&home).expect("HOME");
        Places {
            _root: root,
            tmp,
            home,
        }
    }

    /// `kmm-tui ARGS` with TMPDIR and HOME here, and nothing else telling it where to write.
    fn kmm_tui(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kmm-tui"));
        command
            .args(args)
            .env("TMPDIR", &self.tmp)
            .env("HOME", &self.home)
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    }

    /// The names in TMPDIR.
    fn in_tmp(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.tmp)
            .expect("TMPDIR")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }
}

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    /// What it said on stderr, once it has exited.
    fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut stderr) = self.0.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        }
        text
    }
}

/// Assert that `path` is a regular file of this user's that only they may read.
fn assert_private_file(path: &Path) {
    let metadata = fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{} is not there: {e}", path.display()));
    assert!(metadata.is_file(), "{} is a regular file", path.display());
    assert_eq!(metadata.mode() & 0o777, 0o600, "{}", path.display());
}

#[test]
fn serve_without_a_state_directory_writes_its_kubeconfig_under_home_whatever_tmpdir_holds() {
    let places = Places::new();
    fs::create_dir(places.tmp.join("kmm-tui.kubeconfig.tmp")).expect("a planted directory");
    let mut serve = Running(
        places
            .kmm_tui(&["serve", "--scenario", "empty", "--listen", "127.0.0.1:0"])
            .spawn()
            .expect("starting kmm-tui serve"),
    );
    let kubeconfig = places.home.join(".kube/kmm-tui.kubeconfig");
    let started = Instant::now();
    while !kubeconfig.exists() {
        if let Ok(Some(status)) = serve.0.try_wait() {
            panic!("serve exited ({status}): {}", serve.stderr());
        }
        assert!(
            started.elapsed() < LIMIT,
            "no kubeconfig at {}",
            kubeconfig.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_private_file(&kubeconfig);
    assert_eq!(
        places.in_tmp(),
        ["kmm-tui.kubeconfig.tmp"],
        "nothing written to TMPDIR"
    );
}

#[test]
fn the_console_logs_under_home_readable_by_its_user_only_never_through_a_link() {
    let places = Places::new();
    let victim = places.home.join("victim");
    fs::write(&victim, "the victim's own text").expect("a victim file");
    symlink(&victim, places.tmp.join("kmm-tui.log")).expect("a planted link");
    let missing = places.home.join("missing.kubeconfig");
    let mut console = Running(
        places
            .kmm_tui(&[
                "--kubeconfig",
                &missing.display().to_string(),
                "--log",
                "debug",
            ])
            .spawn()
            .expect("starting the console"),
    );
    let started = Instant::now();
    while console.0.try_wait().expect("waiting").is_none() {
        assert!(
            started.elapsed() < LIMIT,
            "the console on a missing kubeconfig still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let stderr = console.stderr();
    assert_eq!(
        fs::read_to_string(&victim).expect("the victim"),
        "the victim's own text",
        "the log was written through the link"
    );
    assert_private_file(&places.home.join(".local/state/kmm-tui/kmm-tui.log"));
    assert_eq!(
        places.in_tmp(),
        ["kmm-tui.log"],
        "nothing written to TMPDIR: {stderr}"
    );
}
