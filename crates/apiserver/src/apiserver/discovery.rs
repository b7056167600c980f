//! API discovery (`/api`, `/apis`, group and group-version documents), which kubectl and kube-rs read to map
//! kinds to URLs, learn short names and categories, and know which verbs and subresources exist.
//!
//! These are the classic documents; [`super::aggregated_discovery`] folds them into the one aggregated document
//! clients prefer.

use serde_json::{Value, json};

use super::errors::ApiError;
use super::registry::{Registry, ResourceType};
use super::scale::{SCALE_GROUP, SCALE_KIND, SCALE_VERSION};

/// `/api`.
pub(crate) fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    })
}

/// `/apis`: every non-core group with its versions, preferred version first.
pub(crate) fn groups(registry: &Registry) -> Value {
    let mut names: Vec<String> = registry
        .all()
        .iter()
        .filter(|rt| !rt.group.is_empty())
        .map(|rt| rt.group.clone())
        .collect();
    names.dedup();
    let groups: Vec<Value> = names
        .iter()
        .filter_map(|g| group_entry(registry, g))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `/apis/{group}`.
pub(crate) fn group(registry: &Registry, group: &str) -> Result<Value, ApiError> {
    let mut entry = group_entry(registry, group)
        .ok_or_else(|| ApiError::no_route(&format!("/apis/{group}")))?;
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Ok(entry)
}

fn group_entry(registry: &Registry, group: &str) -> Option<Value> {
    let resources: Vec<_> = registry
        .all()
        .into_iter()
        .filter(|rt| rt.group == group)
        .collect();
    if resources.is_empty() {
        return None;
    }
    let mut versions: Vec<String> = resources
        .iter()
        .flat_map(|rt| rt.versions.iter().cloned())
        .collect();
    versions.sort_by(|a, b| {
        version_priority(b)
            .cmp(&version_priority(a))
            .then_with(|| a.cmp(b))
    });
    versions.dedup();
    let version_entry = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    let preferred = versions.first().map(version_entry);
    Some(json!({
        "name": group,
        "versions": versions.iter().map(version_entry).collect::<Vec<_>>(),
        "preferredVersion": preferred,
    }))
}

/// Kubernetes' version ordering: GA > beta > alpha, then by number.
fn version_priority(version: &str) -> (u8, u32, u32) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (level, major, minor)
}

/// `/api/v1` or `/apis/{group}/{version}`: the resources, one entry per subresource too.
pub(crate) fn resources(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Result<Value, ApiError> {
    let served: Vec<_> = registry
        .all()
        .into_iter()
        .filter(|rt| rt.group == group && rt.serves(version))
        .collect();
    if served.is_empty() {
        return Err(ApiError::no_route(&if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        }));
    }
    let mut list = Vec::new();
    for rt in &served {
        list.push(resource_entry(rt));
        if rt.status_subresource {
            list.push(json!({"name": format!("{}/status", rt.plural), "singularName": "", "namespaced": rt.namespaced, "kind": rt.kind, "verbs": ["get", "patch", "update"]}));
        }
        for (sub, kind, verbs) in extra_subresources(rt) {
            let mut entry = json!({"name": format!("{}/{sub}", rt.plural), "singularName": "", "namespaced": rt.namespaced, "kind": kind, "verbs": verbs});
            if let Some((group, version)) = foreign_group_version(sub) {
                entry["group"] = json!(group);
                entry["version"] = json!(version);
            }
            list.push(entry);
        }
        if rt.scale.is_some() {
            list.push(json!({"name": format!("{}/scale", rt.plural), "singularName": "", "namespaced": rt.namespaced, "group": SCALE_GROUP, "version": SCALE_VERSION, "kind": SCALE_KIND, "verbs": ["get", "patch", "update"]}));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list }),
    )
}

fn resource_entry(rt: &ResourceType) -> Value {
    let mut entry = json!({
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": rt.verbs,
    });
    if !rt.short_names.is_empty() {
        entry["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        entry["categories"] = json!(rt.categories);
    }
    entry
}

/// The group and version of a subresource whose kind lives in another API group than its resource: discovery
/// names them, as kube-apiserver's does, and clients such as `kubectl drain` send that kind only when it does.
fn foreign_group_version(sub: &str) -> Option<(&'static str, &'static str)> {
    match sub {
        "eviction" => Some(("policy", "v1")),
        _ => None,
    }
}

/// Subresources other than status and scale that some built-ins have.
fn extra_subresources(rt: &ResourceType) -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => vec![
            ("log", "Pod", vec!["get"]),
            ("binding", "Binding", vec!["create"]),
            ("eviction", "Eviction", vec!["create"]),
            ("exec", "PodExecOptions", vec!["create", "get"]),
            ("attach", "PodAttachOptions", vec!["create", "get"]),
            (
                "portforward",
                "PodPortForwardOptions",
                vec!["create", "get"],
            ),
            ("ephemeralcontainers", "Pod", vec!["get", "patch", "update"]),
        ],
        ("", "namespaces") => vec![("finalize", "Namespace", vec!["update"])],
        ("certificates.k8s.io", "certificatesigningrequests") => vec![(
            "approval",
            "CertificateSigningRequest",
            vec!["get", "patch", "update"],
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1beta1", "v1", "v2beta1", "v1beta2"];
        v.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(v, vec!["v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1"]);
    }

    #[test]
    fn core_resources_list_subresources() {
        let registry = Registry::with_builtins();
        let doc = resources(&registry, "", "v1").unwrap();
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        for want in [
            "pods",
            "pods/status",
            "pods/log",
            "nodes",
            "nodes/status",
            "namespaces/finalize",
            "configmaps",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        assert!(resources(&registry, "nope", "v1").is_err());
    }
}
