//! The EndpointSlice controller of the simulated cluster, as kube-controller-manager runs it, so a Service shows
//! the pods behind it (`kubectl get endpointslices`, `kubectl describe service`) and clients that wait for a
//! Service's endpoints see them come.
//!
//! - A Service with a selector gets one EndpointSlice (`discovery.k8s.io/v1`, address type `IPv4`), named
//!   `<service>-<five characters of its uid>`, labelled `kubernetes.io/service-name` and
//!   `endpointslice.kubernetes.io/managed-by`, and controlled by the Service so it goes with it.
//! - Its endpoints are the selected pods that have an IP and are not finished: one address each, the pod's node
//!   and a reference to the pod, and the conditions `ready` (ready and not terminating), `serving` and
//!   `terminating`. Its ports are the Service's, each at its target port; a named target port is looked up in the
//!   selected pods' containers (the first pod that declares it decides, where kube-controller-manager would split
//!   pods that disagree into several slices).
//! - A Service without a selector, or of type `ExternalName`, gets none; its endpoints are whatever its owner
//!   writes.
//! - Beside its slice, the Service gets the `v1` Endpoints that say the same ([`super::endpoints`]), deleted when
//!   the slice is.
//!
//! Everything is decided from the API on every pass, so a restart of the cluster loses nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Endpoints, ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use tokio::task::JoinHandle;

use super::endpoints;
use super::workloads::replicas::is_ready;
use super::{MANAGER, World, forget_managed_fields};

