//! Node objects and node status as a kubelet reports them: labels, taints and pod CIDR at registration; then
//! conditions, addresses, capacity (with the devices of running device plugins), nodeInfo and the image list,
//! rewritten only when something in them changes.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hasher};

use k8s_openapi::api::core::v1::{
    ContainerImage, DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints,
    NodeSpec, NodeStatus, NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;

use super::ids;
use crate::World;
use crate::machine::Machine;
use crate::scenario::NodeGroup;

/// The patch release of the kubelet every simulated node reports; its minor version is the one the API server
/// announces, as a cluster's kubelets are not newer than its server.
const KUBELET_PATCH: u32 = 2;

/// Cores per node.
const CPUS: u32 = 8;
/// Memory per node, in KiB (32 GiB less what firmware keeps), and what system daemons reserve of it.
const MEMORY_KIB: u64 = 32_813_568;
const RESERVED_MEMORY_KIB: u64 = 1_048_576;
/// Pods per node.
const MAX_PODS: u32 = 110;
/// Disk use (percent) above which the kubelet reports DiskPressure (its `nodefs.available<10%` eviction signal).
const DISK_PRESSURE_PERCENT: u64 = 90;

/// The node's InternalIP.
pub(super) fn internal_ip(index: usize) -> String {
    format!("10.0.{}.{}", index / 250, index % 250 + 2)
}

/// The node's pod CIDR (a /24 per node).
fn pod_cidr(index: usize) -> String {
    format!("10.{}.{}.0/24", 128 + index / 256, index % 256)
}

/// A pod IP of the node's pod CIDR; `host` is the last octet.
pub(super) fn pod_ip(index: usize, host: u8) -> String {
    format!("10.{}.{}.{host}", 128 + index / 256, index % 256)
}

/// The Node object a kubelet registers for a machine of `group`.
pub(super) fn new_object(
    world: &World,
    group: &NodeGroup,
    machine: &Machine,
    index: usize,
) -> Node {
    let mut labels = group.labels.clone();
    // A scenario may set the hostname label, as kubelet's --hostname-override does.
    labels
        .entry("kubernetes.io/hostname".into())
        .or_insert_with(|| machine.name.clone());
    labels.insert("kubernetes.io/os".into(), machine.operating_system.clone());
    labels.insert("kubernetes.io/arch".into(), machine.architecture.clone());
    // The Machine Config Operator assigns pools by role label, as on OpenShift.
    if let Some(pool) = &group.pool {
        labels.insert(format!("node-role.kubernetes.io/{pool}"), String::new());
    }
    let annotations = BTreeMap::from([
        ("node.alpha.kubernetes.io/ttl".to_string(), "0".to_string()),
        (
            "volumes.kubernetes.io/controller-managed-attach-detach".to_string(),
            "true".to_string(),
        ),
    ]);
    let taints: Vec<Taint> = group
        .taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.clone(),
            time_added: None,
        })
        .collect();
    Node {
        metadata: ObjectMeta {
            name: Some(machine.name.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(pod_cidr(index)),
            pod_cidrs: Some(vec![pod_cidr(index)]),
            taints: (!taints.is_empty()).then_some(taints),
            ..Default::default()
        }),
        status: Some(status(world, machine, index, None)),
    }
}

/// What a kubelet keeps of the status it last wrote for its node: a fingerprint of the whole of it, to tell whether
/// a new status says anything new; its conditions, whose times carry over while they hold; and the names of the
/// resources it offered, so that one that went is written as null. The status itself (image list, nodeInfo,
/// addresses, quantities) cost about 4 KB a node to keep: 19 MiB on 5,000 nodes, beside the API server's copy.
#[derive(Clone, Debug, Default)]
pub(super) struct WrittenStatus {
    fingerprint: u64,
    conditions: Vec<NodeCondition>,
    capacity: Vec<String>,
    allocatable: Vec<String>,
}

impl WrittenStatus {
    /// What is kept of `status`, as written.
    pub(super) fn of(status: &NodeStatus) -> Self {
        let names = |resources: &Option<BTreeMap<String, Quantity>>| {
            resources
                .iter()
                .flatten()
                .map(|(name, _)| name.clone())
                .collect()
        };
        Self {
            fingerprint: fingerprint(status),
            conditions: status.conditions.clone().unwrap_or_default(),
            capacity: names(&status.capacity),
            allocatable: names(&status.allocatable),
        }
    }

    /// Whether `status` says exactly what the written one did.
    pub(super) fn says_the_same(&self, status: &NodeStatus) -> bool {
        self.fingerprint == fingerprint(status)
    }

