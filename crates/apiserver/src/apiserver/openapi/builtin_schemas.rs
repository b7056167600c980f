//! The OpenAPI schemas of the built-in kinds, with the descriptions `kubectl explain` prints: generated once from
//! the k8s-openapi types (their `schemars` descriptions come from Kubernetes' own OpenAPI document), then marked with
//! each kind's `x-kubernetes-group-version-kind` and the list semantics the server merges by
//! ([`list_semantics`](super::list_semantics)).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use k8s_openapi::schemars::generate::SchemaSettings;
use k8s_openapi::schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::list_semantics;
use super::schema_refs::V3_PREFIX;

/// Adds a kind's schema (and everything it refers to) to the generator's definitions; returns its `$ref`.
type Describe = fn(&mut SchemaGenerator) -> Schema;

fn describe<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// The built-in kinds with a schema: `(group, version, kind, describe)`.
const KINDS: &[(&str, &str, &str, Describe)] = &[
    ("", "v1", "Pod", describe::<api::core::v1::Pod>),
    ("", "v1", "Namespace", describe::<api::core::v1::Namespace>),
    ("", "v1", "Node", describe::<api::core::v1::Node>),
    ("", "v1", "Event", describe::<api::core::v1::Event>),
    ("", "v1", "ConfigMap", describe::<api::core::v1::ConfigMap>),
    ("", "v1", "Secret", describe::<api::core::v1::Secret>),
    (
        "",
        "v1",
        "ServiceAccount",
        describe::<api::core::v1::ServiceAccount>,
    ),
    ("", "v1", "Service", describe::<api::core::v1::Service>),
    (
        "",
        "v1",
        "ReplicationController",
        describe::<api::core::v1::ReplicationController>,
    ),
    (
        "apps",
        "v1",
        "Deployment",
        describe::<api::apps::v1::Deployment>,
    ),
    (
        "apps",
        "v1",
        "ReplicaSet",
        describe::<api::apps::v1::ReplicaSet>,
    ),
    (
        "apps",
        "v1",
        "DaemonSet",
        describe::<api::apps::v1::DaemonSet>,
    ),
    ("batch", "v1", "Job", describe::<api::batch::v1::Job>),
    (
        "batch",
        "v1",
        "CronJob",
        describe::<api::batch::v1::CronJob>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        describe::<api::rbac::v1::ClusterRole>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        describe::<api::rbac::v1::ClusterRoleBinding>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        describe::<api::rbac::v1::Role>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        describe::<api::rbac::v1::RoleBinding>,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        describe::<api::policy::v1::PodDisruptionBudget>,
    ),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        describe::<api::discovery::v1::EndpointSlice>,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        describe::<APIService>,
    ),
    (
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        describe::<api::node::v1::RuntimeClass>,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        describe::<api::coordination::v1::Lease>,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        describe::<api::admissionregistration::v1::ValidatingAdmissionPolicy>,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        describe::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>,
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        describe::<api::events::v1::Event>,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        describe::<CustomResourceDefinition>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        describe::<api::authorization::v1::SubjectAccessReview>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        describe::<api::authorization::v1::SelfSubjectAccessReview>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        describe::<api::authorization::v1::SelfSubjectRulesReview>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        describe::<api::authorization::v1::LocalSubjectAccessReview>,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        describe::<api::authentication::v1::SelfSubjectReview>,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        describe::<api::authentication::v1::TokenReview>,
    ),
    ("", "v1", "Endpoints", describe::<api::core::v1::Endpoints>),
    (
        "",
        "v1",
        "ComponentStatus",
        describe::<api::core::v1::ComponentStatus>,
    ),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        describe::<api::core::v1::PersistentVolumeClaim>,
    ),
    (
        "",
        "v1",
        "PersistentVolume",
        describe::<api::core::v1::PersistentVolume>,
    ),
    (
        "apps",
        "v1",
        "StatefulSet",
        describe::<api::apps::v1::StatefulSet>,
    ),
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        describe::<api::networking::v1::Ingress>,
    ),
    (
        "networking.k8s.io",
        "v1",
        "IngressClass",
        describe::<api::networking::v1::IngressClass>,
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        describe::<api::autoscaling::v2::HorizontalPodAutoscaler>,
    ),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        describe::<api::autoscaling::v1::HorizontalPodAutoscaler>,
    ),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        describe::<api::certificates::v1::CertificateSigningRequest>,
    ),
    (
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        describe::<api::resource::v1::DeviceClass>,
    ),
    (
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        describe::<api::resource::v1::ResourceClaim>,
    ),
    (
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        describe::<api::resource::v1::ResourceClaimTemplate>,
    ),
    (
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        describe::<api::resource::v1::ResourceSlice>,
    ),
];

