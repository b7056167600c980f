//! What a Module asks of the cluster right now, computed from the Module and the nodes alone: which nodes it
//! targets, which image each node's kernel gets, which nodes it skips and why, and which ordered-upgrade labels
//! move. Pure, so every rule is tested without a cluster.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Node;

use crate::kmm::kernel::{self, MappingError, ResolvedMapping};
use crate::runtime::nodes;
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, ModuleImageSpec, ModuleLoaderContainerSpec};

/// A node that should carry the module, with what to load there.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Node name.
    pub node: String,
    /// Node UID, for the NMC's owner reference.
    pub node_uid: String,
    /// Image and recipes for the node's kernel.
    pub mapping: ResolvedMapping,
}

/// Why a node matching the selector gets no entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A taint the Module does not tolerate.
    Taint(String),
    /// No kernel mapping matches the node's kernel.
    NoMapping(String),
    /// The node reports no kernel yet.
    NoKernel,
    /// The mappings cannot be applied (bad regexp, no image, unterminated template, short kernel): the node keeps
    /// the entry it has, as the new spec says nothing the engine can act on.
    BadMapping(String),
    /// Ordered upgrade: the node is not (yet) labelled for the Module's version.
    AwaitingVersion(String),
}

/// A node skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// Node name.
    pub node: String,
    /// Why.
    pub reason: SkipReason,
}

/// What the Module asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// Nodes that match the selector and tolerate nothing they should not (upstream's "targeted nodes").
    pub targeted: usize,
    /// Targeted nodes whose kernel has a mapping and whose entry may be (re)written.
    pub targets: Vec<Target>,
    /// Nodes whose existing entry is left alone while an ordered upgrade is in flight there.
    pub keep: BTreeSet<String>,
    /// Targeted nodes whose entry the spec cannot be prepared for (a mapping's typo, a missing reference): they
    /// keep the entry they have, so an error in an edit never unloads what runs.
    pub held: BTreeSet<String>,
    /// Nodes matching the selector that get no entry.
    pub skipped: Vec<Skip>,
    /// Images the MIC must check, one per distinct image, in node order.
    pub images: Vec<ModuleImageSpec>,
    /// Distinct kernels of the targeted nodes.
    pub kernels: Vec<String>,
    /// Ordered-upgrade labels (worker and schedule) to set (`Some`) or remove (`None`), per node and label key.
    pub version_labels: BTreeMap<String, BTreeMap<String, Option<String>>>,
}

impl Plan {
    /// Hold every target: the spec refers to something that is missing, so no entry is written from it and each
    /// node keeps the one it has.
    pub fn hold_targets(&mut self) {
        self.held
            .extend(self.targets.drain(..).map(|target| target.node));
    }
}

/// Compute the plan of `module` over `all_nodes`, as if no device plugin pod of it ran anywhere (what the console
/// explains a node by).
pub fn plan(module: &Module, container: &ModuleLoaderContainerSpec, all_nodes: &[&Node]) -> Plan {
    plan_with_plugins(module, container, all_nodes, &BTreeSet::new())
}