    /// The resources the written status offered that `status` does not, each with its field (`capacity` or
    /// `allocatable`): a device plugin that went.
    pub(super) fn gone<'a>(
        &'a self,
        status: &'a NodeStatus,
    ) -> impl Iterator<Item = (&'static str, &'a str)> {
        [
            ("capacity", &self.capacity, &status.capacity),
            ("allocatable", &self.allocatable, &status.allocatable),
        ]
        .into_iter()
        .flat_map(|(field, before, now)| {
            before
                .iter()
                .filter(move |name| !now.as_ref().is_some_and(|now| now.contains_key(*name)))
                .map(move |name| (field, name.as_str()))
        })
    }
}

/// A hash of a status's JSON: two statuses serialise alike exactly when they are equal.
fn fingerprint(status: &NodeStatus) -> u64 {
    /// Feeds the serialiser's output straight into the hasher, with no buffer between.
    struct Hashing(DefaultHasher);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(DefaultHasher::new());
    // Serialising a typed status into a writer that cannot fail does not fail.
    let _ = serde_json::to_writer(&mut hashing, status);
    hashing.0.finish()
}

/// The status of a machine's node. Condition times carry over from `previous` where the condition did not change,
/// so a status that says nothing new matches `previous` and need not be written.
pub(super) fn status(
    world: &World,
    machine: &Machine,
    index: usize,
    previous: Option<&WrittenStatus>,
) -> NodeStatus {
    let now = Time(jiff::Timestamp::now());
    let not_ready_fault = world
        .faults
        .node_not_ready(&machine.name, world.clock.now());
    let fresh = conditions(machine, not_ready_fault);
    let before = previous.map_or(&[][..], |p| &p.conditions);
    let unchanged = |c: &NodeCondition| {
        before
            .iter()
            .find(|p| p.type_ == c.type_)
            .filter(|p| p.status == c.status && p.reason == c.reason && p.message == c.message)
    };
    let devices = world.device_plugins.offered(&machine.name);
    let conditions = fresh
        .into_iter()
        .map(|mut c| {
            let kept = unchanged(&c);
            c.last_transition_time = Some(
                kept.and_then(|p| p.last_transition_time.clone())
                    .unwrap_or_else(|| now.clone()),
            );
            c.last_heartbeat_time = Some(
                kept.and_then(|p| p.last_heartbeat_time.clone())
                    .unwrap_or_else(|| now.clone()),
            );
            c
        })
        .collect();
    let mut status = NodeStatus {
        conditions: Some(conditions),
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".into(),
                address: internal_ip(index),
            },
            NodeAddress {
                type_: "Hostname".into(),
                address: machine.name.clone(),
            },
        ]),
        capacity: Some(with_devices(capacity(machine), &devices)),
        allocatable: Some(with_devices(allocatable(machine), &devices)),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
        }),
        node_info: Some(node_info(machine, world.server.kubernetes_minor())),
        images: Some(reported_images(
            machine,
            world.scenario.kubelet.node_status_max_images,
        )),
        ..Default::default()
    };
    if !previous.is_some_and(|p| p.says_the_same(&status)) {
        for c in status.conditions.iter_mut().flatten() {
            c.last_heartbeat_time = Some(now.clone());
        }
    }
    status
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> NodeCondition {
    NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: None,
        last_transition_time: None,
    }
}

/// The standard conditions. A node whose kubelet is cut off has every condition Unknown, as the node lifecycle
/// controller marks it; a machine that is down (rebooting) is not Ready.
fn conditions(machine: &Machine, cut_off: bool) -> Vec<NodeCondition> {
    if cut_off {
        return ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
            .into_iter()
            .map(|t| {
                condition(
                    t,
                    "Unknown",
                    "NodeStatusUnknown",
                    "Kubelet stopped posting node status.",
                )
            })
            .collect();
    }
    let disk_pressure =
        machine.images.used_bytes() * 100 > machine.disk_bytes * DISK_PRESSURE_PERCENT;
    vec![
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        if disk_pressure {
            condition(
                "DiskPressure",
                "True",
                "KubeletHasDiskPressure",
                "kubelet has disk pressure",
            )
        } else {
            condition(
                "DiskPressure",
                "False",
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure",
            )
        },
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        if machine.ready {
            condition(
                "Ready",
                "True",
                "KubeletReady",
                "kubelet is posting ready status",
            )
        } else {
            condition(
                "Ready",
                "False",
                "KubeletNotReady",
                "container runtime is down",
            )
        },
    ]
}

