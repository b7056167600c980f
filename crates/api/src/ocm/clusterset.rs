//! `ManagedClusterSet` and `ManagedClusterSetBinding` (`cluster.open-cluster-management.io/v1beta2`): a set groups
//! clusters (by the exclusive `clusterset` label, or a label selector), and a binding in a namespace lets what lives
//! there place work on the set's clusters.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A set of managed clusters.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "cluster.open-cluster-management.io",
    version = "v1beta2",
    kind = "ManagedClusterSet",
    status = "ManagedClusterSetStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "mclset",
    shortname = "mclsets",
    printcolumn = r#"{"name": "Empty", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"ClusterSetEmpty\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetSpec {
    /// How the set picks its clusters; the `clusterset` label when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<ManagedClusterSelector>,
}

/// How a set picks its clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSelector {
    /// `ExclusiveClusterSetLabel` (clusters labelled with the set's name) or `LabelSelector`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector_type: Option<SelectorType>,
    /// The clusters a `LabelSelector` set holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// How a set picks its clusters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum SelectorType {
    /// The clusters whose `cluster.open-cluster-management.io/clusterset` label names the set.
    #[default]
    ExclusiveClusterSetLabel,
    /// The clusters a label selector matches.
    LabelSelector,
}

/// What the hub says of a set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManagedClusterSetStatus {
    /// `ClusterSetEmpty` and the like.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// Lets the namespace it lives in place work on a set's clusters; its name is the set's.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "cluster.open-cluster-management.io",
    version = "v1beta2",
    kind = "ManagedClusterSetBinding",
    namespaced,
    status = "ManagedClusterSetBindingStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "mclsetbinding",
    shortname = "mclsetbindings",
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSetBindingSpec {
    /// The set bound; the binding's own name must be the same.
    #[schemars(length(min = 1))]
    pub cluster_set: String,
}

/// What the hub says of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManagedClusterSetBindingStatus {
    /// `Bound` once the set exists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}