/// Compute the plan of `module` over `all_nodes`, where `plugin_nodes` still have a device plugin or DRA driver pod
/// of the module: their worker label stays until that pod is gone, so the old module is never unloaded under it.
pub fn plan_with_plugins(
    module: &Module,
    container: &ModuleLoaderContainerSpec,
    all_nodes: &[&Node],
    plugin_nodes: &BTreeSet<String>,
) -> Plan {
    let namespace = module.metadata.namespace.as_deref().unwrap_or_default();
    let name = module.metadata.name.as_deref().unwrap_or_default();
    let tolerations = nodes::with_internal_tolerations(&module.spec.tolerations);
    let version = container.version.as_deref().filter(|v| !v.is_empty());
    let mut plan = Plan::default();
    let mut kernels = BTreeSet::new();
    let mut seen_images = BTreeSet::new();
    // Nodes share a handful of kernels: each kernel's mappings are resolved (and their regexps compiled) once.
    let mut resolved: HashMap<&str, Result<Option<ResolvedMapping>, MappingError>> = HashMap::new();
    for node in all_nodes {
        if !nodes::matches_selector(node, &module.spec.selector) {
            continue;
        }
        let node_name = node.metadata.name.clone().unwrap_or_default();
        plan.version_labels.extend(
            version_label_change(node, namespace, name, plugin_nodes.contains(&node_name))
                .map(|(key, change)| (node_name.clone(), BTreeMap::from([(key, change)]))),
        );
        if let Some(taint) = nodes::blocking_taint(node, &tolerations) {
            plan.skipped.push(Skip {
                node: node_name,
                reason: SkipReason::Taint(nodes::describe_taint(taint)),
            });
            continue;
        }
        plan.targeted += 1;
        let Some(node_kernel) = kernel::node_kernel(node) else {
            plan.skipped.push(Skip {
                node: node_name,
                reason: SkipReason::NoKernel,
            });
            continue;
        };
        kernels.insert(node_kernel.to_owned());
        let resolution = resolved
            .entry(node_kernel)
            .or_insert_with(|| kernel::resolve(container, node_kernel, name, namespace));
        let mapping = match resolution.clone() {
            Ok(Some(mapping)) => mapping,
            Ok(None) => {
                plan.skipped.push(Skip {
                    node: node_name,
                    reason: SkipReason::NoMapping(node_kernel.to_owned()),
                });
                continue;
            }
            Err(error) => {
                plan.held.insert(node_name.clone());
                plan.skipped.push(Skip {
                    node: node_name,
                    reason: SkipReason::BadMapping(error.to_string()),
                });
                continue;
            }
        };
        if seen_images.insert(mapping.image.clone()) {
            plan.images.push(ModuleImageSpec {
                image: mapping.image.clone(),
                kernel_version: mapping.kernel.clone(),
                build: mapping.build.clone(),
                sign: mapping.sign.clone(),
                skip_wait_missing_image: false,
                registry_tls: mapping.registry_tls.clone(),
                dir_name: container.modprobe.dir_name.clone(),
            });
        }
        if let Some(version) = version {
            let worker_label = node_label(node, &labels::version_worker_pod(namespace, name));
            match worker_label {
                Some(label) if label == version => {}
                Some(_) => {
                    plan.keep.insert(node_name);
                    continue;
                }
                None => {
                    plan.skipped.push(Skip {
                        node: node_name,
                        reason: SkipReason::AwaitingVersion(version.to_owned()),
                    });
                    continue;
                }
            }
        }
        plan.targets.push(Target {
            node: node_name,
            node_uid: node.metadata.uid.clone().unwrap_or_default(),
            mapping,
        });
    }
    plan.kernels = kernels.into_iter().collect();
    plan
}

