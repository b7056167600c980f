//! A pool's rendered configuration: which MachineConfigs make it up and which OS image its nodes must boot.
//!
//! The simulation renders only what it acts on, `osImageURL`: the last MachineConfig (by name) the pool selects
//! that sets one wins, as in the Machine Config Operator's merge; without one the pool runs the OS image of the
//! cluster's release. The rendered configuration is named after its content (`rendered-<pool>-<hash>`), so the
//! same content always has the same name, across restarts too, and is published as a MachineConfig owned by the
//! pool for `kubectl get mc` and for the node update to read.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value};

use crate::World;
use crate::machine::Machine;
use kmm_api::day0::{MachineConfig, MachineConfigPool, MachineConfigSpec};
use kmm_apiserver::apiserver::selector;

/// What a pool's nodes must run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    /// Name of the rendered MachineConfig.
    pub name: String,
    /// The OS image the nodes must boot; None when nothing asks for one (nodes keep what they run).
    pub os_image_url: Option<String>,
    /// The MachineConfigs it was rendered from, by name.
    pub sources: Vec<String>,
}

/// Render `pool` from every MachineConfig, falling back to the release's OS image.
pub(crate) fn render(
    pool: &MachineConfigPool,
    configs: &[Arc<MachineConfig>],
    release_os_image_url: Option<&str>,
) -> Rendered {
    let mut selected: Vec<&Arc<MachineConfig>> = configs
        .iter()
        .filter(|mc| !is_rendered(mc))
        .filter(|mc| selects(pool.spec.machine_config_selector.as_ref(), mc.labels()))
        .collect();
    selected.sort_by_key(|mc| mc.name_any());
    let os_image_url = selected
        .iter()
        .rev()
        .find_map(|mc| mc.spec.os_image_url.clone())
        .or_else(|| release_os_image_url.map(str::to_string));
    let pool_name = pool.name_any();
    Rendered {
        name: config_name(&pool_name, os_image_url.as_deref()),
        os_image_url,
        sources: selected.iter().map(|mc| mc.name_any()).collect(),
    }
}

/// The name of the rendered configuration of `pool` that boots `os_image_url`.
pub(crate) fn config_name(pool: &str, os_image_url: Option<&str>) -> String {
    format!(
        "rendered-{pool}-{:016x}",
        fnv1a(os_image_url.unwrap_or_default())
    )
}

/// Whether a label selector (absent: selects nothing) selects an object with `labels`.
pub(crate) fn selects(
    selector: Option<&LabelSelector>,
    labels: &std::collections::BTreeMap<String, String>,
) -> bool {
    let Ok(value) = serde_json::to_value(selector) else {
        return false;
    };
    let Ok(parsed) = selector::LabelSelector::from_label_selector(&value) else {
        return false;
    };
    let labels: Map<String, Value> = labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    parsed.matches(Some(&labels))
}

/// The OS image URL a machine runs: the one it booted, or, for a machine that never booted one through the
/// Machine Config Operator, the scenario's URL of the OS it reports.
pub(crate) fn running_os_image_url(world: &World, machine: &Machine) -> Option<String> {
    machine.os_image_url.clone().or_else(|| {
        world
            .scenario
            .os_images
            .iter()
            .find(|image| image.os_image == machine.os_image)
            .map(|image| image.url.clone())
    })
}

/// Publish the rendered configuration as a MachineConfig owned by the pool, if it is not there yet.
pub(crate) async fn publish(
    client: &kube::Client,
    pool: &MachineConfigPool,
    rendered: &Rendered,
) -> kube::Result<()> {
    let api: Api<MachineConfig> = Api::all(client.clone());
    if api.get_opt(&rendered.name).await?.is_some() {
        return Ok(());
    }
    let owner = OwnerReference {
        api_version: MachineConfigPool::api_version(&()).into_owned(),
        kind: MachineConfigPool::kind(&()).into_owned(),
        name: pool.name_any(),
        uid: pool.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let config = MachineConfig {
        metadata: ObjectMeta {
            name: Some(rendered.name.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        spec: MachineConfigSpec {
            os_image_url: rendered.os_image_url.clone(),
            ..MachineConfigSpec::default()
        },
    };
    match api.create(&PostParams::default(), &config).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Rendered configurations belong to a pool; they are outputs, never inputs of rendering.
fn is_rendered(config: &MachineConfig) -> bool {
    config
        .owner_references()
        .iter()
        .any(|o| o.kind == MachineConfigPool::kind(&()))
}

/// FNV-1a: a stable hash (unlike std's hasher), so names survive restarts and rebuilds.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(value: Value) -> Arc<MachineConfig> {
        Arc::new(serde_json::from_value(value).expect("a MachineConfig"))
    }

    #[test]
    fn the_last_selected_config_with_an_os_image_wins() {
        let pool: MachineConfigPool = serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": "worker"},
            "spec": {"machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}}},
        }))
        .expect("a pool");
        let worker = json!({"machineconfiguration.openshift.io/role": "worker"});
        let configs = vec![
            config(
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                "metadata": {"name": "50-a", "labels": worker}, "spec": {"osImageURL": "quay.io/os:a"}}),
            ),
            config(
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                "metadata": {"name": "99-b", "labels": worker}, "spec": {"osImageURL": "quay.io/os:b"}}),
            ),
            config(
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                "metadata": {"name": "99-c", "labels": worker}, "spec": {}}),
            ),
            config(
                json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                "metadata": {"name": "99-z", "labels": {"machineconfiguration.openshift.io/role": "master"}},
                "spec": {"osImageURL": "quay.io/os:master"}}),
            ),
        ];
        let rendered = render(&pool, &configs, Some("quay.io/os:release"));
        assert_eq!(rendered.os_image_url.as_deref(), Some("quay.io/os:b"));
        assert_eq!(rendered.sources, ["50-a", "99-b", "99-c"]);
        assert_eq!(rendered.name, config_name("worker", Some("quay.io/os:b")));
        let fallback = render(&pool, &configs[2..], Some("quay.io/os:release"));
        assert_eq!(fallback.os_image_url.as_deref(), Some("quay.io/os:release"));
        assert_ne!(fallback.name, rendered.name);
        assert!(config_name("master", Some("x")) != config_name("worker", Some("x")));
    }
}
