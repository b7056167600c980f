//! `ManifestWork` (`work.open-cluster-management.io/v1`): objects the hub asks one spoke to hold. It lives in the
//! spoke's cluster namespace on the hub; the spoke's work agent applies every manifest, removes what leaves, and
//! reports per manifest whether it was applied and what the feedback rules read from it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Objects for one spoke, and how to treat them there.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    crates(kube_core = "::kube_core"),
    group = "work.open-cluster-management.io",
    version = "v1",
    kind = "ManifestWork",
    namespaced,
    status = "ManifestWorkStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "mw",
    printcolumn = r#"{"name": "Applied", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Applied\")].status"}"#,
    printcolumn = r#"{"name": "Available", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Available\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkSpec {
    /// The objects.
    #[serde(default)]
    pub workload: ManifestsTemplate,
    /// What happens to the objects when the work is deleted; every object goes (Foreground) when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_option: Option<DeleteOption>,
    /// Per object: how to update it and what to read back from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_configs: Vec<ManifestConfigOption>,
}

/// The objects of a work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManifestsTemplate {
    /// Whole objects, each with apiVersion, kind and metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "manifests")]
    pub manifests: Vec<Value>,
}

/// Schema of the manifests: whole embedded objects whose fields the server keeps as given.
fn manifests(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true
        }
    })
}

/// What happens to a work's objects when it is deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOption {
    /// `Foreground` (delete every object), `Orphan` (leave them all) or `SelectivelyOrphan` (leave those listed).
    #[serde(default)]
    pub propagation_policy: DeletePropagationPolicy,
    /// The objects `SelectivelyOrphan` leaves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selectively_orphans: Option<SelectivelyOrphan>,
    /// Delete the work this many seconds after it completed (kept as given; the embedded agent does not act on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
}

/// How a deleted work's objects are treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum DeletePropagationPolicy {
    /// Delete every object.
    #[default]
    Foreground,
    /// Leave every object.
    Orphan,
    /// Leave the objects `selectivelyOrphans` lists, delete the rest.
    SelectivelyOrphan,
}

/// The objects a `SelectivelyOrphan` deletion leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectivelyOrphan {
    /// One rule per object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orphaning_rules: Vec<ResourceIdentifier>,
}

/// One object of a work: group, resource (plural), namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceIdentifier {
    /// The API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The resource, plural (`configmaps`).
    pub resource: String,
    /// The name.
    pub name: String,
    /// The namespace; empty for a cluster-scoped object.
    #[serde(default)]
    pub namespace: String,
}

/// How to update one object and what to read back from it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestConfigOption {
    /// The object.
    pub resource_identifier: ResourceIdentifier,
    /// What to read back from it into `status.resourceStatus`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback_rules: Vec<FeedbackRule>,
    /// How to update it (kept as given: the embedded agent always applies server-side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object")]
    pub update_strategy: Option<Value>,
}

/// Schema of an object kept as given.
fn preserved_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// One rule of what to read back from an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRule {
    /// `WellKnownStatus` (the status fields the agent knows for the kind) or `JSONPaths`.
    #[serde(rename = "type")]
    pub type_: FeedbackType,
    /// The paths a `JSONPaths` rule reads.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json_paths: Vec<JsonPath>,
}

/// The kind of a feedback rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FeedbackType {
    /// The status fields the agent knows for the object's kind.
    #[default]
    WellKnownStatus,
    /// The paths the rule lists.
    #[serde(rename = "JSONPaths")]
    JsonPaths,
}

/// A named path into an object's status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JsonPath {
    /// What the value is called in the feedback.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The path, from the object's root (`.status.readyReplicas`), as OCM's agent reads it.
    #[schemars(length(min = 1))]
    pub path: String,
    /// The object's version to read; the manifest's when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// What the work agent reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestWorkStatus {
    /// `Applied`, `Available`, `Degraded`, `Progressing` (see [`names`](super::names)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
    /// One entry per manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_status: Option<ManifestResourceStatus>,
}

/// The manifests' states.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManifestResourceStatus {
    /// One entry per manifest, in the order of `spec.workload.manifests`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<ManifestCondition>,
}

/// One manifest's state on the spoke.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestCondition {
    /// Which object it is.
    pub resource_meta: ManifestResourceMeta,
    /// What the feedback rules read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_feedback: Option<StatusFeedbackResult>,
    /// `Applied`, `Available`, `StatusFeedbackSynced`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::conditions")]
    pub conditions: Vec<Condition>,
}

/// Which object a manifest is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ManifestResourceMeta {
    /// Its index in `spec.workload.manifests`.
    pub ordinal: i32,
    /// API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Resource, plural.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// What the feedback rules read from one object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatusFeedbackResult {
    /// One value per name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<FeedbackValue>,
}

/// A named value read back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackValue {
    /// The rule's name for it (`ReadyReplicas`, or a JSONPath's `name`).
    pub name: String,
    /// The value.
    pub field_value: FieldValue,
}

/// A value read back, typed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValue {
    /// `Integer`, `String`, `Boolean` or `JsonRaw`.
    #[serde(rename = "type")]
    pub type_: ValueType,
    /// An integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integer: Option<i64>,
    /// A string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    /// A boolean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    /// Any other JSON, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub json_raw: Option<String>,
}

/// The type of a value read back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ValueType {
    /// An integer.
    #[default]
    Integer,
    /// A string.
    String,
    /// A boolean.
    Boolean,
    /// Any other JSON.
    JsonRaw,
}

impl FieldValue {
    /// The value `json` holds, typed as the feedback types it: numbers that are whole are `Integer`, arrays and
    /// objects `JsonRaw`. None for null.
    pub fn from_json(json: &Value) -> Option<Self> {
        let mut value = Self::default();
        match json {
            Value::Null => return None,
            Value::Bool(b) => {
                value.type_ = ValueType::Boolean;
                value.boolean = Some(*b);
            }
            Value::Number(n) if n.as_i64().is_some() => {
                value.type_ = ValueType::Integer;
                value.integer = n.as_i64();
            }
            Value::String(s) => {
                value.type_ = ValueType::String;
                value.string = Some(s.clone());
            }
            other => {
                value.type_ = ValueType::JsonRaw;
                value.json_raw = Some(other.to_string());
            }
        }
        Some(value)
    }
}

impl ManifestWork {
    /// The condition of type `type_` the agent reports, when it does.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|condition| condition.type_ == type_)
    }

    /// The feedback value `name` of manifest `ordinal`, when the agent read one.
    pub fn feedback(&self, ordinal: i32, name: &str) -> Option<&FieldValue> {
        self.status
            .as_ref()?
            .resource_status
            .as_ref()?
            .manifests
            .iter()
            .find(|manifest| manifest.resource_meta.ordinal == ordinal)?
            .status_feedback
            .as_ref()?
            .values
            .iter()
            .find(|value| value.name == name)
            .map(|value| &value.field_value)
    }
}
