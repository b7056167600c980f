//! The `default/kubernetes` Service every cluster has, and the Endpoints and EndpointSlice behind it: how a pod, and
//! client libraries' own tests, find the API server. kube-apiserver keeps them itself; so does this controller.
//!
//! - The Service is a ClusterIP Service at the first address of the service range
//!   ([`KUBERNETES_SERVICE_IP`]), labelled `component=apiserver` and `provider=kubernetes`, with one port `https`,
//!   443, forwarding to the port the API server listens on.
//! - Its Endpoints and its EndpointSlice (`kubernetes`, labelled `kubernetes.io/service-name: kubernetes`) hold
//!   the API server's address: the HTTPS listener's (loopback when it listens on every address), or
//!   [`IN_PROCESS_ENDPOINT`] when the cluster is served in-process only. The Endpoints are marked so nothing
//!   mirrors them into a second slice, as kube-apiserver marks its own.
//! - All three come back when deleted, and are put right when their port or address is changed, on every change
//!   the controller sees.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort as CoreEndpointPort, EndpointSubset, Endpoints, Service,
    ServicePort, ServiceSpec,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::apiserver::ApiServer;
use crate::apiserver::cluster_ip::KUBERNETES_SERVICE_IP;

/// The name of the Service, its Endpoints and its EndpointSlice.
pub const NAME: &str = "kubernetes";

/// Where they live.
pub const NAMESPACE: &str = "default";

/// The address the Endpoints name when the cluster is served in-process only, with no listener of its own:
/// kube-apiserver's usual secure port on loopback.
pub const IN_PROCESS_ENDPOINT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 6443);

/// The port the Service listens on, and its name.
const SERVICE_PORT: i32 = 443;
const PORT_NAME: &str = "https";

/// The field manager of the objects written here.
const MANAGER: &str = "kube-apiserver";

/// How long a pass whose writes failed waits before it is tried again even without a new event.
const RETRY: Duration = Duration::from_secs(1);

/// The address the Endpoints should name for an API server listening on `listening`: loopback in place of an
/// unspecified address, which no client can connect to.
pub fn reachable(listening: SocketAddr) -> SocketAddr {
    match listening.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listening.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), listening.port())
        }
        _ => listening,
    }
}

/// Put the three objects in place before returning, so a cluster that has just started has them, then keep them
/// so until the server stops.
pub async fn start(server: ApiServer, endpoint: SocketAddr) {
    let client = kube::Client::new(server.clone(), NAMESPACE);
    if let Err(error) = pass(&client, endpoint).await {
        tracing::warn!(%error, "installing the kubernetes Service");
    }
    let shutdown = server.inner().shutdown.clone();
    tokio::spawn(async move {
        let named = || watcher::Config::default().fields(&format!("metadata.name={NAME}"));
        let streams = [
            watcher(
                Api::<Service>::namespaced(client.clone(), NAMESPACE),
                named(),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            watcher(
                Api::<Endpoints>::namespaced(client.clone(), NAMESPACE),
                named(),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
            watcher(
                Api::<EndpointSlice>::namespaced(client.clone(), NAMESPACE),
                named(),
            )
            .default_backoff()
            .map(drop)
            .boxed(),
        ];
        let mut events = futures::stream::select_all(streams);
        let mut due = false;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                next = events.next() => match next {
                    Some(()) => due = true,
                    None => return,
                },
                () = tokio::time::sleep(RETRY), if due => {}
            }
            while let Some(Some(())) = events.next().now_or_never() {}
            if due {
                due = match pass(&client, endpoint).await {
                    Ok(()) => false,
                    Err(error) => {
                        tracing::debug!(%error, "keeping the kubernetes Service");
                        true
                    }
                };
            }
        }
    });
}

