//! The day-0 engine: kernel modules baked into the nodes' OS image on OpenShift.
//!
//! [`handover`] turns each MachineConfig labelled `machineconfiguration.openshift.io/kmm-managed: "true"` into a
//! ModuleDay0 and deletes it when the label goes. [`reconcile`] takes each ModuleDay0's pool to the image its
//! `osMapping` names: the image is proved to exist, or built and signed, by the KMM image pipeline
//! ([`images`]: a ModuleImagesConfig the ModuleDay0 owns, checked by pull pods, built and signed by the
//! ModuleBuildSignConfig's pods), and only then written to the MachineConfig's `osImageURL`, which makes the
//! Machine Config Operator roll the pool. With `clusterUpgradeTriggerNodeUpgrade`, a cluster upgrade to a new
//! y-stream rebuilds the image on the new release's OS ([`release`], [`target`]).
//!
//! Beside them, [`os_image_kernels`](crate::day0::os_image_kernels) reads the kernel of every OS image the cluster names, so
//! an upgrade to one can be planned.
//!
//! The reconcilers run on `kube::runtime::Controller` and read all progress from the cluster; the engine's one
//! Lease keeps a second engine from acting.

pub mod handover;
pub mod images;
mod os_image_kernels;
pub mod pools;
mod reconcile;
mod release;
mod report;
mod target;

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use self::reconcile::Day0Context;
use crate::runtime::context::Context;
use crate::runtime::family::Family;
use crate::runtime::shared::SharedWatches;
use crate::runtime::wiring::{Metered, Wiring};
use crate::{kmm::mbsc, kmm::mic};
use kmm_api::day0::{ClusterVersion, MachineConfig, MachineConfigPool, ModuleDay0};
use kmm_api::kmm::ModuleImagesConfig;

/// The day-0 reconcilers, subscribed to the engine's shared node watch; run the returned future until `stop`.
/// When the KMM family does not run, the image pipeline (ModuleImagesConfig and ModuleBuildSignConfig
/// reconcilers) runs here, since day-0 images are proved and built by it.
pub fn run(
    context: Arc<Context>,
    shared: &SharedWatches,
    stop: CancellationToken,
) -> impl Future<Output = ()> + Send + 'static {
    let nodes = shared.nodes();
    let day0_node_changes = shared.node_changes(node_fingerprint);
    async move {
        let client = context.client.clone();
        let config = watcher::Config::default;
        let day0_wiring = Wiring::new(
            &context,
            Metered::new("moduleday0", Family::Day0),
            watcher(Api::<ModuleDay0>::all(client.clone()), config()),
        );
        let day0s = day0_wiring.store();
        let shared_context = Arc::new(Day0Context {
            engine: context.clone(),
            nodes,
        });
        let day0_controller = day0_wiring
            .with(|controller| {
                controller
                    .owns(Api::<ModuleImagesConfig>::all(client.clone()), config())
                    .watches(
                        Api::<MachineConfig>::all(client.clone()),
                        config(),
                        every(&day0s),
                    )
                    .watches(
                        Api::<MachineConfigPool>::all(client.clone()),
                        config(),
                        every(&day0s),
                    )
                    .watches(
                        Api::<ClusterVersion>::all(client.clone()),
                        config(),
                        every(&day0s),
                    )
                    .watches(
                        Api::<ConfigMap>::namespaced(
                            client.clone(),
                            release::OS_IMAGE_CONFIG_MAP_NAMESPACE,
                        ),
                        config(),
                        every(&day0s),
                    )
                    .watches(
                        Api::<ModuleDay0>::all(client.clone()),
                        config(),
                        every(&day0s),
                    )
                    .reconcile_all_on(day0_node_changes.map(drop))
            })
            .drive(
                reconcile::reconcile,
                reconcile::error_policy,
                shared_context.clone(),
                &stop,
                "ModuleDay0",
            );
        let handover_wiring = Wiring::new(
            &context,
            Metered::new("machineconfig", Family::Day0),
            watcher(Api::<MachineConfig>::all(client.clone()), config()),
        );
        let configs = handover_wiring.store();
        let handover_controller = handover_wiring
            .with(|controller| {
                controller
                    .watches(
                        Api::<MachineConfigPool>::all(client.clone()),
                        config(),
                        every(&configs),
                    )
                    .watches(
                        Api::<ModuleDay0>::all(client.clone()),
                        config().labels(kmm_api::kmm::labels::MACHINE_CONFIG),
                        |day0: ModuleDay0| {
                            use kube::ResourceExt;
                            day0.labels()
                                .get(kmm_api::kmm::labels::MACHINE_CONFIG)
                                .map(|name| ObjectRef::<MachineConfig>::new(name))
                        },
                    )
            })
            .drive(
                handover::reconcile,
                reconcile::error_policy,
                shared_context,
                &stop,
                "MachineConfig hand-over",
            );
        let kernels = os_image_kernels::run(context.clone(), stop.clone());
        let pipeline = async {
            if !context.runs(Family::Kmm) {
                tokio::join!(
                    mic::run(context.clone(), stop.clone()),
                    mbsc::run(context.clone(), stop.clone())
                );
            }
        };
        tokio::join!(day0_controller, handover_controller, kernels, pipeline);
    }
}

/// A trigger mapper that starts a pass over every object of `store`: pools, MachineConfigs, the release and other
/// ModuleDay0s all change what each ModuleDay0 decides, and a new pool lets a waiting MachineConfig be handed over;
/// there are only a few of each.
pub(crate) fn every<K, T>(
    store: &Store<K>,
) -> impl Fn(T) -> Vec<ObjectRef<K>> + Send + Sync + 'static
where
    K: kube::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let store = store.clone();
    move |_| {
        store
            .state()
            .iter()
            .map(|object| ObjectRef::from_obj(object.as_ref()))
            .collect()
    }
}

/// What the day-0 reconciler reads of a node: its labels (pool membership), its OS and kernel, and the Machine
/// Config Operator's annotations (update state).
fn node_fingerprint(node: &Node) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    node.metadata.labels.hash(&mut hasher);
    node.metadata.annotations.hash(&mut hasher);
    if let Some(info) = node.status.as_ref().and_then(|s| s.node_info.as_ref()) {
        info.os_image.hash(&mut hasher);
        info.kernel_version.hash(&mut hasher);
    }
    hasher.finish()
}
