//! Whether everything converged: each object's status says it is done, and the machines agree.
//!
//! A status can be stale (an engine that stopped acting leaves the last one it wrote) and machines can be right
//! while the status lags, so both are checked: the Module Available and loaded (`lsmod` of every node's machine
//! record, and its node label), the Shim Ready for its current spec and installed on every node (binary on the
//! machine, node label and spec-hash annotation), the ImageCache Available and its images, exactly, on every node,
//! the ModuleDay0 Available for its current spec with its pool on the layered OS it names, the upgrade pool on the
//! OS its MachineConfig names, and both pools' status done. Every node must be Ready and schedulable.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kmm_api::day0::{MachineConfigPool, ModuleDay0};
use kmm_api::imagecache::ImageCache;
use kmm_api::kmm::Module;
use kmm_api::kmm::labels;
use kmm_api::shim::Shim;
use kmm_cluster::sim::SIM_NAMESPACE;
use kube::api::{Api, ListParams};
use serde_json::Value;

use super::workload::{
    Asked, CACHE, DAY0, DAY0_NAMESPACE, DAY0_POOL, KERNEL_MODULE, MODULE, NAMESPACE, SHIM,
    SHIM_BINARY, UPGRADE_POOL,
};

/// `(status, reason, message)` of condition `type_` in a status.
fn condition(status: &Value, type_: &str) -> Option<(String, String, String)> {
    let condition = status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))?;
    let text = |key: &str| {
        condition
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Some((text("status"), text("reason"), text("message")))
}

/// What is not done yet about `what`, when its condition `type_` is not True or its status answers an older spec.
fn status_done(
    what: &str,
    status: Option<Value>,
    generation: Option<i64>,
    type_: &str,
    missing: &mut Vec<String>,
) {
    let Some(status) = status else {
        missing.push(format!("{what}: no status"));
        return;
    };
    let observed = status.get("observedGeneration").and_then(Value::as_i64);
    if observed.is_some() && observed != generation {
        missing.push(format!(
            "{what}: status answers generation {observed:?}, the spec is at {generation:?}"
        ));
    }
    match condition(&status, type_) {
        Some((state, _, _)) if state == "True" => {}
        Some((state, reason, message)) => {
            missing.push(format!("{what}: {type_}={state} {reason}: {message}"))
        }
        None => missing.push(format!("{what}: no {type_} condition")),
    }
}

/// Everything that is not converged, or nothing. An API that cannot be read counts as not converged.
pub(super) async fn missing(client: &kube::Client, asked: &Asked, nodes: &[String]) -> Vec<String> {
    match check(client, asked, nodes).await {
        Ok(missing) => missing,
        Err(error) => vec![format!("the API cannot be read: {error}")],
    }
}

