//! The resource registry: which resources the server serves, under which group/version, and how.
//!
//! Built-in kinds are a fixed table; custom resources are added when a CustomResourceDefinition is created and
//! removed when it is deleted. Discovery, OpenAPI, routing and storage all read this one table, so a CRD becomes
//! usable everywhere at the same moment, as on a real cluster.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

mod builtins;

use builtins::builtin_resources;

use super::scale::ScalePaths;
use super::schema::Schema;
use super::table::{self, Column};
use crate::store::ResourceKey;

/// Every verb a fully-featured resource supports, in the order discovery lists them.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Where a resource comes from; custom ones carry their schema per served version.
#[derive(Debug, Clone)]
pub enum Origin {
    /// Compiled into the server; validated by round-tripping through the k8s-openapi types.
    Builtin,
    /// Declared by a CRD; validated by its structural schema.
    Custom {
        /// Name of the CRD (`plural.group`).
        crd: String,
        /// Compiled structural schema per served version name.
        schemas: HashMap<String, Arc<Schema>>,
    },
}

/// One served resource (e.g. `apps/v1 deployments`).
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// The version objects are stored in; other served versions differ only by `apiVersion`.
    pub storage_version: String,
    /// Every served version, storage version included.
    pub versions: Vec<String>,
    /// Plural name used in URLs.
    pub plural: String,
    /// Singular name, for discovery and `kubectl get <singular>`.
    pub singular: String,
    /// Object kind.
    pub kind: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Short names (`nmc`, `po`, ...), for kubectl.
    pub short_names: Vec<String>,
    /// Categories (`all`, `kmm`), for `kubectl get <category>`.
    pub categories: Vec<String>,
    /// Whether a `/status` subresource exists; if so the main endpoint ignores status changes.
    pub status_subresource: bool,
    /// Where its Scale's counts and selector live, for the kinds with a `/scale` subresource.
    pub scale: Option<ScalePaths>,
    /// Whether `metadata.generation` is maintained (bumped on every non-metadata, non-status change).
    pub tracks_generation: bool,
    /// Verbs the resource supports.
    pub verbs: Vec<&'static str>,
    /// Columns for `kubectl get` (server-side Table rendering).
    pub columns: Vec<Column>,
    /// Builtin or custom (with its schemas).
    pub origin: Origin,
}

impl ResourceType {
    /// `group/version` for `apiVersion`, with the core group written as just the version.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// The storage key prefix of this resource, independent of version.
    pub fn key(&self) -> ResourceKey {
        ResourceKey::new(&self.group, &self.plural)
    }

    /// Whether the given version is served.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// The structural schema of a custom resource at a version.
    pub fn schema(&self, version: &str) -> Option<&Arc<Schema>> {
        match &self.origin {
            Origin::Custom { schemas, .. } => schemas
                .get(version)
                .or_else(|| schemas.get(&self.storage_version)),
            Origin::Builtin => None,
        }
    }

    /// `Kind` + `List`, the kind of list responses.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

/// The live table of served resources, shared by every request.
#[derive(Debug)]
pub struct Registry {
    by_key: RwLock<HashMap<ResourceKey, Arc<ResourceType>>>,
    /// The Kubernetes minor version announced, which decides the built-in API served.
    minor: u32,
}

impl Registry {
    /// A registry holding the built-in resources of the Kubernetes version the server announces by default.
    pub fn with_builtins() -> Self {
        Self::for_minor(super::KUBERNETES_MINOR)
    }

    /// A registry holding the built-in resources Kubernetes `1.<minor>` serves: a group version that came later
    /// (`resource.k8s.io/v1` came with 1.34) is left out, as an older kube-apiserver would not know it.
    pub fn for_minor(minor: u32) -> Self {
        let registry = Self {
            by_key: RwLock::default(),
            minor,
        };
        for rt in builtin_resources(minor) {
            registry.insert(rt);
        }
        registry
    }

    /// The Kubernetes minor version this registry's built-in API is that of.
    pub fn kubernetes_minor(&self) -> u32 {
        self.minor
    }

    /// Add or replace a resource.
    pub fn insert(&self, rt: ResourceType) {
        let mut map = self.by_key.write().unwrap_or_else(|p| p.into_inner());
        map.insert(rt.key(), Arc::new(rt));
    }

