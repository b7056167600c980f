//! Where the binary writes when no one says where: under the user's own directories, never at a fixed name in the
//! shared temporary directory, where another local user could plant a symbolic link or a file of their own first.
//! The console's log follows the XDG base directories (`$XDG_STATE_HOME`, for logs); the kubeconfig of `serve`
//! without a state directory goes where cluster administrators look for kubeconfigs, `~/.kube`.

use std::path::PathBuf;

use anyhow::Context;

/// The console's log: `$XDG_STATE_HOME/kmm-tui/kmm-tui.log`, by default `~/.local/state/kmm-tui/kmm-tui.log`.
pub(crate) fn log_file() -> anyhow::Result<PathBuf> {
    let state = match absolute_var("XDG_STATE_HOME") {
        Some(state) => state,
        None => home()
            .context("where to write the log")?
            .join(".local/state"),
    };
    Ok(state.join("kmm-tui").join("kmm-tui.log"))
}

/// The kubeconfig `serve` writes without a state directory or `--kubeconfig-out`: `~/.kube/kmm-tui.kubeconfig`.
pub(crate) fn default_kubeconfig() -> anyhow::Result<PathBuf> {
    Ok(home()
        .context("where to write the kubeconfig (pass --kubeconfig-out PATH)")?
        .join(".kube")
        .join("kmm-tui.kubeconfig"))
}

/// The user's home directory, `$HOME`.
fn home() -> anyhow::Result<PathBuf> {
    absolute_var("HOME").context("HOME is not set to an absolute path")
}

/// The environment variable `name` when it holds an absolute path; the XDG specification ignores relative ones.
fn absolute_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}
