//! Typed custom resources for every kind kmm-tui manages, their CRDs and their admission rules.
//!
//! The kinds keep the upstream groups, kinds and JSON field names (KMM, runtime-class-manager,
//! kube-fledged) so that the console works unchanged on clusters that run the upstream operators.
//! Everything kmm-tui adds is optional, so upstream objects stay valid.
//!
//! The rest of the wire contract lives here too, beside the kinds it belongs to, so that the engine that writes it,
//! the console that reads it and the simulation that acts on it spell it once: the labels, annotations and
//! finalizers of each family ([`kmm::labels`], [`shim::names`], [`imagecache::names`], [`day0::node_update`]), the
//! condition reasons the console tells states by ([`shim::reasons`], [`day0::reasons`],
//! [`imagecache::PURGE_REASON`]), the engine Lease's defaults and annotations ([`lease`]) and how the API server's
//! answers are told apart ([`errors`]). One module per family rather than one contract module: a family's names
//! change with its kinds, and each module stays small.

pub mod age;
pub mod conditions;
pub mod crds;
pub mod day0;
pub mod errors;
pub mod hub;
pub mod image_ref;
pub mod imagecache;
pub mod kmm;
pub mod lease;
pub mod ocm;
pub mod plural;
mod schema;
pub mod shim;
pub mod validation;

/// Repository of kmm-tui's published image, which the `Containerfile` builds: what `kmm-tui install` deploys, and
/// what the embedded cluster recognises as its own image by default.
pub const IMAGE_REPOSITORY: &str = "ghcr.io/kmm-tui/kmm-tui";
