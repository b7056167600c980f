//! The roles every cluster starts with: the user-facing ClusterRoles `cluster-admin`, `admin`, `edit` and `view`,
//! discovery and self-reviews for every authenticated user, `system:auth-delegator` (token and access reviews, for
//! whoever checks credentials on the cluster's behalf), `cluster-admin` for `system:masters`, and `view` for
//! the viewer. Bootstrap applies them like any client would.
//!
//! A real cluster extends `view`, `edit` and `admin` with custom resources through aggregation; the embedded
//! cluster knows its custom resource groups at start, so it writes them into the roles directly. `view` also reads
//! what a console shows beyond namespaced content (nodes, runtime classes, CRDs, and the Lease that says which
//! engine acts), which a real cluster grants separately.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::authorizer::RBAC_GROUP;
use crate::identity::{AUTHENTICATED, MASTERS, VIEWER_USER};

/// Reading and following (kube-apiserver's `Read`).
const READ: &[&str] = &["get", "list", "watch"];

/// Every change to objects, without reading them (kube-apiserver's `Write`).
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

/// Reading and every change (kube-apiserver's `ReadWrite`): no `escalate`, `bind` or `impersonate`, which would
/// let the holder hand out more than it holds.
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// Only creating: subresources that are actions (evicting a pod, issuing a token) or questions.
const CREATE: &[&str] = &["create"];

/// One rule of a built-in role: verbs on resources of one API group.
type Grant = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// What `view` grants: kube-apiserver's `system:aggregate-to-view`, verb for verb, for the resources this server
/// serves. Namespaced content other than Secrets and the ways into pods, read only.
const VIEW: &[Grant] = &[
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
            "serviceaccounts",
            "services",
            "services/status",
            "endpoints",
            "replicationcontrollers",
            "replicationcontrollers/status",
        ],
        READ,
    ),
    (
        "apps",
        &[
            "deployments",
            "deployments/status",
            "daemonsets",
            "daemonsets/status",
            "replicasets",
            "replicasets/status",
            "statefulsets",
            "statefulsets/status",
        ],
        READ,
    ),
    (
        "batch",
        &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
        READ,
    ),
    (
        "policy",
        &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        READ,
    ),
    ("discovery.k8s.io", &["endpointslices"], READ),
    (
        "",
        &["persistentvolumeclaims", "persistentvolumeclaims/status"],
        READ,
    ),
    (
        "networking.k8s.io",
        &["ingresses", "ingresses/status"],
        READ,
    ),
    (
        "autoscaling",
        &[
            "horizontalpodautoscalers",
            "horizontalpodautoscalers/status",
        ],
        READ,
    ),
    (
        "resource.k8s.io",
        &[
            "resourceclaims",
            "resourceclaims/status",
            "resourceclaimtemplates",
        ],
        READ,
    ),
];

/// What `view` reads beyond kube-apiserver's: what the console shows besides namespaced content, which a real
/// cluster grants through other roles. Reading only, and nothing that holds a credential.
const CONSOLE: &[Grant] = &[
    ("", &["nodes", "nodes/status"], READ),
    ("events.k8s.io", &["events"], READ),
    ("node.k8s.io", &["runtimeclasses"], READ),
    ("apiextensions.k8s.io", &["customresourcedefinitions"], READ),
    ("coordination.k8s.io", &["leases"], READ),
];

/// What `edit` adds to `view`: kube-apiserver's `system:aggregate-to-edit`. Changing namespaced content, reading
/// Secrets, running commands in pods, evicting them, acting as and issuing tokens for ServiceAccounts; never
/// status, which is the system's, and no RBAC.
const EDIT: &[Grant] = &[
    (
        "",
        &["secrets", "pods/attach", "pods/exec", "pods/portforward"],
        READ,
    ),
    ("", &["serviceaccounts"], &["impersonate"]),
    (
        "",
        &["pods", "pods/attach", "pods/exec", "pods/portforward"],
        WRITE,
    ),
    ("", &["pods/eviction"], CREATE),
    (
        "",
        &[
            "configmaps",
            "secrets",
            "serviceaccounts",
            "services",
            "endpoints",
            "replicationcontrollers",
        ],
        WRITE,
    ),
    ("", &["serviceaccounts/token"], CREATE),
    (
        "apps",
        &["deployments", "daemonsets", "replicasets", "statefulsets"],
        WRITE,
    ),
    ("batch", &["jobs", "cronjobs"], WRITE),
    ("policy", &["poddisruptionbudgets"], WRITE),
    ("", &["persistentvolumeclaims"], WRITE),
    ("networking.k8s.io", &["ingresses"], WRITE),
    ("autoscaling", &["horizontalpodautoscalers"], WRITE),
    (
        "resource.k8s.io",
        &["resourceclaims", "resourceclaimtemplates"],
        WRITE,
    ),
];

/// What `admin` adds to `edit`: kube-apiserver's `system:aggregate-to-admin`. Roles and RoleBindings in the
/// namespace without `escalate` or `bind`, so a namespace administrator hands out only what it holds itself (and
/// never `*`, nor its own namespace's deletion), and access reviews there.
const ADMIN: &[Grant] = &[
    (
        "authorization.k8s.io",
        &["localsubjectaccessreviews"],
        CREATE,
    ),
    (RBAC_GROUP, &["roles", "rolebindings"], READ_WRITE),
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
    let rules = |grants: &[&[Grant]], custom_verbs: &[&str]| -> Vec<PolicyRule> {
        let mut rules: Vec<PolicyRule> = grants
            .iter()
            .flat_map(|grants| grants.iter())
            .map(|(group, resources, verbs)| rule(&[group], resources, verbs))
            .collect();
        if !custom.is_empty() {
            rules.push(rule(&custom, &["*"], custom_verbs));
        }
        rules
    };
    let view = rules(&[VIEW, CONSOLE], READ);
    let edit = rules(&[VIEW, CONSOLE, EDIT], READ_WRITE);
    let admin = rules(&[VIEW, CONSOLE, EDIT, ADMIN], READ_WRITE);
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
    let auth_delegator = vec![
        rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
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
        ("system:auth-delegator", auth_delegator),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::auth::coverage;
    use crate::apiserver::auth::rules::Rule;

    fn role(name: &str) -> Vec<PolicyRule> {
        cluster_roles(&["kmm.example.io".to_owned()])
            .into_iter()
            .find(|role| role.metadata.name.as_deref() == Some(name))
            .and_then(|role| role.rules)
            .expect("a built-in role")
    }

    #[test]
    fn each_role_holds_the_one_below_it() {
        for (upper, lower) in [("admin", "edit"), ("edit", "view")] {
            let held: Vec<Rule> = role(upper).iter().map(Rule::from).collect();
            let missing = coverage::uncovered(&held, &role(lower));
            assert!(missing.is_empty(), "{upper} lacks {}", missing.describe());
        }
    }

    #[test]
    fn no_namespace_role_grants_what_would_let_it_grant_more() {
        for name in ["admin", "edit", "view"] {
            for rule in role(name) {
                for verb in ["*", "escalate", "bind"] {
                    assert!(!rule.verbs.iter().any(|v| v == verb), "{name}: {rule:?}");
                }
                let groups = rule.api_groups.unwrap_or_default();
                assert!(!groups.iter().any(|g| g == "*"), "{name}: {groups:?}");
            }
        }
        let rbac = role("admin")
            .into_iter()
            .find(|rule| rule.api_groups.as_deref() == Some(&[RBAC_GROUP.to_owned()]))
            .expect("admin manages RBAC");
        assert_eq!(rbac.verbs, READ_WRITE);
    }
}
