//! The commands that read the node, ported from the fixed command set exec answered before.

use std::collections::{BTreeMap, BTreeSet};

use crate::machine::{Containerd, ImageStore, Machine};
use crate::shell::ContainerEnv;
use crate::shell::testing::{Ran, container, run_in};
use kmm_apiserver::apiserver::streams::HostMounts;

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

/// A container on `worker-0`, backed by [`machine`], with `mounts`.
fn on_node(mounts: HostMounts) -> ContainerEnv {
    let mut c = container();
    c.machines.lock().insert("worker-0".into(), machine());
    c.mounts = mounts;
    c
}

async fn exec(argv: &[&str]) -> Ran {
    run_in(&on_node(privileged()), argv, None).await
}

#[tokio::test]
async fn the_node_is_read_from_its_machine() {
    assert_eq!(
        exec(&["uname", "-r"]).await.stdout,
        "5.14.0-284.el9.x86_64\n"
    );
    assert_eq!(exec(&["uname", "-m"]).await.stdout, "x86_64\n");
    let lsmod = exec(&["lsmod"]).await.stdout;
    let names: Vec<&str> = lsmod
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["Module", "acme_accel", "kvm"]);
    assert!(
        exec(&["modinfo", "acme-accel"])
            .await
            .stdout
            .contains("name:           acme_accel")
    );
    let missing = exec(&["modinfo", "nvme"]).await;
    assert_eq!(
        (missing.stderr.as_str(), missing.status),
        ("modinfo: ERROR: Module nvme not found.\n", 1)
    );
    assert_eq!(
        exec(&["cat", "/etc/containerd/config.toml"]).await.stdout,
        "version = 2\n"
    );
    assert_eq!(
        exec(&["ls", "/opt/rcm/bin/"]).await.stdout,
        "containerd-shim-spin-v2\n"
    );
    assert_eq!(exec(&["ls", "/opt/kwasm"]).await.status, 2);
    assert_eq!(
        exec(&["test", "-f", "/etc/containerd/config.toml"])
            .await
            .status,
        0
    );
    let images = exec(&[
        "crictl",
        "--runtime-endpoint=unix:///host/run/containerd/containerd.sock",
        "images",
    ])
    .await
    .stdout;
    let row: Vec<&str> = images.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        (row[0], row[1], row[3]),
        ("docker.io/library/nginx", "1.27", "70.0MB")
    );
    assert_eq!(exec(&["crictl", "ps"]).await.status, 127);
}

#[tokio::test]
async fn the_machine_is_read_afresh_by_each_command() {
    let c = on_node(privileged());
    assert_eq!(run_in(&c, &["lsmod"], None).await.stdout.lines().count(), 3);
    c.machines
        .with("worker-0", |m| m.modules.insert("nvme".into()));
    assert_eq!(run_in(&c, &["modinfo", "nvme"], None).await.status, 0);
    assert_eq!(run_in(&c, &["lsmod"], None).await.stdout.lines().count(), 4);
}

#[tokio::test]
async fn the_nodes_files_and_runtime_are_reached_only_through_host_mounts() {
    let unprivileged = on_node(HostMounts::default());
    let config = run_in(&unprivileged, &["cat", "/etc/containerd/config.toml"], None).await;
    assert_eq!((config.stdout.as_str(), config.status), ("", 1));
    assert_eq!(
        config.stderr,
        "cat: /etc/containerd/config.toml: No such file or directory\n"
    );
    assert_eq!(
        run_in(&unprivileged, &["ls", "/opt/rcm/bin"], None)
            .await
            .status,
        2
    );
    // The runtime's socket would show every namespace's images: not without mounting it.
    let images = run_in(&unprivileged, &["crictl", "images"], None).await;
    assert_eq!(images.status, 1);
    assert!(images.stdout.is_empty(), "{}", images.stdout);
    assert!(
        images.stderr.contains("containerd.sock"),
        "{}",
        images.stderr
    );
    // The default endpoint is the node's socket, where the container mounts it.
    let at_default = on_node(HostMounts::from_pairs([(
        "/var/run/containerd",
        "/run/containerd",
    )]));
    assert!(
        run_in(&at_default, &["crictl", "images"], None)
            .await
            .stdout
            .contains("docker.io/library/nginx")
    );
    // Mounted elsewhere, the node's file is at the mount.
    let at_host = on_node(HostMounts::from_pairs([("/host", "/")]));
    assert_eq!(
        run_in(&at_host, &["cat", "/host/etc/containerd/config.toml"], None)
            .await
            .stdout,
        "version = 2\n"
    );
}

#[tokio::test]
async fn a_node_without_a_machine_answers_with_defaults() {
    let c = container();
    assert_eq!(
        run_in(&c, &["lsmod"], None).await.stdout,
        format!("{:<24}{:>8}  Used by\n", "Module", "Size")
    );
    assert_eq!(run_in(&c, &["modinfo", "kvm"], None).await.status, 1);
    assert_eq!(run_in(&c, &["crictl", "images"], None).await.status, 1);
    assert_eq!(run_in(&c, &["uname", "-r"], None).await.stdout, "6.6.87\n");
}
