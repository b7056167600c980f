//! TokenReviews, access reviews and CertificateSigningRequests on the wire, as kube-apiserver answers them: a token
//! review says whom a token names (for the audiences asked about) to those `system:auth-delegator` lets ask; a
//! signing request records who asked, is decided through `/approval` by those who may `approve` for its signer, and
//! once approved for `kubernetes.io/kube-apiserver-client` carries a client certificate of the cluster's CA that
//! authenticates its subject over HTTPS.

use base64::Engine;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenReview};
use k8s_openapi::api::authorization::v1::{SelfSubjectRulesReview, SubjectAccessReview};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kmm_cluster::EmbeddedOptions;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Error};
use serde_json::{Value, json};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::common::{cluster, cluster_with, eventually};
use crate::with_kubectl::{kubectl_installed, serve};

/// The code of a refused call.
fn code<T: std::fmt::Debug>(result: Result<T, Error>) -> u16 {
    match result {
        Err(Error::Api(status)) => status.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn review_token(client: &Client, spec: Value) -> Result<Value, Error> {
    let review: TokenReview = serde_json::from_value(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {}, "spec": spec}),
    )
    .unwrap();
    let answer = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(serde_json::to_value(answer.status).unwrap())
}

async fn bind(client: &Client, name: &str, role: &str, user: &str) {
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_token_review_names_the_holder_for_those_the_auth_delegator_role_lets_ask() {
    let cluster = cluster().await;
    let admin = cluster.client();
    let viewer_token = cluster.server().auth().viewer_token().to_owned();

    let status = review_token(&admin, json!({"token": viewer_token}))
        .await
        .unwrap();
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["username"], "kmm-tui-viewer");
    assert!(
        status["user"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:authenticated"))
    );

    let status = review_token(&admin, json!({"token": "not-a-token"}))
        .await
        .unwrap();
    assert_eq!(status["authenticated"], false, "{status}");
    assert!(
        status["user"].as_object().is_none_or(|u| u.is_empty()),
        "{status}"
    );

    // A ServiceAccount's token names the account and its uid, for the audiences it was issued for only.
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), "default");
    let account = accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "reviewed"}})).unwrap(),
        )
        .await
        .unwrap();
    let issued = accounts
        .create_token_request("reviewed", &PostParams::default(), &TokenRequest::default())
        .await
        .unwrap();
    let token = issued.status.unwrap().token;
    let status = review_token(&admin, json!({"token": token})).await.unwrap();
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:reviewed"
    );
    assert_eq!(status["user"]["uid"], json!(account.metadata.uid.unwrap()));
    assert!(
        !status["audiences"].as_array().unwrap().is_empty(),
        "{status}"
    );
    let status = review_token(&admin, json!({"token": token, "audiences": ["elsewhere"]}))
        .await
        .unwrap();
    assert_eq!(status["authenticated"], false, "{status}");

    // Without a token there is nothing to review.
    assert_eq!(code(review_token(&admin, json!({})).await), 400);

    // The viewer may not ask, until bound to system:auth-delegator.
    let viewer = cluster.client_with_token(&viewer_token).unwrap();
    assert_eq!(
        code(review_token(&viewer, json!({"token": token})).await),
        403
    );
    bind(
        &admin,
        "viewer-delegates",
        "system:auth-delegator",
        "kmm-tui-viewer",
    )
    .await;
    eventually(10, "the binding takes effect", || {
        let viewer = viewer.clone();
        let token = token.clone();
        async move { review_token(&viewer, json!({"token": token})).await.is_ok() }
    })
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn access_reviews_answer_for_the_subject_asked_about() {
    let cluster = cluster().await;
    let admin = cluster.client();
    let ask = |verb: &str| {
        serde_json::from_value::<SubjectAccessReview>(json!({"spec": {"user": "kmm-tui-viewer",
            "resourceAttributes": {"verb": verb, "resource": "pods", "namespace": "default"}}}))
        .unwrap()
    };
    let reviews = Api::<SubjectAccessReview>::all(admin.clone());
    let allowed = reviews
        .create(&PostParams::default(), &ask("list"))
        .await
        .unwrap();
    assert!(allowed.status.unwrap().allowed);
    let denied = reviews
        .create(&PostParams::default(), &ask("delete"))
        .await
        .unwrap();
    assert!(!denied.status.unwrap().allowed);

    let viewer = cluster
        .client_with_token(cluster.server().auth().viewer_token())
        .unwrap();
    let rules: SelfSubjectRulesReview =
        serde_json::from_value(json!({"spec": {"namespace": "default"}})).unwrap();
    let rules = Api::<SelfSubjectRulesReview>::all(viewer)
        .create(&PostParams::default(), &rules)
        .await
        .unwrap()
        .status
        .unwrap();
    assert!(!rules.incomplete);
    assert!(
        rules.resource_rules.iter().any(|r| r
            .resources
            .as_ref()
            .is_some_and(|rs| rs.contains(&"pods".to_owned()))
            && r.verbs.contains(&"list".to_owned())),
        "{rules:?}"
    );
    cluster.shutdown().await;
}

