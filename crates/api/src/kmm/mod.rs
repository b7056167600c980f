//! Kernel Module Management kinds, group `kmm.sigs.x-k8s.io`, with the upstream field names.

mod common;
pub mod dra;
mod images;
pub mod labels;
mod module;
mod node_modules;
pub mod os_image_kernels;
pub mod preflight;

pub use common::{
    Build, BuildArg, DEFAULT_DIR_NAME, ImagePullPolicy, KanikoParams, KernelMapping, ModprobeArgs,
    ModprobeSpec, ModuleImageSpec, Sign, TlsOptions,
};
pub use images::{
    BuildSignAction, BuildSignImageStatus, BuildSignOutcome, ImageState, ModuleBuildSignConfig,
    ModuleBuildSignConfigSpec, ModuleBuildSignConfigStatus, ModuleBuildSignImage, ModuleImageState,
    ModuleImagesConfig, ModuleImagesConfigImage, ModuleImagesConfigSpec, ModuleImagesConfigStatus,
};
pub use module::{
    CelDeviceSelector, CommonContainerSpec, DaemonSetCounts, DeviceClassConfiguration,
    DeviceClassSpec, DevicePluginSpec, DeviceSelector, DraSpec, Module, ModuleLoaderContainerSpec,
    ModuleLoaderSpec, ModuleSpec, ModuleStatus, OpaqueDeviceConfiguration,
};
pub use node_modules::{
    ModuleConfig, NodeModuleSpec, NodeModuleStatus, NodeModulesConfig, NodeModulesConfigSpec,
    NodeModulesConfigStatus,
};
pub use preflight::{
    PreflightModuleStatus, PreflightValidation, PreflightValidationSpec, PreflightValidationStatus,
    PreflightVerdict, VerificationStage, VerificationStatus,
};

/// API group of every KMM kind.
pub const GROUP: &str = "kmm.sigs.x-k8s.io";
