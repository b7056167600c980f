//! The kubeconfig that lets kubectl and any kube-rs program talk to the embedded cluster over HTTPS: the
//! administrator's context (current) and a viewer context whose user is bound to the `view` ClusterRole, so
//! read-only behaviour can be seen coming from the server itself, both with bearer tokens; and the
//! administrator's context again authenticated by a client certificate, as the kubeconfigs of kubeadm, kind and
//! k3d are. Every name in it derives from one cluster name
//! ([`Names`]), so the kubeconfigs of several clusters merge (`KUBECONFIG=a:b kubectl config view --flatten`)
//! without one entry hiding another.

use std::path::Path;

use base64::Engine;
use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

/// The cluster name when none is given and the state directory gives none: the context (and cluster) name
/// kubeconfigs for the embedded cluster use.
pub const DEFAULT_NAME: &str = "kmm-tui-embedded";

/// The names of one cluster's kubeconfig entries: cluster `NAME`, users `NAME-admin`, `NAME-viewer` and
/// `NAME-admin-cert`, contexts `NAME` (the administrator's, current), `NAME-viewer` and `NAME-cert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The cluster's name, and its administrator's context.
    pub cluster: String,
}

impl Names {
    /// The names of the cluster `name`.
    pub fn new(name: &str) -> Self {
        Names {
            cluster: name.to_owned(),
        }
    }

    /// The administrator's context (the current one).
    pub fn context(&self) -> &str {
        &self.cluster
    }

    /// The read-only context.
    pub fn viewer_context(&self) -> String {
        format!("{}-viewer", self.cluster)
    }

    /// The administrator's user entry.
    pub fn admin_user(&self) -> String {
        format!("{}-admin", self.cluster)
    }

    /// The viewer's user entry.
    pub fn viewer_user(&self) -> String {
        format!("{}-viewer", self.cluster)
    }

    /// The administrator's context authenticated by a client certificate.
    pub fn certificate_context(&self) -> String {
        format!("{}-cert", self.cluster)
    }

    /// The administrator's user entry holding the client certificate.
    pub fn certificate_user(&self) -> String {
        format!("{}-admin-cert", self.cluster)
    }
}

/// Whether `name` may name a cluster: letters, digits, `-`, `_` and `.`, starting with a letter or digit, so it is
/// usable unquoted in a shell (`kubectl --context NAME`) and in file names. Explains what is wrong otherwise.
pub fn check_name(name: &str) -> Result<(), String> {
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.is_empty() || name.len() > 63 || !first_ok || !rest_ok {
        return Err(format!(
            "{name:?} cannot name a cluster: use up to 63 letters, digits, '-', '_' or '.', starting with a letter or \
             digit"
        ));
    }
    Ok(())
}

/// The name a state directory gives its cluster: its last path component (`/var/lib/kmm/prod` → `prod`), with
/// what [`check_name`] refuses replaced by `-`; `None` when nothing usable is left.
pub fn name_of_state_dir(dir: &Path) -> Option<String> {
    let last = dir.file_name()?.to_string_lossy();
    let name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_start_matches(['-', '_', '.']);
    let name: String = name.chars().take(63).collect();
    check_name(&name).ok().map(|()| name)
}

/// The bearer tokens the kubeconfig's users present.
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'a> {
    /// The administrator's (group `system:masters`).
    pub admin: &'a str,
    /// The viewer's (bound to `view`).
    pub viewer: &'a str,
}

/// The administrator's client certificate and key (PEM), signed by the cluster's CA.
#[derive(Debug, Clone, Copy)]
pub struct ClientCertificate<'a> {
    /// The certificate: the administrator's name and `system:masters`.
    pub cert_pem: &'a str,
    /// Its private key.
    pub key_pem: &'a str,
}

/// What the kubeconfig's users present: bearer tokens and the administrator's client certificate.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    /// The bearer tokens.
    pub tokens: Tokens<'a>,
    /// The administrator's client certificate.
    pub certificate: ClientCertificate<'a>,
}

