//! Ephemeral containers: added to a running pod through `pods/ephemeralcontainers` (what `kubectl debug` does),
//! never at creation, never changed or removed once added, and without the fields that only make sense for a
//! container the pod was planned with (ports, resources, probes, lifecycle hooks).

use std::collections::HashSet;

use serde_json::{Value, json};

use super::container::{self, PodFacts, Role};
use super::field::{Errors, child, index, items, text};
use super::{pod_claims, volumes};

const PATH: &str = "spec.ephemeralContainers";

/// Fields kube-apiserver refuses in an ephemeral container.
const NOT_FOR_EPHEMERAL: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "lifecycle",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
];

/// A pod being created may not bring ephemeral containers: they are added to pods that run.
pub(super) fn not_on_create(errors: &mut Errors, pod: &Value) {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    if !items(spec, "ephemeralContainers").is_empty() {
        errors.forbidden(PATH, "cannot be set on create");
    }
}

/// An update through `pods/ephemeralcontainers`: the added containers' rules, and the existing ones unchanged.
pub(super) fn update(pod: &Value, old: &Value) -> Errors {
    let mut errors = Errors::default();
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    let added = items(spec, "ephemeralContainers");
    for (i, before) in items(old_spec, "ephemeralContainers").iter().enumerate() {
        let name = text(before, "name");
        match added.iter().find(|c| text(c, "name") == name) {
            None => errors.forbidden(
                PATH,
                &format!("existing ephemeral containers {name:?} may not be removed"),
            ),
            Some(now) if now != before => errors.forbidden(
                &index(PATH, i),
                &format!("existing ephemeral containers {name:?} may not be changed"),
            ),
            Some(_) => {}
        }
    }
    let mut scratch = Errors::default();
    let facts = PodFacts {
        volumes: volumes::volumes(&mut scratch, items(spec, "volumes"), "spec.volumes"),
        host_network: spec.get("hostNetwork").and_then(Value::as_bool) == Some(true),
        claims: pod_claims::pod_resource_claims(&mut scratch, spec, "spec"),
    };
    let targets: Vec<&str> = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|list| items(spec, list))
        .map(|c| text(c, "name"))
        .collect();
    let mut seen: HashSet<String> = targets.iter().map(|t| t.to_string()).collect();
    container::containers(&mut errors, added, PATH, Role::Regular, &facts, &mut seen);
    for (i, c) in added.iter().enumerate() {
        let at = index(PATH, i);
        for field in NOT_FOR_EPHEMERAL {
            if c.get(*field).is_some_and(|v| !is_empty(v)) {
                errors.forbidden(
                    &child(&at, field),
                    "cannot be set for an Ephemeral Container",
                );
            }
        }
        let target = text(c, "targetContainerName");
        if !target.is_empty() && !targets.contains(&target) {
            errors.not_found(&child(&at, "targetContainerName"), &json!(target));
        }
    }
    errors
}

/// Whether a field's value says nothing (as Go's zero value would not be sent).
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        Value::Array(list) => list.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}
