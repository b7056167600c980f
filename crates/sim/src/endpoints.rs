//! The `v1` Endpoints of a Service with a selector, as kube-controller-manager's endpoints controller keeps them:
//! older clients, `kubectl describe service` and `kubectl apply --prune` read Endpoints rather than EndpointSlices.
//!
//! They say what the Service's EndpointSlice says, so they are derived from the slice the EndpointSlice controller
//! decides on ([`super::endpoint_slices`]) and the rule of which pods back a Service has one home: one subset whose
//! `addresses` are the ready endpoints and `notReadyAddresses` the others that are not terminating, with the slice's
//! ports. They carry the Service's name and labels, and the label [`MANAGED_BY_LABEL`] that marks them as the
//! controller's, so the controller deletes them when their Service goes or loses its selector and never touches
//! Endpoints a client writes for a Service without one.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, Service,
};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointSlice};
use kube::ResourceExt;
use kube::api::ObjectMeta;

/// The label marking Endpoints the controller manages, and the controller's value for it.
pub(crate) const MANAGED_BY_LABEL: &str = "endpoints.kubernetes.io/managed-by";
pub(crate) const MANAGED_BY: &str = "endpoint-controller";

/// The Endpoints that say what `slice`, the EndpointSlice of `service`, says.
pub(crate) fn mirror(service: &Service, slice: &EndpointSlice) -> Endpoints {
    let mut labels: BTreeMap<String, String> = service.labels().clone();
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned());
    let address = |endpoint: &Endpoint| {
        endpoint.addresses.first().map(|ip| EndpointAddress {
            ip: ip.clone(),
            node_name: endpoint.node_name.clone(),
            target_ref: endpoint.target_ref.clone(),
            hostname: endpoint.hostname.clone(),
        })
    };
    let condition =
        |endpoint: &Endpoint,
         pick: fn(&k8s_openapi::api::discovery::v1::EndpointConditions) -> Option<bool>| {
            endpoint.conditions.as_ref().and_then(pick).unwrap_or(false)
        };
    let ready: Vec<EndpointAddress> = slice
        .endpoints
        .iter()
        .filter(|e| condition(e, |c| c.ready))
        .filter_map(address)
        .collect();
    let not_ready: Vec<EndpointAddress> = slice
        .endpoints
        .iter()
        .filter(|e| !condition(e, |c| c.ready) && !condition(e, |c| c.terminating))
        .filter_map(address)
        .collect();
    let ports: Vec<EndpointPort> = slice
        .ports
        .iter()
        .flatten()
        .map(|port| EndpointPort {
            name: port.name.clone().filter(|name| !name.is_empty()),
            port: port.port.unwrap_or_default(),
            protocol: port.protocol.clone(),
            app_protocol: port.app_protocol.clone(),
        })
        .collect();
    let subsets = (!ready.is_empty() || !not_ready.is_empty()).then(|| {
        vec![EndpointSubset {
            addresses: (!ready.is_empty()).then_some(ready),
            not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
            ports: (!ports.is_empty()).then_some(ports),
        }]
    });
    Endpoints {
        metadata: ObjectMeta {
            name: Some(service.name_any()),
            namespace: service.namespace(),
            labels: Some(labels),
            ..Default::default()
        },
        subsets,
    }
}
