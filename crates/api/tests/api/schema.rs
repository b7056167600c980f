//! Our CRDs against upstream's: every upstream property path exists with the same type and the
//! same validation keywords, apart from the deliberate differences listed here. Also checks that
//! our CRDs are structural and carry what `kubectl` needs (categories, short names, columns).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kmm_api::crds;
use serde_json::Value;

/// Upstream CRD files, relative to `../shared/reference`.
const UPSTREAM_CRDS: [&str; 8] = [
    "kmm/config/crd/bases/kmm.sigs.x-k8s.io_modules.yaml",
    "kmm/config/crd/bases/kmm.sigs.x-k8s.io_nodemodulesconfigs.yaml",
    "kmm/config/crd/bases/kmm.sigs.x-k8s.io_moduleimagesconfigs.yaml",
    "kmm/config/crd/bases/kmm.sigs.x-k8s.io_modulebuildsignconfigs.yaml",
    "kmm/config/crd/bases/kmm.sigs.x-k8s.io_preflightvalidations.yaml",
    "shim/config/crd/bases/runtime.spinkube.dev_shims.yaml",
    "imagecache/deploy/kubefledged-crd.yaml",
    "kmm/config/crd-hub/bases/hub.kmm.sigs.x-k8s.io_managedclustermodules.yaml",
];

/// Deliberate differences from upstream: (CRD, version, property path, keyword, why).
const DELIBERATE: &[(&str, &str, &str, &str, &str)] = &[(
    "shims.runtime.spinkube.dev",
    "v1alpha1",
    ".spec.rolloutStrategy.rolling.maxUpdate",
    "type",
    "a node count or a percentage of nodes, as the shim design asks; every upstream integer \
     stays valid",
)];

/// Where the upstream CRDs embed core Kubernetes types. Their schemas come from k8s-openapi's
/// `v1_33` descriptions, which carry no list/map merge annotations, quantity patterns or
/// defaults, so only the types of their fields are compared; the API server validates these
/// fields again when it admits the pods built from them.
const CORE_TYPE_SUBTREES: [&str; 5] = [
    ".tolerations[]",
    ".volumes[]",
    ".env[]",
    ".resources",
    ".volumeMounts[]",
];

/// Fields core types gained after Kubernetes 1.33, absent from k8s-openapi's `v1_33` schemas.
const NEWER_CORE_FIELDS: [&str; 2] = [
    ".valueFrom.fileKeyRef",
    ".projected.sources[].podCertificate",
];

fn in_core_subtree(path: &str) -> bool {
    CORE_TYPE_SUBTREES
        .iter()
        .any(|subtree| path.contains(subtree))
}

fn is_newer_core_field(path: &str) -> bool {
    in_core_subtree(path) && NEWER_CORE_FIELDS.iter().any(|field| path.contains(field))
}

/// Facts about one schema node that must match upstream wherever upstream states them.
fn facts(schema: &JSONSchemaProps) -> BTreeMap<&'static str, Value> {
    let mut facts = BTreeMap::new();
    let type_ = if schema.x_kubernetes_int_or_string == Some(true) {
        "int-or-string".to_owned()
    } else {
        schema.type_.clone().unwrap_or_else(|| "any".to_owned())
    };
    facts.insert("type", Value::String(type_));
    let optional: [(&'static str, Option<Value>); 12] = [
        (
            "enum",
            schema
                .enum_
                .as_ref()
                .map(|values| values.iter().map(|v| v.0.clone()).collect()),
        ),
        ("pattern", schema.pattern.clone().map(Value::from)),
        (
            "default",
            schema.default.as_ref().map(|json| json.0.clone()),
        ),
        ("minItems", schema.min_items.map(Value::from)),
        ("maxItems", schema.max_items.map(Value::from)),
        ("minimum", schema.minimum.map(Value::from)),
        ("minLength", schema.min_length.map(Value::from)),
        ("maxLength", schema.max_length.map(Value::from)),
        (
            "x-kubernetes-list-type",
            schema.x_kubernetes_list_type.clone().map(Value::from),
        ),
        (
            "x-kubernetes-map-type",
            schema.x_kubernetes_map_type.clone().map(Value::from),
        ),
        (
            "x-kubernetes-preserve-unknown-fields",
            schema.x_kubernetes_preserve_unknown_fields.map(Value::from),
        ),
        (
            "x-kubernetes-list-map-keys",
            schema.x_kubernetes_list_map_keys.clone().map(Value::from),
        ),
    ];
    facts.extend(
        optional
            .into_iter()
            .filter_map(|(key, value)| Some((key, value?))),
    );
    if let Some(rules) = &schema.x_kubernetes_validations {
        let rules: Vec<Value> = rules
            .iter()
            .map(|rule| Value::from(rule.rule.clone()))
            .collect();
        facts.insert("x-kubernetes-validations", Value::Array(rules));
    }
    facts
}

