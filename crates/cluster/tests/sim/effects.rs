//! The node effects of privileged pods on a World built on an embedded cluster: pods are created through the API
//! (so they carry what the API server made of them), then started and finished as a kubelet would, and the machine
//! shows the result.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Namespace, Pod};
use kmm_cluster::sim::World;
use kmm_cluster::sim::effects::{self, ContainerRun, Outcome};
use kmm_cluster::sim::machine::{Containerd, ImageStore, Machine};
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, PostParams};

const KERNEL: &str = "5.14.0-284.el9.x86_64";

const SCENARIO: &str = r#"
nodes:
  - {namePrefix: worker-, count: 1, kernelVersion: 5.14.0-284.el9.x86_64, osImage: RHCOS 414}
registry:
  images:
    - {name: "quay.io/org/kmm-ci:5.14.0-284.el9.x86_64", sizeMiB: 20}
  shims:
    - {url: "https://github.com/spinframework/containerd-shim-spin/releases/download/v0.17.0/containerd-shim-spin-v2-linux-x86_64.tar.gz", binary: containerd-shim-spin-v2}
osImages:
  - {url: "quay.io/os/rhcos@sha256:4150000000000000000000000000000000000000000000000000000000000000", kernelVersion: 5.14.0-362.el9.x86_64, osImage: RHCOS 415, release: 4.15.0}
  - {url: "registry.local/os/rhcos-layered:415", kernelVersion: 5.14.0-362.24.1.el9.x86_64, osImage: RHCOS 415 layered}
"#;

/// The containerd configuration the node starts with: containerd 1.7 with runc.
const CONFIG: &str = "version = 2\n\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n";

/// A world on a fresh embedded cluster, with the machine the kubelet would have registered.
async fn world() -> (EmbeddedCluster, Arc<World>) {
    let cluster = EmbeddedCluster::start(EmbeddedOptions::default())
        .await
        .expect("the embedded cluster starts");
    let scenario = Scenario::parse(SCENARIO, "effects", None).expect("the scenario parses");
    let world = World::new(
        cluster.server().clone(),
        cluster.client(),
        scenario,
        None,
        None,
    );
    world.machines.lock().insert(
        "worker-0".into(),
        Machine {
            name: "worker-0".into(),
            kernel_version: KERNEL.into(),
            os_image: "RHCOS 414".into(),
            os_image_url: None,
            boot_id: "boot-1".into(),
            architecture: "amd64".into(),
            operating_system: "linux".into(),
            disk_bytes: 40 << 30,
            modules: BTreeSet::new(),
            shims: BTreeMap::new(),
            containerd: Containerd {
                version: "1.7.13".into(),
                config_path: "/etc/containerd/config.toml".into(),
                config: CONFIG.into(),
                restarts: 0,
                last_restart: None,
            },
            images: ImageStore::default(),
            ready: true,
        },
    );
    (cluster, world)
}

/// Create the pod through the API and return what the API server stored.
async fn create(world: &World, namespace: &str, manifest: serde_json::Value) -> Pod {
    let namespaces: Api<Namespace> = Api::all(world.client.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}}))
            .expect("a namespace");
    // The namespace may exist already from an earlier pod of the same test.
    let _ = namespaces.create(&PostParams::default(), &ns).await;
    let pods: Api<Pod> = Api::namespaced(world.client.clone(), namespace);
    let pod: Pod = serde_json::from_value(manifest).expect("a pod manifest");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("the API server admits the pod")
}

/// Start and finish one container of the pod as the kubelet does; returns the planned run time and the outcome.
fn run(
    world: &World,
    pod: &Pod,
    container: &Container,
    init: bool,
) -> (Option<std::time::Duration>, Outcome) {
    let in_use = BTreeSet::new();
    let run = ContainerRun {
        node: "worker-0",
        pod,
        container,
        init,
        images_in_use: &in_use,
    };
    let plan = effects::plan(world, &run);
    (plan.runs_for, effects::finish(world, &run))
}

