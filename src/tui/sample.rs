//! Deterministic data for snapshots, benchmarks and screenshots: a cluster of `nodes` nodes and `modules` Modules in
//! every state the console explains (available, building, loading and unloading, degraded, nodes tainted, cordoned,
//! not ready, on an unmapped kernel), with their ModuleImagesConfigs, NodeModulesConfigs, pods and events, a Shim in
//! every rollout state with its installer pods, node labels and events, and three ImageCaches (complete, pulling,
//! degraded; see [`caches`]), all timed against the fixed [`now`]. ModuleDay0s and their pools come only with
//! [`day0::add`], so the other panes' pictures stay as they are. The same arguments always give the same data, so
//! pictures of it never drift. [`fleet`] makes a fleet of such clusters.

mod shims;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

mod caches;
pub mod day0;
pub mod fleet;
pub mod preflight;

use crate::tui::data::{ClusterData, KindSnapshot};
use kmm_api::kmm::labels;
use kmm_engine::kmm::kernel;
use kmm_engine::runtime::object_names;

/// The kernels of the sample's nodes: two with a mapping in every Module, one with none.
const KERNELS: [(&str, &str); 3] = [
    (
        "5.14.0-284.30.1.el9_2.x86_64",
        "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)",
    ),
    (
        "5.14.0-362.8.1.el9_3.x86_64",
        "Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)",
    ),
    ("6.1.0-18-amd64", "Debian GNU/Linux 12 (bookworm)"),
];

/// Namespaces the sample's Modules live in, in turn.
const NAMESPACES: [&str; 3] = ["kmm-accel", "kmm-net", "kmm-storage"];

/// Module names, in turn; the sixth Module onwards adds a number.
const MODULE_NAMES: [&str; 5] = [
    "acme-accel",
    "nvme-tuning",
    "smartnic",
    "dma-engine",
    "fpga-mgr",
];

/// The node label the sample's Module selectors use.
const POOL_LABEL: &str = "kmm.sample/pool";

/// The instant every age in the sample is measured from: 2025-03-01T12:00:00Z.
pub fn now() -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_740_830_400).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// What a sample Module is going through; the Module's index picks one in turn.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Story {
    /// Loaded everywhere it can be.
    Available,
    /// The image for the second kernel is being built.
    Building,
    /// Some nodes are still loading; tainted nodes are unloading.
    Loading,
    /// The image for the second kernel does not exist and nothing builds it.
    Degraded,
}

impl Story {
    fn of(index: usize) -> Story {
        match index % 5 {
            1 => Story::Building,
            2 => Story::Loading,
            3 => Story::Degraded,
            _ => Story::Available,
        }
    }
}

/// A sample node's facts.
struct SampleNode {
    index: usize,
    name: String,
    kernel: usize,
    pool: String,
    tainted: bool,
    ready: bool,
    cordoned: bool,
}

impl SampleNode {
    fn of(index: usize, pools: usize) -> SampleNode {
        SampleNode {
            index,
            name: format!("worker-{index:04}"),
            kernel: match index % 10 {
                0..=5 => 0,
                6..=8 => 1,
                _ => 2,
            },
            pool: pool(index % pools),
            tainted: index % 50 == 7,
            ready: index % 97 != 13,
            cordoned: index % 61 == 5,
        }
    }
}

fn pool(index: usize) -> String {
    format!("pool-{index:02}")
}

/// Seconds before [`now`], as an RFC 3339 time.
fn ago(seconds: i64) -> String {
    let at = jiff::Timestamp::from_second(now().as_second() - seconds).unwrap_or(now());
    at.to_string()
}