fn node_label<'n>(node: &'n Node, key: &str) -> Option<&'n str> {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// The ordered-upgrade step for one node, as upstream's version labels move: the worker label follows the user's
/// version label, but only moves to a new version once the old module is unloaded (the node's `ready` label is
/// gone); the schedule label (which places the version's device plugin or DRA driver) follows the worker label once
/// it is set, and goes first when the worker label is to move or go, and the worker label moves only once the
/// plugin or driver pod has left the node, so nothing of the old version runs while it is unloaded.
fn version_label_change(
    node: &Node,
    namespace: &str,
    name: &str,
    plugin_running: bool,
) -> Option<(String, Option<String>)> {
    let wanted = node_label(node, &labels::version_module(namespace, name));
    let worker_key = labels::version_worker_pod(namespace, name);
    let schedule_key = labels::version_schedule_pod(namespace, name);
    let worker = node_label(node, &worker_key);
    let schedule = node_label(node, &schedule_key);
    let loaded = node_label(node, &labels::node_ready(namespace, name)).is_some();
    match (wanted, worker, schedule) {
        // The worker label is to move or go: its schedule label goes first, then the worker label.
        (wanted, Some(worker), Some(_)) if wanted != Some(worker) => Some((schedule_key, None)),
        // The old version's device plugin or DRA driver must be gone before its module may be unloaded.
        (wanted, Some(worker), None) if wanted != Some(worker) && !plugin_running => {
            Some((worker_key, None))
        }
        (wanted, Some(worker), None) if wanted != Some(worker) => None,
        // The worker is on the wanted version: the schedule label follows it.
        (_, Some(worker), schedule) if schedule != Some(worker) => {
            Some((schedule_key, Some(worker.to_owned())))
        }
        // No worker label: a schedule label left over goes; the worker label comes once the old module is out.
        (_, None, Some(_)) => Some((schedule_key, None)),
        (Some(wanted), None, None) if !loaded => Some((worker_key, Some(wanted.to_owned()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(
        name: &str,
        kernel: &str,
        labels: serde_json::Value,
        taints: serde_json::Value,
    ) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "uid": format!("uid-{name}"), "labels": labels},
            "spec": {"taints": taints},
            "status": {"nodeInfo": {"kernelVersion": kernel, "bootID": "b", "machineID": "", "systemUUID": "",
                "kubeletVersion": "", "kubeProxyVersion": "", "containerRuntimeVersion": "", "operatingSystem": "linux",
                "architecture": "amd64", "osImage": ""}},
        }))
        .expect("node")
    }

    fn module(version: Option<&str>) -> Module {
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "kmod", "namespace": "ns"},
            "spec": {
                "selector": {"gpu": "yes"},
                "moduleLoader": {"container": {
                    "version": version,
                    "modprobe": {"moduleName": "kmod"},
                    "kernelMappings": [
                        {"literal": "5.14.0-1.el9", "containerImage": "q/kmod:${KERNEL_FULL_VERSION}"},
                        {"regexp": "^6\\.", "containerImage": "q/kmod6:${KERNEL_X}.${KERNEL_Y}"}
                    ]
                }}
            }
        }))
        .expect("module")
    }

    fn run(module: &Module, nodes: &[Node]) -> Plan {
        let container = &module
            .spec
            .module_loader
            .as_ref()
            .expect("loader")
            .container;
        plan(module, container, &nodes.iter().collect::<Vec<_>>())
    }

    #[test]
    fn targets_selected_nodes_with_one_image_per_kernel() {
        let nodes = [
            node("a", "5.14.0-1.el9", json!({"gpu": "yes"}), json!([])),
            node("b", "6.1.0-3", json!({"gpu": "yes"}), json!([])),
            node("c", "6.1.0-3", json!({"gpu": "yes"}), json!([])),
            node("d", "5.14.0-1.el9", json!({"gpu": "no"}), json!([])),
        ];
        let plan = run(&module(None), &nodes);
        assert_eq!(plan.targeted, 3);
        assert_eq!(
            plan.targets
                .iter()
                .map(|t| (t.node.as_str(), t.mapping.image.as_str()))
                .collect::<Vec<_>>(),
            [
                ("a", "q/kmod:5.14.0-1.el9"),
                ("b", "q/kmod6:6.1"),
                ("c", "q/kmod6:6.1")
            ]
        );
        assert_eq!(plan.images.len(), 2);
        assert_eq!(plan.kernels, ["5.14.0-1.el9", "6.1.0-3"]);
    }

    #[test]
    fn tainted_and_unmapped_nodes_are_skipped_with_their_reason() {
        let nodes = [
            node(
                "t",
                "5.14.0-1.el9",
                json!({"gpu": "yes"}),
                json!([{"key": "maintenance", "value": "true", "effect": "NoSchedule"}]),
            ),
            node("u", "4.18.0-1", json!({"gpu": "yes"}), json!([])),
        ];
        let plan = run(&module(None), &nodes);
        assert_eq!(plan.targeted, 1);
        assert!(plan.targets.is_empty());
        assert_eq!(
            plan.skipped,
            [
                Skip {
                    node: "t".into(),
                    reason: SkipReason::Taint("maintenance=true:NoSchedule".into())
                },
                Skip {
                    node: "u".into(),
                    reason: SkipReason::NoMapping("4.18.0-1".into())
                },
            ]
        );
    }

    #[test]
    fn a_node_whose_mapping_cannot_be_prepared_keeps_its_entry() {
        let mut typo = module(None);
        typo.spec
            .module_loader
            .as_mut()
            .expect("a loader")
            .container
            .kernel_mappings[0]
            .container_image = "q/kmod:${KERNEL_XYZ".into();
        let nodes = [
            node("a", "5.14.0-1.el9", json!({"gpu": "yes"}), json!([])),
            node("b", "6.1.0-3", json!({"gpu": "yes"}), json!([])),
        ];
        let plan = run(&typo, &nodes);
        assert_eq!(plan.held, BTreeSet::from(["a".to_owned()]));
        assert_eq!(
            plan.targets
                .iter()
                .map(|t| t.node.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert!(matches!(
            &plan.skipped[..],
            [Skip { node, reason: SkipReason::BadMapping(why) }]
                if node == "a" && why.contains("kernelMappings[0].containerImage")
        ));
    }

    #[test]
    fn ordered_upgrade_follows_the_worker_label() {
        let ready = labels::node_ready("ns", "kmod");
        let wanted = labels::version_module("ns", "kmod");
        let worker = labels::version_worker_pod("ns", "kmod");
        let schedule = labels::version_schedule_pod("ns", "kmod");
        let nodes = [
            node(
                "same",
                "5.14.0-1.el9",
                json!({"gpu": "yes", &wanted: "v2", &worker: "v2"}),
                json!([]),
            ),
            node(
                "old",
                "5.14.0-1.el9",
                json!({"gpu": "yes", &wanted: "v2", &worker: "v1", &ready: ""}),
                json!([]),
            ),
            node(
                "fresh",
                "5.14.0-1.el9",
                json!({"gpu": "yes", &wanted: "v2"}),
                json!([]),
            ),
            node(
                "unlabelled",
                "5.14.0-1.el9",
                json!({"gpu": "yes"}),
                json!([]),
            ),
            node(
                "scheduled",
                "5.14.0-1.el9",
                json!({"gpu": "yes", &wanted: "v3", &worker: "v2", &schedule: "v2", &ready: ""}),
                json!([]),
            ),
        ];
        let plan = run(&module(Some("v2")), &nodes);
        assert_eq!(
            plan.targets
                .iter()
                .map(|t| t.node.as_str())
                .collect::<Vec<_>>(),
            ["same", "scheduled"]
        );
        assert_eq!(plan.keep, BTreeSet::from(["old".to_owned()]));
        let change = |key: &str, value: Option<&str>| {
            BTreeMap::from([(key.to_owned(), value.map(str::to_owned))])
        };
        assert_eq!(
            plan.version_labels,
            BTreeMap::from([
                ("same".to_owned(), change(&schedule, Some("v2"))),
                ("old".to_owned(), change(&worker, None)),
                ("fresh".to_owned(), change(&worker, Some("v2"))),
                ("scheduled".to_owned(), change(&schedule, None)),
            ])
        );
        assert!(plan.skipped.iter().any(
            |s| s.node == "unlabelled" && s.reason == SkipReason::AwaitingVersion("v2".into())
        ));
        // While the old version's device plugin pod is still on the node, its worker label stays.
        let plugin_on_old = BTreeSet::from(["old".to_owned()]);
        let held = plan_with_plugins(
            &module(Some("v2")),
            &module(Some("v2"))
                .spec
                .module_loader
                .expect("a loader")
                .container,
            &nodes.iter().collect::<Vec<_>>(),
            &plugin_on_old,
        );
        assert!(!held.version_labels.contains_key("old"));
        assert!(held.version_labels.contains_key("fresh"));
    }
}
