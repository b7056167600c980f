//! `Module`: an out-of-tree kernel module, with optional device plugin or DRA driver, that must
//! run on every node matching a selector.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EnvVar, LocalObjectReference, ResourceRequirements, Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Build, ImagePullPolicy, KernelMapping, ModprobeSpec, Sign, TlsOptions};

/// Desired state of a kernel module across the nodes its selector matches.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kmm.sigs.x-k8s.io",
    version = "v1beta1",
    kind = "Module",
    namespaced,
    status = "ModuleStatus",
    derive = "PartialEq",
    shortname = "mod",
    category = "kmm",
    printcolumn = r#"{"name": "Kernels", "type": "string", "jsonPath": ".status.kernels"}"#,
    printcolumn = r#"{"name": "Available", "type": "integer", "jsonPath": ".status.moduleLoader.availableNumber"}"#,
    printcolumn = r#"{"name": "Desired", "type": "integer", "jsonPath": ".status.moduleLoader.desiredNumber"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!(has(self.dra) && has(self.devicePlugin))",
    "message": "spec.dra and spec.devicePlugin are mutually exclusive"
}]))]
pub struct ModuleSpec {
    /// How to load the kernel module; without it only the device plugin or DRA driver runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_loader: Option<ModuleLoaderSpec>,
    /// Device plugin scheduled on nodes where the module is loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_plugin: Option<DevicePluginSpec>,
    /// DRA driver scheduled on nodes where the module is loaded; exclusive with `devicePlugin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dra: Option<DraSpec>,
    /// Pull secret for kmod, device plugin and DRA images, and push secret for builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::local_object_reference")]
    pub image_repo_secret: Option<LocalObjectReference>,
    /// Node labels (equality only) that select the nodes the module belongs on.
    pub selector: BTreeMap<String, String>,
    /// Tolerations for every pod run on the module's behalf.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Change it to make KMM check every image again and rebuild missing ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_rebuild_trigger_generation: Option<i64>,
}

/// The kmod loader and the account its worker pods run as.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleLoaderSpec {
    /// What to load and from which images.
    pub container: ModuleLoaderContainerSpec,
    /// Service account of the worker pods; `default` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
}

/// Images, build and sign recipes, and modprobe settings of the kmod loader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleLoaderContainerSpec {
    /// Image used by mappings whose own `containerImage` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_image: Option<String>,
    /// When nodes pull the kmod image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,
    /// Version for ordered upgrades; set it to roll nodes one label at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// How to reach the kmod images' registry.
    #[serde(
        default,
        rename = "registryTLS",
        skip_serializing_if = "Option::is_none"
    )]
    pub registry_tls: Option<TlsOptions>,
    /// Deprecated single in-tree module to unload first; use `inTreeModulesToRemove`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_tree_module_to_remove: Option<String>,
    /// In-tree modules to unload before loading ours.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_tree_modules_to_remove: Vec<String>,
    /// Build recipe used by mappings without their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// Sign recipe used by mappings without their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<Sign>,
    /// How to run modprobe.
    pub modprobe: ModprobeSpec,
    /// Kernel-to-image mappings; the first match wins.
    #[schemars(length(min = 1))]
    pub kernel_mappings: Vec<KernelMapping>,
}

/// A container of the device plugin or DRA driver DaemonSet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommonContainerSpec {
    /// Entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Arguments to the entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Container image.
    pub image: String,
    /// When nodes pull the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,
    /// Compute resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Volumes mounted into the container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
}

/// Device plugin DaemonSet run on nodes where the module is ready.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DevicePluginSpec {
    /// Main container.
    pub container: CommonContainerSpec,
    /// Init container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container: Option<CommonContainerSpec>,
    /// Service account of the DaemonSet pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Pod volumes; hostPath volumes only under /dev, /sys, /var, /opt or /run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// Whether the pods mount a service account token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<bool>,
}

/// DRA kubelet plugin DaemonSet and the DeviceClasses it serves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraSpec {
    /// Main container.
    pub container: CommonContainerSpec,
    /// Init container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container: Option<CommonContainerSpec>,
    /// Service account of the DaemonSet pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Pod volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// Whether the pods mount a service account token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<bool>,
    /// Driver name the plugin registers with the kubelet (a DNS subdomain).
    pub driver_name: String,
    /// DeviceClasses managed on the module's behalf.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_classes: Vec<DeviceClassSpec>,
}

/// A DeviceClass managed on behalf of a Module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceClassSpec {
    /// DeviceClass name (a DNS subdomain).
    #[schemars(regex(
        pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    ))]
    pub name: String,
    /// Selectors a device must satisfy to belong to the class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub selectors: Vec<DeviceSelector>,
    /// Configuration passed to the driver for devices of the class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub config: Vec<DeviceClassConfiguration>,
}

/// A device selector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceSelector {
    /// CEL expression over the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelDeviceSelector>,
}

/// A CEL expression that selects devices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CelDeviceSelector {
    /// The expression.
    pub expression: String,
}

/// Configuration for devices of a class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceClassConfiguration {
    /// Driver-specific parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// Driver-specific configuration kept as the user wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpaqueDeviceConfiguration {
    /// Driver the parameters are for.
    pub driver: String,
    /// Parameters in the driver's own format.
    #[schemars(schema_with = "crate::schema::preserved_object")]
    pub parameters: serde_json::Value,
}

/// What KMM observed about a Module.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleStatus {
    /// Nodes of the kmod loader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_loader: Option<DaemonSetCounts>,
    /// Nodes of the device plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_plugin: Option<DaemonSetCounts>,
    /// Nodes of the DRA driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dra: Option<DaemonSetCounts>,
    /// Last `spec.imageRebuildTriggerGeneration` acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_rebuild_trigger_generation: Option<i64>,
    /// Kernels of the selected nodes that have a mapping, sorted, so a person sees where the
    /// module applies (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// Why the module is, or is not, on its nodes (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// Node counts of one of a Module's workloads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetCounts {
    /// Nodes matching the selector.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nodes_matching_selector_number: i32,
    /// Nodes that should run the workload.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub desired_number: i32,
    /// Nodes where it runs and is ready.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub available_number: i32,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}
