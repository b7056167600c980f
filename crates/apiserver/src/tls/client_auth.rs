//! Client certificates: the TLS server asks every client for one without requiring it, and the API server then
//! judges what was presented, as kube-apiserver does. A certificate the cluster's CA signed authenticates its holder
//! (the common name is the user, each organization a group); one signed by anyone else, expired, or not meant for
//! client authentication authenticates no one, so the request falls back to its bearer token and, without one, is
//! answered 401 rather than cut off during the handshake.

use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::identity::{PresentedCertificate, UserInfo};

/// Asks for a client certificate and accepts any during the handshake (the holder still has to prove it holds
/// the key); whom it authenticates is decided by [`RequestedCertificate::judge`].
#[derive(Debug)]
pub struct RequestedCertificate {
    trusted: Arc<dyn ClientCertVerifier>,
}

impl RequestedCertificate {
    /// A verifier trusting client certificates signed by the CA `ca_pem`.
    pub fn new(ca_pem: &str) -> anyhow::Result<Arc<Self>> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.context("reading the CA certificate")?)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let trusted = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()?;
        Ok(Arc::new(Self { trusted }))
    }

    /// Who the certificate `chain` a client presented (end entity first) authenticates, judged at this moment;
    /// None when it presented none.
    pub fn judge(&self, chain: &[CertificateDer<'_>]) -> Option<PresentedCertificate> {
        let (end_entity, intermediates) = chain.split_first()?;
        if let Err(e) = self
            .trusted
            .verify_client_cert(end_entity, intermediates, UnixTime::now())
        {
            return Some(PresentedCertificate::Untrusted(e.to_string()));
        }
        Some(match subject(end_entity) {
            Ok(user) => PresentedCertificate::Trusted(user),
            Err(why) => PresentedCertificate::Untrusted(why),
        })
    }
}

/// The user a trusted certificate names: its common name, in the groups its organizations name.
fn subject(der: &CertificateDer<'_>) -> Result<UserInfo, String> {
    let (_, cert) = X509Certificate::from_der(der.as_ref()).map_err(|e| e.to_string())?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())
        .ok_or("the certificate's subject has no common name")?;
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_owned)
        .collect();
    Ok(UserInfo::named(name, groups))
}

impl ClientCertVerifier for RequestedCertificate {
    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.trusted.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Judged per connection once the handshake is done, so an untrusted certificate is a 401, not a lost
        // connection.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.trusted.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.trusted.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.trusted.supported_verify_schemes()
    }
}
