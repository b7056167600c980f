//! Cluster-scoped infrastructure objects: Namespaces (their finalizers) and Nodes (pod CIDRs and taints, some of
//! them fixed once set).

use std::collections::HashSet;
use std::net::IpAddr;

use serde_json::{Value, json};

use super::field::{Errors, child, index, items, text};
use super::{meta, scheduling};
use kmm_api::validation::names;

/// A Namespace.
pub(super) fn namespace(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    for finalizer in items(obj.get("spec").unwrap_or(&Value::Null), "finalizers") {
        let name = finalizer.as_str().unwrap_or("");
        errors.invalid_each("spec.finalizers", name, names::qualified_name_errors(name));
    }
    errors
}

/// A Node.
pub(super) fn node(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    for (i, cidr) in items(spec, "podCIDRs").iter().enumerate() {
        let cidr = cidr.as_str().unwrap_or("");
        if !is_cidr(cidr) {
            errors.invalid(
                &index("spec.podCIDRs", i),
                &json!(cidr),
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            );
        }
    }
    let mut seen = HashSet::new();
    for (i, taint) in items(spec, "taints").iter().enumerate() {
        let at = index("spec.taints", i);
        let key = text(taint, "key");
        if key.is_empty() {
            errors.required(&child(&at, "key"), "");
        } else {
            errors.invalid_each(&child(&at, "key"), key, names::qualified_name_errors(key));
        }
        let value = text(taint, "value");
        errors.invalid_each(
            &child(&at, "value"),
            value,
            names::label_value_errors(value),
        );
        let effect = text(taint, "effect");
        scheduling::taint_effect(&mut errors, effect, &child(&at, "effect"));
        if !seen.insert((key, effect)) {
            errors.duplicate(&at, taint);
        }
    }
    errors
}

/// A Node update: a pod CIDR and a provider ID, once set, stay.
pub(super) fn node_update(new: &Value, old: &Value) -> Errors {
    let mut errors = node(new);
    let was = |field: &str| {
        old.pointer(&format!("/spec/{field}"))
            .filter(|v| !v.is_null())
    };
    let now = |field: &str| new.pointer(&format!("/spec/{field}"));
    if was("podCIDRs").is_some() && now("podCIDRs") != was("podCIDRs") {
        errors.forbidden(
            "spec.podCIDRs",
            "node updates may not change podCIDR except from \"\" to valid",
        );
    }
    if was("providerID").is_some() && now("providerID") != was("providerID") {
        errors.forbidden(
            "spec.providerID",
            "node updates may only set providerID if it is not already set",
        );
    }
    errors
}

fn is_cidr(cidr: &str) -> bool {
    let Some((address, prefix)) = cidr.split_once('/') else {
        return false;
    };
    let Ok(address) = address.parse::<IpAddr>() else {
        return false;
    };
    let max = if address.is_ipv4() { 32 } else { 128 };
    prefix.parse::<u8>().is_ok_and(|p| p <= max)
}
