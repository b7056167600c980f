//! Open Cluster Management's kinds, as a hub serves them: `ManagedCluster` (a spoke the hub knows, with its health
//! and what it claims about itself), `ManagedClusterSet` and `ManagedClusterSetBinding` (which clusters a namespace
//! may place work on) and `ManifestWork` (objects the hub asks one spoke's work agent to apply, with what the agent
//! reports back).
//!
//! Upstream's groups, kinds and field names are kept, so the hub engine and the console read a real OCM hub the
//! same way as the embedded one. These kinds are installed on a hub only ([`crate::crds::hub`]): an ordinary
//! cluster never grows them.

pub mod cluster;
pub mod clusterset;
pub mod names;
pub mod work;

/// API group of ManagedCluster.
pub const CLUSTER_GROUP: &str = "cluster.open-cluster-management.io";

/// API group of ManifestWork.
pub const WORK_GROUP: &str = "work.open-cluster-management.io";
