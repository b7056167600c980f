//! Building blocks shared by the KMM kinds: build and sign recipes, registry TLS options,
//! modprobe settings and kernel mappings.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::LocalObjectReference;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Directory inside kmod images under which `lib/modules/<kernel>` lives, as upstream defaults it.
pub const DEFAULT_DIR_NAME: &str = "/opt";

fn default_dir_name() -> String {
    DEFAULT_DIR_NAME.to_owned()
}

/// When the kubelet pulls an image; the same values as a container's `imagePullPolicy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ImagePullPolicy {
    /// Pull on every start.
    Always,
    /// Pull only when the node lacks the image (the upstream default).
    #[default]
    IfNotPresent,
    /// Never pull; the image must already be on the node.
    Never,
}

/// How to reach a registry that is not served with a certificate the node trusts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsOptions {
    /// Talk plain HTTP to the registry.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
    /// Accept any certificate the registry presents.
    #[serde(
        default,
        rename = "insecureSkipTLSVerify",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub insecure_skip_tls_verify: bool,
}

/// One `--build-arg` passed to the image build.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BuildArg {
    /// Argument name as the Dockerfile's `ARG` names it.
    pub name: String,
    /// Argument value.
    pub value: String,
}

/// Parameters of the in-cluster image builder.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct KanikoParams {
    /// Builder image tag; the builder's `latest` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
}

/// How to build a kmod image when the registry does not have it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    /// Extra build arguments; `KERNEL_VERSION`, `KERNEL_FULL_VERSION`, `MOD_NAME` and
    /// `MOD_NAMESPACE` are always passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_args: Vec<BuildArg>,
    /// ConfigMap whose `dockerfile` key holds the Dockerfile.
    #[schemars(schema_with = "crate::schema::local_object_reference")]
    pub dockerfile_config_map: LocalObjectReference,
    /// How to reach the registries of the Dockerfile's base images.
    #[serde(
        default,
        rename = "baseImageRegistryTLS",
        skip_serializing_if = "Option::is_none"
    )]
    pub base_image_registry_tls: Option<TlsOptions>,
    /// Secrets mounted into the build under `/run/secrets/<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::local_object_reference_list")]
    pub secrets: Vec<LocalObjectReference>,
    /// Parameters of the image builder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kaniko_params: Option<KanikoParams>,
    /// Node labels the build pod must run on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub selector: BTreeMap<String, String>,
}

/// How to sign the kernel modules inside a kmod image for Secure Boot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sign {
    /// Image holding the unsigned modules; required unless the same mapping also builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsigned_image: Option<String>,
    /// How to reach the registry of the unsigned image.
    #[serde(
        default,
        rename = "unsignedImageRegistryTLS",
        skip_serializing_if = "Option::is_none"
    )]
    pub unsigned_image_registry_tls: Option<TlsOptions>,
    /// Secret whose `key` entry holds the private signing key.
    #[schemars(schema_with = "crate::schema::local_object_reference")]
    pub key_secret: LocalObjectReference,
    /// Secret whose `cert` entry holds the public certificate.
    #[schemars(schema_with = "crate::schema::local_object_reference")]
    pub cert_secret: LocalObjectReference,
    /// Files (or shell globs) to sign; each must lie under the modprobe `dirName`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_to_sign: Vec<String>,
}

/// Command-line arguments for loading and unloading.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModprobeArgs {
    /// Arguments used when loading.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub load: Vec<String>,
    /// Arguments used when unloading.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub unload: Vec<String>,
}

/// How the worker runs `modprobe` on the node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModprobeSpec {
    /// Module to load; exclusive with `rawArgs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_name: Option<String>,
    /// Module parameters passed on load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<String>,
    /// Directory in the image that holds `lib/modules`.
    #[serde(default = "default_dir_name")]
    pub dir_name: String,
    /// Extra `modprobe` arguments around `moduleName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<ModprobeArgs>,
    /// Full `modprobe` command lines, used instead of `moduleName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_args: Option<ModprobeArgs>,
    /// Directory in the image whose firmware is copied to the node before loading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_path: Option<String>,
    /// Load order of dependent modules, starting with `moduleName`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules_loading_order: Vec<String>,
}

impl Default for ModprobeSpec {
    fn default() -> Self {
        Self {
            module_name: None,
            parameters: Vec::new(),
            dir_name: default_dir_name(),
            args: None,
            raw_args: None,
            firmware_path: None,
            modules_loading_order: Vec::new(),
        }
    }
}

/// Which image serves which kernels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KernelMapping {
    /// Exact kernel version; exclusive with `regexp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<String>,
    /// Kernel version pattern (unanchored, so write `^...$`); exclusive with `literal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regexp: Option<String>,
    /// Image for matching kernels; empty means the container's `containerImage`.
    pub container_image: String,
    /// How to reach the image's registry.
    #[serde(
        default,
        rename = "registryTLS",
        skip_serializing_if = "Option::is_none"
    )]
    pub registry_tls: Option<TlsOptions>,
    /// Build recipe overriding the container's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// Sign recipe overriding the container's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<Sign>,
    /// Deprecated single in-tree module to unload first; use `inTreeModulesToRemove`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_tree_module_to_remove: Option<String>,
    /// In-tree modules to unload before loading ours.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_tree_modules_to_remove: Vec<String>,
}

/// An image KMM must check, and build or sign when it is missing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleImageSpec {
    /// Image reference with its kernel templates already expanded.
    pub image: String,
    /// Kernel the image is for.
    pub kernel_version: String,
    /// How to build the image when it is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// How to sign the modules in the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<Sign>,
    /// Report a missing image as `DoesNotExist` at once instead of waiting for it to appear.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_wait_missing_image: bool,
    /// How to reach the image's registry.
    #[serde(
        default,
        rename = "registryTLS",
        skip_serializing_if = "Option::is_none"
    )]
    pub registry_tls: Option<TlsOptions>,
    /// Directory in the image that holds `lib/modules`; signed files must lie under it.
    #[serde(default = "default_dir_name")]
    pub dir_name: String,
}
