//! The embedded cluster's certificate authority and serving certificate.
//!
//! kubectl and kube-rs verify the server against the CA in the kubeconfig, exactly as with a real cluster, so the
//! server needs a CA and a certificate for the loopback names. With a state directory both are kept in
//! `<state-dir>/pki/` and reused, so kubeconfigs written by an earlier run keep verifying.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
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
    /// Load the material from `dir/pki`, or generate (and, with a directory, save) new material.
    pub fn load_or_generate(dir: Option<&Path>) -> anyhow::Result<Self> {
        if let Some(dir) = dir {
            let pki = dir.join("pki");
            let read = |name: &str| fs::read_to_string(pki.join(name));
            if let (Ok(ca_pem), Ok(cert_pem), Ok(key_pem)) =
                (read("ca.crt"), read("server.crt"), read("server.key"))
            {
                return Ok(Self {
                    ca_pem,
                    cert_pem,
                    key_pem,
                });
            }
            let material = Self::generate()?;
            fs::create_dir_all(&pki).with_context(|| format!("creating {}", pki.display()))?;
            fs::write(pki.join("ca.crt"), &material.ca_pem)?;
            fs::write(pki.join("server.crt"), &material.cert_pem)?;
            write_private(&pki.join("server.key"), &material.key_pem)?;
            return Ok(material);
        }
        Self::generate()
    }

    /// A fresh CA and a serving certificate for `localhost`, `127.0.0.1` and `::1`.
    pub fn generate() -> anyhow::Result<Self> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "kmm-tui embedded cluster CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kmm-tui-apiserver");
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()));
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
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