#[tokio::test]
async fn a_worker_pod_loads_its_module_into_the_machine() {
    let (_cluster, world) = world().await;
    let mut changes = world.machine_changed.subscribe();
    let config = format!(
        "containerImage: quay.io/org/kmm-ci:{KERNEL}\nkernelVersion: {KERNEL}\ninsecurePull: false\nmodprobe:\n  moduleName: kmm_ci_a\n  modulesLoadingOrder: [kmm_ci_a, kmm_ci_b]\n"
    );
    let pod = create(
        &world,
        "kmm-ops",
        serde_json::json!({
            "metadata": {
                "name": "kmm-worker-worker-0-kmm-ci",
                "labels": {"kmm.node.kubernetes.io/worker-action": "Load", "kmm.node.kubernetes.io/module.name": "kmm-ci"},
                "annotations": {"kmm.node.kubernetes.io/worker-config": config}
            },
            "spec": {
                "nodeName": "worker-0",
                "restartPolicy": "OnFailure",
                "initContainers": [{
                    "name": "image-extractor",
                    "image": format!("quay.io/org/kmm-ci:{KERNEL}"),
                    "command": ["/bin/sh", "-c"],
                    "args": [format!("mkdir -p /tmp/opt/lib/modules; cp -R /opt/lib/modules/{KERNEL} /tmp/opt/lib/modules")]
                }],
                "containers": [{
                    "name": "worker",
                    "image": "quay.io/kmm/worker:latest",
                    "args": ["kmod", "load", "/etc/kmm-worker/config.yaml"],
                    "securityContext": {"capabilities": {"add": ["SYS_MODULE"]}, "runAsUser": 0}
                }]
            }
        }),
    )
    .await;
    let spec = pod.spec.clone().expect("the pod has a spec");
    let (_, extracted) = run(
        &world,
        &pod,
        &spec.init_containers.unwrap_or_default()[0],
        true,
    );
    assert_eq!(extracted.exit_code, 0);

    let (runs_for, outcome) = run(&world, &pod, &spec.containers[0], false);
    assert!(runs_for.is_some());
    assert_eq!(outcome.exit_code, 0, "{outcome:?}");
    assert_eq!(outcome.reason, "Completed");
    let machine = world.machines.get("worker-0").expect("the machine");
    assert_eq!(
        machine.modules.into_iter().collect::<Vec<_>>(),
        ["kmm_ci_a", "kmm_ci_b"]
    );
    assert_eq!(changes.try_recv().ok().as_deref(), Some("worker-0"));
}

