//! List semantics of the built-in kinds the API server serves, transcribed from the
//! `patchStrategy`/`patchMergeKey` and `listType`/`listMapKey` tags of Kubernetes' Go types.
//!
//! Every list tagged `patchStrategy:"merge"` is listed; its keys are the `listMapKey`s (the
//! `patchMergeKey` first). Where strategic merge patch merges a list that server-side apply keeps
//! atomic (`Job.status.conditions`, `Pod.status.hostIPs`) the merging semantics are used for both,
//! and lists that only server-side apply merges (such as `resources.claims`) stay atomic.

use serde_json::Value;

use super::{ListKind, ListTypes};

/// How one built-in list merges.
enum Rule {
    /// `patchStrategy:"merge"` on a list of scalars; `listType=set`.
    Set,
    /// A list of objects identified by `keys`; `defaults` gives the value of key fields that
    /// Kubernetes defaults when an item omits them.
    Map {
        keys: &'static [&'static str],
        defaults: &'static [(&'static str, &'static str)],
    },
}

/// A map list whose keys are all required.
const fn keyed(keys: &'static [&'static str]) -> Rule {
    Rule::Map {
        keys,
        defaults: &[],
    }
}

const BY_NAME: Rule = keyed(&["name"]);
const BY_TYPE: Rule = keyed(&["type"]);
const BY_IP: Rule = keyed(&["ip"]);

/// Lists of `ObjectMeta`.
const OBJECT_META: &[(&str, Rule)] = &[
    ("ownerReferences", keyed(&["uid"])),
    ("finalizers", Rule::Set),
];

/// Lists of `PodSpec`, relative to the pod spec.
const POD_SPEC: &[(&str, Rule)] = &[
    ("volumes", BY_NAME),
    ("initContainers", BY_NAME),
    ("containers", BY_NAME),
    ("ephemeralContainers", BY_NAME),
    ("imagePullSecrets", BY_NAME),
    ("hostAliases", BY_IP),
    (
        "topologySpreadConstraints",
        keyed(&["topologyKey", "whenUnsatisfiable"]),
    ),
    ("schedulingGates", BY_NAME),
    ("resourceClaims", BY_NAME),
];

/// The `PodSpec` fields holding containers, whose own lists are [`CONTAINER`].
const CONTAINER_LISTS: &[&str] = &["initContainers", "containers", "ephemeralContainers"];

/// Lists of `Container` (and `EphemeralContainer`), relative to the container.
const CONTAINER: &[(&str, Rule)] = &[
    (
        "ports",
        Rule::Map {
            keys: &["containerPort", "protocol"],
            defaults: &[("protocol", "TCP")],
        },
    ),
    ("env", BY_NAME),
    ("volumeMounts", keyed(&["mountPath"])),
    ("volumeDevices", keyed(&["devicePath"])),
];

/// List semantics of one built-in kind.
struct BuiltinListTypes {
    /// Where the kind's `PodSpec` sits, if it has one.
    pod_spec: Option<&'static [&'static str]>,
    /// Where the pod template's `ObjectMeta` sits, if the kind has one.
    template_metadata: Option<&'static [&'static str]>,
    /// The kind's other merging lists, by full path.
    own_lists: &'static [(&'static [&'static str], Rule)],
}

const STATUS_CONDITIONS: (&[&str], Rule) = (&["status", "conditions"], BY_TYPE);

static METADATA_ONLY: BuiltinListTypes = BuiltinListTypes {
    pod_spec: None,
    template_metadata: None,
    own_lists: &[],
};

static POD: BuiltinListTypes = BuiltinListTypes {
    pod_spec: Some(&["spec"]),
    template_metadata: None,
    own_lists: &[
        STATUS_CONDITIONS,
        (&["status", "podIPs"], BY_IP),
        (&["status", "hostIPs"], BY_IP),
        (&["status", "resourceClaimStatuses"], BY_NAME),
    ],
};

/// Deployment, ReplicaSet, DaemonSet and Job: a pod template and status conditions.
static WORKLOAD: BuiltinListTypes = BuiltinListTypes {
    pod_spec: Some(&["spec", "template", "spec"]),
    template_metadata: Some(&["spec", "template", "metadata"]),
    own_lists: &[STATUS_CONDITIONS],
};

static NODE: BuiltinListTypes = BuiltinListTypes {
    pod_spec: None,
    template_metadata: None,
    own_lists: &[
        (&["spec", "podCIDRs"], Rule::Set),
        STATUS_CONDITIONS,
        (&["status", "addresses"], BY_TYPE),
    ],
};