/// Create whichever of the three is missing and put right whichever differs from what it should be.
async fn pass(client: &kube::Client, endpoint: SocketAddr) -> kube::Result<()> {
    keep(client, service(endpoint.port()), |current, desired| {
        let mut labels = current.metadata.labels.clone().unwrap_or_default();
        labels.extend(desired.metadata.labels.clone().unwrap_or_default());
        let ports = desired.spec.as_ref().and_then(|s| s.ports.clone());
        let current_ports = current.spec.as_ref().and_then(|s| s.ports.clone());
        if current.metadata.labels.as_ref() == Some(&labels) && current_ports == ports {
            return None;
        }
        let mut updated = current.clone();
        updated.metadata.labels = Some(labels);
        updated.spec.get_or_insert_with(Default::default).ports = ports;
        Some(updated)
    })
    .await?;
    keep(client, endpoints(endpoint), |current, desired| {
        (current.subsets != desired.subsets).then(|| Endpoints {
            subsets: desired.subsets.clone(),
            ..current.clone()
        })
    })
    .await?;
    keep(client, endpoint_slice(endpoint), |current, desired| {
        (current.endpoints != desired.endpoints
            || current.ports != desired.ports
            || current.address_type != desired.address_type)
            .then(|| EndpointSlice {
                address_type: desired.address_type.clone(),
                endpoints: desired.endpoints.clone(),
                ports: desired.ports.clone(),
                ..current.clone()
            })
    })
    .await
}

/// Create `desired` when it is missing; otherwise write what `correct` makes of the current object, when it says
/// it needs correcting. A conflict with another writer is left to the next pass, which the write wakes.
async fn keep<K>(
    client: &kube::Client,
    desired: K,
    correct: impl Fn(&K, &K) -> Option<K>,
) -> kube::Result<()>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api = Api::<K>::namespaced(client.clone(), NAMESPACE);
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    let result = match api.get_opt(NAME).await? {
        None => api.create(&params, &desired).await.map(drop),
        Some(current) => match correct(&current, &desired) {
            None => Ok(()),
            Some(updated) => api.replace(NAME, &params, &updated).await.map(drop),
        },
    };
    match result {
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        result => result,
    }
}

fn metadata(labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(NAME.to_owned()),
        namespace: Some(NAMESPACE.to_owned()),
        labels: Some(
            labels
                .iter()
                .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

fn service(target_port: u16) -> Service {
    Service {
        metadata: metadata(&[("component", "apiserver"), ("provider", "kubernetes")]),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            cluster_ip: Some(KUBERNETES_SERVICE_IP.to_string()),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.to_owned()),
                port: SERVICE_PORT,
                protocol: Some("TCP".to_owned()),
                target_port: Some(IntOrString::Int(i32::from(target_port))),
                ..Default::default()
            }]),
            session_affinity: Some("None".to_owned()),
            ..Default::default()
        }),
        status: None,
    }
}

fn endpoints(endpoint: SocketAddr) -> Endpoints {
    Endpoints {
        metadata: metadata(&[("endpointslice.kubernetes.io/skip-mirror", "true")]),
        subsets: Some(vec![EndpointSubset {
            addresses: Some(vec![EndpointAddress {
                ip: endpoint.ip().to_string(),
                ..Default::default()
            }]),
            ports: Some(vec![CoreEndpointPort {
                name: Some(PORT_NAME.to_owned()),
                port: i32::from(endpoint.port()),
                protocol: Some("TCP".to_owned()),
                ..Default::default()
            }]),
            not_ready_addresses: None,
        }]),
    }
}

fn endpoint_slice(endpoint: SocketAddr) -> EndpointSlice {
    EndpointSlice {
        metadata: metadata(&[("kubernetes.io/service-name", NAME)]),
        address_type: if endpoint.is_ipv4() { "IPv4" } else { "IPv6" }.to_owned(),
        endpoints: vec![Endpoint {
            addresses: vec![endpoint.ip().to_string()],
            conditions: Some(EndpointConditions {
                ready: Some(true),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ports: Some(vec![EndpointPort {
            name: Some(PORT_NAME.to_owned()),
            port: Some(i32::from(endpoint.port())),
            protocol: Some("TCP".to_owned()),
            app_protocol: None,
        }]),
    }
}