#[tokio::test]
async fn a_shim_installer_pod_installs_the_shim_and_restarts_containerd() {
    let (_cluster, world) = world().await;
    let location = world.scenario.registry.shims[0].url.clone();
    let pod = create(
        &world,
        "rcm",
        serde_json::json!({
            "metadata": {
                "name": "worker-0-spin-v2-install",
                "labels": {"spinkube.dev/shimName": "spin-v2", "spinkube.dev/operation": "install"}
            },
            "spec": {
                "nodeName": "worker-0",
                "hostPID": true,
                "restartPolicy": "Never",
                "volumes": [{"name": "shim-download", "emptyDir": {}}, {"name": "root-mount", "hostPath": {"path": "/"}}],
                "initContainers": [{
                    "name": "downloader",
                    "image": "ghcr.io/spinframework/shim-downloader:latest",
                    "securityContext": {"privileged": true},
                    "env": [{"name": "SHIM_NAME", "value": "spin-v2"}, {"name": "SHIM_LOCATION", "value": location}],
                    "volumeMounts": [{"name": "shim-download", "mountPath": "/assets"}]
                }],
                "containers": [{
                    "name": "provisioner",
                    "image": "ghcr.io/spinframework/node-installer:latest",
                    "args": ["install", "-H", "/mnt/node-root", "-r", "spin-v2"],
                    "securityContext": {"privileged": true},
                    "env": [{"name": "HOST_ROOT", "value": "/mnt/node-root"}, {"name": "RUNTIME_OPTIONS", "value": "{\"SystemdCgroup\":\"true\"}"}],
                    "volumeMounts": [{"name": "root-mount", "mountPath": "/mnt/node-root"}, {"name": "shim-download", "mountPath": "/assets"}]
                }]
            }
        }),
    )
    .await;
    let spec = pod.spec.clone().expect("the pod has a spec");
    let (download_time, downloaded) = run(
        &world,
        &pod,
        &spec.init_containers.unwrap_or_default()[0],
        true,
    );
    assert!(download_time.is_some_and(|t| t > world.scenario.registry.latency));
    assert_eq!(downloaded.exit_code, 0, "{downloaded:?}");

    let (_, installed) = run(&world, &pod, &spec.containers[0], false);
    assert_eq!(installed.exit_code, 0, "{installed:?}");
    let machine = world.machines.get("worker-0").expect("the machine");
    assert_eq!(
        machine
            .shims
            .get("containerd-shim-spin-v2")
            .map(String::as_str),
        Some("/opt/rcm/bin/containerd-shim-spin-v2")
    );
    let config = &machine.containerd.config;
    assert!(
        config.starts_with(CONFIG),
        "the rest of the file is kept:\n{config}"
    );
    assert!(
        config.contains("[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.spin-v2]")
            && config.contains("runtime_type = \"/opt/rcm/bin/containerd-shim-spin-v2\"")
            && config.contains("SystemdCgroup = true"),
        "{config}"
    );
    assert_eq!(machine.containerd.restarts, 1);
    assert_eq!(machine.containerd.last_restart.as_deref(), Some("ok"));

    // The same Job run again finds nothing to change and leaves containerd alone.
    let (_, again) = run(&world, &pod, &spec.containers[0], false);
    assert_eq!(again.exit_code, 0);
    assert_eq!(
        world
            .machines
            .get("worker-0")
            .map(|m| m.containerd.restarts),
        Some(1)
    );
}

#[tokio::test]
async fn an_os_image_lists_the_kernel_it_boots_whatever_the_node_runs() {
    let (_cluster, world) = world().await;
    assert!(
        world.registry.exists("quay.io/os/rhcos@sha256:4150000000000000000000000000000000000000000000000000000000000000"),
        "a release's OS image is published with the release"
    );
    assert!(
        !world.registry.exists("registry.local/os/rhcos-layered:415"),
        "a layered OS image exists only once listed or built"
    );
    for (name, command) in [
        (
            "direct",
            serde_json::json!({"command": ["ls", "/usr/lib/modules"]}),
        ),
        (
            "shell",
            serde_json::json!({"command": ["/bin/sh", "-c"], "args": ["ls /usr/lib/modules"]}),
        ),
    ] {
        let mut container = serde_json::json!({"name": "kernel", "image": "quay.io/os/rhcos@sha256:4150000000000000000000000000000000000000000000000000000000000000"});
        container
            .as_object_mut()
            .expect("an object")
            .extend(command.as_object().expect("an object").clone());
        let pod = create(
            &world,
            "openshift-kmm",
            serde_json::json!({
                "metadata": {"name": format!("os-image-kernel-{name}")},
                "spec": {"nodeName": "worker-0", "restartPolicy": "Never", "containers": [container]}
            }),
        )
        .await;
        let spec = pod.spec.clone().expect("the pod has a spec");
        let (runs_for, outcome) = run(&world, &pod, &spec.containers[0], false);
        assert!(runs_for.is_some(), "{name}: the listing ends");
        assert_eq!(outcome.exit_code, 0, "{name}: {outcome:?}");
        assert_eq!(
            outcome.logs,
            ["5.14.0-362.el9.x86_64"],
            "{name}: the image's kernel, not the node's {KERNEL}"
        );
    }
}
