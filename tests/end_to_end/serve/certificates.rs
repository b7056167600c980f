//! The cluster's certificates: a real cluster's lifetimes, and renewal on start when they run out soon.

use std::path::Path;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{CertificateParams, IsCa, Issuer, KeyPair};

use crate::serve_process::ServeProcess;

const DAY: u64 = 24 * 60 * 60;

/// A certificate's validity, read back from its PEM file.
struct Validity {
    not_before: SystemTime,
    not_after: SystemTime,
}

fn validity(path: &Path) -> Validity {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let (_, pem) = x509_parser::pem::parse_x509_pem(&text).expect("a PEM certificate");
    let cert = pem.parse_x509().expect("an X.509 certificate");
    let at = |t: x509_parser::time::ASN1Time| {
        SystemTime::UNIX_EPOCH + Duration::from_secs(t.timestamp().try_into().expect("after 1970"))
    };
    Validity {
        not_before: at(cert.validity().not_before),
        not_after: at(cert.validity().not_after),
    }
}

/// Days from `from` to `to`, rounded to the nearest day.
fn days_between(from: SystemTime, to: SystemTime) -> u64 {
    (to.duration_since(from).expect("later").as_secs() + DAY / 2) / DAY
}

/// Lists namespaces with `server`'s kubeconfig, trusting the CA of the kubeconfig `trusted` (which may be one written
/// by an earlier run; tokens are new on every start): proof that a client trusting that CA accepts the serving
/// certificate.
async fn connects(trusted: &str, server: &ServeProcess) {
    let mut config = Kubeconfig::read_from(server.kubeconfig()).expect("the kubeconfig reads");
    let trusted = Kubeconfig::from_yaml(trusted).expect("a kubeconfig");
    let ca = trusted.clusters[0].cluster.as_ref().unwrap();
    config.clusters[0]
        .cluster
        .as_mut()
        .unwrap()
        .certificate_authority_data = ca.certificate_authority_data.clone();
    let config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .expect("the kubeconfig loads");
    let client = kube::Client::try_from(config).expect("a client");
    Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("listing namespaces: {e}\n{}", server.log_text()));
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// A certificate for `localhost` valid from a day ago for `days` more, issued by the CA stored in `pki`.
fn short_serving_certificate(pki: &Path, days: u64) -> (String, String) {
    let ca_key = KeyPair::from_pem(&read(&pki.join("ca.key"))).expect("the CA key");
    let issuer = Issuer::from_ca_cert_pem(&read(&pki.join("ca.crt")), ca_key).expect("the CA");
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let now = SystemTime::now();
    params.not_before = (now - Duration::from_secs(DAY)).into();
    params.not_after = (now + Duration::from_secs(days * DAY)).into();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

#[tokio::test]
async fn certificates_have_a_real_clusters_lifetimes_and_private_keys() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("state");
    let started = SystemTime::now();
    let server = ServeProcess::start(dir.path(), &state, "serve.log");
    let pki = state.join("pki");
    for (file, days) in [("ca.crt", 3650), ("server.crt", 365)] {
        let validity = validity(&pki.join(file));
        assert_eq!(days_between(started, validity.not_after), days, "{file}");
        let skew = started
            .duration_since(validity.not_before)
            .expect("valid from before the start");
        assert!(
            skew <= Duration::from_secs(15 * 60),
            "{file} valid from {skew:?} before the start"
        );
    }
    #[cfg(unix)]
    for key in ["ca.key", "server.key"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(pki.join(key))
            .unwrap_or_else(|e| panic!("{key}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{key}");
    }
    connects(&read(server.kubeconfig()), &server).await;
}

#[tokio::test]
async fn a_serving_certificate_near_expiry_is_renewed_under_the_same_ca() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("state");
    let pki = state.join("pki");
    let first = ServeProcess::start(dir.path(), &state, "first.log");
    let kubeconfig = read(first.kubeconfig());
    let ca = read(&pki.join("ca.crt"));
    first.kill_9();
    let (cert, key) = short_serving_certificate(&pki, 5);
    std::fs::write(pki.join("server.crt"), &cert).unwrap();
    std::fs::write(pki.join("server.key"), &key).unwrap();

    let restarted = SystemTime::now();
    let second = ServeProcess::start(dir.path(), &state, "second.log");
    let renewed = validity(&pki.join("server.crt"));
    assert_eq!(days_between(restarted, renewed.not_after), 365);
    assert_eq!(read(&pki.join("ca.crt")), ca, "the CA is kept");
    // A client trusting the CA of the kubeconfig written before the restart accepts the renewed certificate.
    connects(&kubeconfig, &second).await;
}

#[tokio::test]
async fn a_ca_near_expiry_or_without_its_key_is_recreated_and_the_kubeconfig_follows() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let state = dir.path().join("state");
    let pki = state.join("pki");
    ServeProcess::start(dir.path(), &state, "first.log").kill_9();
    // A CA with five days left, and a serving certificate it issued.
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.not_before = (SystemTime::now() - Duration::from_secs(DAY)).into();
    params.not_after = (SystemTime::now() + Duration::from_secs(5 * DAY)).into();
    let ca_key = KeyPair::generate().unwrap();
    std::fs::write(
        pki.join("ca.crt"),
        params.self_signed(&ca_key).unwrap().pem(),
    )
    .unwrap();
    std::fs::write(pki.join("ca.key"), ca_key.serialize_pem()).unwrap();
    let (cert, key) = short_serving_certificate(&pki, 3);
    std::fs::write(pki.join("server.crt"), &cert).unwrap();
    std::fs::write(pki.join("server.key"), &key).unwrap();
    let expiring = read(&pki.join("ca.crt"));

    let restarted = SystemTime::now();
    let server = ServeProcess::start(dir.path(), &state, "second.log");
    let recreated = read(&pki.join("ca.crt"));
    assert_ne!(recreated, expiring, "a new CA");
    assert_eq!(
        days_between(restarted, validity(&pki.join("ca.crt")).not_after),
        3650
    );
    connects(&read(server.kubeconfig()), &server).await;
    drop(server);

    // State written before the CA's key was kept: a new CA again, and clients of the new kubeconfig connect.
    std::fs::remove_file(pki.join("ca.key")).unwrap();
    let server = ServeProcess::start(dir.path(), &state, "third.log");
    assert_ne!(read(&pki.join("ca.crt")), recreated, "a new CA");
    assert!(pki.join("ca.key").exists(), "the new CA's key is kept");
    connects(&read(server.kubeconfig()), &server).await;
}
