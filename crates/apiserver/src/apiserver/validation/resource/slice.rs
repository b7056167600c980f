//! ResourceSlices: what a DRA driver publishes about one pool of devices — the driver, the pool, which nodes reach
//! it, and each device with its attributes and capacity.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::super::field::{Errors, child, entries, index, items, text};
use super::super::{meta, scheduling};
use super::common;
use kmm_api::validation::names;

/// Most devices one slice may hold.
const MAX_DEVICES: usize = 128;
/// Most devices one slice may hold when any of them has taints or consumes shared counters.
const MAX_DEVICES_WITH_TAINTS_OR_COUNTERS: usize = 64;
/// Most attributes and capacities one device may have, together.
const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
/// The longest string or version attribute value.
const MAX_ATTRIBUTE_VALUE: usize = 64;
/// The ways a slice says which nodes reach its devices, of which exactly one is given.
const NODE_SELECTIONS: &str =
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";

/// A ResourceSlice.
pub(crate) fn resource_slice(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let Some(spec) = obj.get("spec") else {
        errors.required("spec", "");
        return errors;
    };
    common::driver_name(&mut errors, text(spec, "driver"), "spec.driver");
    pool(&mut errors, spec.get("pool"));
    node_selection(&mut errors, spec);
    devices(&mut errors, items(spec, "devices"));
    errors
}

/// A ResourceSlice update: the create rules, and the driver and pool name and the node stay as they were.
pub(crate) fn resource_slice_update(new: &Value, old: &Value) -> Errors {
    let mut errors = resource_slice(new);
    for (pointer, field) in [
        ("/spec/driver", "spec.driver"),
        ("/spec/pool/name", "spec.pool.name"),
        ("/spec/nodeName", "spec.nodeName"),
    ] {
        if new.pointer(pointer) != old.pointer(pointer) {
            errors.invalid(
                field,
                new.pointer(pointer).unwrap_or(&Value::Null),
                "field is immutable",
            );
        }
    }
    errors
}

fn pool(errors: &mut Errors, pool: Option<&Value>) {
    let Some(pool) = pool else {
        errors.required("spec.pool", "");
        return;
    };
    common::pool_name(errors, text(pool, "name"), "spec.pool.name");
    errors.non_negative(pool, "generation", "spec.pool");
    let count = pool
        .get("resourceSliceCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if count <= 0 {
        errors.invalid(
            "spec.pool.resourceSliceCount",
            &json!(count),
            "must be greater than 0",
        );
    }
}

/// Exactly one of `nodeName`, `nodeSelector`, `allNodes` and `perDeviceNodeSelection`, each well formed.
fn node_selection(errors: &mut Errors, spec: &Value) {
    let node_name = text(spec, "nodeName");
    let flag = |field: &str| spec.get(field).and_then(Value::as_bool) == Some(true);
    let set: Vec<&str> = [
        ("nodeName", !node_name.is_empty()),
        (
            "nodeSelector",
            spec.get("nodeSelector").is_some_and(|s| !s.is_null()),
        ),
        ("allNodes", flag("allNodes")),
        ("perDeviceNodeSelection", flag("perDeviceNodeSelection")),
    ]
    .into_iter()
    .filter_map(|(field, is_set)| is_set.then_some(field))
    .collect();
    match set.len() {
        0 => errors.required("spec", NODE_SELECTIONS),
        1 => {}
        _ => errors.invalid_shown(
            "spec",
            &format!("{{`{}`}}", set.join("`, `")),
            &format!("{NODE_SELECTIONS}, but multiple fields are set"),
        ),
    }
    if !node_name.is_empty() {
        errors.invalid_each(
            "spec.nodeName",
            node_name,
            names::dns1123_subdomain_errors(node_name),
        );
    }
    if let Some(selector) = spec.get("nodeSelector").filter(|s| !s.is_null()) {
        one_node_selector_term(errors, selector, "spec.nodeSelector");
    }
}

