//! Reading and writing the KMM objects of the engine tests: Modules from JSON, and the NMCs, MICs, node labels and
//! machine state their assertions read.
#![allow(dead_code)]

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kmm_api::kmm::labels;
use kmm_api::kmm::{ImageState, Module, ModuleImagesConfig, NodeModulesConfig};
use kube::api::{Api, ListParams, PostParams};
use serde_json::Value;

use super::common::Harness;

/// Create the Module `spec` describes in namespace `acme`.
pub(crate) async fn create_module(harness: &Harness, name: &str, spec: Value) -> Module {
    let module: Module = serde_json::from_value(serde_json::json!({
        "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
        "metadata": {"name": name, "namespace": "acme"},
        "spec": spec,
    }))
    .expect("a Module");
    Api::<Module>::namespaced(harness.client(), "acme")
        .create(&PostParams::default(), &module)
        .await
        .expect("the Module is created")
}

/// The Module `acme/<name>`.
pub(crate) async fn module(harness: &Harness, name: &str) -> Option<Module> {
    Api::<Module>::namespaced(harness.client(), "acme")
        .get_opt(name)
        .await
        .expect("reading the Module")
}

/// The notes of the Events with `reason` about Module `acme/<name>`.
pub(crate) async fn module_events(harness: &Harness, name: &str, reason: &str) -> Vec<String> {
    Api::<Event>::namespaced(harness.client(), "acme")
        .list(&ListParams::default())
        .await
        .expect("listing events")
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("Module") && r.name.as_deref() == Some(name)
                })
        })
        .filter_map(|e| e.note)
        .collect()
}

/// The MIC `acme/<name>`.
pub(crate) async fn mic(harness: &Harness, name: &str) -> Option<ModuleImagesConfig> {
    Api::<ModuleImagesConfig>::namespaced(harness.client(), "acme")
        .get_opt(name)
        .await
        .expect("reading the MIC")
}

/// The state the MIC reports for `image`.
pub(crate) async fn image_state(
    harness: &Harness,
    module: &str,
    image: &str,
) -> Option<ImageState> {
    mic(harness, module)
        .await?
        .status?
        .images_states
        .into_iter()
        .find(|s| s.image == image)
        .map(|s| s.status)
}

/// The NMC of `node`.
pub(crate) async fn nmc(harness: &Harness, node: &str) -> Option<NodeModulesConfig> {
    Api::<NodeModulesConfig>::all(harness.client())
        .get_opt(node)
        .await
        .expect("reading the NMC")
}

/// The image of the Module's entry in the NMC of `node`.
pub(crate) async fn entry_image(harness: &Harness, node: &str, module: &str) -> Option<String> {
    nmc(harness, node)
        .await?
        .spec
        .modules
        .into_iter()
        .find(|m| m.name == module && m.namespace == "acme")
        .map(|m| m.config.container_image)
}

/// The node `name`.
pub(crate) async fn node(harness: &Harness, name: &str) -> Node {
    Api::<Node>::all(harness.client())
        .get(name)
        .await
        .expect("reading the node")
}

/// Whether `node` carries the module's `ready` label.
pub(crate) async fn node_ready(harness: &Harness, node_name: &str, module: &str) -> bool {
    node(harness, node_name)
        .await
        .metadata
        .labels
        .unwrap_or_default()
        .contains_key(&labels::node_ready("acme", module))
}

/// The modules the machine behind `node` has loaded (`lsmod` names).
pub(crate) fn loaded_modules(harness: &Harness, node: &str) -> Vec<String> {
    harness
        .cluster
        .simulation()
        .and_then(|s| s.world().machines.get(node))
        .map(|m| m.modules.into_iter().collect())
        .unwrap_or_default()
}

/// Condition `type_` of the Module: (status, reason, message).
pub(crate) async fn condition(
    harness: &Harness,
    name: &str,
    type_: &str,
) -> Option<(String, String, String)> {
    module(harness, name)
        .await?
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason, c.message))
}

/// Power-cycle the machine behind `node` on its current kernel: new boot ID, no modules loaded.
pub(crate) fn power_cycle(harness: &Harness, node: &str) -> String {
    let world = harness
        .cluster
        .simulation()
        .expect("a simulation")
        .world()
        .clone();
    let boot_id = world
        .machines
        .with(node, |m| {
            let (kernel, os, url) = (
                m.kernel_version.clone(),
                m.os_image.clone(),
                m.os_image_url.clone(),
            );
            m.reboot(&kernel, &os, url.as_deref());
            m.boot_id.clone()
        })
        .expect("the node has a machine");
    let _ = world.machine_changed.send(node.to_owned());
    boot_id
}