/// The sample cluster: `modules` Modules over `nodes` nodes. Nodes fall into pools of about a hundred (at most
/// fifty pools) and each Module selects one pool, so a large sample stays as dense as a real one.
pub fn sample(modules: usize, nodes: usize) -> ClusterData {
    let pools = nodes.div_ceil(100).clamp(1, 50);
    let sample_nodes: Vec<SampleNode> = (0..nodes).map(|i| SampleNode::of(i, pools)).collect();
    let mut data = ClusterData::default();
    let mut lists = ModuleLists {
        nmc_spec: vec![Vec::new(); nodes],
        nmc_status: vec![Vec::new(); nodes],
        ..ModuleLists::default()
    };
    let sample_shims = shims::shims(&sample_nodes);
    lists.pods.extend(sample_shims.pods);
    lists.events.extend(sample_shims.events);
    for index in 0..modules {
        add_module(index, pools, &sample_nodes, &mut lists);
    }
    let ModuleLists {
        modules: module_list,
        mics,
        mut pods,
        mut events,
        nmc_spec,
        nmc_status,
    } = lists;
    data.apply(KindSnapshot::Modules(module_list));
    data.apply(KindSnapshot::ModuleImagesConfigs(mics));
    data.apply(KindSnapshot::NodeModulesConfigs(
        sample_nodes
            .iter()
            .zip(nmc_spec.into_iter().zip(nmc_status))
            .filter(|(_, (spec, status))| !spec.is_empty() || !status.is_empty())
            .map(|(node, (spec, status))| {
                object(json!({
                    "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "NodeModulesConfig",
                    "metadata": {"name": node.name, "creationTimestamp": ago(3600)},
                    "spec": {"modules": spec},
                    "status": {"modules": status},
                }))
            })
            .collect(),
    ));
    data.apply(KindSnapshot::Nodes(
        sample_nodes
            .iter()
            .zip(&sample_shims.labels)
            .map(|(node, labels)| node_object(node, labels))
            .collect(),
    ));
    let cache_sample = caches::caches(&sample_nodes);
    pods.extend(cache_sample.pods);
    events.extend(cache_sample.events);
    data.apply(KindSnapshot::ImageCaches(cache_sample.caches));
    data.apply(KindSnapshot::Pods(pods));
    data.apply(KindSnapshot::Events(events));
    data.apply(KindSnapshot::Shims(sample_shims.shims));
    data.apply(KindSnapshot::ModuleDay0s(Vec::new()));
    data.apply(KindSnapshot::MachineConfigPools(Vec::new()));
    data.apply(KindSnapshot::MachineConfigs(Vec::new()));
    data.apply(KindSnapshot::PreflightValidations(Vec::new()));
    data
}

/// The objects the sample's Modules make, gathered Module by Module.
#[derive(Default)]
struct ModuleLists {
    modules: Vec<Arc<kmm_api::kmm::Module>>,
    mics: Vec<Arc<kmm_api::kmm::ModuleImagesConfig>>,
    pods: Vec<Arc<k8s_openapi::api::core::v1::Pod>>,
    events: Vec<Arc<k8s_openapi::api::events::v1::Event>>,
    /// Each node's NodeModulesConfig `spec.modules` and `status.modules`, by node index.
    nmc_spec: Vec<Vec<Value>>,
    nmc_status: Vec<Vec<Value>>,
}

/// Where one sample Module stands on its pool.
#[derive(Default)]
struct Placement {
    targeted: i32,
    desired: i32,
    available: i32,
    /// The kernels of the nodes it targets, by index into [`KERNELS`].
    kernels_used: BTreeSet<usize>,
}

/// Add the Module `index` of the sample, with its ModuleImagesConfig, its pods, its events and its entries in the
/// NodeModulesConfigs of its pool: the Module's [`Story`] decides how far it got.
fn add_module(index: usize, pools: usize, sample_nodes: &[SampleNode], lists: &mut ModuleLists) {
    let namespace = NAMESPACES[index % NAMESPACES.len()];
    let base = MODULE_NAMES[index % MODULE_NAMES.len()];
    let name = if index < MODULE_NAMES.len() {
        base.to_owned()
    } else {
        format!("{base}-{:03}", index / MODULE_NAMES.len())
    };
    let story = Story::of(index);
    let selected = pool(index % pools);
    let image_of = |kernel: usize| format!("quay.io/acme/{base}:{}", KERNELS[kernel].0);
    let exists = |kernel: usize| kernel == 0 || matches!(story, Story::Available | Story::Loading);
    let placement = place(
        namespace,
        &name,
        base,
        story,
        &selected,
        sample_nodes,
        lists,
    );
    let Placement {
        targeted,
        desired,
        available,
        kernels_used,
    } = placement;
    let images: Vec<usize> = kernels_used.iter().copied().collect();
    let existing = images.iter().filter(|k| exists(**k)).count();
    let seconds = 40 + 3 * i64::try_from(index).unwrap_or(0);
    image_story(namespace, &name, base, story, &images, seconds, lists);
    if let Some(node) = sample_nodes
        .iter()
        .find(|n| n.pool == selected && n.kernel == 0 && !n.tainted && n.ready)
        && available > 0
    {
        lists.events.push(event(
            "Node",
            None,
            &node.name,
            false,
            "ModuleLoaded",
            &format!("Module {namespace}/{name} loaded into the kernel"),
            seconds + 2,
        ));
    }
    lists.mics.push(object(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleImagesConfig",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": ago(3600)},
        "spec": {"images": images.iter().map(|k| json!({
            "image": image_of(*k), "kernelVersion": KERNELS[*k].0, "generation": 1,
        })).collect::<Vec<_>>()},
        "status": {
            "imagesStates": images.iter().map(|k| json!({
                "image": image_of(*k),
                "status": match (*k, story) {
                    (1, Story::Building) => "NeedsBuilding",
                    (1, Story::Degraded) => "DoesNotExist",
                    _ => "Exists",
                },
                "observedGeneration": 1,
            })).collect::<Vec<_>>(),
            "existingImages": existing, "totalImages": images.len(),
        },
    })));
    lists.modules.push(object(json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": ago(3600),
            "generation": 1, "uid": format!("uid-module-{index}")},
        "spec": {
            "selector": {POOL_LABEL: selected},
            "moduleLoader": {"container": {
                "modprobe": {"moduleName": base.replace('-', "_")},
                "kernelMappings": [
                    {"literal": KERNELS[0].0, "containerImage": image_of(0)},
                    {"regexp": "^.+\\.el9_3\\.x86_64$",
                     "containerImage": format!("quay.io/acme/{base}:${{KERNEL_FULL_VERSION}}")},
                ],
            }},
        },
        "status": {
            "moduleLoader": {"nodesMatchingSelectorNumber": targeted, "desiredNumber": desired,
                "availableNumber": available},
            "kernels": kernels_used.iter().map(|k| KERNELS[*k].0).collect::<Vec<_>>(),
            "conditions": conditions(story, &image_of(1), available, targeted),
        },
    })));
}

