//! The console in tmux, as the end-to-end tests start it and read it: the binary these tests were built with, its
//! screen's rows, and a client for the cluster it wrote a kubeconfig for.

use std::ffi::OsStr;
use std::path::Path;

use kmm_testing::tmux::{self, ROWS, TmuxConsole};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// `true` (after saying why) when tmux is missing and `test` cannot run.
pub(crate) fn skip(test: &str) -> bool {
    match tmux::unavailable() {
        Some(why) => {
            eprintln!("skipping {test}: {why}");
            true
        }
        None => false,
    }
}

/// `kmm-tui <args>` in tmux, with its home and logs in `dir`.
pub(crate) fn start<I, S>(dir: &Path, args: I) -> TmuxConsole
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    TmuxConsole::start(env!("CARGO_BIN_EXE_kmm-tui"), dir, args)
}

/// Row `index` (0-based) of a screen, or an empty line.
pub(crate) fn row(screen: &str, index: usize) -> &str {
    screen.lines().nth(index).unwrap_or_default()
}

/// The header: the screen's first row.
pub(crate) fn header(screen: &str) -> &str {
    row(screen, 0)
}

/// The footer's result line: the row above the hint bar.
pub(crate) fn status_line(screen: &str) -> &str {
    row(screen, usize::from(ROWS) - 2)
}

/// A table row split into its cells (table borders dropped).
pub(crate) fn cells(line: &str) -> Vec<&str> {
    line.trim_matches(|c: char| c == '│' || c.is_whitespace())
        .split_whitespace()
        .collect()
}

/// A client for the cluster the kubeconfig at `path` points at.
pub(crate) async fn client_from(path: &Path) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(path).expect("reading the written kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("loading the written kubeconfig");
    kube::Client::try_from(config).expect("a client for the embedded cluster")
}