/// Every property path of `schema` with its facts and required children.
fn paths(
    schema: &JSONSchemaProps,
) -> BTreeMap<String, (BTreeMap<&'static str, Value>, Vec<String>)> {
    let mut out = BTreeMap::new();
    collect(schema, String::new(), &mut out);
    out
}

fn collect(
    schema: &JSONSchemaProps,
    path: String,
    out: &mut BTreeMap<String, (BTreeMap<&'static str, Value>, Vec<String>)>,
) {
    out.insert(
        path.clone(),
        (facts(schema), schema.required.clone().unwrap_or_default()),
    );
    for (name, property) in schema.properties.iter().flatten() {
        collect(property, format!("{path}.{name}"), out);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(item)) = &schema.items {
        collect(item, format!("{path}[]"), out);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &schema.additional_properties {
        collect(values, format!("{path}{{}}"), out);
    }
}

fn reference_dir() -> Option<PathBuf> {
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/reference"
    ));
    if dir.is_dir() {
        Some(dir.to_path_buf())
    } else {
        eprintln!("skipping: {} not found", dir.display());
        None
    }
}

fn read_crd(path: &Path) -> CustomResourceDefinition {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    let documents: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|error| panic!("parsing {}: {error}", path.display()));
    documents
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{}: no CRD", path.display()))
}

fn is_deliberate(crd: &str, version: &str, path: &str, keyword: &str) -> bool {
    DELIBERATE
        .iter()
        .any(|(c, v, p, k, _)| (*c, *v, *p, *k) == (crd, version, path, keyword))
}

/// Differences between an upstream CRD and ours, as readable lines.
fn differences(
    upstream: &CustomResourceDefinition,
    ours: &CustomResourceDefinition,
) -> Vec<String> {
    let name = upstream.metadata.name.as_deref().unwrap_or_default();
    let mut found = Vec::new();
    for version in &upstream.spec.versions {
        let Some(our_version) = ours.spec.versions.iter().find(|v| v.name == version.name) else {
            found.push(format!("{name} {}: version not served", version.name));
            continue;
        };
        let schema_of = |v: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion| {
            v.schema.as_ref().and_then(|s| s.open_api_v3_schema.clone()).unwrap_or_default()
        };
        let theirs = paths(&schema_of(version));
        let mine = paths(&schema_of(our_version));
        for (path, (their_facts, their_required)) in &theirs {
            let Some((my_facts, my_required)) = mine.get(path) else {
                if !is_newer_core_field(path) {
                    found.push(format!("{name} {} {path}: missing", version.name));
                }
                continue;
            };
            for (keyword, value) in their_facts {
                let excused = is_deliberate(name, &version.name, path, keyword)
                    || (*keyword != "type" && in_core_subtree(path));
                if my_facts.get(keyword) != Some(value) && !excused {
                    found.push(format!(
                        "{name} {} {path}: {keyword} is {:?}, upstream {value}",
                        version.name,
                        my_facts.get(keyword)
                    ));
                }
            }
            for required in their_required {
                if !my_required.contains(required) {
                    found.push(format!(
                        "{name} {} {path}: {required} not required",
                        version.name
                    ));
                }
            }
        }
    }
    found
}

