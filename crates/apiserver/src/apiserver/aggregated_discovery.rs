//! Aggregated discovery (`apidiscovery.k8s.io` `APIGroupDiscoveryList`): every group, version and resource of
//! `/api` or `/apis` in one document, which kubectl and kube-rs ask for first and read instead of one request per
//! group version. A client that asks only for the classic documents (`application/json`) still gets those.
//!
//! The aggregated document is built from the classic per-version resource lists ([`discovery::resources`]), so the
//! two always describe the same resources, subresources and verbs.

use serde_json::{Map, Value, json};

use super::discovery;
use super::errors::ApiError;
use super::negotiation::{self, MediaRange};
use super::registry::Registry;

/// The group of the aggregated discovery kinds.
const GROUP: &str = "apidiscovery.k8s.io";

/// The kind clients ask for with `as=`.
const KIND: &str = "APIGroupDiscoveryList";

/// The media types `/api` and `/apis` write, for a 406's message.
const OFFERED: &str = "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList, application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which discovery document `/api` or `/apis` answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiscoveryForm {
    /// The classic `APIVersions` / `APIGroupList`.
    Classic,
    /// `APIGroupDiscoveryList` in this version of `apidiscovery.k8s.io` (`v2` or `v2beta1`, which are alike).
    Aggregated(&'static str),
}

impl DiscoveryForm {
    /// The form the client's `Accept` header prefers among those served; 406 when it accepts none of them.
    pub(crate) fn negotiate(accept: Option<&str>) -> Result<Self, ApiError> {
        negotiation::negotiate(accept, Self::Classic, OFFERED, Self::of_range)
    }

    fn of_range(range: &MediaRange) -> Option<Self> {
        if !range.takes_json() {
            return None;
        }
        match range.conversion() {
            None => Some(Self::Classic),
            Some((KIND, GROUP, "v2")) => Some(Self::Aggregated("v2")),
            Some((KIND, GROUP, "v2beta1")) => Some(Self::Aggregated("v2beta1")),
            Some(_) => None,
        }
    }

    /// The `Content-Type` of the answer, which names the aggregated kind as the request did.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Self::Classic => "application/json",
            Self::Aggregated("v2beta1") => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
            Self::Aggregated(_) => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
        }
    }
}

/// `/api` aggregated: the core group alone, with no name.
pub(crate) fn core(registry: &Registry, version: &str) -> Value {
    let versions: Vec<String> = discovery::core_versions()["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    list(version, vec![group(registry, "", &versions)])
}

/// `/apis` aggregated: every other group, in the order of the classic group list, versions preferred first.
pub(crate) fn groups(registry: &Registry, version: &str) -> Value {
    let classic = discovery::groups(registry);
    let items = classic["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| {
            let name = entry["name"].as_str().unwrap_or_default();
            let versions: Vec<String> = entry["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v["version"].as_str())
                .map(str::to_string)
                .collect();
            group(registry, name, &versions)
        })
        .collect();
    list(version, items)
}

fn list(version: &str, items: Vec<Value>) -> Value {
    json!({
        "kind": KIND,
        "apiVersion": format!("{GROUP}/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// One `APIGroupDiscovery`; the core group's metadata has no name.
fn group(registry: &Registry, name: &str, versions: &[String]) -> Value {
    let mut metadata = json!({ "creationTimestamp": null });
    if !name.is_empty() {
        metadata["name"] = json!(name);
    }
    let versions: Vec<Value> = versions
        .iter()
        .filter_map(|v| {
            let classic = discovery::resources(registry, name, v).ok()?;
            Some(json!({
                "version": v,
                "resources": resources(&classic, name, v),
                "freshness": "Current",
            }))
        })
        .collect();
    json!({ "metadata": metadata, "versions": versions })
}

/// The resources of one classic `APIResourceList`, each with its subresources folded in.
fn resources(classic: &Value, group: &str, version: &str) -> Vec<Value> {
    let entries = classic["resources"].as_array().cloned().unwrap_or_default();
    let mut resources: Vec<Value> = Vec::new();
    let mut position: Map<String, Value> = Map::new();
    for entry in entries.iter().filter(|e| !name_of(e).contains('/')) {
        position.insert(name_of(entry).to_string(), json!(resources.len()));
        resources.push(resource(entry, group, version));
    }
    for entry in &entries {
        let Some((parent, sub)) = name_of(entry).split_once('/') else {
            continue;
        };
        let Some(index) = position.get(parent).and_then(Value::as_u64) else {
            continue;
        };
        let subresource = json!({
            "subresource": sub,
            "responseKind": response_kind(entry, "", ""),
            "verbs": entry["verbs"],
        });
        let parent = &mut resources[index as usize];
        match parent["subresources"].as_array_mut() {
            Some(list) => list.push(subresource),
            None => parent["subresources"] = json!([subresource]),
        }
    }
    resources
}

fn name_of(entry: &Value) -> &str {
    entry["name"].as_str().unwrap_or_default()
}

/// One `APIResourceDiscovery`; short names, categories and subresources only when there are some.
fn resource(entry: &Value, group: &str, version: &str) -> Value {
    let scope = if entry["namespaced"].as_bool().unwrap_or(false) {
        "Namespaced"
    } else {
        "Cluster"
    };
    let mut resource = json!({
        "resource": entry["name"],
        "responseKind": response_kind(entry, group, version),
        "scope": scope,
        "singularResource": entry["singularName"],
        "verbs": entry["verbs"],
    });
    for optional in ["shortNames", "categories"] {
        if entry[optional].as_array().is_some_and(|a| !a.is_empty()) {
            resource[optional] = entry[optional].clone();
        }
    }
    resource
}

/// The kind an entry answers with. A subresource whose kind lives in another group (`pods/eviction`) names that
/// group and version in the classic entry; otherwise a subresource's group and version stay empty and a resource's
/// are its own, as kube-apiserver writes them.
fn response_kind(entry: &Value, group: &str, version: &str) -> Value {
    let field = |name: &str, fallback: &str| {
        entry[name]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback)
            .to_string()
    };
    json!({
        "group": field("group", group),
        "version": field("version", version),
        "kind": entry["kind"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_acceptable_form_wins() {
        let v2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        let v2beta1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        let form = |accept: &str| DiscoveryForm::negotiate(Some(accept)).map_err(|e| e.code);
        assert_eq!(form(v2), Ok(DiscoveryForm::Aggregated("v2")));
        assert_eq!(
            form(&format!("{v2beta1},{v2},application/json")),
            Ok(DiscoveryForm::Aggregated("v2beta1"))
        );
        assert_eq!(
            form(&format!("application/json,{v2}")),
            Ok(DiscoveryForm::Classic)
        );
        assert_eq!(
            form(&format!(
                "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,{v2}"
            )),
            Ok(DiscoveryForm::Aggregated("v2"))
        );
        assert_eq!(
            form("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList"),
            Err(406)
        );
        assert_eq!(
            DiscoveryForm::negotiate(None).unwrap(),
            DiscoveryForm::Classic
        );
    }

    #[test]
    fn subresources_fold_into_their_resource() {
        let registry = Registry::with_builtins();
        let doc = core(&registry, "v2");
        let pods = doc["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "pods")
            .unwrap()
            .clone();
        assert_eq!(
            pods["responseKind"],
            json!({"group": "", "version": "v1", "kind": "Pod"})
        );
        let subresources: Vec<&str> = pods["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["subresource"].as_str().unwrap())
            .collect();
        assert!(subresources.contains(&"status") && subresources.contains(&"log"));
    }
}
