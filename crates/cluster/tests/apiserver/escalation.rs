//! RBAC's guard against escalation, as kube-apiserver enforces it: a binding may grant only what its writer holds
//! (or may `bind`), a role may hold only what its writer holds (or may `escalate`), and a binding's `roleRef` never
//! changes.

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kmm_cluster::EmbeddedCluster;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Error};
use serde_json::{Value, json};

use super::common::cluster;

/// A namespace `team`, a ServiceAccount `bot` in it that may manage Roles and RoleBindings there and read
/// ConfigMaps, and a client acting as `bot`.
async fn team_manager(cluster: &EmbeddedCluster) -> Client {
    let bot = team_bot(cluster).await;
    grant(
        &cluster.client(),
        "manager",
        json!([
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
             "verbs": ["get", "list", "create", "update", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        ]),
    )
    .await;
    bot
}

/// A namespace `team` whose ServiceAccount `bot` is bound to the built-in `admin` ClusterRole there, and a client
/// acting as `bot`: the namespace administrator of a real cluster.
async fn team_admin(cluster: &EmbeddedCluster) -> Client {
    let bot = team_bot(cluster).await;
    create(
        &Api::<RoleBinding>::namespaced(cluster.client(), "team"),
        binding("owner", "ClusterRole", "admin"),
    )
    .await;
    bot
}

/// A namespace `team` with a ServiceAccount `bot` that holds nothing yet, and a client acting as `bot`.
async fn team_bot(cluster: &EmbeddedCluster) -> Client {
    let admin = cluster.client();
    create(
        &Api::<Namespace>::all(admin.clone()),
        json!({"metadata": {"name": "team"}}),
    )
    .await;
    create(
        &Api::<ServiceAccount>::namespaced(admin, "team"),
        json!({"metadata": {"name": "bot"}}),
    )
    .await;
    let token = cluster
        .server()
        .auth()
        .issue_token(cluster.server().store(), "team", "bot", 3600, Vec::new())
        .expect("a token")
        .token;
    cluster.client_with_token(&token).expect("a client")
}

/// As the administrator: a Role `name` in `team` with `rules`, bound to `bot`.
async fn grant(admin: &Client, name: &str, rules: Value) {
    create(
        &Api::<Role>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": name}, "rules": rules}),
    )
    .await;
    create(
        &Api::<RoleBinding>::namespaced(admin.clone(), "team"),
        binding(name, "Role", name),
    )
    .await;
}

fn binding(name: &str, kind: &str, role: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}],
    })
}

async fn create<K>(api: &Api<K>, value: Value) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    try_create(api, value).await.expect("created")
}

async fn try_create<K>(api: &Api<K>, value: Value) -> Result<K, Error>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(value).expect("a valid object");
    api.create(&PostParams::default(), &object).await
}

