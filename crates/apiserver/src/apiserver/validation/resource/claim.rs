//! ResourceClaims and ResourceClaimTemplates: the device requests a claim makes (fixed once created), and what its
//! status may say of the devices allocated and the pods they are reserved for.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::super::field::{Errors, child, index, items, text};
use super::super::meta;
use super::common;
use kmm_api::validation::names;

/// Most requests (and allocation results) a claim may hold.
const MAX_REQUESTS: usize = 32;
/// Most constraints a claim may hold.
const MAX_CONSTRAINTS: usize = 32;
/// Most subrequests a `firstAvailable` request may list.
const MAX_SUBREQUESTS: usize = 8;
/// Most consumers a claim may be reserved for.
const MAX_RESERVED_FOR: usize = 256;
/// What a request reference must name.
const REQUEST_REFERENCE: &str = "must be the name of a request in the claim or the name of a request and a \
subrequest separated by '/'";

/// A ResourceClaim.
pub(crate) fn resource_claim(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    claim_spec(&mut errors, obj.get("spec"), "spec");
    errors
}

/// A ResourceClaimTemplate: the claim metadata and spec it stamps out.
pub(crate) fn resource_claim_template(obj: &Value) -> Errors {
    let mut errors = meta::object_meta(obj.get("metadata"), "metadata");
    let Some(spec) = obj.get("spec") else {
        errors.required("spec", "");
        return errors;
    };
    errors.extend(meta::object_meta(spec.get("metadata"), "spec.metadata"));
    claim_spec(&mut errors, spec.get("spec"), "spec.spec");
    errors
}

/// An update of a claim or template (by `validate`'s rules): its spec is fixed once created.
pub(crate) fn immutable_spec(mut errors: Errors, new: &Value, old: &Value) -> Errors {
    if new.get("spec") != old.get("spec") {
        errors.invalid(
            "spec",
            new.get("spec").unwrap_or(&Value::Null),
            "field is immutable",
        );
    }
    errors
}

/// A claim's `status` as written through `/status`: allocation results naming the claim's requests, fixed once
/// allocated; at most 256 reservations with unique UIDs, none without an allocation, none added while deleting.
pub(crate) fn resource_claim_status(new: &Value, old: &Value) -> Errors {
    let mut errors = Errors::default();
    let status = new.get("status").unwrap_or(&Value::Null);
    let allocation = status.get("allocation").filter(|a| !a.is_null());
    let old_allocation = old.pointer("/status/allocation").filter(|a| !a.is_null());
    if let (Some(new_allocation), Some(old_allocation)) = (allocation, old_allocation)
        && new_allocation != old_allocation
    {
        errors.invalid("status.allocation", new_allocation, "field is immutable");
    }
    if let Some(allocation) = allocation {
        let requests = request_names(new.pointer("/spec/devices"));
        allocation_results(&mut errors, allocation, &requests);
    }
    let reserved = items(status, "reservedFor");
    if reserved.len() > MAX_RESERVED_FOR {
        errors.too_many("status.reservedFor", reserved.len(), MAX_RESERVED_FOR);
    }
    if !reserved.is_empty() && allocation.is_none() {
        errors.forbidden(
            "status.reservedFor",
            "may not be specified when `allocated` is not set",
        );
    }
    let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
    let old_reserved = old
        .pointer("/status/reservedFor")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if deleting && reserved.iter().any(|r| !old_reserved.contains(r)) {
        errors.forbidden(
            "status.reservedFor",
            "new entries may not be added while `deletionTimestamp` is set",
        );
    }
    let mut uids = HashSet::new();
    for (i, consumer) in reserved.iter().enumerate() {
        let at = index("status.reservedFor", i);
        for field in ["resource", "name", "uid"] {
            if text(consumer, field).is_empty() {
                errors.required(&child(&at, field), "");
            }
        }
        let uid = text(consumer, "uid");
        if !uid.is_empty() && !uids.insert(uid) {
            errors.duplicate(&child(&at, "uid"), &json!(uid));
        }
    }
    errors
}

