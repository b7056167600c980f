//! The kernels of the OS images the cluster names, for planning an upgrade: no API object carries the kernel of an
//! OS image, so the engine reads it from the image, on the cluster, and records it for the console.
//!
//! [`named`] finds the images (MachineConfigs' `osImageURL`, the release's OS image). Each image not yet read gets
//! one short pod ([`pod`]) in `openshift-kmm` that runs it with `ls /usr/lib/modules`; its log names the kernel, or
//! the pod tells why the image cannot be read (it cannot be pulled, the listing fails). The answer goes to ConfigMap
//! `openshift-kmm/kmm-tui-os-image-kernels` (see [`kmm_api::kmm::os_image_kernels`]), then the pod is deleted.
//! Images already recorded, well or badly, are not read again; images no longer named leave the record. Deleting
//! the ConfigMap reads every image again.
//!
//! Upstream KMM's preflight takes the kernel as given (its documentation has the administrator run the release's
//! driver toolkit image to read it); this reads it the same way, from an image of the cluster, without a person.
//!
//! The pass runs on `kube::runtime::Controller`, keyed by `ClusterVersion/version` (one pass for the whole cluster,
//! and only on OpenShift, where MachineConfigs exist), and is level-triggered: killed at any point and restarted, it
//! finds its pods by their fixed names and the record as it left it. It belongs to the day-0 family, which already
//! follows MachineConfigs and the release.

pub(super) mod named;
pub(super) mod pod;
mod reconcile;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::Api;
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use tokio_util::sync::CancellationToken;

use crate::runtime::first_list::FirstList;

use crate::day0::every;
use crate::day0::release::{OS_IMAGE_CONFIG_MAP, OS_IMAGE_CONFIG_MAP_NAMESPACE};
use crate::runtime::context::Context;
use crate::runtime::family::Family;
use crate::runtime::wiring::{Metered, Wiring};
use kmm_api::day0::{ClusterVersion, MachineConfig};
use kmm_api::kmm::os_image_kernels::{CONFIG_MAP, NAMESPACE, POD_LABEL};

/// What a pass reads besides the API: the MachineConfigs and the release's OS image ConfigMap, kept by watches.
pub(super) struct KernelsContext {
    /// Client, events, failures.
    pub engine: Arc<Context>,
    /// Every MachineConfig.
    pub machine_configs: reflector::Store<MachineConfig>,
    /// Whether `machine_configs` has listed.
    pub machine_configs_listed: FirstList,
    /// `openshift-machine-config-operator/machine-config-osimageurl`, when it exists.
    pub release_os_image: reflector::Store<ConfigMap>,
    /// Whether `release_os_image` has listed.
    pub release_os_image_listed: FirstList,
}

/// The reconciler; run it until `stop`.
pub(super) async fn run(context: Arc<Context>, stop: CancellationToken) {
    let client = context.client.clone();
    let config = watcher::Config::default;
    let (machine_configs, writer) = reflector::store();
    // Deleted ones too: an image no longer named leaves the record.
    let (machine_configs_listed, machine_config_events) = FirstList::watching(
        watcher(Api::<MachineConfig>::all(client.clone()), config())
            .default_backoff()
            .reflect(writer),
        &stop,
    );
    let machine_config_changes = machine_config_events.touched_objects();
    let (release_os_image, writer) = reflector::store();
    let (release_os_image_listed, release_events) = FirstList::watching(
        watcher(
            Api::<ConfigMap>::namespaced(client.clone(), OS_IMAGE_CONFIG_MAP_NAMESPACE),
            config().fields(&format!("metadata.name={OS_IMAGE_CONFIG_MAP}")),
        )
        .default_backoff()
        .reflect(writer),
        &stop,
    );
    let release_changes = release_events.touched_objects();
    let wiring = Wiring::new(
        &context,
        Metered::new("clusterversion", Family::Day0),
        watcher(Api::<ClusterVersion>::all(client.clone()), config()).default_backoff(),
    );
    let versions = wiring.store();
    let kernels_context = Arc::new(KernelsContext {
        engine: context,
        machine_configs,
        machine_configs_listed,
        release_os_image,
        release_os_image_listed,
    });
    wiring
        .with(|controller| {
            controller
                .watches_stream(machine_config_changes, every(&versions))
                .watches_stream(release_changes, every(&versions))
                .watches(
                    Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE),
                    config().fields(&format!("metadata.name={CONFIG_MAP}")),
                    every(&versions),
                )
                .watches(
                    Api::<Pod>::namespaced(client, NAMESPACE),
                    config().labels(POD_LABEL),
                    every(&versions),
                )
        })
        .drive(
            reconcile::reconcile,
            reconcile::error_policy,
            kernels_context,
            &stop,
            "OS image kernel",
        )
        .await;
}
