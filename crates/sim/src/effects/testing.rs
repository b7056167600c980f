//! Worlds, machines and pods for the effects' unit tests.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use super::super::World;
use super::super::machine::{Containerd, ImageStore, Machine};
use super::super::scenario::Scenario;
use super::{ContainerRun, Outcome, Plan, finish, plan};
use kmm_apiserver::apiserver::ApiServer;
use kmm_apiserver::store::Store;

/// The scenario of the unit tests: a registry with a few images and shim artifacts.
pub(super) const SCENARIO: &str = r#"
seed: 3
nodes:
  - namePrefix: worker-
    count: 2
    kernelVersion: 5.14.0-284.el9.x86_64
    osImage: RHCOS 414
    draDevices:
      - {driver: gpu.example.com, module: acme-gpu, count: 2, attributes: {model: A100}, capacity: {memory: 40Gi}}
registry:
  latency: 1s
  bandwidthMiBPerSecond: 10
  images:
    - {name: quay.io/org/kmm-ci:unsigned, sizeMiB: 30}
  shims:
    - {url: "https://example.com/spin-v2.tar.gz", binary: containerd-shim-spin-v2, sha256: "ab12"}
    - {url: "https://example.com/lunatic.tar.gz", binary: containerd-shim-lunatic-v1}
faults:
  - {kind: containerdRestartFailure, nodes: [worker-1], times: 1}
  - {kind: buildFailure, image: "quay.io/org/broken:1", times: 1}
  - {kind: registryOutage, from: 1h, to: 2h}
"#;

/// A world on an API server without controllers (the effects never call the API), with a machine per node whose
/// containerd configuration is `config`.
pub(super) fn world_with_config(config: &str) -> Arc<World> {
    let scenario = match Scenario::parse(SCENARIO, "effects-test", None) {
        Ok(scenario) => scenario,
        Err(e) => panic!("{e}"),
    };
    let server = ApiServer::new(Arc::new(Store::in_memory(100)));
    let client = kube::Client::new(server.clone(), "default");
    let world = World::new(server, client, scenario, None, None);
    {
        let mut machines = world.machines.lock();
        for name in world.scenario.node_names() {
            machines.insert(name.clone(), machine(&name, config));
        }
    }
    world
}

/// A world whose machines have a containerd 1.7 configuration with no runtime but runc.
pub(super) fn world() -> Arc<World> {
    world_with_config("version = 2\n")
}

fn machine(name: &str, config: &str) -> Machine {
    Machine {
        name: name.to_string(),
        kernel_version: "5.14.0-284.el9.x86_64".into(),
        os_image: "RHCOS 414".into(),
        os_image_url: None,
        boot_id: "boot-1".into(),
        architecture: "amd64".into(),
        operating_system: "linux".into(),
        disk_bytes: 100 << 30,
        modules: BTreeSet::new(),
        shims: BTreeMap::new(),
        containerd: Containerd {
            version: "1.7.13".into(),
            config_path: "/etc/containerd/config.toml".into(),
            config: config.to_string(),
            restarts: 0,
            last_restart: None,
        },
        images: ImageStore::default(),
        ready: true,
    }
}

/// A pod from YAML, as a client would send it.
pub(super) fn pod_from_yaml(yaml: &str) -> Pod {
    match serde_saphyr::from_str(yaml) {
        Ok(pod) => pod,
        Err(e) => panic!("{e}\n{yaml}"),
    }
}

/// Call `with` on the run of the named container of the pod (init or not), on its node (`worker-0` when unset).
fn with_run<R>(
    pod: &Pod,
    name: &str,
    in_use: &BTreeSet<String>,
    with: impl FnOnce(&ContainerRun) -> R,
) -> R {
    let spec = pod.spec.as_ref().expect("the pod has a spec");
    let node = spec.node_name.as_deref().unwrap_or("worker-0");
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .find(|c| c.name == name);
    let (container, is_init) = match init {
        Some(c) => (c, true),
        None => (
            spec.containers
                .iter()
                .find(|c| c.name == name)
                .expect("the pod has the container"),
            false,
        ),
    };
    with(&ContainerRun {
        node,
        pod,
        container,
        init: is_init,
        images_in_use: in_use,
    })
}

/// Finish the named container, with no image in use on the node.
pub(super) fn run_container(world: &World, pod: &Pod, name: &str) -> Outcome {
    finish_with_images_in_use(world, pod, name, &BTreeSet::new())
}

/// Finish the named container, with these images in use on the node.
pub(super) fn finish_with_images_in_use(
    world: &World,
    pod: &Pod,
    name: &str,
    in_use: &BTreeSet<String>,
) -> Outcome {
    with_run(pod, name, in_use, |run| finish(world, run))
}

/// Plan the named container.
pub(super) fn plan_container(world: &World, pod: &Pod, name: &str) -> Plan {
    with_run(pod, name, &BTreeSet::new(), |run| plan(world, run))
}

/// The machine's loaded modules.
pub(super) fn machine_modules(world: &World, node: &str) -> Vec<String> {
    world
        .machines
        .get(node)
        .map(|m| m.modules.into_iter().collect())
        .unwrap_or_default()
}