/// A claim spec at `path`: its requests, constraints and configuration.
fn claim_spec(errors: &mut Errors, spec: Option<&Value>, path: &str) {
    let Some(devices) = spec.and_then(|s| s.get("devices")) else {
        return;
    };
    let devices_at = child(path, "devices");
    let requests = requests(
        errors,
        items(devices, "requests"),
        &child(&devices_at, "requests"),
    );
    let constraints = items(devices, "constraints");
    let constraints_at = child(&devices_at, "constraints");
    if constraints.len() > MAX_CONSTRAINTS {
        errors.too_many(&constraints_at, constraints.len(), MAX_CONSTRAINTS);
    }
    for (i, constraint) in constraints.iter().enumerate() {
        let at = index(&constraints_at, i);
        request_references(errors, constraint, &at, &requests);
        let attribute = |field: &str| constraint.get(field).and_then(Value::as_str);
        match (attribute("matchAttribute"), attribute("distinctAttribute")) {
            (None, None) => errors.required(&child(&at, "matchAttribute"), ""),
            (Some(_), Some(_)) => errors.invalid(
                &at,
                constraint,
                "exactly one of `matchAttribute` or `distinctAttribute` is required, but multiple fields are set",
            ),
            (Some(name), None) => {
                common::qualified_name(errors, name, &child(&at, "matchAttribute"), true);
            }
            (None, Some(name)) => {
                common::qualified_name(errors, name, &child(&at, "distinctAttribute"), true);
            }
        }
    }
    let configs = items(devices, "config");
    let configs_at = child(&devices_at, "config");
    if configs.len() > common::MAX_CONFIGS {
        errors.too_many(&configs_at, configs.len(), common::MAX_CONFIGS);
    }
    for (i, config) in configs.iter().enumerate() {
        let at = index(&configs_at, i);
        request_references(errors, config, &at, &requests);
        common::opaque_config(errors, config, &at);
    }
}

/// The requests at `path`, each a unique DNS label with exactly one of `exactly` and `firstAvailable`; returns
/// what a reference may name: each request, and each `request/subrequest`.
fn requests(errors: &mut Errors, list: &[Value], path: &str) -> HashSet<String> {
    if list.len() > MAX_REQUESTS {
        errors.too_many(path, list.len(), MAX_REQUESTS);
    }
    let mut referable = HashSet::new();
    for (i, request) in list.iter().enumerate() {
        let at = index(path, i);
        let name = text(request, "name");
        unique_label(errors, name, &child(&at, "name"), &mut referable);
        let exactly = request.get("exactly").filter(|e| !e.is_null());
        let first_available = request.get("firstAvailable").filter(|f| !f.is_null());
        match (exactly, first_available) {
            (None, None) => errors.required(
                &at,
                "exactly one of `exactly` or `firstAvailable` is required",
            ),
            (Some(_), Some(_)) => errors.invalid_shown(
                &at,
                "\"<value omitted>\"",
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            ),
            (Some(exactly), None) => device_request(errors, exactly, &child(&at, "exactly")),
            (None, Some(subrequests)) => {
                let subrequests = subrequests.as_array().map_or(&[][..], Vec::as_slice);
                let sub_at = child(&at, "firstAvailable");
                if subrequests.is_empty() {
                    errors.required(&sub_at, "");
                } else if subrequests.len() > MAX_SUBREQUESTS {
                    errors.too_many(&sub_at, subrequests.len(), MAX_SUBREQUESTS);
                }
                let mut seen = HashSet::new();
                for (j, subrequest) in subrequests.iter().enumerate() {
                    let at = index(&sub_at, j);
                    let sub_name = text(subrequest, "name");
                    unique_label(errors, sub_name, &child(&at, "name"), &mut seen);
                    device_request(errors, subrequest, &at);
                }
                referable.extend(seen.into_iter().map(|sub| format!("{name}/{sub}")));
            }
        }
    }
    referable
}

