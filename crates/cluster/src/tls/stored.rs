//! The certificates kept in `<state-dir>/pki/`, renewed on start before they run out: a serving certificate with
//! less than [`SERVING_RENEW_BEFORE`] left (or that no longer verifies under the CA) is issued again by the same
//! CA, so kubeconfigs already handed out keep working; a CA that would not outlive a new serving certificate, or
//! whose key is missing (state written by an older version), is created anew and the kubeconfig written on this
//! start is the one to use.

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use super::TlsMaterial;
use super::issue::{Authority, SERVING_LIFETIME, days, not_after};
use super::write_private;

/// A serving certificate with less than this left is renewed on start: a server restarted at least monthly never
/// serves an expired certificate.
pub const SERVING_RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The CA, serving certificate and key in `pki`, renewed as needed at `now`; created when absent.
pub fn load_or_issue(pki: &Path, now: SystemTime) -> anyhow::Result<TlsMaterial> {
    fs::create_dir_all(pki).with_context(|| format!("creating {}", pki.display()))?;
    match stored_authority(pki, now) {
        Ok(authority) => match serving(pki, &authority, now) {
            Ok(material) => return Ok(material),
            Err(e) => tracing::warn!(
                "the cluster CA in {} cannot sign a serving certificate ({e:#}): creating a new CA",
                pki.display()
            ),
        },
        Err(reason) => tracing::info!(
            "creating a new cluster CA in {}: {reason:#}; kubeconfigs written before it no longer verify the \
             server, use the one written now",
            pki.display()
        ),
    }
    let authority = Authority::create(now)?;
    // The key first: a CA certificate on disk always has its key beside it.
    write_private(&pki.join("ca.key"), &authority.key_pem)?;
    write_public(&pki.join("ca.crt"), &authority.cert_pem)?;
    serving(pki, &authority, now)
}

/// The stored CA, unless it is missing, unreadable or would not outlive a serving certificate issued now.
fn stored_authority(pki: &Path, now: SystemTime) -> anyhow::Result<Authority> {
    let cert_pem = fs::read_to_string(pki.join("ca.crt")).context("no CA certificate")?;
    let key_pem = fs::read_to_string(pki.join("ca.key")).context("no CA key")?;
    let expires = not_after(&cert_pem).context("the CA certificate is unreadable")?;
    let left = expires.duration_since(now).unwrap_or_default();
    anyhow::ensure!(
        left >= SERVING_LIFETIME,
        "the CA expires in {} days, before a serving certificate issued now would",
        days(left)
    );
    Authority::load(cert_pem, key_pem).context("the CA key is unreadable")
}

/// The stored serving certificate when `authority` verifies it for [`SERVING_RENEW_BEFORE`] more, else a new one.
fn serving(pki: &Path, authority: &Authority, now: SystemTime) -> anyhow::Result<TlsMaterial> {
    let stored = fs::read_to_string(pki.join("server.crt"))
        .and_then(|cert| Ok((cert, fs::read_to_string(pki.join("server.key"))?)));
    if let Ok((cert_pem, key_pem)) = stored {
        let verified = verify(&authority.cert_pem, &cert_pem, now)
            .and_then(|()| verify(&authority.cert_pem, &cert_pem, now + SERVING_RENEW_BEFORE));
        match verified {
            Ok(()) => {
                return Ok(TlsMaterial {
                    ca_pem: authority.cert_pem.clone(),
                    cert_pem,
                    key_pem,
                });
            }
            Err(e) => tracing::info!(
                "renewing the serving certificate in {}: {e:#}",
                pki.display()
            ),
        }
    }
    let (cert_pem, key_pem) = authority.issue_serving(now)?;
    verify(&authority.cert_pem, &cert_pem, now).context("a newly issued serving certificate")?;
    write_private(&pki.join("server.key"), &key_pem)?;
    write_public(&pki.join("server.crt"), &cert_pem)?;
    Ok(TlsMaterial {
        ca_pem: authority.cert_pem.clone(),
        cert_pem,
        key_pem,
    })
}

/// Whether a client trusting `ca_pem` accepts `cert_pem` for `localhost` at time `at`, as kubectl would.
fn verify(ca_pem: &str, cert_pem: &str, at: SystemTime) -> anyhow::Result<()> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.context("reading the CA certificate")?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
    let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .context("reading the serving certificate")?;
    let at = UnixTime::since_unix_epoch(at.duration_since(SystemTime::UNIX_EPOCH)?);
    verifier
        .verify_server_cert(&cert, &[], &ServerName::try_from("localhost")?, &[], at)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// Certificates are public: written atomically, readable by all.
fn write_public(path: &Path, contents: &str) -> anyhow::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    fs::write(&temporary, contents).with_context(|| format!("writing {}", path.display()))?;
    fs::rename(&temporary, path).with_context(|| format!("writing {}", path.display()))
}
