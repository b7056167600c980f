//! `kmm-tui completions` and `kmm-tui man`: generated from the binary's own command line, so every subcommand and
//! option it accepts is offered by the shells and documented in the pages.

use std::process::Command;

/// Every subcommand of `kmm-tui`.
const SUBCOMMANDS: &[&str] = &[
    "serve",
    "controller",
    "crds",
    "install",
    "uninstall",
    "screenshots",
    "completions",
    "man",
];

/// What `kmm-tui args…` prints, after checking that it succeeded.
fn output(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .args(args)
        .output()
        .expect("running kmm-tui");
    assert!(
        output.status.success(),
        "kmm-tui {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("the output is UTF-8")
}

#[test]
fn the_completion_scripts_offer_every_subcommand_and_their_options() {
    let bash = output(&["completions", "bash"]);
    assert!(bash.contains("complete -F"), "not a bash script:\n{bash}");
    for subcommand in SUBCOMMANDS {
        assert!(bash.contains(subcommand), "bash lacks {subcommand}");
    }
    assert!(bash.contains("--state-dir"), "bash lacks serve's options");
    for shell in ["zsh", "fish"] {
        let script = output(&["completions", shell]);
        for subcommand in SUBCOMMANDS {
            assert!(script.contains(subcommand), "{shell} lacks {subcommand}");
        }
    }
}

#[test]
fn the_manual_page_documents_every_subcommand() {
    let page = output(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH"),
        "not roff:\n{page}"
    );
    assert!(page.contains("kmm\\-tui"), "{page}");
    for subcommand in SUBCOMMANDS {
        assert!(page.contains(subcommand), "the page lacks {subcommand}");
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    output(&["man", "--out-dir", &dir.path().display().to_string()]);
    let serve = std::fs::read_to_string(dir.path().join("kmm-tui-serve.1"))
        .expect("a page of serve is written");
    assert!(serve.contains("state\\-dir"), "{serve}");
    for subcommand in SUBCOMMANDS {
        assert!(
            dir.path().join(format!("kmm-tui-{subcommand}.1")).exists(),
            "no page of {subcommand}"
        );
    }
}