fn ours(name: &str) -> CustomResourceDefinition {
    crds::all()
        .into_iter()
        .chain(crds::hub())
        .find(|crd| crd.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no CRD {name} of ours"))
}

#[test]
fn every_upstream_property_exists_with_the_same_type_and_validation() {
    let Some(reference) = reference_dir() else {
        return;
    };
    let mut found = Vec::new();
    for file in UPSTREAM_CRDS {
        let upstream = read_crd(&reference.join(file));
        let name = upstream.metadata.name.clone().unwrap_or_default();
        found.extend(differences(&upstream, &ours(&name)));
    }
    assert!(
        found.is_empty(),
        "{} differences:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn deliberate_differences_are_real() {
    let Some(reference) = reference_dir() else {
        return;
    };
    for (crd, version, path, keyword, why) in DELIBERATE {
        let file = UPSTREAM_CRDS
            .iter()
            .find(|file| {
                file.ends_with(&format!("{}.yaml", crd.split_once('.').map_or("", |p| p.0)))
            })
            .map(|file| reference.join(file));
        let upstream = file.map(|file| read_crd(&file));
        let schema = |crd: &CustomResourceDefinition| {
            crd.spec
                .versions
                .iter()
                .find(|v| v.name == *version)
                .and_then(|v| v.schema.as_ref()?.open_api_v3_schema.clone())
                .map(|schema| paths(&schema))
                .and_then(|paths| {
                    paths
                        .get(*path)
                        .map(|(facts, _)| facts.get(keyword).cloned())
                })
        };
        let theirs = upstream.as_ref().and_then(schema);
        let mine = schema(&ours(crd));
        assert!(
            theirs.is_some() && theirs != mine,
            "{crd} {path} {keyword} is listed as deliberate ({why}) but does not differ"
        );
    }
}

/// Walks every schema node of our CRDs.
fn for_each_node(
    schema: &JSONSchemaProps,
    path: &str,
    visit: &mut dyn FnMut(&str, &JSONSchemaProps),
) {
    visit(path, schema);
    for (name, property) in schema.properties.iter().flatten() {
        for_each_node(property, &format!("{path}.{name}"), visit);
    }
    if let Some(JSONSchemaPropsOrArray::Schema(item)) = &schema.items {
        for_each_node(item, &format!("{path}[]"), visit);
    }
    if let Some(JSONSchemaPropsOrBool::Schema(values)) = &schema.additional_properties {
        for_each_node(values, &format!("{path}{{}}"), visit);
    }
}

#[test]
fn schemas_are_structural() {
    for crd in crds::all()
        .into_iter()
        .chain(crds::openshift_views())
        .chain(crds::hub())
    {
        let name = crd.metadata.name.clone().unwrap_or_default();
        for version in &crd.spec.versions {
            let schema = version
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .unwrap_or_else(|| panic!("{name} {}: no schema", version.name));
            for_each_node(schema, "", &mut |path, node| {
                let typed = node.type_.is_some()
                    || node.x_kubernetes_int_or_string == Some(true)
                    || node.x_kubernetes_preserve_unknown_fields == Some(true);
                assert!(typed, "{name} {path}: no type");
                assert!(node.nullable.is_none(), "{name} {path}: nullable");
                assert!(
                    node.one_of.is_none() && node.any_of.is_none() && node.all_of.is_none(),
                    "{name} {path}: combinators must not carry types"
                );
                assert!(
                    node.properties.is_none() || node.additional_properties.is_none(),
                    "{name} {path}: properties and additionalProperties together"
                );
                assert!(
                    !matches!(
                        node.additional_properties,
                        Some(JSONSchemaPropsOrBool::Bool(_))
                    ),
                    "{name} {path}: boolean additionalProperties"
                );
                if let Some(values) = &node.enum_ {
                    assert!(
                        values.iter().all(|v| !v.0.is_null()),
                        "{name} {path}: null in enum"
                    );
                }
            });
            for root in ["apiVersion", "kind", "metadata", "spec"] {
                assert!(
                    schema
                        .properties
                        .as_ref()
                        .is_some_and(|p| p.contains_key(root)),
                    "{name}: root lacks {root}"
                );
            }
        }
    }
}

#[test]
fn every_kind_is_listed_by_kubectl_get_kmm_with_status_and_columns() {
    let all = crds::all();
    assert_eq!(all.len(), 8);
    for crd in &all {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        let names = &crd.spec.names;
        assert!(
            names
                .categories
                .iter()
                .flatten()
                .any(|category| category == crds::CATEGORY),
            "{name}: not in category {}",
            crds::CATEGORY
        );
        assert!(
            names.short_names.as_ref().is_some_and(|s| !s.is_empty()),
            "{name}: no short name"
        );
        assert_eq!(
            crd.spec
                .versions
                .iter()
                .filter(|version| version.storage)
                .count(),
            1,
            "{name}: exactly one storage version"
        );
        for version in &crd.spec.versions {
            assert!(
                version
                    .subresources
                    .as_ref()
                    .is_some_and(|s| s.status.is_some()),
                "{name} {}: no status subresource",
                version.name
            );
            let columns = version
                .additional_printer_columns
                .as_deref()
                .unwrap_or_default();
            assert!(
                columns
                    .iter()
                    .any(|column| column.json_path == ".metadata.creationTimestamp"),
                "{name} {}: no Age column",
                version.name
            );
        }
    }
}

#[test]
fn upstream_short_names_are_kept() {
    let expected = [
        ("nodemodulesconfigs.kmm.sigs.x-k8s.io", "nmc"),
        ("moduleimagesconfigs.kmm.sigs.x-k8s.io", "mic"),
        ("modulebuildsignconfigs.kmm.sigs.x-k8s.io", "mbsc"),
        ("preflightvalidations.kmm.sigs.x-k8s.io", "pfv"),
        ("imagecaches.kubefledged.io", "ic"),
    ];
    for (name, short) in expected {
        let crd = ours(name);
        assert!(
            crd.spec
                .names
                .short_names
                .iter()
                .flatten()
                .any(|s| s == short),
            "{name}: lacks short name {short}"
        );
    }
}

#[test]
fn printed_yaml_parses_back_to_the_same_crds() {
    let all = crds::all();
    let yaml = crds::to_yaml(&all);
    assert_eq!(yaml.matches("---\n").count(), all.len());
    let parsed: Vec<CustomResourceDefinition> =
        serde_saphyr::from_multiple(&yaml).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(parsed, all);
}

#[test]
fn preflight_validation_stores_v1beta2_and_serves_v1beta1() {
    let crd = ours("preflightvalidations.kmm.sigs.x-k8s.io");
    let versions: Vec<(&str, bool, bool)> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.served, v.storage))
        .collect();
    assert_eq!(
        versions,
        [("v1beta1", true, false), ("v1beta2", true, true)]
    );
}

