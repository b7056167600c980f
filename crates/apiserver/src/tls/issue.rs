//! Issuing the cluster's CA and serving certificate with the lifetimes kubeadm gives them: ten years for the CA, one
//! year for the serving certificate, both valid from a few minutes ago so a client whose clock is a little behind
//! accepts them. A certificate valid for centuries outlives any key rotation and tells a client nothing.

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a new CA is valid: kubeadm's ten years.
pub const CA_LIFETIME: Duration = Duration::from_secs(3650 * 24 * 60 * 60);

/// How long a new serving certificate is valid: kubeadm's one year.
pub const SERVING_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// How long the client certificate written into the kubeconfig is valid: kubeadm's one year for `admin.conf`.
pub const CLIENT_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// How far into the past a new certificate's validity starts, for clients whose clock is behind ours.
pub const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// The cluster's certificate authority: its certificate, its key, and the issuer that signs with them.
pub struct Authority {
    /// The CA certificate clients trust (PEM).
    pub cert_pem: String,
    /// The CA's private key (PEM).
    pub key_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Authority {
    /// A new CA valid from `now` (less [`CLOCK_SKEW`]) for [`CA_LIFETIME`].
    pub fn create(now: SystemTime) -> anyhow::Result<Self> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kmm-tui embedded cluster CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        valid_for(&mut params, now, CA_LIFETIME);
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        let key_pem = key.serialize_pem();
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem,
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA stored as `cert_pem` and `key_pem`, to sign with again.
    pub fn load(cert_pem: String, key_pem: String) -> anyhow::Result<Self> {
        let key = KeyPair::from_pem(&key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)?;
        Ok(Self {
            cert_pem,
            key_pem,
            issuer,
        })
    }

    /// A new serving certificate for `localhost`, `127.0.0.1` and `::1`, valid from `now` (less [`CLOCK_SKEW`]) for
    /// [`SERVING_LIFETIME`]: its certificate and key (PEM).
    pub fn issue_serving(&self, now: SystemTime) -> anyhow::Result<(String, String)> {
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
        valid_for(&mut params, now, SERVING_LIFETIME);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A new client certificate for `user` in `group` (its common name and organization, which is how the API
    /// server reads a user from a certificate), valid from `now` (less [`CLOCK_SKEW`]) for `lifetime`: its
    /// certificate and key (PEM).
    pub fn issue_client(
        &self,
        user: &str,
        group: &str,
        now: SystemTime,
        lifetime: Duration,
    ) -> anyhow::Result<(String, String)> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        params
            .distinguished_name
            .push(DnType::OrganizationName, group);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        valid_for(&mut params, now, lifetime);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A client certificate for the key and subject of the certificate signing request `request` (PEM), as the
    /// `kubernetes.io/kube-apiserver-client` signer issues it: the subject as asked, the extensions chosen here
    /// (`key_usages`, client authentication only), valid from `now` (less [`CLOCK_SKEW`]) for `lifetime`. What
    /// else the request asks for is not copied; of an attribute the subject repeats (several organizations), the
    /// last is kept.
    pub fn sign_client_request(
        &self,
        request: &str,
        key_usages: Vec<KeyUsagePurpose>,
        now: SystemTime,
        lifetime: Duration,
    ) -> anyhow::Result<String> {
        let requested = rcgen::CertificateSigningRequestParams::from_pem(request)
            .map_err(|e| anyhow::anyhow!("the request cannot be signed: {e}"))?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = requested.params.distinguished_name.clone();
        params.key_usages = key_usages;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        valid_for(&mut params, now, lifetime);
        let signing = rcgen::CertificateSigningRequestParams {
            params,
            public_key: requested.public_key,
        };
        Ok(signing.signed_by(&self.issuer)?.pem())
    }
}

fn valid_for(params: &mut CertificateParams, now: SystemTime, lifetime: Duration) {
    params.not_before = (now - CLOCK_SKEW).into();
    params.not_after = (now + lifetime).into();
}

/// When the certificate `pem` stops being valid; an error when it cannot be read.
pub fn not_after(pem: &str) -> anyhow::Result<SystemTime> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|e| anyhow::anyhow!("not a PEM certificate: {e}"))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| anyhow::anyhow!("not an X.509 certificate: {e}"))?;
    let seconds = cert.validity().not_after.timestamp();
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds.max(0).unsigned_abs()))
}

/// `duration` in whole days, for messages.
pub fn days(duration: Duration) -> u64 {
    duration.as_secs() / DAY.as_secs()
}
