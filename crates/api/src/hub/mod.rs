//! `ManagedClusterModule` (`hub.kmm.sigs.x-k8s.io/v1beta1`, cluster-scoped): a Module a hub delivers to every
//! managed cluster its selector picks, in each cluster's `spokeNamespace`, through ManifestWorks whose state the
//! status counts.

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kmm::ModuleSpec;

/// API group of ManagedClusterModule.
pub const GROUP: &str = "hub.kmm.sigs.x-k8s.io";

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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
}
