//! What each node loses while its kernel modules reload for a new kernel: the device plugins and DRA drivers of
//! the Modules loaded there (they leave the node before the module is unloaded, and come back once it is loaded
//! again), and the ResourceClaims allocated on the node from those drivers' devices (their pods lose the devices
//! meanwhile). Pure, from objects the caller has read, so the console's `:preflight` and the tests answer alike.
//!
//! A Module counts as loaded on a node when the node's NodeModulesConfig reports it loaded, or the node carries its
//! `…ready` label or its plugin's or driver's `…-ready` label. A claim is on a node when its allocation's node
//! selector selects the node; claims of devices reachable from several nodes (no node selector) are on none.

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement};
use k8s_openapi::api::resource::v1::ResourceClaim;

use crate::kmm::kernel;
use kmm_api::kmm::labels;
use kmm_api::kmm::{Module, NodeModulesConfig};

/// One node that moves to the kernel, and what it loses meanwhile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeLosses {
    /// Node name.
    pub node: String,
    /// The kernel it runs now.
    pub kernel: String,
    /// `namespace/name` of each Module whose device plugin stops while its module reloads.
    pub device_plugins: Vec<String>,
    /// `namespace/name` of each Module whose DRA driver stops while its module reloads.
    pub dra_drivers: Vec<String>,
    /// `namespace/name` of each ResourceClaim allocated on the node from one of those drivers' devices.
    pub claims: Vec<String>,
}

/// What the cluster shows, as the caller read it.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// Every Module.
    pub modules: &'a [&'a Module],
    /// Every node.
    pub nodes: &'a [&'a Node],
    /// Every NodeModulesConfig.
    pub nmcs: &'a [&'a NodeModulesConfig],
    /// Every ResourceClaim (none on a cluster without DRA).
    pub claims: &'a [&'a ResourceClaim],
}