/// The label naming the Service a slice belongs to.
pub(crate) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The label naming the controller that manages a slice, and this controller's value for it.
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// How long a pass whose writes failed waits before it is tried again even without a new event.
const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Start the controller; it runs until the world stops.
pub(crate) fn spawn(world: Arc<World>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let client = world.client.clone();
        let (services, service_writer) = reflector::store::<Service>();
        let pods = world.watches.pods.store();
        let (slices, slice_writer) = reflector::store::<EndpointSlice>();
        let (mirrors, mirror_writer) = reflector::store::<Endpoints>();
        let managed =
            watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
        let managed_mirrors = watcher::Config::default().labels(&format!(
            "{}={}",
            endpoints::MANAGED_BY_LABEL,
            endpoints::MANAGED_BY
        ));
        let streams = [
            reflector::reflector(
                service_writer,
                watcher(Api::<Service>::all(client.clone()), Default::default())
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            world.watches.pods.subscribe_with(|_| ()).boxed(),
            reflector::reflector(
                slice_writer,
                watcher(Api::<EndpointSlice>::all(client.clone()), managed)
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            reflector::reflector(
                mirror_writer,
                watcher(Api::<Endpoints>::all(client.clone()), managed_mirrors)
                    .modify(forget_managed_fields),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
        ];
        let mut events = futures::stream::select_all(streams);
        let mut due = true;
        loop {
            tokio::select! {
                () = world.stop.cancelled() => return,
                next = events.next() => match next {
                    Some(()) => due = true,
                    None => return,
                },
                () = tokio::time::sleep(RETRY), if due => {}
            }
            while let Some(Some(())) = events.next().now_or_never() {}
            let ready = [
                services.wait_until_ready().now_or_never(),
                pods.wait_until_ready().now_or_never(),
                slices.wait_until_ready().now_or_never(),
                mirrors.wait_until_ready().now_or_never(),
            ]
            .iter()
            .all(Option::is_some);
            if due && ready {
                due = !pass(&client, &services, &pods.state(), &slices.state(), &mirrors).await;
            }
        }
    })
}

/// Bring every Service's slice and Endpoints up to date, and delete the Endpoints of Services that are gone;
/// returns whether every write succeeded.
async fn pass(
    client: &kube::Client,
    services: &Store<Service>,
    pods: &[Arc<Pod>],
    slices: &[Arc<EndpointSlice>],
    mirrors: &Store<Endpoints>,
) -> bool {
    let mut succeeded = true;
    for service in services.state() {
        if service.meta().deletion_timestamp.is_some() {
            continue;
        }
        let desired = desired_slice(&service, pods);
        if let Err(error) = sync(client, &service, desired.as_ref(), slices).await {
            succeeded = false;
            tracing::debug!(service = %service.name_any(), %error, "syncing endpointslice");
        }
        let mirror = ObjectRef::<Endpoints>::new(&service.name_any())
            .within(&service.namespace().unwrap_or_default());
        let current = mirrors.get(&mirror);
        if let Err(error) = sync_mirror(client, &service, desired.as_ref(), current).await {
            succeeded = false;
            tracing::debug!(service = %service.name_any(), %error, "syncing endpoints");
        }
    }
    for orphan in mirrors.state() {
        let service = ObjectRef::<Service>::new(&orphan.name_any())
            .within(&orphan.namespace().unwrap_or_default());
        if services.get(&service).is_none()
            && let Err(error) = delete_mirror(client, &orphan).await
        {
            succeeded = false;
            tracing::debug!(endpoints = %orphan.name_any(), %error, "deleting endpoints");
        }
    }
    succeeded
}

/// Write the Service's Endpoints when they differ from its slice, or delete them when it has no slice.
async fn sync_mirror(
    client: &kube::Client,
    service: &Service,
    desired: Option<&EndpointSlice>,
    current: Option<Arc<Endpoints>>,
) -> kube::Result<()> {
    let Some(namespace) = service.namespace() else {
        return Ok(());
    };
    let api = Api::<Endpoints>::namespaced(client.clone(), &namespace);
    let (desired, current) = match (desired, current) {
        (None, None) => return Ok(()),
        (None, Some(current)) => return delete_mirror(client, &current).await,
        (Some(desired), current) => (endpoints::mirror(service, desired), current),
    };
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    match current {
        None => match api.create(&params, &desired).await {
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            result => result.map(drop),
        },
        Some(current)
            if current.subsets == desired.subsets && current.labels() == desired.labels() =>
        {
            Ok(())
        }
        Some(current) => {
            let mut updated = Endpoints::clone(&current);
            updated.subsets = desired.subsets;
            updated.metadata.labels = desired.metadata.labels;
            match api.replace(&current.name_any(), &params, &updated).await {
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => Ok(()),
                result => result.map(drop),
            }
        }
    }
}

async fn delete_mirror(client: &kube::Client, endpoints: &Endpoints) -> kube::Result<()> {
    let api =
        Api::<Endpoints>::namespaced(client.clone(), &endpoints.namespace().unwrap_or_default());
    match api
        .delete(&endpoints.name_any(), &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        result => result.map(drop),
    }
}

/// Write the Service's slice when it differs from what its pods say (`desired`), and delete the slices it should
/// not have.
async fn sync(
    client: &kube::Client,
    service: &Service,
    desired: Option<&EndpointSlice>,
    slices: &[Arc<EndpointSlice>],
) -> kube::Result<()> {
    let (Some(namespace), Some(uid)) = (service.namespace(), service.uid()) else {
        return Ok(());
    };
    let api = Api::<EndpointSlice>::namespaced(client.clone(), &namespace);
    let wanted_name = desired.as_ref().and_then(|s| s.metadata.name.clone());
    let owned = slices.iter().filter(|slice| {
        slice.namespace().as_deref() == Some(namespace.as_str())
            && slice
                .owner_references()
                .iter()
                .any(|r| r.controller == Some(true) && r.uid == uid)
    });
    let mut current = None;
    for slice in owned {
        if Some(slice.name_any()) == wanted_name {
            current = Some(slice);
            continue;
        }
        match api
            .delete(&slice.name_any(), &DeleteParams::default())
            .await
        {
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            result => drop(result?),
        }
    }
    let Some(desired) = desired else {
        return Ok(());
    };
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    match current {
        None => match api.create(&params, desired).await {
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            result => result.map(drop),
        },
        Some(current)
            if current.endpoints == desired.endpoints && current.ports == desired.ports =>
        {
            Ok(())
        }
        Some(current) => {
            let mut updated = EndpointSlice::clone(current);
            updated.endpoints = desired.endpoints.clone();
            updated.ports = desired.ports.clone();
            match api.replace(&current.name_any(), &params, &updated).await {
                Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => Ok(()),
                result => result.map(drop),
            }
        }
    }
}

/// The slice the Service should have, or None when it should have none.
fn desired_slice(service: &Service, pods: &[Arc<Pod>]) -> Option<EndpointSlice> {
    let spec = service.spec.as_ref()?;
    let selector = spec.selector.as_ref().filter(|s| !s.is_empty())?;
    if spec.type_.as_deref() == Some("ExternalName") {
        return None;
    }
    let namespace = service.namespace()?;
    let uid = service.uid()?;
    let mut selected: Vec<&Arc<Pod>> = pods
        .iter()
        .filter(|pod| pod.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|pod| selects(selector, pod.labels()))
        .filter(|pod| pod_ip(pod).is_some() && !is_finished(pod))
        .collect();
    selected.sort_by_key(|pod| pod.name_any());
    let endpoints: Vec<Endpoint> = selected.iter().map(|pod| endpoint(pod)).collect();
    let ports = (!endpoints.is_empty()).then(|| {
        spec.ports
            .iter()
            .flatten()
            .filter_map(|port| {
                Some(EndpointPort {
                    name: Some(port.name.clone().unwrap_or_default()),
                    port: Some(target_port(port, &selected)?),
                    protocol: Some(port.protocol.clone().unwrap_or_else(|| "TCP".to_owned())),
                    app_protocol: port.app_protocol.clone(),
                })
            })
            .collect()
    });
    let suffix: String = uid
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    Some(EndpointSlice {
        metadata: ObjectMeta {
            name: Some(format!("{}-{suffix}", service.name_any())),
            namespace: Some(namespace),
            labels: Some(BTreeMap::from([
                (SERVICE_NAME_LABEL.to_owned(), service.name_any()),
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned()),
            ])),
            owner_references: service.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        address_type: "IPv4".to_owned(),
        endpoints,
        ports,
    })
}

/// Whether every label of the selector is on the pod with the same value.
fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    selector
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value))
}

