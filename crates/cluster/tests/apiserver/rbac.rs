//! Authentication and RBAC: bearer tokens (admin, viewer, ServiceAccount tokens from TokenRequests), every request
//! authorized against Roles and ClusterRoles, impersonation, and the access reviews answering from the same rules.

use http::{HeaderValue, Request};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    SelfSubjectRulesReview, SelfSubjectRulesReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kmm_cluster::EmbeddedCluster;
use kmm_cluster::apiserver::Authenticated;
use kmm_cluster::apiserver::auth::identity::UserInfo;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, Error};
use serde_json::json;
use tower::ServiceExt;

use super::common::cluster;

fn status(result: Result<impl std::fmt::Debug, Error>) -> (u16, String) {
    match result {
        Err(Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn create<K>(api: &Api<K>, value: serde_json::Value) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let object: K = serde_json::from_value(value).expect("a valid object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("created")
}

/// A namespace `team` holding a ServiceAccount `bot`, and a token of it.
async fn team_bot(cluster: &EmbeddedCluster) -> String {
    let admin = cluster.client();
    create(
        &Api::<Namespace>::all(admin.clone()),
        json!({"metadata": {"name": "team"}}),
    )
    .await;
    create(
        &Api::<ServiceAccount>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "bot"}}),
    )
    .await;
    token(&admin, "team", "bot").await
}

async fn token(client: &Client, namespace: &str, name: &str) -> String {
    let request = TokenRequest {
        spec: TokenRequestSpec::default(),
        ..TokenRequest::default()
    };
    let issued = Api::<ServiceAccount>::namespaced(client.clone(), namespace)
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a token");
    let status = issued.status.expect("a status");
    status.token
}

fn viewer(cluster: &EmbeddedCluster) -> Client {
    cluster
        .client_with_token(cluster.server().auth().viewer_token())
        .expect("a viewer client")
}

