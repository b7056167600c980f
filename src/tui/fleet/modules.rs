//! Rows of the fleet view's second table: the ManagedClusterModules of every hub the fleet follows, one row per
//! module and selected cluster, with whether the cluster applied it, on how many of its nodes it is loaded, why
//! not, and the images the hub builds for it. Sorted so what needs a person comes first.
//!
//! A module whose status has no per-cluster entries (upstream KMM's hub operator writes only counts) gets one row
//! that says so with its counts; one selecting no cluster gets one row with the `Delivered` condition's words.

use std::sync::Arc;

use super::state::Fleet;
use crate::tui::view::{Health, condition, matches_filter};
use kmm_api::hub::{CONDITION_DELIVERED, ClusterDelivery, ManagedClusterModule, reasons};

/// One module and one of the clusters it selects, as the fleet view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubModuleRow {
    /// The hub's context.
    pub hub: String,
    /// The ManagedClusterModule's name (cluster-scoped).
    pub module: String,
    /// The namespace the Module goes to on each spoke.
    pub spoke_namespace: String,
    /// The selected cluster, `None` on a row about the whole module.
    pub cluster: Option<String>,
    /// Its state in a word: a reason of `status.clusters`, or `-` when the module's status says nothing yet.
    pub state: String,
    /// `loaded/desired` nodes from the spoke's feedback, `-` until it reports.
    pub loaded: String,
    /// Why it stands there, in a sentence.
    pub why: String,
    /// The images the hub builds for this cluster's kernels.
    pub images: Vec<String>,
    /// How it fares.
    pub health: Health,
}

impl HubModuleRow {
    /// The text the `/` filter searches.
    pub fn matches(&self, needle: &str) -> bool {
        matches_filter(
            needle,
            &[
                &self.hub,
                &self.module,
                self.cluster.as_deref().unwrap_or_default(),
                &self.state,
                &self.why,
            ],
        )
    }
}

/// How a cluster's delivery fares: refusals and failures need a person; what waits on a build or on the spoke is
/// under way; applied is fine once every desired node loaded it.
fn health(delivery: &ClusterDelivery) -> Health {
    match delivery.reason.as_str() {
        reasons::APPLIED => match (delivery.available_number, delivery.desired_number) {
            (Some(loaded), Some(desired)) if loaded < desired => Health::Progressing,
            _ => Health::Ok,
        },
        reasons::APPLYING | reasons::WAITING_FOR_IMAGES => Health::Progressing,
        reasons::NO_KERNELS | reasons::NO_MAPPING => Health::Warning,
        reasons::APPLY_FAILED | reasons::IMAGE_FAILED | reasons::BAD_MAPPING => Health::Error,
        _ => Health::Unknown,
    }
}

/// The rows of one module of the hub `hub`.
fn module_rows(hub: &str, module: &ManagedClusterModule) -> Vec<HubModuleRow> {
    let name = module.metadata.name.clone().unwrap_or_default();
    let row = |cluster: Option<String>, state: String, why: String, health: Health| HubModuleRow {
        hub: hub.to_owned(),
        module: name.clone(),
        spoke_namespace: module.spec.spoke_namespace.clone(),
        cluster,
        state,
        loaded: "-".to_owned(),
        why,
        images: Vec::new(),
        health,
    };
    let Some(status) = &module.status else {
        return vec![row(
            None,
            "-".to_owned(),
            "no status yet: no engine on the hub has acted on it".to_owned(),
            Health::Unknown,
        )];
    };
    if !status.clusters.is_empty() {
        return status
            .clusters
            .iter()
            .map(|delivery| HubModuleRow {
                loaded: match (delivery.available_number, delivery.desired_number) {
                    (Some(loaded), Some(desired)) => format!("{loaded}/{desired}"),
                    _ => "-".to_owned(),
                },
                images: delivery.images.clone(),
                ..row(
                    Some(delivery.name.clone()),
                    delivery.reason.clone(),
                    delivery.message.clone(),
                    health(delivery),
                )
            })
            .collect();
    }
    match condition(&status.conditions, CONDITION_DELIVERED) {
        Some(delivered) if delivered.reason == reasons::NO_CLUSTER => vec![row(
            None,
            delivered.reason.clone(),
            delivered.message.clone(),
            Health::Warning,
        )],
        // Upstream's hub operator counts ManifestWorks and says nothing per cluster.
        _ => {
            let health = if status.number_degraded > 0 {
                Health::Error
            } else if status.number_applied < status.number_desired {
                Health::Progressing
            } else {
                Health::Ok
            };
            vec![row(
                None,
                format!(
                    "{}/{} applied",
                    status.number_applied, status.number_desired
                ),
                format!(
                    "{} degraded; the hub's operator reports counts only, not each cluster",
                    status.number_degraded
                ),
                health,
            )]
        }
    }
}

