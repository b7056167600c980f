//! Services: ports that kube-proxy can program, a type and affinity it knows, a selector of valid labels, and a
//! cluster IP that, once allocated, stays.

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use super::meta;
use super::port::{number_or_name, port_number, protocol};
use kmm_api::validation::names;

const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// A Service.
pub(super) fn service(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let kind = text(spec, "type");
    if !TYPES.contains(&kind) {
        errors.not_supported("spec.type", &json!(kind), TYPES);
    }
    let cluster_ip = text(spec, "clusterIP");
    let headless = cluster_ip == "None";
    let ports = items(spec, "ports");
    if ports.is_empty() && !headless && kind != "ExternalName" {
        errors.required("spec.ports", "");
    }
    let mut port_names = HashSet::new();
    let mut port_keys = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = index("spec.ports", i);
        let name = text(port, "name");
        if name.is_empty() && ports.len() > 1 {
            errors.required(&child(&at, "name"), "");
        } else if !name.is_empty() {
            errors.invalid_each(&child(&at, "name"), name, names::dns1123_label_errors(name));
            if !port_names.insert(name) {
                errors.duplicate(&child(&at, "name"), &json!(name));
            }
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        port_number(&mut errors, number, &child(&at, "port"));
        protocol(&mut errors, port, &at);
        if port.get("targetPort").is_some() {
            number_or_name(
                &mut errors,
                port.get("targetPort"),
                &child(&at, "targetPort"),
            );
        }
        if port.get("nodePort").is_some_and(|n| n.as_i64() != Some(0))
            && !matches!(kind, "NodePort" | "LoadBalancer")
        {
            errors.forbidden(
                &child(&at, "nodePort"),
                &format!("may not be used when `type` is '{kind}'"),
            );
        }
        if !port_keys.insert((number, text(port, "protocol"))) {
            errors.duplicate(&at, port);
        }
    }
    if kind == "ExternalName" {
        let external = text(spec, "externalName");
        if external.is_empty() {
            errors.required("spec.externalName", "");
        } else {
            let host = external.trim_end_matches('.').to_lowercase();
            errors.invalid_each(
                "spec.externalName",
                external,
                names::dns1123_subdomain_errors(&host),
            );
        }
    } else if !cluster_ip.is_empty() && !headless && cluster_ip.parse::<IpAddr>().is_err() {
        errors.invalid(
            "spec.clusterIPs[0]",
            &json!(cluster_ip),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        );
    }
    let affinity = text(spec, "sessionAffinity");
    if !["ClientIP", "None"].contains(&affinity) {
        errors.not_supported(
            "spec.sessionAffinity",
            &json!(affinity),
            &["ClientIP", "None"],
        );
    }
    meta::labels(&mut errors, spec.get("selector"), "spec.selector");
    for (field, allowed) in [
        (
            "ipFamilyPolicy",
            &["PreferDualStack", "RequireDualStack", "SingleStack"][..],
        ),
        ("internalTrafficPolicy", &["Cluster", "Local"][..]),
        ("externalTrafficPolicy", &["Cluster", "Local"][..]),
    ] {
        let value = text(spec, field);
        if !value.is_empty() && !allowed.contains(&value) {
            errors.not_supported(&child("spec", field), &json!(value), allowed);
        }
    }
    if !text(spec, "externalTrafficPolicy").is_empty()
        && !matches!(kind, "NodePort" | "LoadBalancer")
    {
        errors.invalid(
            "spec.externalTrafficPolicy",
            &json!(text(spec, "externalTrafficPolicy")),
            "may only be set when `type` is 'NodePort' or 'LoadBalancer'",
        );
    }
    errors
}

/// A Service update: the cluster IP it was given stays.
pub(super) fn service_update(new: &Value, old: &Value) -> Errors {
    let mut errors = service(new);
    let was = old
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    let now = new
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    let external = new.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName");
    if !was.is_empty() && was != now && !external {
        errors.invalid("spec.clusterIPs[0]", &json!(now), "may not change once set");
    }
    errors
}