/// Per node not yet on `target_kernel`, what it loses while its modules reload, in the order of `observed.nodes`.
pub fn node_losses(observed: Observed<'_>, target_kernel: &str) -> Vec<NodeLosses> {
    observed
        .nodes
        .iter()
        .filter_map(|node| {
            let name = node.metadata.name.clone().unwrap_or_default();
            let current = kernel::node_kernel(node).unwrap_or_default();
            if current == target_kernel {
                return None;
            }
            let loaded: Vec<&Module> = observed
                .modules
                .iter()
                .copied()
                .filter(|module| loaded_on(module, node, &name, observed.nmcs))
                .collect();
            let device_plugins = loaded
                .iter()
                .filter(|m| m.spec.device_plugin.is_some())
                .map(|m| key(m))
                .collect();
            let drivers: Vec<(&str, String)> = loaded
                .iter()
                .filter_map(|m| Some((m.spec.dra.as_ref()?.driver_name.as_str(), key(m))))
                .collect();
            let claims = observed
                .claims
                .iter()
                .filter(|claim| {
                    allocated_on(claim, node)
                        && claim_drivers(claim).any(|d| drivers.iter().any(|(lost, _)| *lost == d))
                })
                .map(|claim| {
                    format!(
                        "{}/{}",
                        claim.metadata.namespace.as_deref().unwrap_or_default(),
                        claim.metadata.name.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            Some(NodeLosses {
                node: name,
                kernel: current.to_owned(),
                device_plugins,
                dra_drivers: drivers.into_iter().map(|(_, module)| module).collect(),
                claims,
            })
        })
        .collect()
}

/// `namespace/name` of a Module.
fn key(module: &Module) -> String {
    format!(
        "{}/{}",
        module.metadata.namespace.as_deref().unwrap_or_default(),
        module.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether the Module's kernel module (or its plugin or driver) runs on the node.
fn loaded_on(module: &Module, node: &Node, name: &str, nmcs: &[&NodeModulesConfig]) -> bool {
    let namespace = module.metadata.namespace.as_deref().unwrap_or_default();
    let module_name = module.metadata.name.as_deref().unwrap_or_default();
    let reported = nmcs
        .iter()
        .filter(|nmc| nmc.metadata.name.as_deref() == Some(name))
        .flat_map(|nmc| nmc.status.iter().flat_map(|s| &s.modules))
        .any(|l| l.namespace == namespace && l.name == module_name);
    let node_labels = node.metadata.labels.as_ref();
    let labelled = |label: String| node_labels.is_some_and(|l| l.contains_key(&label));
    reported
        || labelled(labels::node_ready(namespace, module_name))
        || labelled(labels::device_plugin_ready_label(namespace, module_name))
        || labelled(labels::dra_ready_label(namespace, module_name))
}

/// The drivers of the devices allocated to the claim.
fn claim_drivers(claim: &ResourceClaim) -> impl Iterator<Item = &str> {
    claim
        .status
        .iter()
        .flat_map(|s| &s.allocation)
        .flat_map(|a| &a.devices)
        .flat_map(|d| d.results.iter().flatten())
        .map(|r| r.driver.as_str())
}

/// Whether the claim's allocation is bound to the node.
fn allocated_on(claim: &ResourceClaim, node: &Node) -> bool {
    claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.node_selector.as_ref())
        .is_some_and(|selector| selects(selector, node))
}

/// Whether a node selector selects the node: any term whose requirements all hold (an empty term selects nothing).
fn selects(selector: &NodeSelector, node: &Node) -> bool {
    selector.node_selector_terms.iter().any(|term| {
        let expressions = term.match_expressions.iter().flatten();
        let fields = term.match_fields.iter().flatten();
        let mut any = false;
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let holds_labels = expressions.into_iter().all(|r| {
            any = true;
            holds(r, labels.get(&r.key).map(String::as_str))
        });
        let holds_fields = fields.into_iter().all(|r| {
            any = true;
            let value = (r.key == "metadata.name")
                .then_some(node.metadata.name.as_deref())
                .flatten();
            holds(r, value)
        });
        any && holds_labels && holds_fields
    })
}

/// Whether one requirement holds for the value it names (`None`: the node has no such label or field).
fn holds(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = requirement.values.as_deref().unwrap_or_default();
    let number = |v: &str| v.parse::<i64>().ok();
    match requirement.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), Some(bound)) = (
                value.and_then(number),
                values.first().and_then(|b| number(b)),
            ) else {
                return false;
            };
            if requirement.operator == "Gt" {
                have > bound
            } else {
                have < bound
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, kernel: &str, labels: serde_json::Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"nodeInfo": {"kernelVersion": kernel, "bootID": "b", "machineID": "", "systemUUID": "",
                "kubeletVersion": "", "kubeProxyVersion": "", "containerRuntimeVersion": "",
                "operatingSystem": "linux", "architecture": "amd64", "osImage": ""}},
        }))
        .expect("a node")
    }

    fn module(name: &str, spec: serde_json::Value) -> Module {
        serde_json::from_value(json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": name, "namespace": "acme"},
            "spec": spec,
        }))
        .expect("a Module")
    }

    fn claim(name: &str, driver: &str, selector: serde_json::Value) -> ResourceClaim {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "acme"},
            "spec": {},
            "status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": driver, "pool": "p", "device": "gpu-0"}]},
                "nodeSelector": selector,
            }},
        }))
        .expect("a claim")
    }

    fn on_node(name: &str) -> serde_json::Value {
        json!({"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [name]}
        ]}]})
    }

    #[test]
    fn a_node_loses_the_plugins_drivers_and_claims_of_its_loaded_modules() {
        let plugin = module(
            "dp",
            json!({"selector": {}, "devicePlugin": {"container": {"image": "q/dp:1"}}}),
        );
        let driver = module(
            "gpu",
            json!({"selector": {}, "dra": {"container": {"image": "q/dra:1"}, "driverName": "gpu.example.com"}}),
        );
        let a = node(
            "a",
            "5.14",
            json!({"kmm.node.kubernetes.io/acme.gpu.ready": "", "kmm.node.kubernetes.io/acme.dp.ready": ""}),
        );
        let b = node(
            "b",
            "5.14",
            json!({"kmm.node.kubernetes.io/acme.gpu.dra-ready": ""}),
        );
        let moved = node(
            "c",
            "6.1",
            json!({"kmm.node.kubernetes.io/acme.gpu.ready": ""}),
        );
        let bare = node("d", "5.14", json!({}));
        let claims = [
            claim("on-a", "gpu.example.com", on_node("a")),
            claim("on-b", "gpu.example.com", on_node("b")),
            claim("other-driver", "nic.example.com", on_node("a")),
            claim("anywhere", "gpu.example.com", serde_json::Value::Null),
            claim(
                "by-label",
                "gpu.example.com",
                json!({"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kmm.node.kubernetes.io/acme.gpu.ready", "operator": "Exists"}
                ]}]}),
            ),
        ];
        let claim_refs: Vec<&ResourceClaim> = claims.iter().collect();
        let losses = node_losses(
            Observed {
                modules: &[&plugin, &driver],
                nodes: &[&a, &b, &moved, &bare],
                nmcs: &[],
                claims: &claim_refs,
            },
            "6.1",
        );
        // Node, device plugins, DRA drivers and claims.
        type Summary<'a> = (&'a str, Vec<String>, Vec<String>, Vec<String>);
        let summary: Vec<Summary<'_>> = losses
            .iter()
            .map(|l| {
                (
                    l.node.as_str(),
                    l.device_plugins.clone(),
                    l.dra_drivers.clone(),
                    l.claims.clone(),
                )
            })
            .collect();
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            summary,
            [
                (
                    "a",
                    strings(&["acme/dp"]),
                    strings(&["acme/gpu"]),
                    strings(&["acme/on-a", "acme/by-label"])
                ),
                ("b", vec![], strings(&["acme/gpu"]), strings(&["acme/on-b"])),
                ("d", vec![], vec![], vec![]),
            ]
        );
        assert_eq!(losses[0].kernel, "5.14");
    }

    #[test]
    fn requirements_read_as_the_scheduler_reads_them() {
        let requirement = |operator: &str, values: &[&str]| NodeSelectorRequirement {
            key: "k".to_owned(),
            operator: operator.to_owned(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        };
        assert!(holds(&requirement("In", &["x", "y"]), Some("y")));
        assert!(!holds(&requirement("In", &["x"]), None));
        assert!(holds(&requirement("NotIn", &["x"]), None));
        assert!(!holds(&requirement("NotIn", &["x"]), Some("x")));
        assert!(holds(&requirement("Exists", &[]), Some("")));
        assert!(holds(&requirement("DoesNotExist", &[]), None));
        assert!(holds(&requirement("Gt", &["3"]), Some("4")));
        assert!(!holds(&requirement("Lt", &["3"]), Some("4")));
        assert!(!holds(&requirement("Gt", &["three"]), Some("4")));
        assert!(!holds(&requirement("Sideways", &[]), Some("4")));
        let empty_term: NodeSelector =
            serde_json::from_value(json!({"nodeSelectorTerms": [{}]})).expect("a selector");
        assert!(!selects(&empty_term, &node("a", "5.14", json!({}))));
    }
}
