//! Typed custom resources for every kind kmm-tui manages, their CRDs and their admission rules.
//!
//! The kinds keep the upstream groups, kinds and JSON field names (KMM, runtime-class-manager,
//! kube-fledged) so that the console works unchanged on clusters that run the upstream operators.
//! Everything kmm-tui adds is optional, so upstream objects stay valid.

pub mod age;
pub mod conditions;
pub mod crds;
pub mod day0;
pub mod imagecache;
pub mod kmm;
mod schema;
pub mod shim;
pub mod validation;

/// Repository of kmm-tui's published image, which the `Containerfile` builds: what `kmm-tui install` deploys, and
/// what the embedded cluster recognises as its own image by default.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/kmm-tui/kmm-tui";