fn refused(result: Result<impl std::fmt::Debug, Error>) -> (u16, String) {
    match result {
        Err(Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_binding_grants_only_what_its_writer_holds_or_may_bind() {
    let cluster = cluster().await;
    let bot = team_manager(&cluster).await;
    let bindings = Api::<RoleBinding>::namespaced(bot.clone(), "team");
    let (code, message) =
        refused(try_create(&bindings, binding("mine", "ClusterRole", "cluster-admin")).await);
    assert_eq!(code, 403, "{message}");
    assert!(
        message.contains("is attempting to grant RBAC permissions not currently held"),
        "{message}"
    );
    let patched = bindings
        .patch(
            "manager",
            &PatchParams::default(),
            &Patch::Merge(json!({"subjects": [
                {"kind": "ServiceAccount", "name": "bot", "namespace": "team"},
                {"kind": "User", "name": "alice"},
            ]})),
        )
        .await;
    assert!(
        patched.is_ok(),
        "the bot holds what `manager` grants: {patched:?}"
    );
    let admin = cluster.client();
    create(
        &Api::<Role>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .await;
    create(&bindings, binding("reader", "Role", "reader")).await;
    grant(
        &admin,
        "binder",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
            "verbs": ["bind"], "resourceNames": ["admin"]}]),
    )
    .await;
    let (code, _) = refused(try_create(&bindings, binding("edit", "ClusterRole", "edit")).await);
    assert_eq!(code, 403, "`bind` is granted for `admin` only");
    create(&bindings, binding("admin", "ClusterRole", "admin")).await;
    let cluster_wide = Api::<ClusterRoleBinding>::all(admin);
    create(
        &cluster_wide,
        json!({"metadata": {"name": "bot-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_role_holds_only_what_its_writer_holds_or_may_escalate() {
    let cluster = cluster().await;
    let bot = team_manager(&cluster).await;
    let roles = Api::<Role>::namespaced(bot.clone(), "team");
    let secrets = json!({"metadata": {"name": "secrets"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
    let (code, message) = refused(try_create(&roles, secrets.clone()).await);
    assert_eq!(code, 403, "{message}");
    assert!(message.contains("Resources:[\"secrets\"]"), "{message}");
    let fewer = json!({"metadata": {"name": "fewer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a"]}]});
    create(&roles, fewer).await;
    let widened = roles
        .patch(
            "fewer",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}),
            ),
        )
        .await;
    assert_eq!(refused(widened).0, 403);
    grant(
        &cluster.client(),
        "escalator",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}]),
    )
    .await;
    create(&roles, secrets).await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_bindings_role_ref_never_changes() {
    let cluster = cluster().await;
    let bot = team_manager(&cluster).await;
    for client in [cluster.client(), bot] {
        let bindings = Api::<RoleBinding>::namespaced(client, "team");
        let changed = bindings
            .patch(
                "manager",
                &PatchParams::default(),
                &Patch::Merge(json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole", "name": "cluster-admin"}})),
            )
            .await;
        let (code, message) = refused(changed);
        assert_eq!(code, 422, "{message}");
        assert!(message.contains("roleRef: Invalid value"), "{message}");
        assert!(message.contains("cannot change roleRef"), "{message}");
    }
    let admin = Api::<ClusterRoleBinding>::all(cluster.client());
    let changed = admin
        .patch(
            "kmm-tui-viewer",
            &PatchParams::default(),
            &Patch::Merge(json!({"roleRef": {"name": "cluster-admin"}})),
        )
        .await;
    assert_eq!(refused(changed).0, 422);
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_namespace_admin_grants_no_more_than_admin_holds() {
    let cluster = cluster().await;
    let bot = team_admin(&cluster).await;
    let roles = Api::<Role>::namespaced(bot.clone(), "team");
    let everything = json!({"metadata": {"name": "everything"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]});
    let (code, message) = refused(try_create(&roles, everything).await);
    assert_eq!(code, 403, "{message}");
    assert!(
        message.contains("{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"),
        "{message}"
    );
    for verb in ["escalate", "bind"] {
        let role = json!({"metadata": {"name": verb},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "clusterroles"],
                "verbs": [verb]}]});
        let (code, message) = refused(try_create(&roles, role).await);
        assert_eq!(code, 403, "a namespace admin holds no `{verb}`: {message}");
    }
    let bindings = Api::<RoleBinding>::namespaced(bot.clone(), "team");
    let (code, message) =
        refused(try_create(&bindings, binding("root", "ClusterRole", "cluster-admin")).await);
    assert_eq!(code, 403, "{message}");
    let (code, message) = refused(
        Api::<Namespace>::all(bot.clone())
            .delete("team", &Default::default())
            .await,
    );
    assert_eq!(code, 403, "{message}");

    // What `admin` holds, it hands out: a Role within it, and bindings of `edit` and `admin` itself.
    create(
        &roles,
        json!({"metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"]}]}),
    )
    .await;
    create(&bindings, binding("editor", "ClusterRole", "edit")).await;
    create(&bindings, binding("co-owner", "ClusterRole", "admin")).await;
    cluster.shutdown().await;
}

/// A refusal names a few of the permissions not held and counts the rest: a 3 KB Role asking for a million
/// permissions gets an answer of a few KiB, not one line per permission.
#[tokio::test]
async fn a_wide_role_is_refused_in_a_few_kilobytes() {
    let cluster = cluster().await;
    let bot = team_manager(&cluster).await;
    let hundred = |prefix: &str| {
        (0..100)
            .map(|i| format!("{prefix}{i:02}"))
            .collect::<Vec<_>>()
    };
    let wide = json!({"metadata": {"name": "wide"},
        "rules": [{"apiGroups": [""], "verbs": hundred("verb"), "resources": hundred("things"),
            "resourceNames": hundred("name")}]});
    assert!(wide.to_string().len() < 3 * 1024, "a 3 KB Role");
    let status = match try_create(&Api::<Role>::namespaced(bot, "team"), wide).await {
        Err(Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    };
    assert_eq!(status.code, 403, "{}", status.message);
    let body = serde_json::to_string(&status).expect("a Status serialises");
    assert!(
        body.len() < 4096,
        "{} bytes: {}",
        body.len(),
        &body[..body.len().min(2048)]
    );
    assert!(
        status.message.contains(
            "{APIGroups:[\"\"], Resources:[\"things00\"], ResourceNames:[\"name00\"], Verbs:[\"verb00\"]}"
        ),
        "{}",
        status.message
    );
    assert!(
        status.message.ends_with("and 999992 more"),
        "{}",
        status.message
    );
    cluster.shutdown().await;
}
