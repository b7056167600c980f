//! Which Events the console takes in. A busy cluster records hundreds of Events a second about pods, ReplicaSets
//! and Jobs that are none of the console's business; listing and receiving every one would make the console's cost
//! grow with the cluster's churn. So the API server is asked, by field selector, only for the Events about:
//!
//! - the kinds the console shows: one watch per kind, `regarding.kind=<Kind>` ([`SHOWN_KINDS`]);
//! - whatever kmm-tui's engine reports, on any kind (an upstream operator's Deployment it hands a family over to):
//!   `reportingController=kmm-tui-engine`;
//! - pods in the namespaces where the console's objects make pods: a Module's, an ImageCache's and a ModuleDay0's
//!   namespace, and the Shim installers' while a Shim exists. One watch of that namespace's Events per namespace,
//!   `regarding.kind=Pod`, started when the first such object appears there and stopped when the last one leaves.
//!
//! Each of these is one lookup in the API server's index of Events by kind and reporter (within a namespace for
//! the pods'), so listing them costs what they hold, not what the cluster keeps.
//!
//! The watches never overlap: all but the engine's leave out what the engine reports. What a field selector cannot
//! tell apart still comes in: Events about other pods of a namespace that holds a Module (a selector cannot match
//! a name by prefix), so a Module kept beside a busy workload costs that workload's pod Events.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::ObjectMeta;

use crate::tui::data::Kind;
use kmm_api::shim::names::INSTALLER_NAMESPACE;
use kmm_engine::runtime::writes::MANAGER as ENGINE_REPORTER;

/// The kinds whose Events the console shows, each watched by `regarding.kind`: KMM's (the Modules pane and a
/// Module's detail), the Shims', ImageCaches', day-0 and hub kinds, and Nodes (a module loaded or unloaded, a
/// reboot).
pub(super) const SHOWN_KINDS: [&str; 12] = [
    "Module",
    "ModuleImagesConfig",
    "ModuleBuildSignConfig",
    "NodeModulesConfig",
    "PreflightValidation",
    "Node",
    "Shim",
    "ImageCache",
    "ModuleDay0",
    "MachineConfig",
    "MachineConfigPool",
    "ManagedClusterModule",
];

/// The kinds whose objects make pods beside them, and so decide whose pods' Events the console takes in.
pub(super) const POD_MAKERS: [Kind; 4] =
    [Kind::Module, Kind::ImageCache, Kind::ModuleDay0, Kind::Shim];

/// The field selectors of the Events watches that do not follow namespaces: one per shown kind, and the engine's.
pub(super) fn fixed_selectors() -> Vec<String> {
    SHOWN_KINDS
        .iter()
        .map(|kind| format!("regarding.kind={kind},{}", not_the_engines()))
        .chain([format!("reportingController={ENGINE_REPORTER}")])
        .collect()
}

/// The field selector of the Events about pods, for a watch of one namespace's Events (an Event about a pod lives in
/// the pod's namespace): the server reads them from its index of Events by kind within that namespace.
pub(super) fn pod_selector() -> String {
    format!("regarding.kind=Pod,{}", not_the_engines())
}

/// Leaves out the Events the engine's own watch takes in.
fn not_the_engines() -> String {
    format!("reportingController!={ENGINE_REPORTER}")
}

/// The namespace where an object of a pod-making `kind` makes its pods: its own, or for a (cluster-scoped) Shim the
/// installers' namespace.
pub(super) fn pods_namespace(kind: Kind, meta: &ObjectMeta) -> Option<String> {
    match kind {
        Kind::Shim => Some(INSTALLER_NAMESPACE.to_owned()),
        _ => meta.namespace.clone().filter(|ns| !ns.is_empty()),
    }
}

/// The namespaces where the objects of each pod-making kind make pods, as their watches last listed them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct PodNamespaces(BTreeMap<Kind, BTreeSet<String>>);

impl PodNamespaces {
    /// Record that `kind`'s objects now make pods in `namespaces`; whether that changed anything.
    pub(super) fn set(&mut self, kind: Kind, namespaces: BTreeSet<String>) -> bool {
        if self.0.get(&kind) == Some(&namespaces) {
            return false;
        }
        self.0.insert(kind, namespaces);
        true
    }

    /// Every namespace some kind makes pods in.
    pub(super) fn all(&self) -> BTreeSet<String> {
        self.0.values().flatten().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_watch_but_the_engines_leaves_out_what_the_engine_reports() {
        let selectors = fixed_selectors();
        assert_eq!(selectors.len(), SHOWN_KINDS.len() + 1);
        let engines: Vec<&String> = selectors
            .iter()
            .filter(|s| !s.contains("reportingController!="))
            .collect();
        assert_eq!(engines, [&"reportingController=kmm-tui-engine".to_owned()]);
        assert_eq!(
            pod_selector(),
            "regarding.kind=Pod,reportingController!=kmm-tui-engine"
        );
    }

    #[test]
    fn pod_namespaces_change_only_when_a_kinds_set_does() {
        let mut namespaces = PodNamespaces::default();
        let drivers = BTreeSet::from(["drivers".to_owned()]);
        assert!(namespaces.set(Kind::Module, drivers.clone()));
        assert!(!namespaces.set(Kind::Module, drivers.clone()));
        assert!(namespaces.set(Kind::Shim, BTreeSet::from([INSTALLER_NAMESPACE.to_owned()])));
        assert_eq!(
            namespaces.all(),
            BTreeSet::from(["drivers".to_owned(), INSTALLER_NAMESPACE.to_owned()])
        );
        assert!(namespaces.set(Kind::Module, BTreeSet::new()));
        assert_eq!(
            namespaces.all(),
            BTreeSet::from([INSTALLER_NAMESPACE.to_owned()])
        );
    }

    #[test]
    fn a_shim_makes_its_pods_in_the_installers_namespace_and_a_module_in_its_own() {
        let meta = ObjectMeta {
            namespace: Some("drivers".to_owned()),
            ..ObjectMeta::default()
        };
        assert_eq!(
            pods_namespace(Kind::Module, &meta).as_deref(),
            Some("drivers")
        );
        assert_eq!(
            pods_namespace(Kind::Shim, &ObjectMeta::default()).as_deref(),
            Some(INSTALLER_NAMESPACE)
        );
        assert_eq!(
            pods_namespace(Kind::ImageCache, &ObjectMeta::default()),
            None
        );
    }
}