/// Namespace and CustomResourceDefinition: status conditions only.
static CONDITIONS_ONLY: BuiltinListTypes = BuiltinListTypes {
    pod_spec: None,
    template_metadata: None,
    own_lists: &[STATUS_CONDITIONS],
};

static SERVICE_ACCOUNT: BuiltinListTypes = BuiltinListTypes {
    pod_spec: None,
    template_metadata: None,
    own_lists: &[(&["secrets"], BY_NAME)],
};

/// A Service's ports merge by port number (and protocol, which defaults to TCP, for server-side apply); its
/// cluster IPs, IP families and external IPs are atomic.
static SERVICE: BuiltinListTypes = BuiltinListTypes {
    pod_spec: None,
    template_metadata: None,
    own_lists: &[
        (
            &["spec", "ports"],
            Rule::Map {
                keys: &["port", "protocol"],
                defaults: &[("protocol", "TCP")],
            },
        ),
        STATUS_CONDITIONS,
    ],
};

/// A ResourceClaim's reservations merge by the consumer's UID, so two schedulers adding their pods both land.
static RESOURCE_CLAIM: BuiltinListTypes = BuiltinListTypes {
    pod_spec: None,
    template_metadata: None,
    own_lists: &[(&["status", "reservedFor"], keyed(&["uid"]))],
};

/// List semantics of a built-in kind, for strategic merge patch and server-side apply.
///
/// Kinds without merging lists of their own (ConfigMap, Secret, Event, Lease, RuntimeClass) and
/// kinds that are not built in get the `metadata` rules only (`ownerReferences` by `uid`,
/// `finalizers` as a set), which also suits custom resources, whose `metadata` is `ObjectMeta`.
pub(crate) fn builtin_list_types(group: &str, kind: &str) -> &'static dyn ListTypes {
    match (group, kind) {
        ("", "Pod") => &POD,
        ("", "Node") => &NODE,
        ("", "Namespace") | ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            &CONDITIONS_ONLY
        }
        ("", "ServiceAccount") => &SERVICE_ACCOUNT,
        ("", "Service") => &SERVICE,
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet") | ("batch", "Job") => {
            &WORKLOAD
        }
        ("resource.k8s.io", "ResourceClaim") => &RESOURCE_CLAIM,
        _ => &METADATA_ONLY,
    }
}

impl BuiltinListTypes {
    /// The rule of the list at `path`, if it merges.
    fn rule(&self, path: &[&str]) -> Option<&'static Rule> {
        if let Some(rule) = object_meta_rule(path, &["metadata"]) {
            return Some(rule);
        }
        if let Some(rule) = self
            .template_metadata
            .and_then(|at| object_meta_rule(path, at))
        {
            return Some(rule);
        }
        if let Some(rule) = self.pod_spec.and_then(|at| pod_spec_rule(path, at)) {
            return Some(rule);
        }
        self.own_lists
            .iter()
            .find(|(list_path, _)| *list_path == path)
            .map(|(_, rule)| rule)
    }
}

impl ListTypes for BuiltinListTypes {
    fn list_kind(&self, path: &[&str]) -> ListKind {
        match self.rule(path) {
            None => ListKind::Atomic,
            Some(Rule::Set) => ListKind::Set,
            Some(Rule::Map { keys, .. }) => {
                ListKind::Map(keys.iter().map(|key| (*key).to_owned()).collect())
            }
        }
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        match self.rule(path)? {
            Rule::Map { defaults, .. } => defaults
                .iter()
                .find(|(field, _)| *field == key)
                .map(|(_, value)| Value::from(*value)),
            Rule::Set => None,
        }
    }
}

/// The rule of an `ObjectMeta` list, when `path` is one inside the `ObjectMeta` at `at`.
fn object_meta_rule(path: &[&str], at: &[&str]) -> Option<&'static Rule> {
    match path.strip_prefix(at)? {
        [field] => lookup(OBJECT_META, field),
        _ => None,
    }
}

/// The rule of a `PodSpec` or container list, when `path` is one inside the `PodSpec` at `at`.
fn pod_spec_rule(path: &[&str], at: &[&str]) -> Option<&'static Rule> {
    match path.strip_prefix(at)? {
        [field] => lookup(POD_SPEC, field),
        [containers, field] if CONTAINER_LISTS.contains(containers) => lookup(CONTAINER, field),
        _ => None,
    }
}

