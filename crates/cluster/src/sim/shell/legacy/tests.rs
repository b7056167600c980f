use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::sim::machine::{Containerd, ImageStore};

fn machine() -> Machine {
    let mut images = ImageStore::default();
    images.insert(
        "docker.io/library/nginx:1.27",
        70_000_000,
        Default::default(),
        false,
    );
    Machine {
        name: "worker-0".into(),
        kernel_version: "5.14.0-284.el9.x86_64".into(),
        os_image: "RHCOS 414".into(),
        os_image_url: None,
        boot_id: "boot-1".into(),
        architecture: "amd64".into(),
        operating_system: "linux".into(),
        disk_bytes: 100 << 30,
        modules: BTreeSet::from(["acme_accel".to_owned(), "kvm".to_owned()]),
        shims: BTreeMap::from([(
            "containerd-shim-spin-v2".to_owned(),
            "/opt/rcm/bin/containerd-shim-spin-v2".to_owned(),
        )]),
        containerd: Containerd {
            version: "1.7.13".into(),
            config_path: "/etc/containerd/config.toml".into(),
            config: "version = 2\n".into(),
            restarts: 0,
            last_restart: None,
        },
        images,
        ready: true,
    }
}

/// A privileged container mounting the node's containerd configuration, shim directory and runtime socket.
fn privileged() -> HostMounts {
    HostMounts::from_pairs([
        ("/etc/containerd", "/etc/containerd"),
        ("/opt/rcm/bin", "/opt/rcm/bin"),
        ("/host/run/containerd", "/run/containerd"),
    ])
}

fn exec(argv: &[&str]) -> ExecOutput {
    exec_in(&privileged(), argv)
}

fn exec_in(mounts: &HostMounts, argv: &[&str]) -> ExecOutput {
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    run(&machine(), mounts, &argv)
}

#[test]
fn the_node_is_read_from_its_machine() {
    assert_eq!(exec(&["uname", "-r"]).stdout, "5.14.0-284.el9.x86_64\n");
    let lsmod = exec(&["lsmod"]).stdout;
    let names: Vec<&str> = lsmod
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["Module", "acme_accel", "kvm"]);
    assert!(
        exec(&["modinfo", "acme-accel"])
            .stdout
            .contains("name:           acme_accel")
    );
    assert_eq!(exec(&["modinfo", "nvme"]).exit_code, 1);
    assert_eq!(
        exec(&["cat", "/etc/containerd/config.toml"]).stdout,
        "version = 2\n"
    );
    assert_eq!(
        exec(&["ls", "/opt/rcm/bin/"]).stdout,
        "containerd-shim-spin-v2\n"
    );
    assert_eq!(exec(&["ls", "/opt/kwasm"]).exit_code, 2);
    let images = exec(&[
        "crictl",
        "--runtime-endpoint=unix:///host/run/containerd/containerd.sock",
        "images",
    ])
    .stdout;
    let row: Vec<&str> = images.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        (row[0], row[1], row[3]),
        ("docker.io/library/nginx", "1.27", "70.0MB")
    );
}

#[test]
fn scripts_run_with_their_exit_status() {
    assert_eq!(exec(&["false"]).exit_code, 1);
    let script = exec(&[
        "/bin/sh",
        "-c",
        "echo a && false || echo b; exit 7; echo never",
    ]);
    assert_eq!((script.stdout.as_str(), script.exit_code), ("a\nb\n", 7));
    let nested = exec(&["sh", "-c", "sh -c 'exit 3'; echo after"]);
    assert_eq!((nested.stdout.as_str(), nested.exit_code), ("after\n", 0));
    assert_eq!(exec(&["sh", "-c", "true && false"]).exit_code, 1);
}

#[test]
fn other_commands_say_they_are_not_simulated() {
    let missing = exec(&["apt-get", "install", "vim"]);
    assert_eq!(missing.exit_code, 127);
    assert!(
        missing.stderr.starts_with("apt-get: command not simulated"),
        "{}",
        missing.stderr
    );
    let piped = exec(&["sh", "-c", "lsmod | grep kvm"]);
    assert_eq!(piped.exit_code, 2);
    assert!(piped.stderr.contains("pipes are not simulated"));
}

#[test]
fn the_nodes_files_and_runtime_are_reached_only_through_host_mounts() {
    let unprivileged = HostMounts::default();
    let config = exec_in(&unprivileged, &["cat", "/etc/containerd/config.toml"]);
    assert_eq!((config.stdout.as_str(), config.exit_code), ("", 1));
    assert_eq!(exec_in(&unprivileged, &["ls", "/opt/rcm/bin"]).exit_code, 2);
    // The runtime's socket would show every namespace's images: not without mounting it.
    let images = exec_in(&unprivileged, &["crictl", "images"]);
    assert_eq!(images.exit_code, 1);
    assert!(images.stdout.is_empty(), "{}", images.stdout);
    assert!(
        images.stderr.contains("containerd.sock"),
        "{}",
        images.stderr
    );
    // The default endpoint is the node's socket, where the container mounts it.
    let at_default = HostMounts::from_pairs([("/var/run/containerd", "/run/containerd")]);
    assert!(
        exec_in(&at_default, &["crictl", "images"])
            .stdout
            .contains("docker.io/library/nginx")
    );
    // Mounted elsewhere, the node's file is at the mount.
    let at_host = HostMounts::from_pairs([("/host", "/")]);
    assert_eq!(
        exec_in(&at_host, &["cat", "/host/etc/containerd/config.toml"]).stdout,
        "version = 2\n"
    );
}
