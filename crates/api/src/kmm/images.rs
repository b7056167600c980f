//! `ModuleImagesConfig` (which kmod images must exist, and whether they do) and
//! `ModuleBuildSignConfig` (which of them to build or sign).

use k8s_openapi::api::core::v1::{LocalObjectReference, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{ImagePullPolicy, ModuleImageSpec};

/// The images one Module (or one preflight check) needs, kept by the Module reconciler.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kmm.sigs.x-k8s.io",
    version = "v1beta1",
    kind = "ModuleImagesConfig",
    namespaced,
    status = "ModuleImagesConfigStatus",
    derive = "PartialEq",
    shortname = "mic",
    category = "kmm",
    printcolumn = r#"{"name": "Exist", "type": "integer", "jsonPath": ".status.existingImages"}"#,
    printcolumn = r#"{"name": "Images", "type": "integer", "jsonPath": ".status.totalImages"}"#,
    printcolumn = r#"{"name": "Reason", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ModuleImagesConfigSpec {
    /// Images to check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ModuleImagesConfigImage>,
    /// Pull secret for checks, push secret for builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::local_object_reference")]
    pub image_repo_secret: Option<LocalObjectReference>,
    /// Pull policy of the pods that check images.
    #[serde(default)]
    pub image_pull_policy: ImagePullPolicy,
    /// Whether built images are pushed.
    #[serde(default)]
    pub push_built_image: bool,
    /// Copied from the Module; a change clears every image state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_rebuild_trigger_generation: Option<i64>,
    /// Tolerations of the pull, build and sign pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// One image to check, with the generation that asks for a new check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleImagesConfigImage {
    /// The image and how to produce it.
    #[serde(flatten)]
    pub spec: ModuleImageSpec,
    /// Bumped by the Module reconciler to ask for a new check of a `DoesNotExist` image
    /// (a kmm-tui addition from the container-runtime design).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// Result of the image checks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleImagesConfigStatus {
    /// One state per checked image.
    pub images_states: Vec<ModuleImageState>,
    /// Last `spec.imageRebuildTriggerGeneration` acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_rebuild_trigger_generation: Option<i64>,
    /// The `metadata.generation` this status answers (the container-runtime design's field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Images whose state is `Exists`, for the printer column (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existing_images: Option<i32>,
    /// Images in the spec, for the printer column (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_images: Option<i32>,
    /// Why images are missing, building or failing (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// State of one image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleImageState {
    /// The image.
    pub image: String,
    /// What the last check found.
    pub status: ImageState,
    /// The spec `generation` this state answers (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The manifest digest (`sha256:…`) the image `Exists` at: what its pull pod pulled, or what its build or
    /// sign pushed (a kmm-tui addition). A hub delivers the image pinned to it, so every spoke runs what was
    /// checked even if the tag moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// What a check found about an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ImageState {
    /// The registry has it.
    Exists,
    /// The registry lacks it and nothing will build it.
    DoesNotExist,
    /// It is missing and a build was requested.
    NeedsBuilding,
    /// It is missing and a sign was requested.
    NeedsSigning,
}

/// Builds and signs to run for one Module's missing images.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "kmm.sigs.x-k8s.io",
    version = "v1beta1",
    kind = "ModuleBuildSignConfig",
    namespaced,
    status = "ModuleBuildSignConfigStatus",
    derive = "PartialEq",
    shortname = "mbsc",
    category = "kmm",
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ModuleBuildSignConfigSpec {
    /// Images to build or sign.
    pub images: Vec<ModuleBuildSignImage>,
    /// Pull and push secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::local_object_reference")]
    pub image_repo_secret: Option<LocalObjectReference>,
    /// Whether built images are pushed.
    #[serde(default)]
    pub push_built_image: bool,
    /// Tolerations of the build and sign pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// One image and what to do with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModuleBuildSignImage {
    /// The image and its recipes.
    #[serde(flatten)]
    pub spec: ModuleImageSpec,
    /// Build or sign.
    pub action: BuildSignAction,
    /// The MIC image generation this work answers; a new one replaces a finished build or sign, so a failed build is
    /// retried when the user asks and never otherwise (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// Kind of work on an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BuildSignAction {
    /// Build it from its Dockerfile.
    BuildImage,
    /// Sign the modules in it.
    SignImage,
}

/// Outcome of builds and signs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModuleBuildSignConfigStatus {
    /// One outcome per finished action.
    pub images: Vec<BuildSignImageStatus>,
}

/// Outcome of one build or sign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BuildSignImageStatus {
    /// The image.
    pub image: String,
    /// What was done.
    pub action: BuildSignAction,
    /// How it went.
    pub status: BuildSignOutcome,
    /// The spec `generation` this outcome answers (a kmm-tui addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The digest (`sha256:…`) a successful push made, as the pod's termination message reported it (a kmm-tui
    /// addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// How a build or sign ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BuildSignOutcome {
    /// It finished and the image was produced.
    Success,
    /// It failed.
    Failure,
}