/// How much a row needs a person, most first.
fn urgency(health: Health) -> u8 {
    match health {
        Health::Error => 0,
        Health::Warning => 1,
        Health::Progressing => 2,
        Health::Unknown => 3,
        Health::Ok => 4,
    }
}

/// Every hub's modules, a row per selected cluster: what needs a person first, then by hub, module and cluster.
pub fn rows(fleet: &Fleet) -> Vec<HubModuleRow> {
    let mut rows: Vec<HubModuleRow> = fleet
        .members
        .iter()
        .flat_map(|(context, cluster)| {
            cluster
                .data
                .hub_modules
                .iter()
                .flat_map(|module: &Arc<ManagedClusterModule>| module_rows(context, module))
        })
        .collect();
    rows.sort_by(|a, b| {
        (urgency(a.health), &a.hub, &a.module, &a.cluster).cmp(&(
            urgency(b.health),
            &b.hub,
            &b.module,
            &b.cluster,
        ))
    });
    rows
}

/// The clusters of `row`'s module whose images include one of `row`'s: who a rebuild of those images serves.
pub fn sharing<'a>(rows: &'a [HubModuleRow], row: &HubModuleRow) -> Vec<&'a str> {
    let mut clusters: Vec<&str> = rows
        .iter()
        .filter(|other| other.hub == row.hub && other.module == row.module)
        .filter(|other| other.images.iter().any(|image| row.images.contains(image)))
        .filter_map(|other| other.cluster.as_deref())
        .collect();
    clusters.sort_unstable();
    clusters.dedup();
    clusters
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::data::KindSnapshot;
    use crate::tui::fleet::state::FleetChange;
    use serde_json::json;

    fn module(name: &str, status: serde_json::Value) -> Arc<ManagedClusterModule> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "hub.kmm.sigs.x-k8s.io/v1beta1", "kind": "ManagedClusterModule",
                "metadata": {"name": name},
                "spec": {"spokeNamespace": "acme", "selector": {}, "moduleSpec": {"selector": {}}},
                "status": status,
            }))
            .expect("an MCM"),
        )
    }

    fn fleet(modules: Vec<Arc<ManagedClusterModule>>) -> Fleet {
        let mut fleet = Fleet::default();
        let now = jiff::Timestamp::UNIX_EPOCH;
        fleet.apply(
            "hub",
            FleetChange::Data(KindSnapshot::ManagedClusterModules(modules)),
            now,
        );
        fleet
    }

    #[test]
    fn each_selected_cluster_is_a_row_and_what_needs_a_person_comes_first() {
        let status = json!({"numberDesired": 3, "numberApplied": 2, "numberDegraded": 0, "clusters": [
            {"name": "spoke-1", "reason": "Applied", "message": "applied", "availableNumber": 3,
             "desiredNumber": 3, "images": ["quay.io/acme/accmod:5.14"]},
            {"name": "spoke-2", "reason": "ImageFailed", "message": "the build failed",
             "images": ["quay.io/acme/accmod:6.1"]},
            {"name": "spoke-3", "reason": "Applied", "message": "applied", "availableNumber": 1,
             "desiredNumber": 2, "images": ["quay.io/acme/accmod:5.14"]},
        ]});
        let rows = rows(&fleet(vec![module("accmod", status)]));
        let seen: Vec<(&str, &str, &str, Health)> = rows
            .iter()
            .map(|r| {
                (
                    r.cluster.as_deref().unwrap_or("-"),
                    r.state.as_str(),
                    r.loaded.as_str(),
                    r.health,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("spoke-2", "ImageFailed", "-", Health::Error),
                ("spoke-3", "Applied", "1/2", Health::Progressing),
                ("spoke-1", "Applied", "3/3", Health::Ok),
            ]
        );
        // A rebuild of spoke-1's image serves spoke-3 too; spoke-2's serves it alone.
        assert_eq!(sharing(&rows, &rows[2]), ["spoke-1", "spoke-3"]);
        assert_eq!(sharing(&rows, &rows[0]), ["spoke-2"]);
    }

    #[test]
    fn a_module_selecting_nothing_or_counted_by_upstream_is_one_row() {
        let nothing = module(
            "none",
            json!({"numberDesired": 0, "numberApplied": 0, "numberDegraded": 0, "conditions": [{
                "type": "Delivered", "status": "False", "reason": "NoClusterSelected",
                "message": "the selector {env=prod} picks no ManagedCluster",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        );
        let upstream = module(
            "counted",
            json!({"numberDesired": 4, "numberApplied": 3, "numberDegraded": 1}),
        );
        let rows = rows(&fleet(vec![nothing, upstream]));
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].module.as_str(),
                rows[0].state.as_str(),
                rows[0].health
            ),
            ("counted", "3/4 applied", Health::Error)
        );
        assert_eq!(
            (rows[1].state.as_str(), rows[1].why.as_str()),
            (
                "NoClusterSelected",
                "the selector {env=prod} picks no ManagedCluster"
            )
        );
        assert!(rows.iter().all(|r| r.cluster.is_none()));
    }
}