/// A PKCS#10 request (PEM) for `user` in `groups`, and its fresh key (PEM).
fn signing_request(user: &str, groups: &[&str]) -> (String, String) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, user);
    for group in groups {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *group);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    (request, key.serialize_pem())
}

fn csr(name: &str, request_pem: &str, usages: &[&str]) -> CertificateSigningRequest {
    serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(request_pem),
            "signerName": "kubernetes.io/kube-apiserver-client",
            "expirationSeconds": 3600,
            "usages": usages,
            "username": "mallory",
        }
    }))
    .unwrap()
}

fn condition(kind: &str) -> Patch<Value> {
    Patch::Merge(json!({"status": {"conditions": [
        {"type": kind, "status": "True", "reason": "Test", "message": format!("{kind} by the test")}
    ]}}))
}

#[tokio::test]
async fn an_approved_signing_request_gets_a_client_certificate_that_authenticates() {
    let state = tempfile::tempdir().unwrap();
    let cluster = cluster_with(EmbeddedOptions {
        state_dir: Some(state.path().to_owned()),
        listen: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    })
    .await;
    let admin = cluster.client();
    let requests = Api::<CertificateSigningRequest>::all(admin.clone());
    let (request_pem, key_pem) = signing_request("angela", &["devs"]);
    let created = requests
        .create(
            &PostParams::default(),
            &csr("angela", &request_pem, &["client auth"]),
        )
        .await
        .unwrap();
    assert_eq!(
        created.spec.username.as_deref(),
        Some("kmm-tui-admin"),
        "the server records who asked"
    );
    assert!(
        created
            .status
            .as_ref()
            .is_none_or(|s| s.certificate.is_none())
    );

    // What kube-rs's own test does: a condition of its own type through /approval, read back from /approval.
    requests
        .patch_approval(
            "angela",
            &PatchParams::default(),
            &condition("ApprovedFake"),
        )
        .await
        .unwrap();
    let read = requests.get_approval("angela").await.unwrap();
    let conditions = read.status.unwrap().conditions.unwrap();
    assert_eq!(conditions[0].type_, "ApprovedFake");
    assert!(
        conditions[0].last_update_time.is_some(),
        "stamped by the server"
    );

    // Approved and Denied at once are refused.
    let both = Patch::Merge(json!({"status": {"conditions": [
        {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}}));
    assert_eq!(
        code(
            requests
                .patch_approval("angela", &PatchParams::default(), &both)
                .await
        ),
        422
    );

    requests
        .patch_approval("angela", &PatchParams::default(), &condition("Approved"))
        .await
        .unwrap();
    eventually(20, "the signer issues the certificate", || {
        let requests = requests.clone();
        async move {
            requests
                .get("angela")
                .await
                .is_ok_and(|r| r.status.and_then(|s| s.certificate).is_some())
        }
    })
    .await;
    let issued = requests
        .get("angela")
        .await
        .unwrap()
        .status
        .unwrap()
        .certificate
        .unwrap()
        .0;
    let (_, pem) = x509_parser::pem::parse_x509_pem(&issued).unwrap();
    let (_, cert) = X509Certificate::from_der(&pem.contents).unwrap();
    let cn: Vec<&str> = cert
        .subject()
        .iter_common_name()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(cn, vec!["angela"]);
    let ca = std::fs::read_to_string(state.path().join("pki/ca.crt")).unwrap();
    let (_, ca_pem) = x509_parser::pem::parse_x509_pem(ca.as_bytes()).unwrap();
    let (_, ca_cert) = X509Certificate::from_der(&ca_pem.contents).unwrap();
    assert_eq!(cert.issuer(), ca_cert.subject());
    let lifetime = cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
    assert!(
        (3600..=3600 + 600).contains(&lifetime),
        "expirationSeconds honoured: {lifetime}"
    );

    // The certificate, with the request's key, authenticates angela in her groups over HTTPS.
    let mut kubeconfig =
        kube::config::Kubeconfig::from_yaml(cluster.kubeconfig().unwrap()).unwrap();
    kubeconfig.auth_infos =
        vec![serde_json::from_value(json!({"name": "angela", "user": {
        "client-certificate-data": base64::engine::general_purpose::STANDARD.encode(&issued),
        "client-key-data": base64::engine::general_purpose::STANDARD.encode(key_pem),
    }}))
    .unwrap()];
    for context in &mut kubeconfig.contexts {
        if let Some(c) = context.context.as_mut() {
            c.user = Some("angela".to_owned());
        }
    }
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let angela = Client::try_from(config).unwrap();
    let review: k8s_openapi::api::authentication::v1::SelfSubjectReview =
        serde_json::from_value(json!({"metadata": {}})).unwrap();
    let whoami = Api::<k8s_openapi::api::authentication::v1::SelfSubjectReview>::all(angela)
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let user = whoami.status.unwrap().user_info.unwrap();
    assert_eq!(user.username.as_deref(), Some("angela"));
    assert!(user.groups.unwrap().contains(&"devs".to_owned()));
    cluster.shutdown().await;
}

#[tokio::test]
async fn signing_requests_are_validated_and_only_approvers_decide() {
    let cluster = cluster().await;
    let admin = cluster.client();
    let requests = Api::<CertificateSigningRequest>::all(admin.clone());
    let (request_pem, _) = signing_request("bob", &[]);

    let not_pem = csr("broken", "not a certificate request", &["client auth"]);
    assert_eq!(
        code(requests.create(&PostParams::default(), &not_pem).await),
        422
    );
    let bad_usage = csr("odd", &request_pem, &["client auth", "time travel"]);
    assert_eq!(
        code(requests.create(&PostParams::default(), &bad_usage).await),
        422
    );
    let mut no_signer = csr("anonymous", &request_pem, &["client auth"]);
    no_signer.spec.signer_name = String::new();
    assert_eq!(
        code(requests.create(&PostParams::default(), &no_signer).await),
        422
    );

    requests
        .create(
            &PostParams::default(),
            &csr("bob", &request_pem, &["client auth"]),
        )
        .await
        .unwrap();
    // The viewer may update approvals, yet not approve for the signer until it may `approve` on it.
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "approval-updater"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests", "certificatesigningrequests/approval"], "verbs": ["get", "update", "patch"]}],
    }))
    .unwrap();
    let roles = Api::<ClusterRole>::all(admin.clone());
    roles.create(&PostParams::default(), &role).await.unwrap();
    bind(
        &admin,
        "viewer-updates-approvals",
        "approval-updater",
        "kmm-tui-viewer",
    )
    .await;
    let viewer = cluster
        .client_with_token(cluster.server().auth().viewer_token())
        .unwrap();
    let as_viewer = Api::<CertificateSigningRequest>::all(viewer);
    let refused = as_viewer
        .patch_approval("bob", &PatchParams::default(), &condition("Approved"))
        .await;
    match &refused {
        Err(Error::Api(status)) => {
            assert_eq!(status.code, 403);
            assert!(
                status
                    .message
                    .contains("kubernetes.io/kube-apiserver-client"),
                "{}",
                status.message
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
    let approver: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "client-approver"},
        "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["kubernetes.io/*"], "verbs": ["approve"]}],
    }))
    .unwrap();
    roles
        .create(&PostParams::default(), &approver)
        .await
        .unwrap();
    bind(
        &admin,
        "viewer-approves",
        "client-approver",
        "kmm-tui-viewer",
    )
    .await;
    eventually(10, "the approver binding takes effect", || {
        let as_viewer = as_viewer.clone();
        async move {
            as_viewer
                .patch_approval("bob", &PatchParams::default(), &condition("Approved"))
                .await
                .is_ok()
        }
    })
    .await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn kubectl_approves_a_signing_request_and_lists_it_issued() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let served = serve(EmbeddedOptions::default()).await;
    let kubectl = |args: &'static [&'static str]| served.kubectl(args, None);
    let (request_pem, _) = signing_request("carol", &["devs"]);
    Api::<CertificateSigningRequest>::all(served.cluster.client())
        .create(
            &PostParams::default(),
            &csr("carol", &request_pem, &["client auth"]),
        )
        .await
        .unwrap();
    let requests = Api::<CertificateSigningRequest>::all(served.cluster.client());
    let (ok, out, err) = kubectl(&["get", "csr", "carol"]).await;
    assert!(ok && out.contains("Pending"), "{out}{err}");
    // kubectl sends the request it approves as protobuf.
    let (ok, out, err) = kubectl(&["certificate", "approve", "carol"]).await;
    assert!(ok, "{out}{err}");
    eventually(20, "the signer issues the certificate", || {
        let requests = requests.clone();
        async move {
            requests
                .get("carol")
                .await
                .is_ok_and(|r| r.status.and_then(|s| s.certificate).is_some())
        }
    })
    .await;
    let (ok, out, err) = kubectl(&["get", "csr", "carol"]).await;
    assert!(ok, "{err}");
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert!(
        out.contains("kmm-tui-admin") && out.contains("Approved,Issued") && out.contains("60m"),
        "{out}"
    );
    served.cluster.shutdown().await;
}
