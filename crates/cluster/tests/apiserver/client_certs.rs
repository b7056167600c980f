//! Client-certificate authentication over HTTPS, as real kubeconfigs (kubeadm, kind, k3d) use it: a certificate
//! the cluster's CA signed authenticates its common name in the groups of its organizations; one signed by another
//! CA authenticates no one (401, or the request's bearer token decides); `serve`'s kubeconfig has a context that
//! authenticates with a certificate.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::cluster_with;
use crate::with_kubectl::kubectl_installed;

const CLUSTER: &str = "certs";

/// A cluster serving HTTPS with its PKI in `state`.
async fn served(state: &Path) -> EmbeddedCluster {
    cluster_with(EmbeddedOptions {
        state_dir: Some(state.to_owned()),
        listen: Some("127.0.0.1:0".parse().unwrap()),
        kubeconfig_out: Some(state.join("kubeconfig")),
        name: Some(CLUSTER.to_owned()),
        ..Default::default()
    })
    .await
}

/// A client of `cluster` over HTTPS as `context` of its kubeconfig.
async fn client_as(cluster: &EmbeddedCluster, context: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(cluster.kubeconfig().unwrap()).unwrap();
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// A client of `cluster` over HTTPS presenting the certificate `cert_pem` (key `key_pem`) and nothing else.
async fn client_with_certificate(
    cluster: &EmbeddedCluster,
    cert_pem: &str,
    key_pem: &str,
) -> kube::Client {
    let mut kubeconfig = Kubeconfig::from_yaml(cluster.kubeconfig().unwrap()).unwrap();
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let user = kubeconfig
        .auth_infos
        .iter_mut()
        .find(|u| u.name == format!("{CLUSTER}-admin-cert"))
        .expect("the kubeconfig has a certificate user");
    user.auth_info = Some(
        serde_json::from_value(json!({
            "client-certificate-data": encode(cert_pem),
            "client-key-data": encode(key_pem),
        }))
        .unwrap(),
    );
    let options = KubeConfigOptions {
        context: Some(format!("{CLUSTER}-cert")),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Who the server says `client` is: user name and groups.
async fn whoami(client: &kube::Client) -> (String, Vec<String>) {
    let review: SelfSubjectReview = serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {}
    }))
    .unwrap();
    let answer = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let user = answer.status.unwrap().user_info.unwrap();
    (user.username.unwrap(), user.groups.unwrap_or_default())
}