/// A name at `path` that must be a DNS label not in `seen`; added to it.
fn unique_label(errors: &mut Errors, name: &str, path: &str, seen: &mut HashSet<String>) {
    if name.is_empty() {
        errors.required(path, "");
        return;
    }
    errors.invalid_each(path, name, names::dns1123_label_errors(name));
    if !seen.insert(name.to_string()) {
        errors.duplicate(path, &json!(name));
    }
}

/// What an exact request or a subrequest asks for, at `path`: a class, selectors, and how many devices.
fn device_request(errors: &mut Errors, request: &Value, path: &str) {
    let class = text(request, "deviceClassName");
    let class_at = child(path, "deviceClassName");
    if class.is_empty() {
        errors.required(&class_at, "");
    } else {
        errors.invalid_each(&class_at, class, names::dns1123_subdomain_errors(class));
    }
    common::selectors(
        errors,
        items(request, "selectors"),
        &child(path, "selectors"),
    );
    let count = request.get("count").and_then(Value::as_i64);
    let count_at = child(path, "count");
    match text(request, "allocationMode") {
        "ExactCount" => {
            if count.is_none_or(|c| c <= 0) {
                errors.invalid(
                    &count_at,
                    &json!(count.unwrap_or(0)),
                    "must be greater than zero",
                );
            }
        }
        "All" => {
            if let Some(count) = count.filter(|c| *c != 0) {
                errors.invalid(
                    &count_at,
                    &json!(count),
                    "must not be specified when allocationMode is 'All'",
                );
            }
        }
        "" => errors.required(&child(path, "allocationMode"), ""),
        other => errors.not_supported(
            &child(path, "allocationMode"),
            &json!(other),
            &["All", "ExactCount"],
        ),
    }
}

/// The `requests` a constraint or configuration names at `path`: each one of the claim's, named once.
fn request_references(errors: &mut Errors, entry: &Value, path: &str, requests: &HashSet<String>) {
    let at = child(path, "requests");
    let mut seen = HashSet::new();
    for (i, name) in common::strings(entry, "requests").enumerate() {
        let name_at = index(&at, i);
        if !seen.insert(name) {
            errors.duplicate(&name_at, &json!(name));
        } else if !requests.contains(name) {
            errors.invalid(&name_at, &json!(name), REQUEST_REFERENCE);
        }
    }
}

/// The names the requests of a claim's `spec.devices` have, subrequests as `request/subrequest`.
fn request_names(devices: Option<&Value>) -> HashSet<String> {
    let mut names = HashSet::new();
    for request in devices.map_or(&[][..], |d| items(d, "requests")) {
        let name = text(request, "name");
        names.insert(name.to_string());
        for sub in items(request, "firstAvailable") {
            names.insert(format!("{name}/{}", text(sub, "name")));
        }
    }
    names
}

/// The devices an allocation gives, each for one of the claim's requests, from a well-named driver, pool and
/// device.
fn allocation_results(errors: &mut Errors, allocation: &Value, requests: &HashSet<String>) {
    let path = "status.allocation.devices.results";
    let results = allocation
        .get("devices")
        .map_or(&[][..], |d| items(d, "results"));
    if results.len() > MAX_REQUESTS {
        errors.too_many(path, results.len(), MAX_REQUESTS);
    }
    for (i, result) in results.iter().enumerate() {
        let at = index(path, i);
        let request = text(result, "request");
        if request.is_empty() {
            errors.required(&child(&at, "request"), "");
        } else if !requests.contains(request) {
            errors.invalid(&child(&at, "request"), &json!(request), REQUEST_REFERENCE);
        }
        common::driver_name(errors, text(result, "driver"), &child(&at, "driver"));
        common::pool_name(errors, text(result, "pool"), &child(&at, "pool"));
        common::device_name(errors, text(result, "device"), &child(&at, "device"));
    }
}