/// What the image side of a Module's `story` left behind: the ModuleImagesConfig's latest event and, while an
/// image builds, the build pod and its event.
fn image_story(
    namespace: &str,
    name: &str,
    base: &str,
    story: Story,
    images: &[usize],
    seconds: i64,
    lists: &mut ModuleLists,
) {
    let image_of = |kernel: usize| format!("quay.io/acme/{base}:{}", KERNELS[kernel].0);
    let (warning, reason, note) = match story {
        Story::Building => (
            false,
            "BuildRequested",
            format!(
                "image {} is not in the registry; building it for kernel {}",
                image_of(1),
                KERNELS[1].0
            ),
        ),
        Story::Degraded => (
            true,
            "ImageMissing",
            format!(
                "image {} for kernel {} does not exist: not in the registry",
                image_of(1),
                KERNELS[1].0
            ),
        ),
        _ => (
            false,
            "ImageExists",
            format!("image {} exists (generation 1)", image_of(0)),
        ),
    };
    lists.events.push(event(
        "ModuleImagesConfig",
        Some(namespace),
        name,
        warning,
        reason,
        &note,
        seconds,
    ));
    if story == Story::Building && images.contains(&1) {
        let pod_name = object_names::build_pod_name(name, &kernel::dns_safe(KERNELS[1].0));
        lists.events.push(event(
            "Pod",
            Some(namespace),
            &pod_name,
            false,
            "Started",
            "Started container build",
            seconds + 1,
        ));
        lists.pods.push(object(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": namespace, "creationTimestamp": ago(180),
                "labels": {labels::MODULE_NAME: name, labels::RESOURCE_TYPE: "BuildImage",
                    labels::TARGET_KERNEL: kernel::dns_safe(KERNELS[1].0)}},
            "spec": {"containers": [{"name": "build", "image": "gcr.io/kaniko-project/executor:v1.23.2"}]},
            "status": {"phase": "Running"},
        })));
    }
}

