//! `ManagedCluster` (`cluster.open-cluster-management.io/v1`, cluster-scoped): a spoke as its hub knows it, whether
//! the hub accepts it, how often its agent must renew its Lease, and what the agent reports: health conditions,
//! Kubernetes version, capacity and cluster claims.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A cluster the hub manages.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "cluster.open-cluster-management.io",
    version = "v1",
    kind = "ManagedCluster",
    status = "ManagedClusterStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "mcl",
    shortname = "mcls",
    printcolumn = r#"{"name": "Hub Accepted", "type": "boolean", "jsonPath": ".spec.hubAcceptsClient"}"#,
    printcolumn = r#"{"name": "Managed Cluster URLs", "type": "string", "jsonPath": ".spec.managedClusterClientConfigs[*].url"}"#,
    printcolumn = r#"{"name": "Joined", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"ManagedClusterJoined\")].status"}"#,
    printcolumn = r#"{"name": "Available", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"ManagedClusterConditionAvailable\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterSpec {
    /// Where the cluster's API server answers, for whoever on the hub needs to reach it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed_cluster_client_configs: Vec<ClientConfig>,
    /// Whether the hub's administrator lets the cluster's agents in.
    pub hub_accepts_client: bool,
    /// How often, in seconds, the registration agent renews its Lease; the hub calls the cluster's availability
    /// unknown after [`LEASE_GRACE_FACTOR`](super::names::LEASE_GRACE_FACTOR) of them without a renewal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60))]
    pub lease_duration_seconds: Option<i32>,
    /// Taints that keep placements away from the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<ClusterTaint>,
}

/// How to reach the cluster's API server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientConfig {
    /// The API server's URL.
    pub url: String,
    /// The CA bundle that signs the API server's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "bytes")]
    pub ca_bundle: Option<ByteString>,
}

/// Schema of bytes, as JSON carries them: base64 text.
fn bytes(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "format": "byte"})
}

/// A taint on a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTaint {
    /// The taint's key.
    #[schemars(regex(
        pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
    ))]
    #[schemars(length(max = 316))]
    pub key: String,
    /// The taint's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub value: Option<String>,
    /// What the taint does to placements: `NoSelect`, `PreferNoSelect` or `NoSelectIfNew`.
    pub effect: TaintEffect,
    /// When the taint was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<Time>,
}

/// What a cluster taint does to placements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TaintEffect {
    /// No placement selects the cluster unless it tolerates the taint.
    #[default]
    NoSelect,
    /// Placements avoid the cluster when they can.
    PreferNoSelect,
    /// New placements do not select it; existing ones keep it.
    NoSelectIfNew,
}

/// What the cluster's agents report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedClusterStatus {
    /// `HubAcceptedManagedCluster`, `ManagedClusterJoined`, `ManagedClusterConditionAvailable` (see
    /// [`names`](super::names)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// What the cluster's nodes hold in total.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, Quantity>,
    /// What the cluster's nodes offer to workloads.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// The cluster's Kubernetes version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<ManagedClusterVersion>,
    /// Facts the cluster states about itself (platform, kernels, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_claims: Vec<ManagedClusterClaim>,
}

/// The cluster's version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ManagedClusterVersion {
    /// The Kubernetes version (`v1.34.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
}

/// One fact a cluster states about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ManagedClusterClaim {
    /// The claim's name (`platform.open-cluster-management.io`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl ManagedCluster {
    /// The value of the claim `name`, when the cluster states it.
    pub fn claim(&self, name: &str) -> Option<&str> {
        self.status
            .as_ref()?
            .cluster_claims
            .iter()
            .find(|claim| claim.name.as_deref() == Some(name))
            .and_then(|claim| claim.value.as_deref())
    }

    /// The condition of type `type_`, when reported.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|condition| condition.type_ == type_)
    }

    /// Whether the hub holds the cluster available now: `ManagedClusterConditionAvailable` is `True`.
    pub fn is_available(&self) -> bool {
        self.condition(super::names::CONDITION_AVAILABLE)
            .is_some_and(|condition| condition.status == "True")
    }

    /// The kernels the cluster's nodes run, from its `kernel-versions` claim.
    pub fn kernel_versions(&self) -> Vec<&str> {
        self.claim(super::names::CLAIM_KERNEL_VERSIONS)
            .map(|value| value.lines().filter(|line| !line.is_empty()).collect())
            .unwrap_or_default()
    }
}