fn pod_ip(pod: &Pod) -> Option<&str> {
    pod.status.as_ref()?.pod_ip.as_deref()
}

fn is_finished(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// One pod as an endpoint of the slice.
fn endpoint(pod: &Pod) -> Endpoint {
    let terminating = pod.meta().deletion_timestamp.is_some();
    let ready = is_ready(pod);
    Endpoint {
        addresses: pod_ip(pod).map(str::to_owned).into_iter().collect(),
        conditions: Some(EndpointConditions {
            ready: Some(ready && !terminating),
            serving: Some(ready),
            terminating: Some(terminating),
        }),
        node_name: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".to_owned()),
            name: pod.meta().name.clone(),
            namespace: pod.namespace(),
            uid: pod.uid(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The port the pods listen on for a Service port: its target port, looked up by name in the pods' containers
/// when it is a name; None when no selected pod declares that name.
fn target_port(port: &k8s_openapi::api::core::v1::ServicePort, pods: &[&Arc<Pod>]) -> Option<i32> {
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(number)) => Some(*number),
        Some(IntOrString::String(name)) => pods
            .iter()
            .filter_map(|pod| pod.spec.as_ref())
            .flat_map(|spec| &spec.containers)
            .flat_map(|container| container.ports.iter().flatten())
            .find(|declared| declared.name.as_deref() == Some(name.as_str()))
            .map(|declared| declared.container_port),
    }
}