fn quantities(pairs: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.clone())))
        .collect()
}

fn capacity(machine: &Machine) -> BTreeMap<String, Quantity> {
    quantities(&[
        ("cpu", CPUS.to_string()),
        (
            "ephemeral-storage",
            format!("{}Ki", machine.disk_bytes / 1024),
        ),
        ("hugepages-1Gi", "0".into()),
        ("hugepages-2Mi", "0".into()),
        ("memory", format!("{MEMORY_KIB}Ki")),
        ("pods", MAX_PODS.to_string()),
    ])
}

fn allocatable(machine: &Machine) -> BTreeMap<String, Quantity> {
    quantities(&[
        ("cpu", format!("{}m", CPUS * 1000 - 500)),
        (
            "ephemeral-storage",
            (machine.disk_bytes / 10 * 9).to_string(),
        ),
        ("hugepages-1Gi", "0".into()),
        ("hugepages-2Mi", "0".into()),
        ("memory", format!("{}Ki", MEMORY_KIB - RESERVED_MEMORY_KIB)),
        ("pods", MAX_PODS.to_string()),
    ])
}

/// The node's own resources plus the devices its running device plugins advertise (all allocatable: the
/// simulated kubelet reserves none of them).
fn with_devices(
    mut resources: BTreeMap<String, Quantity>,
    devices: &BTreeMap<String, u64>,
) -> BTreeMap<String, Quantity> {
    for (resource, count) in devices {
        resources.insert(resource.clone(), Quantity(count.to_string()));
    }
    resources
}

fn node_info(machine: &Machine, minor: u32) -> NodeSystemInfo {
    NodeSystemInfo {
        architecture: machine.architecture.clone(),
        boot_id: machine.boot_id.clone(),
        container_runtime_version: format!("containerd://{}", machine.containerd.version),
        kernel_version: machine.kernel_version.clone(),
        kube_proxy_version: String::new(),
        kubelet_version: format!("v1.{minor}.{KUBELET_PATCH}"),
        machine_id: ids::hex(&["machine-id", &machine.name], 32),
        operating_system: machine.operating_system.clone(),
        os_image: machine.os_image.clone(),
        system_uuid: ids::uuid(&["system-uuid", &machine.name]),
        swap: None,
    }
}

/// The images a kubelet reports: largest first, at most `max` of them.
pub(super) fn reported_images(machine: &Machine, max: usize) -> Vec<ContainerImage> {
    let mut images: Vec<(&String, u64)> = machine
        .images
        .iter()
        .map(|(name, image)| (name, image.size_bytes))
        .collect();
    images.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    images
        .into_iter()
        .take(max)
        .map(|(name, size)| ContainerImage {
            names: Some(vec![ids::image_digest(name, None), name.clone()]),
            size_bytes: Some(size as i64),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(ready: &str, gpus: Option<u64>) -> NodeStatus {
        let mut resources = quantities(&[("cpu", "8".into()), ("pods", "110".into())]);
        if let Some(gpus) = gpus {
            resources.insert("example.com/gpu".into(), Quantity(gpus.to_string()));
        }
        NodeStatus {
            conditions: Some(vec![condition("Ready", ready, "KubeletReady", "ready")]),
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            images: Some(vec![ContainerImage {
                names: Some(vec!["quay.io/a/b:1".into()]),
                size_bytes: Some(1),
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn a_written_status_matches_only_a_status_that_says_the_same() {
        let written = WrittenStatus::of(&status("True", Some(2)));
        assert!(written.says_the_same(&status("True", Some(2))));
        assert!(!written.says_the_same(&status("False", Some(2))));
        assert!(!written.says_the_same(&status("True", Some(3))));
        let mut fewer_images = status("True", Some(2));
        fewer_images.images = Some(Vec::new());
        assert!(!written.says_the_same(&fewer_images));
        assert_eq!(
            written.conditions[0].status, "True",
            "conditions kept for their times"
        );
    }

    #[test]
    fn resources_a_written_status_offered_and_a_new_one_does_not_are_gone() {
        let written = WrittenStatus::of(&status("True", Some(2)));
        assert_eq!(written.gone(&status("True", Some(1))).count(), 0);
        let without_gpus = status("True", None);
        let gone: Vec<_> = written.gone(&without_gpus).collect();
        assert_eq!(
            gone,
            [
                ("capacity", "example.com/gpu"),
                ("allocatable", "example.com/gpu")
            ]
        );
    }
}
