//! The PreflightValidation reconciler: before a cluster moves to a new kernel, every Module is checked against it.
//!
//! Per Module, the kernel mappings are applied to `spec.kernelVersion`: no mapping is a failure at once; otherwise
//! the image is checked by the KMM image pipeline through a ModuleImagesConfig of the Module's own,
//! `<module>-preflight` ([`checks`]), which the PreflightValidation controls: pull pods prove whether the image
//! exists, and a missing image whose mapping has a build or sign section is built and signed by that
//! ModuleImagesConfig's ModuleBuildSignConfig (pushed only when `pushBuiltImage` says so). Every Module is checked
//! at once, as upstream does: each has its own ModuleImagesConfig, pull pods and build pods, so the checks share
//! nothing but the registry. The verdicts ([`verdict`]) go to `status.modules`.
//!
//! Triggers: the PreflightValidation, its ModuleImagesConfigs, and Modules (a new Module, a changed spec or a
//! deletion) — each re-verifies: editing a Module checks its image again. Deleting the PreflightValidation lets
//! the garbage collector take its ModuleImagesConfigs and their pods; ModuleImagesConfigs of Modules gone or
//! without a mapping are deleted by the pass itself.
//!
//! [`losses`] answers the other half of planning an upgrade: what each node loses (device plugins, DRA drivers and
//! the ResourceClaims allocated from them) while its modules reload.

pub mod checks;
pub mod losses;
mod reconcile;
pub mod verdict;

use std::sync::Arc;

use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

use crate::runtime::context::{Context, retry_on_error};
use crate::runtime::family::Family;
use crate::runtime::first_list::FirstList;
use crate::runtime::wiring::{Metered, Wiring};
use kmm_api::kmm::{Module, ModuleImagesConfig, PreflightValidation};

/// What a pass reads besides the API: every Module, kept by a watch.
pub struct PreflightContext {
    /// Client, images, events.
    pub engine: Arc<Context>,
    /// Every Module.
    pub modules: Store<Module>,
    /// Whether `modules` has listed.
    pub(crate) modules_listed: FirstList,
}

/// Run the reconciler until `stop` is cancelled.
pub async fn run(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    let (modules, module_writer) = reflector::store();
    let (modules_listed, module_events) = FirstList::watching(
        watcher(
            Api::<Module>::all(client.clone()),
            watcher::Config::default(),
        )
        .modify(|module: &mut Module| module.meta_mut().managed_fields = None)
        .default_backoff()
        .reflect(module_writer),
        &stop,
    );
    let module_changes = module_events
        .applied_objects()
        .predicate_filter(module_fingerprint, Default::default());
    let wiring = Wiring::new(
        &context,
        Metered::new("preflightvalidation", Family::Kmm),
        watcher(
            Api::<PreflightValidation>::all(client.clone()),
            watcher::Config::default(),
        )
        .default_backoff(),
    );
    let every_preflight = wiring.store();
    let preflight_context = Arc::new(PreflightContext {
        engine: context,
        modules,
        modules_listed,
    });
    wiring
        .with(|controller| {
            controller
                .watches(
                    Api::<ModuleImagesConfig>::all(client),
                    watcher::Config::default(),
                    |mic| preflight_of_mic(&mic),
                )
                .watches_stream(module_changes, move |_module: Module| {
                    every_preflight
                        .state()
                        .iter()
                        .map(|p| ObjectRef::from_obj(p.as_ref()))
                        .collect::<Vec<_>>()
                })
        })
        .drive(
            reconcile::reconcile,
            error_policy,
            preflight_context,
            &stop,
            "PreflightValidation",
        )
        .await;
}

fn error_policy(
    preflight: Arc<PreflightValidation>,
    error: &crate::runtime::context::Error,
    context: Arc<PreflightContext>,
) -> kube::runtime::controller::Action {
    retry_on_error(preflight, error, context.engine.clone())
}

/// The PreflightValidation controlling a ModuleImagesConfig. The controller's `owns` would look the owner up in
/// the MIC's namespace, but a PreflightValidation is cluster-scoped.
fn preflight_of_mic(mic: &ModuleImagesConfig) -> Option<ObjectRef<PreflightValidation>> {
    mic.owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == PreflightValidation::kind(&()))
        .map(|o| ObjectRef::new(&o.name))
}

/// What about a Module matters to preflight: its spec (by generation) and whether it is being deleted, not the
/// status its own reconciler keeps writing.
fn module_fingerprint(module: &Module) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    module.metadata.generation.hash(&mut hasher);
    module
        .metadata
        .deletion_timestamp
        .is_some()
        .hash(&mut hasher);
    Some(hasher.finish())
}
