//! `kmm-tui completions`, `kmm-tui man` and `--help`: generated from the binary's own command line, so every
//! subcommand and option it accepts is offered by the shells and documented in the pages and the help.

use std::process::Command;

/// Every subcommand of `kmm-tui` (`screenshots` only exists in a build with the `screenshots` feature).
const SUBCOMMANDS: &[&str] = &[
    "serve",
    "controller",
    "crds",
    "install",
    "uninstall",
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

/// `kmm-tui args…`'s output with its lines joined, so a phrase wrapped by the help's line width still reads whole.
fn joined(args: &[&str]) -> String {
    output(args)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The paragraph `kmm-tui args…` prints for `option` (its heading line through the blank line that ends it), with
/// its lines joined: what the help says of that option alone, not of others that may name the same words.
fn option_help(args: &[&str], option: &str) -> String {
    let text = output(args);
    let paragraph: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.trim_start().starts_with(option))
        .take_while(|line| !line.trim().is_empty())
        .collect();
    assert!(!paragraph.is_empty(), "{args:?} has no {option}: {text}");
    paragraph
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn scenario_help_lists_every_built_in_scenario() {
    for args in [&["--help"][..], &["serve", "--help"][..]] {
        let text = option_help(args, "--scenario");
        for name in kmm_cluster::sim::scenario::Scenario::built_in_names() {
            assert!(
                text.contains(name),
                "{args:?} --scenario lacks {name}: {text}"
            );
        }
    }
}

#[test]
fn the_namespace_help_says_what_install_and_uninstall_do_with_it() {
    let install = joined(&["install", "--help"]);
    assert!(install.contains("created unless"), "{install}");
    let uninstall = joined(&["uninstall", "--help"]);
    assert!(!uninstall.contains("created unless"), "{uninstall}");
    assert!(
        uninstall.contains("deleted with everything in it"),
        "{uninstall}"
    );
}