async fn check(
    client: &kube::Client,
    asked: &Asked,
    nodes: &[String],
) -> Result<Vec<String>, kube::Error> {
    let mut missing = Vec::new();
    let listed: BTreeMap<String, Node> = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| Some((n.metadata.name.clone()?, n)))
        .collect();
    let machines: BTreeMap<String, BTreeMap<String, String>> =
        Api::<ConfigMap>::namespaced(client.clone(), SIM_NAMESPACE)
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|c| Some((c.data.as_ref()?.get("node")?.clone(), c.data?)))
            .collect();

    let module = Api::<Module>::namespaced(client.clone(), NAMESPACE)
        .get(MODULE)
        .await?;
    status_done(
        &format!("Module {NAMESPACE}/{MODULE}"),
        module.status.as_ref().map(to_value),
        None,
        "Available",
        &mut missing,
    );
    let shim = Api::<Shim>::all(client.clone()).get(SHIM).await?;
    status_done(
        &format!("Shim {SHIM}"),
        shim.status.as_ref().map(to_value),
        shim.metadata.generation,
        "Ready",
        &mut missing,
    );
    let spec_hash = shim
        .status
        .as_ref()
        .and_then(|s| s.rollout.as_ref())
        .and_then(|r| r.spec_hash.clone());
    let cache = Api::<ImageCache>::namespaced(client.clone(), NAMESPACE)
        .get(CACHE)
        .await?;
    status_done(
        &format!("ImageCache {NAMESPACE}/{CACHE}"),
        cache.status.as_ref().map(to_value),
        cache.metadata.generation,
        "Available",
        &mut missing,
    );
    let day0 = Api::<ModuleDay0>::namespaced(client.clone(), DAY0_NAMESPACE)
        .get(DAY0)
        .await?;
    status_done(
        &format!("ModuleDay0 {DAY0_NAMESPACE}/{DAY0}"),
        day0.status.as_ref().map(to_value),
        day0.metadata.generation,
        "Available",
        &mut missing,
    );
    for pool in [UPGRADE_POOL, DAY0_POOL] {
        let status = Api::<MachineConfigPool>::all(client.clone())
            .get(pool)
            .await?
            .status
            .unwrap_or_default();
        let machines = status.machine_count.unwrap_or(0);
        let updated = status.updated_machine_count.unwrap_or(0);
        let degraded = status.degraded_machine_count.unwrap_or(0);
        if updated != machines || degraded > 0 {
            missing.push(format!(
                "pool {pool}: {updated} of {machines} machines updated, {degraded} degraded"
            ));
        }
    }

    let ready_label = labels::node_ready(NAMESPACE, MODULE);
    let hash_annotation = format!("shims.kmm-tui.io/{SHIM}");
    for name in nodes {
        let Some(node) = listed.get(name) else {
            missing.push(format!("node {name}: not registered"));
            continue;
        };
        let mut lacks = Vec::new();
        let status = node.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if !ready {
            lacks.push("not Ready".to_owned());
        }
        if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
            lacks.push("unschedulable".to_owned());
        }
        let os = status.node_info.as_ref().map(|i| i.os_image.clone());
        let wanted_os = if name.starts_with("up-") {
            Some(asked.upgrade_os())
        } else if name.starts_with("d0-") {
            Some(asked.day0_os())
        } else {
            None
        };
        if let Some(wanted) = wanted_os
            && os.as_deref() != Some(wanted)
        {
            lacks.push(format!("runs {os:?}, not {wanted}"));
        }
        let node_labels = node.metadata.labels.clone().unwrap_or_default();
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        if !node_labels.contains_key(&ready_label) {
            lacks.push(format!("no label {ready_label}"));
        }
        if node_labels.get(SHIM).map(String::as_str) != Some("provisioned") {
            lacks.push(format!("label {SHIM}={:?}", node_labels.get(SHIM)));
        }
        if spec_hash.is_none() || annotations.get(&hash_annotation) != spec_hash.as_ref() {
            lacks.push(format!(
                "shim spec {:?}, the Shim's is {spec_hash:?}",
                annotations.get(&hash_annotation)
            ));
        }
        match machines.get(name) {
            None => lacks.push("no machine record".to_owned()),
            Some(machine) => {
                let lsmod = machine.get("lsmod").cloned().unwrap_or_default();
                if !lsmod.lines().any(|m| m == KERNEL_MODULE) {
                    lacks.push(format!("{KERNEL_MODULE} not loaded"));
                }
                if !machine
                    .get("shims")
                    .is_some_and(|s| s.contains(SHIM_BINARY))
                {
                    lacks.push(format!("{SHIM_BINARY} not installed"));
                }
                let images = machine.get("images").cloned().unwrap_or_default();
                let held = |image: &str| images.contains(&format!("\"{image}\""));
                for image in asked.cached() {
                    if !held(image) {
                        lacks.push(format!("{image} not cached"));
                    }
                }
                for image in asked.not_cached() {
                    if held(image) {
                        lacks.push(format!("{image} cached though dropped from the cache"));
                    }
                }
            }
        }
        if !lacks.is_empty() {
            missing.push(format!("node {name}: {}", lacks.join("; ")));
        }
    }
    Ok(missing)
}

fn to_value<T: serde::Serialize>(status: &T) -> Value {
    serde_json::to_value(status).unwrap_or_default()
}
