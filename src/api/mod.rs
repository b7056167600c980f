//! Typed custom resources for every kind kmm-tui manages, their CRDs and their admission rules.
//!
//! The kinds keep the upstream groups, kinds and JSON field names (KMM, runtime-class-manager,
//! kube-fledged) so that the console works unchanged on clusters that run the upstream operators.
//! Everything kmm-tui adds is optional, so upstream objects stay valid.

pub mod age;
pub mod conditions;
pub mod crds;
pub mod day0;
pub mod errors;
pub mod imagecache;
pub mod kmm;
pub mod lease;
mod schema;
pub mod shim;
pub mod validation;
