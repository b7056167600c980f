//! `ModuleDay0`: kernel modules baked into the node OS image on OpenShift, and minimal typed
//! views of the OpenShift objects it reads and writes.
//!
//! A ModuleDay0 owns the `osImageURL` of one MachineConfig: when the OS the pool runs differs from
//! `osMapping`, it builds or signs the image if asked, then points the MachineConfig at it and
//! lets the Machine Config Operator roll the pool.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kmm::{Build, Sign};

pub mod node_update;
pub mod reasons;

/// Label a user puts on a MachineConfig to hand its `osImageURL` to kmm-tui.
pub const KMM_MANAGED_LABEL: &str = "machineconfiguration.openshift.io/kmm-managed";

/// Label that ties a MachineConfig to a pool role (`worker`, `master`, ...).
pub const MACHINE_CONFIG_ROLE_LABEL: &str = "machineconfiguration.openshift.io/role";

/// The OS image a pool must run, and how to produce it.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kmm.sigs.x-k8s.io",
    version = "v1beta1",
    kind = "ModuleDay0",
    namespaced,
    status = "ModuleDay0Status",
    derive = "PartialEq",
    shortname = "mday0",
    category = "kmm",
    printcolumn = r#"{"name": "OS", "type": "string", "jsonPath": ".spec.osMapping.literal"}"#,
    printcolumn = r#"{"name": "Image", "type": "string", "jsonPath": ".spec.osMapping.containerImage", "priority": 1}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ModuleDay0Spec {
    /// The OS release the pool must run and the image that carries it with the modules.
    pub os_mapping: OsMapping,
    /// Labels of the nodes of the MachineConfigPool, e.g. `node-role.kubernetes.io/worker: ""`.
    pub machine_config_pool_selector: BTreeMap<String, String>,
}

/// One OS release mapped to the image that carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OsMapping {
    /// The node's `status.nodeInfo.osImage` the image is for.
    pub literal: String,
    /// Full OS image (RHCOS-based) with the kernel modules in it.
    pub container_image: String,
    /// How to build the image when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// How to sign the modules in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<Sign>,
    /// Rebuild for the new OS when the cluster moves to a new minor release, so an upgrade
    /// still upgrades the layered nodes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cluster_upgrade_trigger_node_upgrade: bool,
}

/// What the day-0 reconciler observed and did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleDay0Status {
    /// MachineConfig whose `osImageURL` this object manages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config: Option<String>,
    /// Image last written to the MachineConfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_image: Option<String>,
    /// `metadata.generation` the status answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Why the pool does, or does not, run the image.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// The part of a MachineConfig kmm-tui reads and writes; other fields are kept as they are.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfig",
    derive = "PartialEq",
    shortname = "mc"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigSpec {
    /// OS image the pool's nodes must boot.
    #[serde(
        default,
        rename = "osImageURL",
        skip_serializing_if = "Option::is_none"
    )]
    pub os_image_url: Option<String>,
    /// Fields kmm-tui does not interpret.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The part of a MachineConfigPool kmm-tui reads.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfigPool",
    status = "MachineConfigPoolStatus",
    derive = "PartialEq",
    shortname = "mcp"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolSpec {
    /// MachineConfigs that make up the pool's rendered configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_selector: Option<LabelSelector>,
    /// Nodes in the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// Whether the operator holds updates back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Fields kmm-tui does not interpret.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// Rollout progress of a pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolStatus {
    /// Nodes in the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_count: Option<i32>,
    /// Nodes running the current rendered configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_machine_count: Option<i32>,
    /// Updated nodes that are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_machine_count: Option<i32>,
    /// Nodes that failed to update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_machine_count: Option<i32>,
    /// Fields kmm-tui does not interpret (conditions, configuration, ...).
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// The part of the ClusterVersion kmm-tui reads; other fields are kept as they are.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterVersion",
    status = "ClusterVersionStatus",
    derive = "PartialEq"
)]
pub struct ClusterVersionSpec {
    /// Fields kmm-tui does not interpret.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// Where the cluster is going.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterVersionStatus {
    /// The release the cluster is moving to, or runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired: Option<Release>,
    /// Fields kmm-tui does not interpret.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A release of the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Release {
    /// Semantic version, e.g. `4.15.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Release payload image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Fields kmm-tui does not interpret.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}
