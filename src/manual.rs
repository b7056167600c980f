//! Shell completions and manual pages, generated from the clap definitions of [`crate::cli::Cli`], so what they
//! offer is always what the binary accepts: a new option appears in both with no second list to keep.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::Cli;

/// The name the completions complete and the pages are named after: the installed binary's.
const BINARY: &str = "kmm-tui";

/// The completion script for `shell`.
pub(crate) fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, BINARY, &mut script);
    script
}

/// The main manual page (section 1) in roff: synopsis, options and every subcommand.
pub(crate) fn page() -> anyhow::Result<Vec<u8>> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut roff)
        .context("rendering the manual page")?;
    Ok(roff)
}

/// Write the main page and one page per subcommand (`kmm-tui-serve.1` …) into `dir`, as `man` finds them in a
/// `man1` directory; returns the paths written, sorted.
pub(crate) fn pages_to(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing the manual pages into {}", dir.display()))?;
    let mut written: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(BINARY) && name.ends_with(".1"))
        })
        .collect();
    written.sort();
    Ok(written)
}
