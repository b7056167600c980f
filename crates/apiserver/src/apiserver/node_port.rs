//! Node ports for Services of type NodePort and LoadBalancer, allocated from 30000–32767 as kube-apiserver
//! allocates them, so a Service reads back with each port's `nodePort` (`kubectl get svc` prints `80:30000/TCP`),
//! an update that leaves a port's node port out (as `kubectl apply` does) keeps it, and two Services never share
//! one.

use std::collections::HashSet;
use std::ops::RangeInclusive;

use serde_json::{Value, json};

use super::ApiServer;
use super::errors::{ApiError, Cause};
use crate::store::ResourceKey;

/// The node port range: kube-apiserver's default `--service-node-port-range`.
const RANGE: RangeInclusive<i64> = 30000..=32767;

/// One port's node port as a Service holds it: `(port, protocol, nodePort)`.
type Held = (i64, String, i64);

/// Give each port of `service` its node port where its type asks for them: the one it asks for, the one it had
/// (`old`, same port and protocol), or the lowest free one of the range. A type that needs none drops the node ports
/// it carried over from a type that had them, as kube-apiserver does when the type changes.
pub(crate) fn assign(
    server: &ApiServer,
    service: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let held_before = old.map(held).unwrap_or_default();
    if !wants_node_ports(service) {
        if let Some(old) = old.filter(|old| wants_node_ports(old)) {
            drop_type_dependent_fields(service, old, &held_before);
        }
        return Ok(());
    }
    let name = service
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let namespace = service
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let taken = taken_by_others(server, &namespace, &name);
    let Some(ports) = service
        .pointer_mut("/spec/ports")
        .and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    let mut causes = Vec::new();
    let mut here: HashSet<(i64, String)> = HashSet::new();
    let mut numbers_here: HashSet<i64> = HashSet::new();
    for (index, port) in ports.iter_mut().enumerate() {
        let number = port.get("port").and_then(Value::as_i64).unwrap_or_default();
        let protocol = protocol_of(port);
        let field = format!("spec.ports[{index}].nodePort");
        let asked = port
            .get("nodePort")
            .and_then(Value::as_i64)
            .filter(|n| *n != 0);
        let node_port = match asked {
            Some(asked) => {
                let had = held_before.iter().any(|(_, _, n)| *n == asked);
                if !RANGE.contains(&asked) {
                    causes.push(invalid(
                        &field,
                        asked,
                        "provided port is not in the valid range. The range of valid ports is 30000-32767",
                    ));
                    continue;
                }
                if (taken.contains(&asked) && !had) || here.contains(&(asked, protocol.clone())) {
                    causes.push(invalid(&field, asked, "provided port is already allocated"));
                    continue;
                }
                asked
            }
            None => {
                let kept = held_before
                    .iter()
                    .find(|(p, proto, n)| {
                        *p == number && *proto == protocol && !numbers_here.contains(n)
                    })
                    .map(|(_, _, n)| *n);
                match kept.or_else(|| {
                    RANGE
                        .clone()
                        .find(|n| !taken.contains(n) && !numbers_here.contains(n))
                }) {
                    Some(free) => free,
                    None => {
                        return Err(ApiError::internal(
                            "the node port range 30000-32767 is full",
                        ));
                    }
                }
            }
        };
        port["nodePort"] = json!(node_port);
        here.insert((node_port, protocol));
        numbers_here.insert(node_port);
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("", "Service", &name, causes))
    }
}

/// NodePort Services need node ports, and LoadBalancer ones unless `allocateLoadBalancerNodePorts` is false.
fn wants_node_ports(service: &Value) -> bool {
    match service.pointer("/spec/type").and_then(Value::as_str) {
        Some("NodePort") => true,
        Some("LoadBalancer") => {
            service
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false)
        }
        _ => false,
    }
}

/// The node ports a Service holds.
fn held(service: &Value) -> Vec<Held> {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|port| {
            let node_port = port.get("nodePort").and_then(Value::as_i64)?;
            let number = port.get("port").and_then(Value::as_i64).unwrap_or_default();
            Some((number, protocol_of(port), node_port))
        })
        .collect()
}

fn protocol_of(port: &Value) -> String {
    port.get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP")
        .to_string()
}

/// Remove what a Service kept unchanged from an old type that needed node ports and the new one does not: its node
/// ports and its `externalTrafficPolicy`, which kube-apiserver refuses on the new type.
fn drop_type_dependent_fields(service: &mut Value, old: &Value, held_before: &[Held]) {
    let policy = "/spec/externalTrafficPolicy";
    if service.pointer(policy).is_some()
        && service.pointer(policy) == old.pointer(policy)
        && let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("externalTrafficPolicy");
    }
    let Some(ports) = service
        .pointer_mut("/spec/ports")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for port in ports {
        let carried = port
            .get("nodePort")
            .and_then(Value::as_i64)
            .is_some_and(|n| held_before.iter().any(|(_, _, had)| *had == n));
        if carried && let Some(port) = port.as_object_mut() {
            port.remove("nodePort");
        }
    }
}

/// Every node port held by a Service other than `namespace/name`.
fn taken_by_others(server: &ApiServer, namespace: &str, name: &str) -> HashSet<i64> {
    let (services, _) = server.store().list(&ResourceKey::new("", "services"), None);
    services
        .iter()
        .filter_map(|s| serde_json::from_slice::<Value>(&s.json).ok())
        .filter(|s| {
            s.pointer("/metadata/namespace").and_then(Value::as_str) != Some(namespace)
                || s.pointer("/metadata/name").and_then(Value::as_str) != Some(name)
        })
        .flat_map(|s| held(&s).into_iter().map(|(_, _, n)| n))
        .collect()
}

fn invalid(field: &str, value: i64, detail: &str) -> Cause {
    Cause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value}: {detail}"),
        field: field.into(),
    }
}
