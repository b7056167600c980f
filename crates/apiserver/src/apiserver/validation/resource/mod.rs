//! The `resource.k8s.io/v1` kinds of Dynamic Resource Allocation, as kube-apiserver 1.34 validates them: names,
//! limits and the shape of requests and devices. CEL selectors are checked for presence and length only; what they
//! select is the scheduler's to work out.

mod claim;
mod common;
mod device_class;
mod slice;

pub(super) use claim::{
    immutable_spec, resource_claim, resource_claim_status, resource_claim_template,
};
pub(super) use device_class::device_class;
pub(super) use slice::{resource_slice, resource_slice_update};
