//! `serve --name` (or the state directory's name) names the kubeconfig's cluster, users and contexts, so the
//! kubeconfigs of two servers merge with `kubectl config view --flatten` and every context reaches its own server.
//! Skipped where kubectl is not installed.

use std::path::Path;
use std::process::{Command, Output};

use kube::config::Kubeconfig;

use crate::kubectl::kubectl_installed;
use crate::serve_process::ServeProcess;

/// `kubectl args…` with `KUBECONFIG=kubeconfig`.
fn kubectl(kubeconfig: &str, cache: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", cache)
        .output()
        .expect("running kubectl")
}

/// What `kubectl args…` printed, after checking that it succeeded.
fn kubectl_ok(kubeconfig: &str, cache: &Path, args: &[&str]) -> String {
    let output = kubectl(kubeconfig, cache, args);
    assert!(
        output.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn the_kubeconfigs_of_two_named_servers_merge_and_keep_both_clusters() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let east_dir = tempfile::tempdir().expect("a temporary directory");
    let west_dir = tempfile::tempdir().expect("a temporary directory");
    let east = ServeProcess::start_with(
        east_dir.path(),
        &east_dir.path().join("state"),
        "serve.log",
        &["--name", "east"],
    );
    // No --name: the state directory's name.
    let west = ServeProcess::start_with(
        west_dir.path(),
        &west_dir.path().join("west"),
        "serve.log",
        &[],
    );
    let cache = east_dir.path().join("kube-cache");
    let both = format!(
        "{}:{}",
        east.kubeconfig().display(),
        west.kubeconfig().display()
    );
    let flat = kubectl_ok(&both, &cache, &["config", "view", "--flatten"]);
    let merged = Kubeconfig::from_yaml(&flat).expect("the merged kubeconfig parses");
    let names = |list: Vec<&str>| {
        let mut list: Vec<String> = list.into_iter().map(str::to_owned).collect();
        list.sort();
        list
    };
    assert_eq!(
        names(merged.clusters.iter().map(|c| c.name.as_str()).collect()),
        ["east", "west"]
    );
    assert_eq!(
        names(merged.contexts.iter().map(|c| c.name.as_str()).collect()),
        [
            "east",
            "east-cert",
            "east-viewer",
            "west",
            "west-cert",
            "west-viewer"
        ]
    );
    assert_eq!(
        names(merged.auth_infos.iter().map(|u| u.name.as_str()).collect()),
        [
            "east-admin",
            "east-admin-cert",
            "east-viewer",
            "west-admin",
            "west-admin-cert",
            "west-viewer"
        ]
    );

    let file = east_dir.path().join("merged");
    std::fs::write(&file, &flat).expect("writing the merged kubeconfig");
    let merged = file.display().to_string();
    for context in [
        "east",
        "west",
        "east-viewer",
        "west-viewer",
        "east-cert",
        "west-cert",
    ] {
        kubectl_ok(
            &merged,
            &cache,
            &["--context", context, "get", "namespaces"],
        );
    }
    // Each context reaches its own server: what one has, the other does not.
    kubectl_ok(
        &merged,
        &cache,
        &["--context", "east", "create", "namespace", "only-in-east"],
    );
    kubectl_ok(
        &merged,
        &cache,
        &["--context", "east", "get", "namespace", "only-in-east"],
    );
    let west_answer = kubectl(
        &merged,
        &cache,
        &["--context", "west", "get", "namespace", "only-in-east"],
    );
    assert!(!west_answer.status.success());
    assert!(
        String::from_utf8_lossy(&west_answer.stderr).contains("not found"),
        "{}",
        String::from_utf8_lossy(&west_answer.stderr)
    );
    // Serve names the read-only context (waiting fails the test with the log when it does not).
    east.wait_for_log("--context east-viewer");
}

#[test]
fn a_name_that_cannot_name_a_context_is_refused() {
    let output = Command::new(env!("CARGO_BIN_EXE_kmm-tui"))
        .args(["serve", "--name", "has space"])
        .output()
        .expect("running kmm-tui");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot name a cluster"), "{stderr}");
}
