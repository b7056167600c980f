//! The embedded cluster's certificate authority and serving certificate.
//!
//! kubectl and kube-rs verify the server against the CA in the kubeconfig, exactly as with a real cluster, so the
//! server needs a CA and a certificate for the loopback names, with the lifetimes a real cluster gives them
//! ([`issue`]). With a state directory both are kept in `<state-dir>/pki/` (the keys readable by their owner only)
//! and reused, renewed on start when they run out soon ([`stored`]), so kubeconfigs written by an earlier run keep
//! verifying.

pub mod issue;
pub mod stored;

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// PEM-encoded CA certificate and serving certificate with its key.
#[derive(Clone)]
pub struct TlsMaterial {
    /// The CA certificate clients trust.
    pub ca_pem: String,
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
            cert_pem,
            key_pem,
        })
    }

    /// A rustls server configuration offering HTTP/2 and HTTP/1.1.
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
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// Write a file readable by its owner only (it holds a key or a token), atomically: the content goes to a
/// temporary file beside it that is renamed into place, so a reader never sees half of it.
pub fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = std::path::PathBuf::from(temporary);
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options
        .open(&temporary)
        .with_context(|| format!("writing {}", temporary.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    fs::rename(&temporary, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
