//! `PreflightValidation`: checks, before a cluster upgrade, that every Module has an image (or
//! can build one) for the target kernel.
//!
//! Upstream serves `v1beta1` and stores `v1beta2`; the two differ only in the shape of the
//! status (a `namespace/name` map, a list), so both are served here with `v1beta2` as the storage version, and the
//! embedded API server converts between them as upstream's conversion webhook does
//! (`kmm_cluster::apiserver::conversion`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kernel to validate every Module against.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kmm.sigs.x-k8s.io",
    version = "v1beta2",
    kind = "PreflightValidation",
    status = "PreflightValidationStatus",
    derive = "PartialEq",
    shortname = "pfv",
    category = "kmm",
    printcolumn = r#"{"name": "Kernel", "type": "string", "jsonPath": ".spec.kernelVersion"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PreflightValidationSpec {
    /// Full kernel version the cluster will run after the upgrade.
    pub kernel_version: String,
    /// Whether images built during validation are pushed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub push_built_image: bool,
}

/// Per-Module verdicts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PreflightValidationStatus {
    /// One verdict per Module, keyed by namespace and name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["namespace", "name"]
    ))]
    pub modules: Vec<PreflightModuleStatus>,
}

/// Verdict for one Module.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreflightModuleStatus {
    /// Module namespace.
    pub namespace: String,
    /// Module name.
    pub name: String,
    #[serde(flatten)]
    /// The verdict.
    pub verdict: PreflightVerdict,
}

/// Where validation of one Module stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreflightVerdict {
    /// Outcome so far.
    pub verification_status: VerificationStatus,
    /// Human-readable explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// Stage reached.
    pub verification_stage: VerificationStage,
    /// When the verdict last changed.
    pub last_transition_time: Time,
}

/// Outcome of validating one Module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum VerificationStatus {
    /// The Module will work on the new kernel.
    Success,
    /// It will not.
    Failure,
    /// Not decided yet.
    InProgress,
}

/// Stage of validating one Module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum VerificationStage {
    /// Checking, building or signing the image.
    Image,
    /// Finished.
    Done,
}

/// The older served version, whose status is a map keyed by `namespace/name`.
pub mod v1beta1 {
    use std::collections::BTreeMap;

    use kube_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::PreflightVerdict;

    /// The kernel to validate every Module against.
    #[derive(
        CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema,
    )]
    #[kube(
        crates(kube_core = "::kube_core"),
        group = "kmm.sigs.x-k8s.io",
        version = "v1beta1",
        kind = "PreflightValidation",
        status = "PreflightValidationStatus",
        derive = "PartialEq",
        shortname = "pfv",
        category = "kmm",
        printcolumn = r#"{"name": "Kernel", "type": "string", "jsonPath": ".spec.kernelVersion"}"#,
        printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
    )]
    #[serde(rename_all = "camelCase")]
    pub struct PreflightValidationSpec {
        /// Full kernel version the cluster will run after the upgrade.
        pub kernel_version: String,
        /// Whether images built during validation are pushed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pub push_built_image: bool,
    }

    /// Per-Module verdicts keyed by `namespace/name`.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct PreflightValidationStatus {
        /// Verdicts.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        pub cr_statuses: BTreeMap<String, PreflightVerdict>,
    }
}