#[tokio::test]
async fn missing_or_invalid_tokens_are_401() {
    let cluster = cluster().await;
    let forged = cluster.client_with_token("not-a-token").expect("a client");
    let (code, _) = status(Api::<Pod>::all(forged).list(&ListParams::default()).await);
    assert_eq!(code, 401);
    let response = Authenticated(cluster.server().clone())
        .oneshot(Request::get("/api/v1/pods").body(String::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    cluster.shutdown().await;
}

#[tokio::test]
async fn the_viewer_reads_and_is_refused_writes_in_kube_apiservers_words() {
    let cluster = cluster().await;
    let admin = cluster.client();
    create(
        &Api::<ConfigMap>::namespaced(admin, "default"),
        json!({"metadata": {"name": "settings"}, "data": {"a": "b"}}),
    )
    .await;
    let configmaps = Api::<ConfigMap>::namespaced(viewer(&cluster), "default");
    assert_eq!(
        configmaps
            .get("settings")
            .await
            .expect("readable")
            .data
            .unwrap()["a"],
        "b"
    );
    let (code, message) = status(
        configmaps
            .delete("settings", &DeleteParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "configmaps \"settings\" is forbidden: User \"kmm-tui-viewer\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let (code, message) = status(
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(viewer(&cluster), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "secrets is forbidden: User \"kmm-tui-viewer\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_service_account_has_what_its_role_grants_where_it_is_bound() {
    let cluster = cluster().await;
    let bot_token = team_bot(&cluster).await;
    let bot = cluster.client_with_token(&bot_token).expect("a client");
    let admin = cluster.client();
    let pods_in_team = Api::<Pod>::namespaced(bot.clone(), "team");

    // Nothing bound yet: discovery works, pods do not.
    assert!(
        bot.list_api_groups().await.is_ok(),
        "discovery is open to the authenticated"
    );
    let (code, message) = status(pods_in_team.list(&ListParams::default()).await);
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "pods is forbidden: User \"system:serviceaccount:team:bot\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\""
    );

    // A Role granting list (not watch, not get of logs) in `team` takes effect at once.
    create(
        &Api::<Role>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "pod-lister"}, "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["open"]},
        ]}),
    )
    .await;
    create(
        &Api::<RoleBinding>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "bot-lists"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-lister"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
    assert!(pods_in_team.list(&ListParams::default()).await.is_ok());
    let (code, _) = status(
        Api::<Pod>::namespaced(bot.clone(), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        code, 403,
        "a RoleBinding grants nothing outside its namespace"
    );
    let (code, message) = status(pods_in_team.get("web").await);
    assert_eq!(code, 403, "list is not get");
    assert!(
        message.starts_with("pods \"web\" is forbidden"),
        "{message}"
    );
    let (code, message) = status(pods_in_team.logs("web", &Default::default()).await);
    assert_eq!(code, 403);
    assert!(
        message.contains("cannot get resource \"pods/log\""),
        "{message}"
    );
    let configmaps = Api::<ConfigMap>::namespaced(bot.clone(), "team");
    assert_eq!(
        status(configmaps.get("open").await).0,
        404,
        "allowed by name, then not found"
    );
    assert_eq!(status(configmaps.get("closed").await).0, 403);

    // The binding goes: so does the grant.
    Api::<RoleBinding>::namespaced(admin.clone(), "team")
        .delete("bot-lists", &DeleteParams::default())
        .await
        .expect("deleted");
    assert_eq!(
        status(pods_in_team.list(&ListParams::default()).await).0,
        403
    );

    // The ServiceAccount goes: so does its token.
    Api::<ServiceAccount>::namespaced(admin, "team")
        .delete("bot", &DeleteParams::default())
        .await
        .expect("deleted");
    assert_eq!(status(bot.list_api_groups().await).0, 401);
    cluster.shutdown().await;
}

/// A client presenting `token` and asking to act as `user` (and `groups`).
fn impersonating(cluster: &EmbeddedCluster, token: &str, user: &str, groups: &[&str]) -> Client {
    let authorization = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    let user = HeaderValue::from_str(user).unwrap();
    let groups: Vec<HeaderValue> = groups
        .iter()
        .map(|g| HeaderValue::from_str(g).unwrap())
        .collect();
    let service = Authenticated(cluster.server().clone()).map_request(
        move |mut request: Request<kube::client::Body>| {
            let headers = request.headers_mut();
            headers.insert(http::header::AUTHORIZATION, authorization.clone());
            headers.insert("Impersonate-User", user.clone());
            for group in &groups {
                headers.append("Impersonate-Group", group.clone());
            }
            request
        },
    );
    Client::new(service, "default")
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let cluster = cluster().await;
    let bot_token = team_bot(&cluster).await;
    let admin = cluster.client();
    create(
        &Api::<ClusterRole>::all(admin.clone()),
        json!({"metadata": {"name": "impersonate-alice"}, "rules": [
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["alice"]},
        ]}),
    )
    .await;
    create(
        &Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(admin.clone()),
        json!({"metadata": {"name": "bot-impersonates"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-alice"},
               "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team"}]}),
    )
    .await;
    create(
        &Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(admin.clone()),
        json!({"metadata": {"name": "alice-views"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "alice"}]}),
    )
    .await;
    let as_alice = impersonating(&cluster, &bot_token, "alice", &[]);
    assert!(
        Api::<Pod>::all(as_alice.clone())
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    let (code, message) = status(
        Api::<ConfigMap>::namespaced(as_alice.clone(), "default")
            .delete("x", &DeleteParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert!(
        message.contains("User \"alice\" cannot delete"),
        "{message}"
    );
    let who = status_of_whoami(&as_alice).await;
    assert_eq!(who, "alice");

    let (code, message) = status(
        Api::<Pod>::all(impersonating(&cluster, &bot_token, "bob", &[]))
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "users \"bob\" is forbidden: User \"system:serviceaccount:team:bot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    let (code, message) = status(
        Api::<Pod>::all(impersonating(
            &cluster,
            &bot_token,
            "alice",
            &["system:masters"],
        ))
        .list(&ListParams::default())
        .await,
    );
    assert_eq!(code, 403);
    assert!(
        message.starts_with("groups \"system:masters\" is forbidden"),
        "{message}"
    );
    cluster.shutdown().await;
}

async fn status_of_whoami(client: &Client) -> String {
    let request = Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(
            serde_json::to_vec(
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
            )
            .unwrap(),
        )
        .unwrap();
    let review: serde_json::Value = client.request(request).await.expect("a review");
    review["status"]["userInfo"]["username"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn pods_question(verb: &str, namespace: &str) -> ResourceAttributes {
    ResourceAttributes {
        verb: Some(verb.to_owned()),
        resource: Some("pods".to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ResourceAttributes::default()
    }
}

/// What the API server answers, asked by its administrator through a SubjectAccessReview, to whether `user` may do
/// what `attributes` say.
async fn review_of(
    client: Client,
    user: &str,
    attributes: ResourceAttributes,
) -> k8s_openapi::api::authorization::v1::SubjectAccessReviewStatus {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            resource_attributes: Some(attributes),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<SubjectAccessReview>::all(client)
        .create(&PostParams::default(), &review)
        .await
        .expect("answered")
        .status
        .expect("a status")
}
#[tokio::test]
async fn access_reviews_answer_from_the_same_rules() {
    let cluster = cluster().await;
    let ask = |client: Client, verb: &'static str| async move {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(pods_question(verb, "default")),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<SelfSubjectAccessReview>::all(client)
            .create(&PostParams::default(), &review)
            .await
            .expect("answered")
            .status
            .expect("a status")
            .allowed
    };
    assert!(ask(viewer(&cluster), "list").await);
    assert!(!ask(viewer(&cluster), "delete").await);
    assert!(ask(cluster.client(), "delete").await);

    let answer = review_of(
        cluster.client(),
        &UserInfo::viewer().name,
        pods_question("watch", "kube-system"),
    )
    .await;
    assert!(answer.allowed);
    assert!(
        answer
            .reason
            .unwrap_or_default()
            .contains("ClusterRole \"view\""),
        "the reason names the role"
    );

    let rules = Api::<SelfSubjectRulesReview>::all(viewer(&cluster))
        .create(
            &PostParams::default(),
            &SelfSubjectRulesReview {
                spec: SelfSubjectRulesReviewSpec {
                    namespace: Some("default".to_owned()),
                },
                ..Default::default()
            },
        )
        .await
        .expect("answered")
        .status
        .expect("a status");
    assert!(rules.resource_rules.iter().any(|r| {
        r.verbs.contains(&"list".to_owned())
            && r.resources
                .as_ref()
                .is_some_and(|res| res.contains(&"pods".to_owned()))
    }));
    assert!(
        !rules
            .resource_rules
            .iter()
            .any(|r| r.verbs.contains(&"delete".to_owned()))
    );
    assert!(rules.non_resource_rules.iter().any(|r| {
        r.non_resource_urls
            .as_ref()
            .is_some_and(|u| u.contains(&"/apis/*".to_owned()))
    }));
    cluster.shutdown().await;
}

/// Running commands in pods is `edit`'s, as in kube-apiserver's bootstrap roles, and not `view`'s.
#[tokio::test]
async fn exec_into_pods_is_granted_by_edit_not_view() {
    let cluster = cluster().await;
    create(
        &Api::<RoleBinding>::namespaced(cluster.client(), "default"),
        json!({
            "metadata": {"name": "dev-edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dev"}]
        }),
    )
    .await;
    for (user, allowed) in [("dev".to_owned(), true), (UserInfo::viewer().name, false)] {
        for subresource in ["exec", "attach", "portforward"] {
            let answer = review_of(
                cluster.client(),
                &user,
                ResourceAttributes {
                    subresource: Some(subresource.to_owned()),
                    ..pods_question("create", "default")
                },
            )
            .await;
            assert_eq!(answer.allowed, allowed, "{user} create pods/{subresource}");
        }
    }
    cluster.shutdown().await;
}

/// A RoleBinding's ServiceAccount subject that names no namespace is the ServiceAccount of the binding's own
/// namespace, as kube-apiserver reads it: its validation requires the namespace in ClusterRoleBindings only.
#[tokio::test]
async fn a_role_bindings_service_account_without_namespace_is_of_its_namespace() {
    let cluster = cluster().await;
    create(
        &Api::<RoleBinding>::namespaced(cluster.client(), "default"),
        json!({
            "metadata": {"name": "local-robot"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot"}]
        }),
    )
    .await;
    for (user, namespace, allowed) in [
        ("system:serviceaccount:default:robot", "default", true),
        ("system:serviceaccount:kube-system:robot", "default", false),
        ("system:serviceaccount:default:robot", "kube-system", false),
    ] {
        let answer = review_of(cluster.client(), user, pods_question("list", namespace)).await;
        assert_eq!(answer.allowed, allowed, "{user} list pods in {namespace}");
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn non_resource_paths_follow_non_resource_rules() {
    let cluster = cluster().await;
    let server = cluster.server();
    assert!(server.can_get_path(&UserInfo::admin(), "/metrics"));
    assert!(!server.can_get_path(&UserInfo::viewer(), "/metrics"));
    assert!(server.can_get_path(&UserInfo::viewer(), "/version"));
    create(
        &Api::<ClusterRole>::all(cluster.client()),
        json!({"metadata": {"name": "metrics-reader"}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
    )
    .await;
    create(
        &Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(cluster.client()),
        json!({"metadata": {"name": "viewer-metrics"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
               "subjects": [{"kind": "User", "name": "kmm-tui-viewer"}]}),
    )
    .await;
    assert!(server.can_get_path(&UserInfo::viewer(), "/metrics"));
    cluster.shutdown().await;
}

#[tokio::test]
async fn in_process_code_can_act_as_a_service_account() {
    let cluster = cluster().await;
    create(
        &Api::<ServiceAccount>::namespaced(cluster.client(), "default"),
        json!({"metadata": {"name": "controller"}}),
    )
    .await;
    let server = cluster.server();
    let issued = server
        .auth()
        .issue_token(server.store(), "default", "controller", 600, Vec::new())
        .expect("a token");
    let client = kmm_cluster::client_with_token(server, &issued.token).expect("a client");
    assert_eq!(
        status_of_whoami(&client).await,
        "system:serviceaccount:default:controller"
    );
    let elsewhere = server
        .auth()
        .issue_token(
            server.store(),
            "default",
            "controller",
            600,
            vec!["https://vault.example".to_owned()],
        )
        .expect("a token for another audience");
    let client = kmm_cluster::client_with_token(server, &elsewhere.token).expect("a client");
    assert_eq!(
        status(client.list_api_groups().await).0,
        401,
        "a token for another audience does not authenticate here"
    );
    let missing = server
        .auth()
        .issue_token(server.store(), "default", "nobody", 600, Vec::new())
        .expect_err("no such account");
    assert_eq!(missing.code, 404);
    cluster.shutdown().await;
}

#[tokio::test]
async fn impersonation_headers_that_are_not_text_are_refused_not_ignored() {
    let cluster = cluster().await;
    let viewer_token = cluster.server().auth().viewer_token().to_owned();
    for header in ["Impersonate-User", "Impersonate-Group"] {
        let authorization = HeaderValue::from_str(&format!("Bearer {viewer_token}")).unwrap();
        let garbled =
            HeaderValue::from_bytes(b"bob\xff").expect("obs-text is a valid header value");
        let service = Authenticated(cluster.server().clone()).map_request(
            move |mut request: Request<kube::client::Body>| {
                let headers = request.headers_mut();
                headers.insert(http::header::AUTHORIZATION, authorization.clone());
                headers.insert(header, garbled.clone());
                request
            },
        );
        let client = Client::new(service, "default");
        let (code, message) = status(Api::<Pod>::all(client).list(&ListParams::default()).await);
        assert_eq!(code, 400, "{header}: {message}");
    }
    cluster.shutdown().await;
}
