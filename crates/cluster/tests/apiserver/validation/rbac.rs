//! Roles, ClusterRoles, RoleBindings and ClusterRoleBindings: rules that grant something definite, bindings to
//! roles of the right kind and well-formed subjects; a binding's `roleRef` fixed.

use serde_json::{Value, json};

use super::{admitted, check, check_update, refused};
use crate::common::cluster;

const RBAC: &str = "rbac.authorization.k8s.io/v1";

fn role(kind: &str, name: &str, rules: Value) -> Value {
    let mut role =
        json!({"apiVersion": RBAC, "kind": kind, "metadata": {"name": name}, "rules": rules});
    if kind == "Role" {
        role["metadata"]["namespace"] = json!("default");
    }
    role
}

fn binding(kind: &str, name: &str, role_ref: Value, subjects: Value) -> Value {
    let mut binding = json!({"apiVersion": RBAC, "kind": kind, "metadata": {"name": name}, "roleRef": role_ref, "subjects": subjects});
    if kind == "RoleBinding" {
        binding["metadata"]["namespace"] = json!("default");
    }
    binding
}

fn role_ref(kind: &str, name: &str) -> Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name})
}

#[tokio::test]
async fn roles_and_bindings_are_validated_as_kube_apiserver_validates_them() {
    let cluster = cluster().await;
    let client = cluster.client();
    let reader = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]);
    let user = json!([{"kind": "User", "name": "alice"}]);
    let cases = vec![
        admitted("a role", role("Role", "reader", reader.clone())),
        admitted(
            "a cluster role for URLs",
            role(
                "ClusterRole",
                "health",
                json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
            ),
        ),
        admitted(
            "a binding of a user, whose group is defaulted",
            binding(
                "RoleBinding",
                "ok",
                role_ref("ClusterRole", "view"),
                user.clone(),
            ),
        ),
        admitted(
            "a cluster binding of a service account",
            binding(
                "ClusterRoleBinding",
                "sa",
                role_ref("ClusterRole", "view"),
                json!([{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]),
            ),
        ),
        refused(
            "a rule without verbs",
            role(
                "Role",
                "idle",
                json!([{"apiGroups": [""], "resources": ["pods"]}]),
            ),
            &[(
                "rules[0].verbs",
                "Required value: verbs must contain at least one value",
            )],
        ),
        refused(
            "a namespaced rule for URLs, and one without groups",
            role(
                "Role",
                "urls",
                json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, {"resources": ["pods"], "verbs": ["get"]}]),
            ),
            &[
                (
                    "rules[0].nonResourceURLs",
                    "Invalid value: []string{\"/healthz\"}: namespaced rules cannot apply to non-resource URLs",
                ),
                (
                    "rules[1].apiGroups",
                    "Required value: resource rules must supply at least one api group",
                ),
            ],
        ),
        refused(
            "a roleRef.kind of Foo",
            binding("RoleBinding", "foo", role_ref("Foo", "view"), user.clone()),
            &[(
                "roleRef.kind",
                "Unsupported value: \"Foo\": supported values: \"Role\", \"ClusterRole\"",
            )],
        ),
        refused(
            "a cluster binding of a Role, and a service account without a namespace",
            binding(
                "ClusterRoleBinding",
                "bad",
                role_ref("Role", "reader"),
                json!([{"kind": "ServiceAccount", "name": "default"}, {"kind": "Robot", "name": "r2"}]),
            ),
            &[
                (
                    "roleRef.kind",
                    "Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                ),
                ("subjects[0].namespace", "Required value"),
                (
                    "subjects[1].kind",
                    "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                ),
            ],
        ),
    ];
    check(&client, cases).await;
    check_update(
        &client,
        "a changed roleRef",
        binding("RoleBinding", "fixed", role_ref("ClusterRole", "view"), user),
        json!({"roleRef": role_ref("ClusterRole", "edit")}),
        &[("roleRef", "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef")],
    )
    .await;
    cluster.shutdown().await;
}
