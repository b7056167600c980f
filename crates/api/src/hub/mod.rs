//! `ManagedClusterModule` (`hub.kmm.sigs.x-k8s.io/v1beta1`, cluster-scoped): a Module a hub delivers to every
//! managed cluster its selector picks, in each cluster's `spokeNamespace`, through ManifestWorks whose state the
//! status counts.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kmm::ModuleSpec;

/// API group of ManagedClusterModule.
pub const GROUP: &str = "hub.kmm.sigs.x-k8s.io";

/// The hub namespace where a hub's engine checks, builds and signs the images of every ManagedClusterModule unless
/// told otherwise (upstream's operator namespace): the embedded fleet's hub has it.
pub const DEFAULT_NAMESPACE: &str = "kmm-hub";

/// Label on every ManifestWork a ManagedClusterModule owns, naming it (upstream's label): what the hub lists its
/// ManifestWorks by, in every cluster namespace at once.
pub const NAME_LABEL: &str = "kmm.node.kubernetes.io/managedclustermodule.name";

/// The ModuleImagesConfig on the hub that checks, builds and signs the images of the ManagedClusterModule `mcm`:
/// one for all the clusters it selects, so a kernel two clusters run is built once. The hub's engine writes it (in
/// its hub namespace, controlled by the ManagedClusterModule); a console rebuilds by raising its generations.
pub fn images_config_name(mcm: &str) -> String {
    format!("{mcm}-fleet")
}

/// Condition (a kmm-tui addition): whether every selected cluster holds the Module as delivered.
pub const CONDITION_DELIVERED: &str = "Delivered";

/// What stands between a ManagedClusterModule and one selected cluster: the `reason` of its entry in
/// `status.clusters`, and of the `Delivered` condition when it is the worst there is.
pub mod reasons {
    /// The spoke applied the Module the cluster's ManifestWork carries.
    pub const APPLIED: &str = "Applied";
    /// The cluster's ManifestWork is written; its spoke has not said yet whether it applied it.
    pub const APPLYING: &str = "Applying";
    /// The spoke could not apply the ManifestWork (its condition `Applied` is `False`); the message is the spoke's.
    pub const APPLY_FAILED: &str = "ApplyFailed";
    /// The images the cluster's kernels need are being checked or built on the hub.
    pub const WAITING_FOR_IMAGES: &str = "WaitingForImages";
    /// An image the cluster needs does not exist and its build or sign failed, or nothing builds it.
    pub const IMAGE_FAILED: &str = "ImageFailed";
    /// The cluster states no kernels (no `kernel-versions.kmm.node.kubernetes.io` claim): nothing can be built.
    pub const NO_KERNELS: &str = "NoKernelClaim";
    /// No kernel mapping matches any kernel the cluster runs.
    pub const NO_MAPPING: &str = "NoKernelMapping";
    /// The kernel mappings cannot be applied (a typo): every cluster keeps what it was delivered.
    pub const BAD_MAPPING: &str = "BadKernelMapping";
    /// The selector picks no ManagedCluster.
    pub const NO_CLUSTER: &str = "NoClusterSelected";
    /// Every selected cluster applied the Module.
    pub const DELIVERED: &str = "Delivered";
}

/// A Module for many clusters.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "hub.kmm.sigs.x-k8s.io",
    version = "v1beta1",
    kind = "ManagedClusterModule",
    status = "ManagedClusterModuleStatus",
    derive = "PartialEq",
    category = "kmm",
    printcolumn = r#"{"name": "Spoke Namespace", "type": "string", "jsonPath": ".spec.spokeNamespace"}"#,
    printcolumn = r#"{"name": "Desired", "type": "integer", "jsonPath": ".status.numberDesired"}"#,
    printcolumn = r#"{"name": "Applied", "type": "integer", "jsonPath": ".status.numberApplied"}"#,
    printcolumn = r#"{"name": "Degraded", "type": "integer", "jsonPath": ".status.numberDegraded"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterModuleSpec {
    /// The Module each selected cluster gets (its build and sign sections run on the hub only).
    pub module_spec: ModuleSpec,
    /// The namespace the Module goes to on every selected cluster.
    pub spoke_namespace: String,
    /// ManagedCluster labels (equality only) that select the clusters.
    pub selector: BTreeMap<String, String>,
}

/// How the delivery goes, counted over the selected clusters' ManifestWorks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterModuleStatus {
    /// ManifestWorks that should exist: one per selected cluster.
    #[serde(default)]
    pub number_desired: i32,
    /// ManifestWorks a spoke applied.
    #[serde(default)]
    pub number_applied: i32,
    /// ManifestWorks a spoke could not apply.
    #[serde(default)]
    pub number_degraded: i32,
    /// The `metadata.generation` this status answers (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Delivered` (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// Each selected cluster, and where its delivery stands (a kmm-tui addition): a cluster without a usable
    /// image says why rather than leaving a silent gap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterDelivery>,
}

/// Where the delivery to one selected cluster stands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterDelivery {
    /// The ManagedCluster's name (its namespace on the hub).
    pub name: String,
    /// One of [`reasons`].
    pub reason: String,
    /// What it means for this cluster, in a sentence.
    pub message: String,
    /// Nodes of the cluster where the module is loaded, as the spoke's Module reports them through the
    /// ManifestWork's feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_number: Option<i64>,
    /// Nodes of the cluster that should load it, from the same feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_number: Option<i64>,
    /// The images the cluster's kernels map to, built on the hub: what a rebuild for this cluster builds again,
    /// and how a person sees which other clusters share them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}
