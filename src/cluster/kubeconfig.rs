//! The kubeconfig that lets kubectl and any kube-rs program talk to the embedded cluster over HTTPS.

use base64::Engine;
use serde_json::json;

/// The context (and cluster) name kubeconfigs for the embedded cluster use.
pub const CONTEXT: &str = "kmm-tui-embedded";

/// Render a kubeconfig for `server` (e.g. `https://127.0.0.1:6443`), trusting `ca_pem` and authenticating with a
/// bearer token.
pub fn render(server: &str, ca_pem: &str, token: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": CONTEXT, "cluster": { "server": server, "certificate-authority-data": ca } }],
        "users": [{ "name": "kmm-tui-admin", "user": { "token": token } }],
        "contexts": [{ "name": CONTEXT, "context": { "cluster": CONTEXT, "user": "kmm-tui-admin", "namespace": "default" } }],
        "current-context": CONTEXT,
        "preferences": {},
    });
    serde_saphyr::to_string(&doc).unwrap_or_else(|_| doc.to_string())
}

/// A random bearer token (256 bits, URL-safe).
pub fn random_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
