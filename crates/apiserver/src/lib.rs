//! The embedded cluster's API server: a Kubernetes-compatible API with a durable store, served in-process to an
//! ordinary `kube::Client` and over HTTPS to kubectl, with its authentication, TLS material and kubeconfigs.
//!
//! It knows nothing of what runs on the cluster's nodes: the node simulation (`kmm-sim`) is one more client of it,
//! so either side changes without rebuilding the other.

pub mod apiserver;
pub mod bootstrap;
pub mod https;
pub mod identity;
pub mod kubeconfig;
pub mod private_files;
pub mod room;
pub mod store;
pub mod tls;

use anyhow::Context;
use tower::ServiceExt;

use apiserver::ApiServer;

/// An in-process client of `server` presenting `token`; fails when the token cannot be a header value.
pub fn client_with_token(server: &ApiServer, token: &str) -> anyhow::Result<kube::Client> {
    let mut authorization = http::HeaderValue::from_str(&format!("Bearer {token}"))
        .context("a bearer token must be printable ASCII")?;
    authorization.set_sensitive(true);
    Ok(bearer_client(server, authorization))
}

/// An in-process client of `server` (as its administrator) that names itself `agent` in its `User-Agent`, so the
/// server's metrics count what it asks and is sent apart from every other client.
pub fn client_named(server: &ApiServer, agent: &'static str) -> kube::Client {
    let agent = http::HeaderValue::from_static(agent);
    let service =
        server
            .clone()
            .map_request(move |mut request: http::Request<kube::client::Body>| {
                request
                    .headers_mut()
                    .insert(http::header::USER_AGENT, agent.clone());
                request
            });
    kube::Client::new(service, "default")
}

fn bearer_client(server: &ApiServer, authorization: http::HeaderValue) -> kube::Client {
    let service = apiserver::Authenticated(server.clone()).map_request(
        move |mut request: http::Request<kube::client::Body>| {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, authorization.clone());
            request
        },
    );
    kube::Client::new(service, "default")
}