/// Place the Module `name` on the nodes of its pool `selected`: which nodes it targets, where it is configured,
/// loaded, loading or (a tainted node) unloading, as its `story` has it.
fn place(
    namespace: &str,
    name: &str,
    base: &str,
    story: Story,
    selected: &str,
    sample_nodes: &[SampleNode],
    lists: &mut ModuleLists,
) -> Placement {
    let image_of = |kernel: usize| format!("quay.io/acme/{base}:{}", KERNELS[kernel].0);
    let exists = |kernel: usize| kernel == 0 || matches!(story, Story::Available | Story::Loading);
    let mut placement = Placement::default();
    for (position, node) in sample_nodes.iter().enumerate() {
        if node.pool != selected {
            continue;
        }
        let config = || module_config(name, &image_of(node.kernel), KERNELS[node.kernel].0);
        if node.tainted {
            if story == Story::Loading {
                lists.nmc_status[position].push(json!({
                    "name": name, "namespace": namespace, "serviceAccountName": "default",
                    "config": config(), "bootId": "boot-1",
                }));
                lists
                    .pods
                    .push(worker_pod(namespace, name, &node.name, "Unload", "Running"));
            }
            continue;
        }
        placement.targeted += 1;
        if node.kernel == 2 {
            continue;
        }
        placement.kernels_used.insert(node.kernel);
        if !exists(node.kernel) {
            continue;
        }
        placement.desired += 1;
        lists.nmc_spec[position].push(json!({
            "name": name, "namespace": namespace, "serviceAccountName": "default", "config": config(),
        }));
        let loading = story == Story::Loading && position % 7 == 0;
        if loading {
            let phase = if position % 2 == 0 {
                "Running"
            } else {
                "Pending"
            };
            lists
                .pods
                .push(worker_pod(namespace, name, &node.name, "Load", phase));
        } else if node.ready {
            placement.available += 1;
            lists.nmc_status[position].push(json!({
                "name": name, "namespace": namespace, "serviceAccountName": "default",
                "config": config(), "bootId": "boot-1",
            }));
        }
    }
    placement
}

/// The sample as the watch tasks would deliver it: one whole list per kind.
pub fn snapshots(data: &ClusterData) -> Vec<KindSnapshot> {
    vec![
        KindSnapshot::Modules(data.modules.clone()),
        KindSnapshot::ModuleImagesConfigs(data.mics.clone()),
        KindSnapshot::NodeModulesConfigs(data.nmcs.clone()),
        KindSnapshot::Nodes(data.nodes.clone()),
        KindSnapshot::Pods(data.pods.clone()),
        KindSnapshot::Events(data.events.clone()),
        KindSnapshot::Shims(data.shims.clone()),
        KindSnapshot::ImageCaches(data.caches.clone()),
        KindSnapshot::ModuleDay0s(data.day0s.clone()),
        KindSnapshot::MachineConfigPools(data.pools.clone()),
        KindSnapshot::MachineConfigs(data.machine_configs.clone()),
        KindSnapshot::PreflightValidations(data.preflights.clone()),
        KindSnapshot::ResourceSlices(data.slices.clone()),
        KindSnapshot::ResourceClaims(data.claims.clone()),
    ]
}

/// The engine Lease as held by `holder`, renewed at [`now`], so the header can say who acts.
pub fn engine_lease(holder: &str) -> Arc<k8s_openapi::api::coordination::v1::Lease> {
    object(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": kmm_api::lease::DEFAULT_LEASE_NAME,
                     "namespace": kmm_api::lease::DEFAULT_LEASE_NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": now().to_string()},
    }))
}

/// A typed object from a literal of this file. The literals are fixed, and the unit test below reads every kind,
/// so a literal that does not fit its type is caught before anything uses it.
fn object<T: DeserializeOwned>(value: Value) -> Arc<T> {
    match serde_json::from_value(value) {
        Ok(object) => Arc::new(object),
        Err(error) => panic!("a sample literal does not fit its type: {error}"),
    }
}

fn module_config(name: &str, image: &str, kernel: &str) -> Value {
    json!({
        "kernelVersion": kernel, "containerImage": image, "imagePullPolicy": "IfNotPresent", "insecurePull": false,
        "modprobe": {"moduleName": name.replace('-', "_")},
    })
}

fn conditions(story: Story, missing_image: &str, available: i32, targeted: i32) -> Value {
    let time = ago(600);
    let condition = |type_: &str, status: bool, reason: &str, message: String| {
        json!({"type": type_, "status": if status { "True" } else { "False" }, "reason": reason,
            "message": message, "lastTransitionTime": time, "observedGeneration": 1})
    };
    let summary = format!("loaded on {available} of {targeted} targeted nodes");
    match story {
        Story::Available => json!([
            condition("Available", true, "Loaded", summary),
            condition("Progressing", false, "Idle", String::new()),
            condition("Degraded", false, "AsExpected", String::new()),
        ]),
        Story::Building => {
            let why = format!("ImageMissing: {missing_image} NeedsBuilding");
            json!([
                condition(
                    "Available",
                    false,
                    "ImageMissing",
                    format!("{summary}. {why}")
                ),
                condition("Progressing", true, "ImageMissing", why),
                condition("Degraded", false, "AsExpected", String::new()),
            ])
        }
        Story::Loading => {
            let why = format!("Loading: loaded on {available} of the nodes with an entry");
            json!([
                condition("Available", false, "Loading", format!("{summary}. {why}")),
                condition("Progressing", true, "Loading", why),
                condition("Degraded", false, "AsExpected", String::new()),
            ])
        }
        Story::Degraded => {
            let why = format!(
                "ImageMissing: {missing_image} DoesNotExist and the Module has no build section for it"
            );
            json!([
                condition(
                    "Available",
                    false,
                    "ImageMissing",
                    format!("{summary}. {why}")
                ),
                condition("Progressing", false, "Idle", String::new()),
                condition("Degraded", true, "ImageMissing", why),
            ])
        }
    }
}

