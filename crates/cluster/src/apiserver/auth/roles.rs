//! The roles every cluster starts with: the user-facing ClusterRoles `cluster-admin`, `admin`, `edit` and `view`,
//! discovery and self-reviews for every authenticated user, `cluster-admin` for `system:masters`, and `view` for
//! the viewer. Bootstrap applies them like any client would.
//!
//! A real cluster extends `view`, `edit` and `admin` with custom resources through aggregation; the embedded
//! cluster knows its custom resource groups at start, so it writes them into the roles directly. `view` also reads
//! what a console shows beyond namespaced content (nodes, runtime classes, CRDs, and the Lease that says which
//! engine acts), which a real cluster grants separately.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::authorizer::RBAC_GROUP;
use super::identity::{AUTHENTICATED, MASTERS, VIEWER_USER};

/// Reading and following.
const READ: &[&str] = &["get", "list", "watch"];

/// Every change to objects.
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// What `view` reads in the built-in groups.
const VIEWABLE: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "pods",
            "pods/log",
            "pods/status",
            "configmaps",
            "events",
            "namespaces",
            "namespaces/status",
            "nodes",
            "nodes/status",
            "serviceaccounts",
            "services",
            "endpoints",
            "persistentvolumeclaims",
        ],
    ),
    (
        "apps",
        &[
            "deployments",
            "deployments/status",
            "deployments/scale",
            "daemonsets",
            "daemonsets/status",
            "replicasets",
            "replicasets/status",
            "statefulsets",
            "statefulsets/status",
        ],
    ),
    (
        "batch",
        &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
    ),
    ("events.k8s.io", &["events"]),
    ("node.k8s.io", &["runtimeclasses"]),
    ("apiextensions.k8s.io", &["customresourcedefinitions"]),
    ("coordination.k8s.io", &["leases"]),
];

/// What `edit` changes in the built-in groups (namespaced content only).
const EDITABLE: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "pods",
            "pods/eviction",
            "pods/attach",
            "pods/exec",
            "pods/portforward",
            "configmaps",
            "secrets",
            "serviceaccounts",
            "services",
            "endpoints",
            "persistentvolumeclaims",
        ],
    ),
    (
        "apps",
        &[
            "deployments",
            "deployments/scale",
            "daemonsets",
            "replicasets",
            "statefulsets",
        ],
    ),
    ("batch", &["jobs", "cronjobs"]),
];

/// The paths discovery and health checks use, open to every authenticated user.
const DISCOVERY_PATHS: &[&str] = &[
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/readyz",
    "/version",
    "/version/",
    "/openapi",
    "/openapi/*",
];

/// The built-in ClusterRoles, with `custom_groups` (the API groups of the cluster's CRDs) in `view`, `edit` and
/// `admin`.
pub fn cluster_roles(custom_groups: &[String]) -> Vec<ClusterRole> {
    let custom: Vec<&str> = custom_groups.iter().map(String::as_str).collect();
    let mut view: Vec<PolicyRule> = VIEWABLE
        .iter()
        .map(|(group, resources)| rule(&[group], resources, READ))
        .collect();
    if !custom.is_empty() {
        view.push(rule(&custom, &["*"], READ));
    }
    let mut edit = view.clone();
    edit.extend(
        EDITABLE
            .iter()
            .map(|(group, resources)| rule(&[group], resources, WRITE)),
    );
    edit.push(rule(
        &[""],
        &["secrets", "pods/attach", "pods/exec", "pods/portforward"],
        READ,
    ));
    edit.push(rule(&[""], &["serviceaccounts/token"], &["create"]));
    edit.push(rule(&[""], &["serviceaccounts"], &["impersonate"]));
    if !custom.is_empty() {
        edit.push(rule(&custom, &["*"], WRITE));
    }
    let mut admin = edit.clone();
    admin.push(rule(&[RBAC_GROUP], &["roles", "rolebindings"], &["*"]));
    admin.push(rule(
        &["authorization.k8s.io"],
        &["localsubjectaccessreviews"],
        &["create"],
    ));
    let everything = vec![
        rule(&["*"], &["*"], &["*"]),
        PolicyRule {
            non_resource_urls: Some(vec!["*".to_owned()]),
            verbs: vec!["*".to_owned()],
            ..PolicyRule::default()
        },
    ];
    let discovery = vec![PolicyRule {
        non_resource_urls: Some(DISCOVERY_PATHS.iter().map(|p| p.to_string()).collect()),
        verbs: vec!["get".to_owned()],
        ..PolicyRule::default()
    }];
    let basic_user = vec![
        rule(
            &["authorization.k8s.io"],
            &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            &["create"],
        ),
        rule(
            &["authentication.k8s.io"],
            &["selfsubjectreviews"],
            &["create"],
        ),
    ];
    [
        ("cluster-admin", everything),
        ("admin", admin),
        ("edit", edit),
        ("view", view),
        ("system:discovery", discovery),
        ("system:basic-user", basic_user),
    ]
    .into_iter()
    .map(|(name, rules)| ClusterRole {
        metadata: meta(name),
        rules: Some(rules),
        ..ClusterRole::default()
    })
    .collect()
}

/// The built-in ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    [
        ("cluster-admin", "cluster-admin", "Group", MASTERS),
        (
            "system:discovery",
            "system:discovery",
            "Group",
            AUTHENTICATED,
        ),
        (
            "system:basic-user",
            "system:basic-user",
            "Group",
            AUTHENTICATED,
        ),
        (VIEWER_USER, "view", "User", VIEWER_USER),
    ]
    .into_iter()
    .map(|(name, role, kind, subject)| ClusterRoleBinding {
        metadata: meta(name),
        role_ref: RoleRef {
            api_group: RBAC_GROUP.to_owned(),
            kind: "ClusterRole".to_owned(),
            name: role.to_owned(),
        },
        subjects: Some(vec![Subject {
            api_group: Some(RBAC_GROUP.to_owned()),
            kind: kind.to_owned(),
            name: subject.to_owned(),
            namespace: None,
        }]),
    })
    .collect()
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(owned(groups)),
        resources: Some(owned(resources)),
        verbs: owned(verbs),
        ..PolicyRule::default()
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(
            [(
                "kubernetes.io/bootstrapping".to_owned(),
                "rbac-defaults".to_owned(),
            )]
            .into(),
        ),
        ..ObjectMeta::default()
    }
}