    /// Remove a resource (when its CRD goes away).
    pub fn remove(&self, key: &ResourceKey) {
        let mut map = self.by_key.write().unwrap_or_else(|p| p.into_inner());
        map.remove(key);
    }

    /// Look a resource up by group and plural.
    pub fn get(&self, group: &str, plural: &str) -> Option<Arc<ResourceType>> {
        let map = self.by_key.read().unwrap_or_else(|p| p.into_inner());
        map.get(&ResourceKey::new(group, plural)).cloned()
    }

    /// Look a resource up by its key.
    pub fn get_key(&self, key: &ResourceKey) -> Option<Arc<ResourceType>> {
        let map = self.by_key.read().unwrap_or_else(|p| p.into_inner());
        map.get(key).cloned()
    }

    /// Find the resource serving `kind` in `group`, e.g. for owner references and events.
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let map = self.by_key.read().unwrap_or_else(|p| p.into_inner());
        map.values()
            .find(|rt| rt.group == group && rt.kind == kind)
            .cloned()
    }

    /// Every resource, sorted by group then plural so discovery output is stable.
    pub fn all(&self) -> Vec<Arc<ResourceType>> {
        let map = self.by_key.read().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<_> = map.values().cloned().collect();
        all.sort_by(|a, b| {
            (a.group.as_str(), a.plural.as_str()).cmp(&(b.group.as_str(), b.plural.as_str()))
        });
        all
    }
}

/// Build the registry entry a CRD declares, or say why the CRD cannot be served.
pub fn from_crd(crd: &Value) -> Result<ResourceType, String> {
    let spec = crd.get("spec").ok_or("spec is required")?;
    let group = str_at(spec, "group").ok_or("spec.group is required")?;
    let names = spec.get("names").ok_or("spec.names is required")?;
    let plural = str_at(names, "plural").ok_or("spec.names.plural is required")?;
    let kind = str_at(names, "kind").ok_or("spec.names.kind is required")?;
    let singular = str_at(names, "singular")
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = match str_at(spec, "scope") {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(format!(
                "spec.scope: Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            ));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .ok_or("spec.versions is required")?;
    let mut served = Vec::new();
    let mut storage = None;
    let mut schemas = HashMap::new();
    let mut status = false;
    let mut scale = None;
    let mut columns = None;
    for (i, v) in versions.iter().enumerate() {
        let name =
            str_at(v, "name").ok_or_else(|| format!("spec.versions[{i}].name is required"))?;
        if v.get("served").and_then(Value::as_bool).unwrap_or(false) {
            served.push(name.to_string());
        }
        if v.get("storage").and_then(Value::as_bool).unwrap_or(false) {
            if storage.is_some() {
                return Err("spec.versions: Invalid value: must have exactly one version marked as storage version".into());
            }
            storage = Some(name.to_string());
            status = v.pointer("/subresources/status").is_some();
            scale = ScalePaths::from_crd_version(v);
            let printer = v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            columns = Some(
                table::crd_columns(&printer)
                    .map_err(|e| format!("spec.versions[{i}].additionalPrinterColumns: {e}"))?,
            );
        }
        if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
            let compiled = Schema::compile(schema)
                .map_err(|e| format!("spec.versions[{i}].schema.openAPIV3Schema: {e}"))?;
            schemas.insert(name.to_string(), Arc::new(compiled));
        }
    }
    let storage = storage.ok_or(
        "spec.versions: Invalid value: must have exactly one version marked as storage version",
    )?;
    if served.is_empty() {
        return Err("spec.versions: Invalid value: must have at least one served version".into());
    }
    let list = |key: &str| -> Vec<String> {
        names
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(ResourceType {
        group: group.to_string(),
        storage_version: storage,
        versions: served,
        plural: plural.to_string(),
        singular,
        kind: kind.to_string(),
        namespaced,
        short_names: list("shortNames"),
        categories: list("categories"),
        status_subresource: status,
        scale,
        tracks_generation: true,
        verbs: ALL_VERBS.to_vec(),
        columns: columns.unwrap_or_default(),
        origin: Origin::Custom {
            crd: format!("{plural}.{group}"),
            schemas,
        },
    })
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}
