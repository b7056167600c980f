//! The kubeconfig that lets kubectl and any kube-rs program talk to the embedded cluster over HTTPS: the
//! administrator's context (current) and a `viewer` context whose user is bound to the `view` ClusterRole, so
//! read-only behaviour can be seen coming from the server itself.

use base64::Engine;
use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};

use super::apiserver::auth::identity::{ADMIN_USER, VIEWER_USER};

/// The context (and cluster) name kubeconfigs for the embedded cluster use.
pub const CONTEXT: &str = "kmm-tui-embedded";

/// The read-only context.
pub const VIEWER_CONTEXT: &str = "viewer";

/// The bearer tokens the kubeconfig's users present.
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'a> {
    /// The administrator's (group `system:masters`).
    pub admin: &'a str,
    /// The viewer's (bound to `view`).
    pub viewer: &'a str,
}

/// The kubeconfig for `server` (e.g. `https://127.0.0.1:6443`), trusting `ca_pem`.
pub fn build(server: &str, ca_pem: &str, tokens: Tokens<'_>) -> Kubeconfig {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let context = |name: &str, user: &str| NamedContext {
        name: name.to_owned(),
        context: Some(Context {
            cluster: CONTEXT.to_owned(),
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
            name: CONTEXT.to_owned(),
            cluster: Some(Cluster {
                server: Some(server.to_owned()),
                certificate_authority_data: Some(ca),
                ..Cluster::default()
            }),
            ..NamedCluster::default()
        }],
        auth_infos: vec![
            user(ADMIN_USER, tokens.admin),
            user(VIEWER_USER, tokens.viewer),
        ],
        contexts: vec![
            context(CONTEXT, ADMIN_USER),
            context(VIEWER_CONTEXT, VIEWER_USER),
        ],
        current_context: Some(CONTEXT.to_owned()),
        ..Kubeconfig::default()
    }
}

/// The kubeconfig as YAML, as kubectl reads it.
pub fn render(server: &str, ca_pem: &str, tokens: Tokens<'_>) -> anyhow::Result<String> {
    Ok(serde_saphyr::to_string(&build(server, ca_pem, tokens))?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_contexts_round_trip_through_kube() {
        let yaml = render(
            "https://127.0.0.1:6443",
            "-----BEGIN CERTIFICATE-----\n",
            Tokens {
                admin: "admin-token",
                viewer: "viewer-token",
            },
        )
        .unwrap();
        let parsed = Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(parsed.current_context.as_deref(), Some(CONTEXT));
        let names: Vec<&str> = parsed.contexts.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec![CONTEXT, VIEWER_CONTEXT]);
        assert!(yaml.contains("viewer-token"), "{yaml}");
        assert!(yaml.contains("admin-token"), "{yaml}");
    }
}
