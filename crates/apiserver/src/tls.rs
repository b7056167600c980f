//! The embedded cluster's certificate authority and serving certificate.
//!
//! kubectl and kube-rs verify the server against the CA in the kubeconfig, exactly as with a real cluster, so the
//! server needs a CA and a certificate for the loopback names, with the lifetimes a real cluster gives them
//! ([`issue`]). With a state directory both are kept in `<state-dir>/pki/` (a directory of the user's that no one
//! else may enter, the keys readable by their owner only, nothing read that someone else put there) and reused, renewed on start when they run out soon ([`stored`]), so kubeconfigs written by an earlier run keep
//! verifying.

pub mod client_auth;
pub mod issue;
pub mod stored;

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// PEM-encoded CA certificate and key, and serving certificate with its key.
///
/// The one CA both vouches for the server and signs client certificates (as kubeadm's cluster CA does): a client
/// certificate it signed authenticates its holder ([`client_auth`]).
#[derive(Clone)]
pub struct TlsMaterial {
    /// The CA certificate clients trust, and that client certificates must chain to.
    pub ca_pem: String,
    /// The CA's private key, which signs client certificates.
    pub ca_key_pem: String,
    /// The server's certificate, signed by the CA.
    pub cert_pem: String,
    /// The server's private key.
    pub key_pem: String,
}

impl TlsMaterial {
    /// Load the material from `dir/pki`, renewing what runs out soon, or generate (and, with a directory, save)
    /// new material. See [`stored`] for what is renewed when.
    pub fn load_or_generate(dir: Option<&Path>) -> anyhow::Result<Self> {
        let now = SystemTime::now();
        match dir {
            Some(dir) => stored::load_or_issue(&dir.join("pki"), now),
            None => Self::generate(now),
        }
    }

    /// A fresh CA and a serving certificate for `localhost`, `127.0.0.1` and `::1`, valid from `now`.
    pub fn generate(now: SystemTime) -> anyhow::Result<Self> {
        let authority = issue::Authority::create(now)?;
        let (cert_pem, key_pem) = authority.issue_serving(now)?;
        Ok(Self {
            ca_pem: authority.cert_pem,
            ca_key_pem: authority.key_pem,
            cert_pem,
            key_pem,
        })
    }

    /// The CA, to sign client certificates with.
    pub fn authority(&self) -> anyhow::Result<issue::Authority> {
        issue::Authority::load(self.ca_pem.clone(), self.ca_key_pem.clone())
    }

    /// A rustls server configuration offering HTTP/2 and HTTP/1.1 that asks for (without requiring) a client
    /// certificate, judged per request by [`client_auth`].
    pub fn server_config(&self) -> anyhow::Result<Arc<ServerConfig>> {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .context("reading the serving certificate")?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .context("reading the serving key")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(client_auth::RequestedCertificate::new(&self.ca_pem)?)
            .with_single_cert(certs, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}
