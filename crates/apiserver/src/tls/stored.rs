//! The certificates kept in `<state-dir>/pki/`, renewed on start before they run out: a serving certificate with
//! less than [`SERVING_RENEW_BEFORE`] left (or that no longer verifies under the CA) is issued again by the same
//! CA, so kubeconfigs already handed out keep working; a CA that would not outlive a new serving certificate, or
//! whose key is missing (state written by an older version), is created anew and the kubeconfig written on this
//! start is the one to use.
//!
//! The directory and every file in it must be the user's and writable by no one else ([`private_files`]): a PKI
//! someone else planted is refused, never served as the cluster's identity. A key others may read is replaced as
//! if it were missing.

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
use crate::private_files::{self, Readers};

/// A serving certificate with less than this left is renewed on start: a server restarted at least monthly never
/// serves an expired certificate.
pub const SERVING_RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// The CA, serving certificate and key in `pki`, renewed as needed at `now`; created when absent.
pub fn load_or_issue(pki: &Path, now: SystemTime) -> anyhow::Result<TlsMaterial> {
    private_files::private_dir(pki).context("the cluster's PKI")?;
    let ca_cert = read(pki, "ca.crt", false)?;
    let ca_key = read(pki, "ca.key", true)?;
    // Everything is read before anything is written, so a file someone else put there stops the start at once.
    let stored = read(pki, "server.crt", false)?.zip(read(pki, "server.key", true)?);
    match stored_authority(ca_cert, ca_key, now) {
        Ok(authority) => match serving(pki, &authority, stored, now) {
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
    write(pki, "ca.key", &authority.key_pem, Readers::Owner)?;
    write(pki, "ca.crt", &authority.cert_pem, Readers::Anyone)?;
    serving(pki, &authority, None, now)
}

/// The file `name` in `pki`, `None` when it is missing or, for a key (`secret`), others may read it. One someone
/// else may have put there is an error.
fn read(pki: &Path, name: &str, secret: bool) -> anyhow::Result<Option<String>> {
    let path = pki.join(name);
    Ok(match private_files::read(&path)? {
        Some(owned) if secret && owned.others_may_read => {
            tracing::warn!(
                "{} may be read by others: replacing it with a new key",
                path.display()
            );
            None
        }
        owned => owned.map(|owned| owned.text),
    })
}

/// Write `contents` to the file `name` in `pki`, for `readers`.
fn write(pki: &Path, name: &str, contents: &str, readers: Readers) -> anyhow::Result<()> {
    private_files::replace(&pki.join(name), contents.as_bytes(), readers)
}

/// The stored CA, unless it is missing, unreadable or would not outlive a serving certificate issued now.
fn stored_authority(
    cert_pem: Option<String>,
    key_pem: Option<String>,
    now: SystemTime,
) -> anyhow::Result<Authority> {
    let cert_pem = cert_pem.context("no CA certificate")?;
    let key_pem = key_pem.context("no CA key")?;
    let expires = not_after(&cert_pem).context("the CA certificate is unreadable")?;
    let left = expires.duration_since(now).unwrap_or_default();
    anyhow::ensure!(
        left >= SERVING_LIFETIME,
        "the CA expires in {} days, before a serving certificate issued now would",
        days(left)
    );
    Authority::load(cert_pem, key_pem).context("the CA key is unreadable")
}

/// The `stored` serving certificate and key when `authority` verifies it for [`SERVING_RENEW_BEFORE`] more, else
/// a new one, written to `pki`.
fn serving(
    pki: &Path,
    authority: &Authority,
    stored: Option<(String, String)>,
    now: SystemTime,
) -> anyhow::Result<TlsMaterial> {
    if let Some((cert_pem, key_pem)) = stored {
        let verified = verify(&authority.cert_pem, &cert_pem, now)
            .and_then(|()| verify(&authority.cert_pem, &cert_pem, now + SERVING_RENEW_BEFORE));
        match verified {
            Ok(()) => {
                return Ok(TlsMaterial {
                    ca_pem: authority.cert_pem.clone(),
                    ca_key_pem: authority.key_pem.clone(),
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
    write(pki, "server.key", &key_pem, Readers::Owner)?;
    write(pki, "server.crt", &cert_pem, Readers::Anyone)?;
    Ok(TlsMaterial {
        ca_pem: authority.cert_pem.clone(),
        ca_key_pem: authority.key_pem.clone(),
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
