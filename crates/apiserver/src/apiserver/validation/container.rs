//! A container's rules, shared by a pod's `containers` and `initContainers` (and so by every pod template): its
//! name, image, ports, environment, mounts, resources, probes and security context.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::field::{Errors, child, entries, index, items, key, text};
use super::port::{port_name_errors, port_number, protocol};
use super::probe;
use super::{pod_claims, quantity};
use kmm_api::validation::names;

/// Which list a container is in: init containers may not have probes unless they are sidecars.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Role {
    /// `spec.containers`.
    Regular,
    /// `spec.initContainers`.
    Init,
}

/// What a container's rules need to know of the pod around it.
pub(super) struct PodFacts<'a> {
    /// The names of the pod's volumes, which mounts must refer to.
    pub volumes: HashSet<&'a str>,
    /// `spec.hostNetwork`: then a host port must equal its container port.
    pub host_network: bool,
    /// The names of the pod's `spec.resourceClaims`, which containers' `resources.claims` must refer to.
    pub claims: HashSet<&'a str>,
}

/// The fields a container's environment variable may read from the pod.
const FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The containers of one list at `path`; `seen` holds the names of containers checked before (the name is unique
/// across all of a pod's lists).
pub(super) fn containers(
    errors: &mut Errors,
    list: &[Value],
    path: &str,
    role: Role,
    pod: &PodFacts,
    seen: &mut HashSet<String>,
) {
    for (i, c) in list.iter().enumerate() {
        let at = index(path, i);
        let name = text(c, "name");
        if name.is_empty() {
            errors.required(&child(&at, "name"), "");
        } else {
            errors.invalid_each(&child(&at, "name"), name, names::dns1123_label_errors(name));
            if !seen.insert(name.to_string()) {
                errors.duplicate(&child(&at, "name"), &json!(name));
            }
        }
        image(errors, c, &at);
        let pull = text(c, "imagePullPolicy");
        if !["Always", "IfNotPresent", "Never"].contains(&pull) {
            errors.not_supported(
                &child(&at, "imagePullPolicy"),
                &json!(pull),
                &["Always", "IfNotPresent", "Never"],
            );
        }
        let policy = text(c, "terminationMessagePolicy");
        if !["File", "FallbackToLogsOnError"].contains(&policy) {
            errors.not_supported(
                &child(&at, "terminationMessagePolicy"),
                &json!(policy),
                &["File", "FallbackToLogsOnError"],
            );
        }
        ports(errors, c, &at, pod.host_network);
        env(errors, c, &at);
        mounts(errors, c, &at, &pod.volumes);
        resources(errors, c.get("resources"), &child(&at, "resources"));
        pod_claims::container_claims(
            errors,
            c.get("resources"),
            &child(&at, "resources"),
            &pod.claims,
        );
        probes(errors, c, &at, role);
        security_context(
            errors,
            c.get("securityContext"),
            &child(&at, "securityContext"),
        );
    }
}

fn image(errors: &mut Errors, c: &Value, at: &str) {
    let image = text(c, "image");
    if image.is_empty() {
        errors.required(&child(at, "image"), "");
    } else if image.trim() != image {
        errors.invalid(
            &child(at, "image"),
            &json!(image),
            "must not have leading or trailing whitespace",
        );
    }
}

fn ports(errors: &mut Errors, c: &Value, at: &str, host_network: bool) {
    let mut port_names = HashSet::new();
    for (j, port) in items(c, "ports").iter().enumerate() {
        let at = index(&child(at, "ports"), j);
        let name = text(port, "name");
        if !name.is_empty() {
            errors.invalid_each(&child(&at, "name"), name, port_name_errors(name));
            if !port_names.insert(name) {
                errors.duplicate(&child(&at, "name"), &json!(name));
            }
        }
        let container_port = port
            .get("containerPort")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if container_port == 0 {
            errors.required(&child(&at, "containerPort"), "");
        } else {
            port_number(errors, container_port, &child(&at, "containerPort"));
        }
        let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
        if host_port != 0 {
            port_number(errors, host_port, &child(&at, "hostPort"));
            if host_network && host_port != container_port {
                errors.invalid(
                    &child(&at, "hostPort"),
                    &json!(host_port),
                    "must match `containerPort` when `hostNetwork` is true",
                );
            }
        }
        protocol(errors, port, &at);
    }
}

fn env(errors: &mut Errors, c: &Value, at: &str) {
    for (k, var) in items(c, "env").iter().enumerate() {
        let at = index(&child(at, "env"), k);
        let name = text(var, "name");
        if name.is_empty() {
            errors.required(&child(&at, "name"), "");
        } else if name.contains('=') || !name.bytes().all(|b| (32..=126).contains(&b)) {
            errors.invalid(
                &child(&at, "name"),
                &json!(name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            );
        }
        let Some(from) = var.get("valueFrom") else {
            continue;
        };
        let from_at = child(&at, "valueFrom");
        let sources = [
            "fieldRef",
            "resourceFieldRef",
            "configMapKeyRef",
            "secretKeyRef",
        ]
        .into_iter()
        .filter(|s| from.get(*s).is_some())
        .count();
        if sources == 0 {
            errors.invalid(
                &from_at,
                &json!(""),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            );
        } else if sources > 1 {
            errors.invalid(
                &from_at,
                &json!(""),
                "may not have more than one field specified at a time",
            );
        }
        if !text(var, "value").is_empty() {
            errors.invalid(
                &from_at,
                &json!(""),
                "may not be specified when `value` is not empty",
            );
        }
        if let Some(field_ref) = from.get("fieldRef") {
            let path = text(field_ref, "fieldPath");
            let at = child(&child(&from_at, "fieldRef"), "fieldPath");
            let subscripted = ["metadata.labels['", "metadata.annotations['"]
                .iter()
                .any(|p| path.starts_with(p) && path.ends_with("']"));
            if path.is_empty() {
                errors.required(&at, "");
            } else if !subscripted && !FIELD_PATHS.contains(&path) {
                errors.not_supported(&at, &json!(path), FIELD_PATHS);
            }
        }
        for source in ["configMapKeyRef", "secretKeyRef"] {
            if let Some(reference) = from.get(source)
                && text(reference, "key").is_empty()
            {
                errors.required(&child(&child(&from_at, source), "key"), "");
            }
        }
    }
}

fn mounts(errors: &mut Errors, c: &Value, at: &str, volumes: &HashSet<&str>) {
    let mut paths = HashSet::new();
    for (m, mount) in items(c, "volumeMounts").iter().enumerate() {
        let at = index(&child(at, "volumeMounts"), m);
        let name = text(mount, "name");
        if name.is_empty() {
            errors.required(&child(&at, "name"), "");
        } else if !volumes.contains(name) {
            errors.not_found(&child(&at, "name"), &json!(name));
        }
        let path = text(mount, "mountPath");
        if path.is_empty() {
            errors.required(&child(&at, "mountPath"), "");
        } else if !paths.insert(path) {
            errors.invalid(&child(&at, "mountPath"), &json!(path), "must be unique");
        }
        let sub_path = text(mount, "subPath");
        if sub_path.starts_with('/') {
            errors.invalid(
                &child(&at, "subPath"),
                &json!(sub_path),
                "must be a relative path",
            );
        }
        if sub_path.split('/').any(|part| part == "..") {
            errors.invalid(
                &child(&at, "subPath"),
                &json!(sub_path),
                "must not contain '..'",
            );
        }
    }
}

/// Requests and limits: known resource names, no negative amount, and no request above its limit.
pub(super) fn resources(errors: &mut Errors, resources: Option<&Value>, path: &str) {
    let Some(resources) = resources else {
        return;
    };
    for list in ["limits", "requests"] {
        let list_at = child(path, list);
        for (name, amount) in entries(resources, list) {
            let at = key(&list_at, name);
            resource_name(errors, name, &at);
            let amount = amount.as_str().unwrap_or("");
            if quantity::nanos(amount).is_some_and(|n| n < 0) {
                errors.invalid(&at, &json!(amount), "must be greater than or equal to 0");
            }
        }
    }
    for (name, request) in entries(resources, "requests") {
        let limit = resources
            .get("limits")
            .and_then(|l| l.get(name))
            .and_then(Value::as_str);
        let request = request.as_str().unwrap_or("");
        if let Some(limit) = limit
            && quantity::nanos(request) > quantity::nanos(limit)
        {
            errors.invalid(
                &child(path, "requests"),
                &json!(request),
                &format!("must be less than or equal to {name} limit of {limit}"),
            );
        }
    }
}

fn resource_name(errors: &mut Errors, name: &str, at: &str) {
    let standard =
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-");
    if standard {
        return;
    }
    let qualified = names::qualified_name_errors(name).is_empty();
    if !qualified || !name.contains('/') {
        errors.invalid(
            at,
            &json!(name),
            "must be a standard resource type or fully qualified",
        );
    } else if name.starts_with("kubernetes.io/") || name.contains(".kubernetes.io/") {
        errors.invalid(
            at,
            &json!(name),
            "must be a standard resource for containers",
        );
    }
}

fn probes(errors: &mut Errors, c: &Value, at: &str, role: Role) {
    let sidecar = text(c, "restartPolicy") == "Always";
    match (role, c.get("restartPolicy")) {
        (Role::Regular, Some(_)) => errors.forbidden(
            &child(at, "restartPolicy"),
            "may not be set for non-init containers",
        ),
        (Role::Init, Some(policy)) if !sidecar => {
            errors.not_supported(&child(at, "restartPolicy"), policy, &["Always"])
        }
        _ => {}
    }
    for field in [
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
    ] {
        let Some(value) = c.get(field) else {
            continue;
        };
        let field_at = child(at, field);
        if role == Role::Init && !sidecar {
            errors.forbidden(
                &field_at,
                "may not be set for init containers without restartPolicy=Always",
            );
            continue;
        }
        if field == "lifecycle" {
            for hook in ["postStart", "preStop"] {
                if let Some(handler) = value.get(hook) {
                    probe::handler(
                        errors,
                        handler,
                        &child(&field_at, hook),
                        probe::HOOK_HANDLERS,
                    );
                }
            }
        } else {
            probe::probe(errors, value, &field_at, field);
        }
    }
}

fn security_context(errors: &mut Errors, context: Option<&Value>, path: &str) {
    let Some(context) = context else {
        return;
    };
    for field in ["runAsUser", "runAsGroup"] {
        if let Some(id) = context.get(field).and_then(Value::as_i64)
            && !(0..=i64::from(i32::MAX)).contains(&id)
        {
            errors.invalid(
                &child(path, field),
                &json!(id),
                "must be between 0 and 2147483647, inclusive",
            );
        }
    }
    let no_escalation = context
        .get("allowPrivilegeEscalation")
        .and_then(Value::as_bool)
        == Some(false);
    if no_escalation && context.get("privileged").and_then(Value::as_bool) == Some(true) {
        errors.invalid(
            path,
            context,
            "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
        );
    }
    let adds_sys_admin = context
        .pointer("/capabilities/add")
        .and_then(Value::as_array)
        .is_some_and(|caps| caps.iter().any(|c| c.as_str() == Some("SYS_ADMIN")));
    if no_escalation && adds_sys_admin {
        errors.invalid(
            path,
            context,
            "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
        );
    }
}