/// The kubeconfig for `server` (e.g. `https://127.0.0.1:6443`), trusting `ca_pem`, its entries named by `names`.
pub fn build(
    names: &Names,
    server: &str,
    ca_pem: &str,
    credentials: Credentials<'_>,
) -> Kubeconfig {
    let tokens = credentials.tokens;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let context = |name: &str, user: &str| NamedContext {
        name: name.to_owned(),
        context: Some(Context {
            cluster: names.cluster.clone(),
            user: Some(user.to_owned()),
            namespace: Some("default".to_owned()),
            ..Context::default()
        }),
        ..NamedContext::default()
    };
    Kubeconfig {
        api_version: Some("v1".to_owned()),
        kind: Some("Config".to_owned()),
        clusters: vec![NamedCluster {
            name: names.cluster.clone(),
            cluster: Some(Cluster {
                server: Some(server.to_owned()),
                certificate_authority_data: Some(ca),
                ..Cluster::default()
            }),
            ..NamedCluster::default()
        }],
        auth_infos: vec![
            user(&names.admin_user(), tokens.admin),
            user(&names.viewer_user(), tokens.viewer),
            certificate_user(&names.certificate_user(), credentials.certificate),
        ],
        contexts: vec![
            context(names.context(), &names.admin_user()),
            context(&names.viewer_context(), &names.viewer_user()),
            context(&names.certificate_context(), &names.certificate_user()),
        ],
        current_context: Some(names.context().to_owned()),
        ..Kubeconfig::default()
    }
}

/// The kubeconfig as YAML, as kubectl reads it.
pub fn render(
    names: &Names,
    server: &str,
    ca_pem: &str,
    credentials: Credentials<'_>,
) -> anyhow::Result<String> {
    Ok(serde_saphyr::to_string(&build(
        names,
        server,
        ca_pem,
        credentials,
    ))?)
}

fn user(name: &str, token: &str) -> NamedAuthInfo {
    // The token field is a secret type only reachable through deserialisation.
    let auth_info: AuthInfo =
        serde_json::from_value(serde_json::json!({ "token": token })).unwrap_or_default();
    NamedAuthInfo {
        name: name.to_owned(),
        auth_info: Some(auth_info),
        ..NamedAuthInfo::default()
    }
}

fn certificate_user(name: &str, certificate: ClientCertificate<'_>) -> NamedAuthInfo {
    let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    // The key field is a secret type only reachable through deserialisation.
    let auth_info: AuthInfo = serde_json::from_value(serde_json::json!({
        "client-certificate-data": encode(certificate.cert_pem),
        "client-key-data": encode(certificate.key_pem),
    }))
    .unwrap_or_default();
    NamedAuthInfo {
        name: name.to_owned(),
        auth_info: Some(auth_info),
        ..NamedAuthInfo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_contexts_round_trip_through_kube_under_the_clusters_name() {
        let names = Names::new("lab");
        let yaml = render(
            &names,
            "https://127.0.0.1:6443",
            "-----BEGIN CERTIFICATE-----\n",
            Credentials {
                tokens: Tokens {
                    admin: "admin-token",
                    viewer: "viewer-token",
                },
                certificate: ClientCertificate {
                    cert_pem: "client-cert",
                    key_pem: "client-key",
                },
            },
        )
        .unwrap();
        let parsed = Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(parsed.current_context.as_deref(), Some("lab"));
        let names: Vec<&str> = parsed.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["lab", "lab-viewer", "lab-cert"]);
        let users: Vec<&str> = parsed.auth_infos.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(users, vec!["lab-admin", "lab-viewer", "lab-admin-cert"]);
        let certificate = parsed.auth_infos[2].auth_info.as_ref().unwrap();
        assert_eq!(
            certificate.client_certificate_data.as_deref(),
            Some(
                base64::engine::general_purpose::STANDARD
                    .encode("client-cert")
                    .as_str()
            )
        );
        assert_eq!(parsed.clusters[0].name, "lab");
        assert!(yaml.contains("viewer-token"), "{yaml}");
        assert!(yaml.contains("admin-token"), "{yaml}");
    }

    #[test]
    fn a_state_directory_names_its_cluster() {
        assert_eq!(
            name_of_state_dir(Path::new("/var/lib/kmm/prod")).as_deref(),
            Some("prod")
        );
        assert_eq!(
            name_of_state_dir(Path::new("/tmp/my lab/")).as_deref(),
            Some("my-lab")
        );
        assert_eq!(name_of_state_dir(Path::new("/")), None);
        assert_eq!(name_of_state_dir(Path::new("..")), None);
        assert!(check_name("prod-eu.1").is_ok());
        assert!(check_name("-x").is_err());
        assert!(check_name("a b").is_err());
    }
}
