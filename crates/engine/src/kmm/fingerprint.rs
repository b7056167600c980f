//! How the two reconcilers that write a Module's status (the Module's and the device plugin's) watch Modules: the
//! same watch, woken by the same fields, so neither wakes the other.

use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};

use crate::runtime::context::Context;
use crate::runtime::family::Family;
use crate::runtime::wiring::{Metered, Wiring};
use kmm_api::kmm::Module;

/// The controller of a reconciler named `name` that acts on Modules: every Module, without its managed fields
/// (nobody reads them), a pass only when [`module_fingerprint`] changes.
pub(super) fn module_wiring(context: &Context, name: &'static str) -> Wiring<Module> {
    let modules = watcher(
        Api::<Module>::all(context.client.clone()),
        watcher::Config::default(),
    )
    .modify(|module: &mut Module| module.meta_mut().managed_fields = None)
    .default_backoff();
    Wiring::filtered(
        context,
        Metered::new(name, Family::Kmm),
        modules,
        module_fingerprint,
    )
}

/// What about a Module starts a pass: its spec (through the generation), its finalizers and its deletion. The
/// status is left out: it is this reconciler's own output, and a pass over thousands of nodes after each status
/// write would never let a busy Module rest. The device plugin reconciler, which writes the status too, follows the
/// same fields.
pub(super) fn module_fingerprint(module: &Module) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    module.metadata.generation.hash(&mut hasher);
    module.metadata.finalizers.hash(&mut hasher);
    module
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kmm_api::kmm::labels;

    fn module() -> Module {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "Module",
            "metadata": {"name": "m", "namespace": "ns", "generation": 1, "resourceVersion": "10"},
            "spec": {"selector": {}},
        }))
        .expect("a Module")
    }

    #[test]
    fn a_status_write_does_not_change_the_fingerprint() {
        let before = module();
        let mut after = module();
        after.metadata.resource_version = Some("11".into());
        after.status = Some(serde_json::from_value(serde_json::json!({
            "moduleLoader": {"nodesMatchingSelectorNumber": 3, "desiredNumber": 3, "availableNumber": 2},
        }))
        .expect("a status"));
        assert_eq!(module_fingerprint(&before), module_fingerprint(&after));
    }

    #[test]
    fn spec_finalizer_and_deletion_changes_change_the_fingerprint() {
        let base = module_fingerprint(&module());
        let mut spec = module();
        spec.metadata.generation = Some(2);
        let mut finalized = module();
        finalized.metadata.finalizers = Some(vec![labels::MODULE_FINALIZER.to_owned()]);
        let mut deleting = module();
        deleting.metadata.deletion_timestamp = Some(
            serde_json::from_value(serde_json::json!("2026-01-01T00:00:00Z")).expect("a time"),
        );
        for changed in [spec, finalized, deleting] {
            assert_ne!(base, module_fingerprint(&changed));
        }
    }
}