fn lookup(rules: &'static [(&str, Rule)], field: &str) -> Option<&'static Rule> {
    rules
        .iter()
        .find(|(name, _)| *name == field)
        .map(|(_, rule)| rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(keys: &[&str]) -> ListKind {
        ListKind::Map(keys.iter().map(|key| (*key).to_owned()).collect())
    }

    #[test]
    fn answers_the_tagged_lists_of_each_kind() {
        let cases: &[(&str, &str, &[&str], ListKind)] = &[
            ("", "Pod", &["spec", "containers"], keys(&["name"])),
            (
                "",
                "Pod",
                &["spec", "initContainers", "env"],
                keys(&["name"]),
            ),
            (
                "",
                "Pod",
                &["spec", "ephemeralContainers", "volumeMounts"],
                keys(&["mountPath"]),
            ),
            (
                "",
                "Pod",
                &["spec", "containers", "ports"],
                keys(&["containerPort", "protocol"]),
            ),
            ("", "Pod", &["spec", "containers", "args"], ListKind::Atomic),
            ("", "Pod", &["spec", "tolerations"], ListKind::Atomic),
            ("", "Pod", &["spec", "hostAliases"], keys(&["ip"])),
            (
                "",
                "Pod",
                &["spec", "topologySpreadConstraints"],
                keys(&["topologyKey", "whenUnsatisfiable"]),
            ),
            ("", "Pod", &["status", "conditions"], keys(&["type"])),
            ("", "Pod", &["metadata", "finalizers"], ListKind::Set),
            ("", "Pod", &["metadata", "ownerReferences"], keys(&["uid"])),
            ("", "Pod", &["metadata", "managedFields"], ListKind::Atomic),
            (
                "resource.k8s.io",
                "ResourceClaim",
                &["status", "reservedFor"],
                keys(&["uid"]),
            ),
            (
                "apps",
                "Deployment",
                &["spec", "template", "spec", "containers", "env"],
                keys(&["name"]),
            ),
            (
                "apps",
                "DaemonSet",
                &["spec", "template", "spec", "volumes"],
                keys(&["name"]),
            ),
            (
                "apps",
                "Deployment",
                &["spec", "template", "metadata", "finalizers"],
                ListKind::Set,
            ),
            (
                "apps",
                "Deployment",
                &["spec", "containers"],
                ListKind::Atomic,
            ),
            (
                "apps",
                "Deployment",
                &["status", "conditions"],
                keys(&["type"]),
            ),
            ("batch", "Job", &["status", "conditions"], keys(&["type"])),
            (
                "batch",
                "Job",
                &["spec", "template", "spec", "imagePullSecrets"],
                keys(&["name"]),
            ),
            ("", "Node", &["spec", "podCIDRs"], ListKind::Set),
            ("", "Node", &["spec", "taints"], ListKind::Atomic),
            ("", "Node", &["status", "addresses"], keys(&["type"])),
            ("", "Namespace", &["status", "conditions"], keys(&["type"])),
            ("", "Namespace", &["spec", "finalizers"], ListKind::Atomic),
            ("", "ServiceAccount", &["secrets"], keys(&["name"])),
            (
                "",
                "ServiceAccount",
                &["imagePullSecrets"],
                ListKind::Atomic,
            ),
            (
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                &["status", "conditions"],
                keys(&["type"]),
            ),
            ("", "ConfigMap", &["metadata", "finalizers"], ListKind::Set),
            (
                "coordination.k8s.io",
                "Lease",
                &["metadata", "ownerReferences"],
                keys(&["uid"]),
            ),
            (
                "kmm.sigs.x-k8s.io",
                "Module",
                &["metadata", "finalizers"],
                ListKind::Set,
            ),
            (
                "kmm.sigs.x-k8s.io",
                "Module",
                &["spec", "selector"],
                ListKind::Atomic,
            ),
            (
                "",
                "Deployment",
                &["status", "conditions"],
                ListKind::Atomic,
            ),
        ];
        for (group, kind, path, expected) in cases {
            assert_eq!(
                &builtin_list_types(group, kind).list_kind(path),
                expected,
                "{group}/{kind} {path:?}"
            );
        }
    }

    #[test]
    fn defaults_the_protocol_of_container_ports_only() {
        let pod = builtin_list_types("", "Pod");
        let ports = ["spec", "containers", "ports"];
        assert_eq!(
            pod.key_default(&ports, "protocol"),
            Some(Value::from("TCP"))
        );
        assert_eq!(pod.key_default(&ports, "containerPort"), None);
        assert_eq!(pod.key_default(&["spec", "containers"], "protocol"), None);
        assert_eq!(
            pod.key_default(&["metadata", "finalizers"], "protocol"),
            None
        );
    }
}