fn worker_pod(
    namespace: &str,
    module: &str,
    node: &str,
    action: &str,
    phase: &str,
) -> Arc<k8s_openapi::api::core::v1::Pod> {
    object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": object_names::worker_pod_name(node, module), "namespace": namespace,
            "creationTimestamp": ago(30),
            "labels": {labels::MODULE_NAME: module, labels::WORKER_ACTION: action}},
        "spec": {"nodeName": node, "containers": [{"name": "worker", "image": "quay.io/kmm/worker:v2"}]},
        "status": {"phase": phase},
    }))
}

fn node_object(
    node: &SampleNode,
    shim_labels: &BTreeMap<String, String>,
) -> Arc<k8s_openapi::api::core::v1::Node> {
    let (kernel, os_image) = KERNELS[node.kernel];
    let taints = if node.tainted {
        json!([{"key": "maintenance", "value": "true", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    let mut labels = json!({"kubernetes.io/hostname": node.name, "node-role.kubernetes.io/worker": "",
        POOL_LABEL: node.pool, caches::GPU_LABEL: caches::gpu(node).to_string()});
    if let Some(labels) = labels.as_object_mut() {
        labels.extend(shim_labels.iter().map(|(k, v)| (k.clone(), json!(v))));
    }
    object(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "uid": format!("uid-{}", node.name), "creationTimestamp": ago(86_400 * 30),
            "labels": labels},
        "spec": {"taints": taints, "unschedulable": node.cordoned},
        "status": {
            "conditions": [{"type": "Ready", "status": if node.ready { "True" } else { "Unknown" },
                "reason": if node.ready { "KubeletReady" } else { "NodeStatusUnknown" }}],
            "nodeInfo": {"kernelVersion": kernel, "osImage": os_image, "bootID": "boot-1", "machineID": "",
                "systemUUID": "", "kubeletVersion": "v1.34.1", "kubeProxyVersion": "",
                "containerRuntimeVersion": "containerd://1.7.13", "operatingSystem": "linux",
                "architecture": "amd64"},
            "images": caches::node_images(node).iter().map(|name| json!({"names": [name], "sizeBytes": 73_400_320}))
                .collect::<Vec<_>>(),
        },
    }))
}

fn event(
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    warning: bool,
    reason: &str,
    note: &str,
    seconds_ago: i64,
) -> Arc<k8s_openapi::api::events::v1::Event> {
    object(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{reason}.{seconds_ago}").to_lowercase(),
            "namespace": namespace.unwrap_or("default"), "creationTimestamp": ago(seconds_ago)},
        "eventTime": ago(seconds_ago) ,
        "regarding": {"kind": kind, "namespace": namespace, "name": name},
        "type": if warning { "Warning" } else { "Normal" },
        "reason": reason, "note": note, "action": reason,
        "reportingController": "kmm-tui", "reportingInstance": "kmm-tui",
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_deterministic_and_complete() {
        let first = sample(10, 300);
        let second = sample(10, 300);
        assert_eq!(first.modules, second.modules);
        assert_eq!(first.nmcs, second.nmcs);
        assert_eq!(first.events, second.events);
        assert_eq!(first.shims, second.shims);
        assert_eq!(first.shims.len(), 5);
        assert_eq!(first.caches, second.caches);
        assert_eq!(first.caches.len(), 3);
        assert_eq!(first.modules.len(), 10);
        assert_eq!(first.nodes.len(), 300);
        assert_eq!(first.mics.len(), 10);
        assert!(first.loaded());
        assert!(!first.pods.is_empty() && !first.events.is_empty() && !first.nmcs.is_empty());
    }

    #[test]
    fn an_empty_sample_has_no_objects_but_is_loaded() {
        let data = sample(0, 0);
        assert!(data.modules.is_empty() && data.nodes.is_empty());
        assert!(data.loaded());
    }
}