/// A certificate authority: the cluster's (read from its state directory) or another.
struct Authority(Issuer<'static, KeyPair>);

impl Authority {
    /// The cluster's CA, read from its state directory.
    fn of_cluster(state: &Path) -> Self {
        let read = |name: &str| std::fs::read_to_string(state.join("pki").join(name)).unwrap();
        let key = KeyPair::from_pem(&read("ca.key")).unwrap();
        Self(Issuer::from_ca_cert_pem(&read("ca.crt"), key).unwrap())
    }

    /// A CA the cluster has never heard of.
    fn foreign() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "someone else's CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        Self(Issuer::new(params, KeyPair::generate().unwrap()))
    }

    /// A client certificate for `user` in `groups` (at most two: the second organization is written under its
    /// object identifier, as rcgen keeps one attribute per type), valid for a day: certificate and key (PEM).
    fn client(&self, user: &str, groups: &[&str]) -> (String, String) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, user);
        let organization = [
            DnType::OrganizationName,
            DnType::CustomDnType(vec![2, 5, 4, 10]),
        ];
        for (group, kind) in groups.iter().zip(organization) {
            params.distinguished_name.push(kind, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let now = SystemTime::now();
        params.not_before = (now - Duration::from_secs(5 * 60)).into();
        params.not_after = (now + Duration::from_secs(24 * 60 * 60)).into();
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.0).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

#[tokio::test]
async fn the_kubeconfigs_certificate_context_is_the_administrator() {
    let state = tempfile::tempdir().unwrap();
    let cluster = served(state.path()).await;
    let client = client_as(&cluster, &format!("{CLUSTER}-cert")).await;
    let (user, groups) = whoami(&client).await;
    assert_eq!(user, "kmm-tui-admin");
    assert!(groups.contains(&"system:masters".to_owned()), "{groups:?}");
    assert!(
        groups.contains(&"system:authenticated".to_owned()),
        "{groups:?}"
    );
    Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .expect("the administrator lists namespaces");
    // The token contexts still work beside it.
    let (viewer, _) = whoami(&client_as(&cluster, &format!("{CLUSTER}-viewer")).await).await;
    assert_eq!(viewer, "kmm-tui-viewer");
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_certificate_the_cluster_ca_signed_names_its_user_and_groups() {
    let state = tempfile::tempdir().unwrap();
    let cluster = served(state.path()).await;
    let (cert, key) = Authority::of_cluster(state.path()).client("alice", &["devs", "ops"]);
    let client = client_with_certificate(&cluster, &cert, &key).await;
    let (user, groups) = whoami(&client).await;
    assert_eq!(user, "alice");
    assert_eq!(groups, vec!["devs", "ops", "system:authenticated"]);
    // RBAC judges her like any other user: she holds nothing on pods.
    let refused = Api::<Pod>::namespaced(client, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 403),
        "{refused:?}"
    );
    cluster.shutdown().await;
}

/// A raw HTTP/1.1 GET of `path` over TLS presenting `certificate` (PEM certificate and key) and `token`: the
/// response's status and body.
async fn raw_get(
    cluster: &EmbeddedCluster,
    ca_pem: &str,
    certificate: Option<(&str, &str)>,
    token: Option<&str>,
    path: &str,
) -> (u16, String) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match certificate {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let socket = tokio::net::TcpStream::connect(cluster.address().unwrap())
        .await
        .unwrap();
    let mut stream = connector
        .connect(ServerName::try_from("localhost").unwrap(), socket)
        .await
        .expect("the handshake succeeds whatever certificate is presented");
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n{authorization}Connection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut response))
        .await
        .expect("an answer in time")
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn a_certificate_signed_by_another_ca_is_refused_with_401() {
    let state = tempfile::tempdir().unwrap();
    let cluster = served(state.path()).await;
    let ca_pem = std::fs::read_to_string(state.path().join("pki/ca.crt")).unwrap();
    let (cert, key) = Authority::foreign().client("kmm-tui-admin", &["system:masters"]);
    let (status, body) = raw_get(
        &cluster,
        &ca_pem,
        Some((&cert, &key)),
        None,
        "/api/v1/namespaces",
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("\"reason\":\"Unauthorized\""), "{body}");

    // The bearer token of the same request still authenticates it, as kube-apiserver tries each authenticator.
    let token = cluster.server().auth().viewer_token().to_owned();
    let (status, body) = raw_get(
        &cluster,
        &ca_pem,
        Some((&cert, &key)),
        Some(&token),
        "/api/v1/namespaces",
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // And a certificate of the cluster's CA, raw, is its holder.
    let (cert, key) =
        Authority::of_cluster(state.path()).client("kmm-tui-admin", &["system:masters"]);
    let (status, body) = raw_get(
        &cluster,
        &ca_pem,
        Some((&cert, &key)),
        None,
        "/api/v1/namespaces",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn kubectl_authenticates_with_the_certificate_context() {
    if !kubectl_installed() {
        println!("skipping: kubectl not found on PATH");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let cluster = served(state.path()).await;
    let kubeconfig = state.path().join("kubeconfig");
    let cache = state.path().join("kube-cache");
    let kubectl = |args: &[&str]| {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(&cache)
            .args(["--context", &format!("{CLUSTER}-cert")])
            .args(args);
        async move {
            tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap()
        }
    };
    let whoami = kubectl(&["auth", "whoami", "-o", "json"]).await;
    assert!(
        whoami.status.success(),
        "{}",
        String::from_utf8_lossy(&whoami.stderr)
    );
    let review: serde_json::Value = serde_json::from_slice(&whoami.stdout).unwrap();
    assert_eq!(review["status"]["userInfo"]["username"], "kmm-tui-admin");
    assert!(
        review["status"]["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:masters")),
        "{review}"
    );
    let namespaces = kubectl(&["get", "namespaces", "-o", "name"]).await;
    assert!(
        String::from_utf8_lossy(&namespaces.stdout).contains("namespace/default"),
        "{}",
        String::from_utf8_lossy(&namespaces.stderr)
    );
    cluster.shutdown().await;
}