#[test]
fn reason_columns_read_the_ready_condition() {
    let mut reason_columns = 0;
    for crd in crds::all() {
        for version in &crd.spec.versions {
            for column in version.additional_printer_columns.iter().flatten() {
                if column.name == "Reason" {
                    reason_columns += 1;
                    let expected = format!(
                        ".status.conditions[?(@.type==\"{}\")].reason",
                        kmm_api::conditions::READY
                    );
                    assert_eq!(column.json_path, expected, "{:?}", crd.metadata.name);
                }
            }
        }
    }
    assert!(reason_columns >= 4, "only {reason_columns} Reason columns");
}

#[test]
fn the_hub_kinds_are_installed_apart_from_every_clusters_kinds() {
    let everywhere: Vec<String> = crds::all()
        .into_iter()
        .chain(crds::openshift_views())
        .filter_map(|crd| crd.metadata.name)
        .collect();
    let hub: Vec<String> = crds::hub()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect();
    assert_eq!(
        hub,
        [
            "managedclusters.cluster.open-cluster-management.io",
            "managedclustersets.cluster.open-cluster-management.io",
            "managedclustersetbindings.cluster.open-cluster-management.io",
            "manifestworks.work.open-cluster-management.io",
            "managedclustermodules.hub.kmm.sigs.x-k8s.io",
        ]
    );
    assert!(
        hub.iter().all(|name| !everywhere.contains(name)),
        "an ordinary cluster installs none of the hub's kinds"
    );
}