/// Every built-in schema, by its Kubernetes definition name (`io.k8s.api.core.v1.Pod`), and which definition is
/// the schema of each kind.
pub(super) struct BuiltinSchemas {
    definitions: Map<String, Value>,
    kinds: Vec<((&'static str, &'static str, &'static str), String)>,
}

/// Generated on first use: a few hundred definitions, the same for every document.
pub(super) static BUILTIN_SCHEMAS: LazyLock<BuiltinSchemas> =
    LazyLock::new(BuiltinSchemas::generate);

impl BuiltinSchemas {
    fn generate() -> Self {
        let mut generator = SchemaSettings::openapi3()
            .with(|s| s.meta_schema = None)
            .into_generator();
        let kinds: Vec<_> = KINDS
            .iter()
            .map(|&(group, version, kind, describe)| {
                let reference = describe(&mut generator);
                let name = reference
                    .as_value()
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix(V3_PREFIX))
                    .unwrap_or_default()
                    .to_string();
                ((group, version, kind), name)
            })
            .collect();
        let mut definitions = generator.take_definitions(true);
        for ((group, version, kind), name) in &kinds {
            if let Some(schema) = definitions.get_mut(name) {
                schema["x-kubernetes-group-version-kind"] =
                    json!([{ "group": group, "version": version, "kind": kind }]);
            }
            let lists = crate::apiserver::patch::builtin_list_types(group, kind);
            list_semantics::annotate(&mut definitions, name, lists);
        }
        Self { definitions, kinds }
    }

    /// The definition name of a built-in kind's schema, if it has one.
    pub(super) fn kind(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .iter()
            .find(|((g, v, k), _)| (*g, *v, *k) == (group, version, kind))
            .map(|(_, name)| name.as_str())
    }

    /// The named definitions and every definition they refer to, directly or not.
    pub(super) fn closure<'a>(
        &self,
        roots: impl IntoIterator<Item = &'a str>,
    ) -> Map<String, Value> {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut pending: Vec<String> = roots.into_iter().map(str::to_string).collect();
        while let Some(name) = pending.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            if let Some(schema) = self.definitions.get(&name) {
                references(schema, &mut pending);
            }
        }
        seen.into_iter()
            .filter_map(|name| {
                let schema = self.definitions.get(&name)?.clone();
                Some((name, schema))
            })
            .collect()
    }
}

/// Collect the definition names `schema` refers to.
fn references(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(V3_PREFIX) {
                            out.push(name.to_string());
                        }
                    }
                    _ => references(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_carry_their_group_version_kind_and_descriptions() {
        let name = BUILTIN_SCHEMAS.kind("apps", "v1", "Deployment").unwrap();
        assert_eq!(name, "io.k8s.api.apps.v1.Deployment");
        let closure = BUILTIN_SCHEMAS.closure([name]);
        assert_eq!(
            closure[name]["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        let pod_spec = &closure["io.k8s.api.core.v1.PodSpec"];
        assert!(pod_spec["properties"]["containers"]["description"].is_string());
        assert!(closure.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(!closure.contains_key("io.k8s.api.rbac.v1.PolicyRule"));
    }

    /// A kind added to the registry without a schema here would be served with none: `kubectl explain` and
    /// strict client-side validation would fail for it alone.
    #[test]
    fn every_built_in_kind_in_every_served_version_has_a_schema() {
        let missing: Vec<String> = crate::apiserver::registry::Registry::with_builtins()
            .all()
            .iter()
            .flat_map(|rt| {
                rt.versions
                    .iter()
                    .filter(|version| BUILTIN_SCHEMAS.kind(&rt.group, version, &rt.kind).is_none())
                    .map(|version| format!("{}/{version} {}", rt.group, rt.kind))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(missing.is_empty(), "no schema for {missing:?}");
    }
}