/// A node selector of a slice or device: exactly one term, itself valid.
fn one_node_selector_term(errors: &mut Errors, selector: &Value, path: &str) {
    let terms = items(selector, "nodeSelectorTerms");
    let at = child(path, "nodeSelectorTerms");
    if terms.len() != 1 {
        errors.invalid(
            &at,
            &json!(terms.len()),
            "must have exactly one node selector term",
        );
    }
    for (i, term) in terms.iter().enumerate() {
        scheduling::node_selector_term(errors, term, &index(&at, i));
    }
}

fn devices(errors: &mut Errors, devices: &[Value]) {
    let path = "spec.devices";
    let limited = devices
        .iter()
        .any(|d| !items(d, "taints").is_empty() || !items(d, "consumesCounters").is_empty());
    let max = if limited {
        MAX_DEVICES_WITH_TAINTS_OR_COUNTERS
    } else {
        MAX_DEVICES
    };
    if devices.len() > max {
        errors.too_many(path, devices.len(), max);
    }
    let mut seen = HashSet::new();
    for (i, device) in devices.iter().enumerate() {
        let at = index(path, i);
        let name = text(device, "name");
        common::device_name(errors, name, &child(&at, "name"));
        if !name.is_empty() && !seen.insert(name) {
            errors.duplicate(&child(&at, "name"), &json!(name));
        }
        let attributes = attributes(errors, device, &at);
        let capacities = capacities(errors, device, &at);
        if attributes + capacities > MAX_ATTRIBUTES_AND_CAPACITIES {
            errors.too_many(&at, attributes + capacities, MAX_ATTRIBUTES_AND_CAPACITIES);
        }
        if let Some(selector) = device.get("nodeSelector").filter(|s| !s.is_null()) {
            one_node_selector_term(errors, selector, &child(&at, "nodeSelector"));
        }
    }
}

/// A device's attributes, each with exactly one value of a kind; returns how many there are.
fn attributes(errors: &mut Errors, device: &Value, at: &str) -> usize {
    let path = child(at, "attributes");
    let mut count = 0;
    for (name, value) in entries(device, "attributes") {
        count += 1;
        let at = super::super::field::key(&path, name);
        common::qualified_name(errors, name, &at, false);
        let given = ["bool", "int", "string", "version"]
            .into_iter()
            .filter(|kind| value.get(*kind).is_some_and(|v| !v.is_null()))
            .count();
        match given {
            0 => errors.required(&at, "exactly one value must be specified"),
            1 => {}
            _ => errors.invalid(&at, value, "exactly one value must be specified"),
        }
        if let Some(string) = value.get("string").and_then(Value::as_str)
            && string.len() > MAX_ATTRIBUTE_VALUE
        {
            errors.too_long(&child(&at, "string"), MAX_ATTRIBUTE_VALUE);
        }
        if let Some(version) = value.get("version").and_then(Value::as_str) {
            let version_at = child(&at, "version");
            if !common::is_semver(version) {
                errors.invalid(
                    &version_at,
                    &json!(version),
                    "must be a string compatible with semver.org spec 2.0.0",
                );
            }
            if version.len() > MAX_ATTRIBUTE_VALUE {
                errors.too_long(&version_at, MAX_ATTRIBUTE_VALUE);
            }
        }
    }
    count
}

/// A device's capacities, each named as an attribute is; returns how many there are.
fn capacities(errors: &mut Errors, device: &Value, at: &str) -> usize {
    let path = child(at, "capacity");
    let mut count = 0;
    for (name, capacity) in entries(device, "capacity") {
        count += 1;
        let at = super::super::field::key(&path, name);
        common::qualified_name(errors, name, &at, false);
        let value = text(capacity, "value");
        if super::super::quantity::nanos(value).is_none() {
            errors.invalid(
                &child(&at, "value"),
                &json!(value),
                "must be a valid quantity",
            );
        }
    }
    count
}
