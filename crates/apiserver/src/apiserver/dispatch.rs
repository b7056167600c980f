//! Dispatch: one request, once its caller is known and its body read, answered by the endpoint its path names
//! (version, health, metrics, discovery, OpenAPI or a resource's handlers) and counted in the request metrics.

use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use serde_json::{Value, json};

use super::errors::ApiError;
use super::metrics::{self, RequestSample};
use super::registry::Registry;
use super::request::{self, Endpoint, Query, Verb};
use super::responses::{ResponseBody, bytes_response, error_response, full, json_response};
use super::{
    ApiServer, aggregated_discovery, auth, context, discovery, handlers, openapi, protobuf,
};
use crate::identity::UserInfo;

impl ApiServer {
    /// Answer one request as `user` (or whom it may impersonate).
    pub async fn handle_as(
        &self,
        user: UserInfo,
        request: Request<Bytes>,
    ) -> Response<ResponseBody> {
        let started = Instant::now();
        let (mut parts, body) = request.into_parts();
        let upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
        let connection = parts.extensions.remove::<kmm_listener::Connection>();
        let result = match self.inner.auth.impersonate(user, &parts.headers) {
            Ok(user) => {
                let request = Routed {
                    method: &parts.method,
                    uri: &parts.uri,
                    headers: &parts.headers,
                    body,
                    upgrade,
                    connection,
                };
                self.route(&user, request).await
            }
            Err(e) => Err(e),
        };
        let response = result.unwrap_or_else(|e| error_response(&e));
        let (verb, resource) = self.request_labels(&parts.method, &parts.uri, &parts.headers);
        self.inner.metrics.record(&RequestSample {
            verb,
            resource: &resource,
            code: response.status().as_u16(),
            user_agent: parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok()),
            elapsed: started.elapsed(),
        });
        tracing::debug!(method = %parts.method, uri = %parts.uri, status = response.status().as_u16(), "request");
        response
    }

    /// The verb and resource a request is counted under, spelled as kube-apiserver's metrics spell them. Only
    /// served resources and known subresources become labels, so odd paths cannot grow the label sets.
    fn request_labels(
        &self,
        method: &Method,
        uri: &http::Uri,
        headers: &HeaderMap,
    ) -> (&'static str, String) {
        let registry = &self.inner.registry;
        let endpoint = request::parse_path(uri.path(), |group, plural| {
            registry.get(group, plural).is_some_and(|rt| rt.namespaced)
        });
        let Ok(Endpoint::Resource(path)) = endpoint else {
            return (method_label(method), String::new());
        };
        if registry.get(&path.group, &path.plural).is_none() {
            return (method_label(method), String::new());
        }
        let query = Query::parse(uri.query());
        let verb = match Verb::of(method, path.name.is_some(), &query) {
            Ok(Verb::Get) => "GET",
            Ok(Verb::List) => "LIST",
            Ok(Verb::Watch) => "WATCH",
            Ok(Verb::Create) => "POST",
            Ok(Verb::Update) => "PUT",
            Ok(Verb::Patch)
                if headers
                    .get(header::CONTENT_TYPE)
                    .is_some_and(|v| v.as_bytes().starts_with(b"application/apply-patch")) =>
            {
                "APPLY"
            }
            Ok(Verb::Patch) => "PATCH",
            Ok(Verb::Delete) => "DELETE",
            Ok(Verb::DeleteCollection) => "DELETECOLLECTION",
            Err(_) => method_label(method),
        };
        let resource = match path.subresource.as_deref() {
            Some(sub) if KNOWN_SUBRESOURCES.contains(&sub) => format!("{}/{sub}", path.plural),
            Some(_) => format!("{}/other", path.plural),
            None => path.plural,
        };
        (verb, resource)
    }

    async fn route(
        &self,
        user: &UserInfo,
        request: Routed<'_>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let Routed {
            method,
            uri,
            headers,
            body,
            upgrade,
            connection,
        } = request;
        let registry = &self.inner.registry;
        let endpoint = request::parse_path(uri.path(), |group, plural| {
            registry.get(group, plural).is_some_and(|rt| rt.namespaced)
        })?;
        let query = Query::parse(uri.query());
        let attributes = auth::request_attributes(method, uri.path(), &endpoint, &query)?;
        self.inner.auth.authorizer().check(user, &attributes)?;
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        if !matches!(endpoint, Endpoint::Health | Endpoint::Metrics)
            && protobuf::accepts_only_protobuf(accept)
        {
            return Err(ApiError::not_acceptable(
                "application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io",
            ));
        }
        if !matches!(endpoint, Endpoint::Resource(_)) && method != Method::GET {
            return Err(ApiError::method_not_allowed(method.as_str(), uri.path()));
        }
        match endpoint {
            Endpoint::Version => Ok(json_response(
                StatusCode::OK,
                &version_document(self.kubernetes_minor()),
            )),
            Endpoint::Health => Ok(Response::new(full(Bytes::from_static(b"ok")))),
            Endpoint::Metrics => Ok(bytes_response(
                StatusCode::OK,
                Bytes::from(self.inner.metrics.encode(&self.inner.store)),
                metrics::CONTENT_TYPE,
            )),
            Endpoint::CoreVersions => discovery_root(registry, true, accept),
            Endpoint::Groups => discovery_root(registry, false, accept),
            Endpoint::Group(group) => Ok(json_response(
                StatusCode::OK,
                &discovery::group(registry, &group)?,
            )),
            Endpoint::Resources { group, version } => Ok(json_response(
                StatusCode::OK,
                &discovery::resources(registry, &group, &version)?,
            )),
            Endpoint::OpenApiV2 => {
                openapi::negotiate_v2(accept)?;
                Ok(json_response(
                    StatusCode::OK,
                    &openapi::v2_document(registry),
                ))
            }
            Endpoint::OpenApiIndex => Ok(json_response(StatusCode::OK, &openapi::index(registry))),
            Endpoint::OpenApiGroupVersion { group, version } => Ok(json_response(
                StatusCode::OK,
                &openapi::group_version(registry, &group, &version)?,
            )),
            Endpoint::Resource(path) => {
                let mut ctx =
                    context::RequestContext::new(self, user, method, path, query, headers, body)?;
                ctx.upgrade = upgrade;
                ctx.connection = connection;
                handlers::dispatch(self, ctx).await
            }
        }
    }
}

/// `/api` (`core`) or `/apis`: the classic document, or the aggregated one when the client prefers it.
fn discovery_root(
    registry: &Registry,
    core: bool,
    accept: Option<&str>,
) -> Result<Response<ResponseBody>, ApiError> {
    use aggregated_discovery::DiscoveryForm;
    let form = DiscoveryForm::negotiate(accept)?;
    let document = match form {
        DiscoveryForm::Classic if core => discovery::core_versions(),
        DiscoveryForm::Classic => discovery::groups(registry),
        DiscoveryForm::Aggregated(version) if core => aggregated_discovery::core(registry, version),
        DiscoveryForm::Aggregated(version) => aggregated_discovery::groups(registry, version),
    };
    let mut response = bytes_response(
        StatusCode::OK,
        Bytes::from(serde_json::to_vec(&document).unwrap_or_default()),
        form.content_type(),
    );
    // The same URL answers differently by Accept: caches must keep the forms apart.
    response
        .headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    Ok(response)
}

/// One request as routing reads it: its head, its body, its connection if it asks to switch protocols, and the
/// listener's hold on that connection.
struct Routed<'a> {
    method: &'a Method,
    uri: &'a http::Uri,
    headers: &'a HeaderMap,
    body: Bytes,
    upgrade: Option<hyper::upgrade::OnUpgrade>,
    connection: Option<kmm_listener::Connection>,
}

/// Subresources counted under their own name in `/metrics`; others count as `<plural>/other`.
const KNOWN_SUBRESOURCES: &[&str] = &[
    "status",
    "log",
    "exec",
    "attach",
    "portforward",
    "binding",
    "finalize",
    "token",
    "eviction",
    "scale",
    "approval",
    "exec",
    "attach",
    "portforward",
    "proxy",
    "ephemeralcontainers",
    "resize",
];

/// The verb label of a request outside the resource tree: its method.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// `/version`, as kubectl and kube-rs read it.
fn version_document(minor: u32) -> Value {
    json!({
        "major": "1",
        "minor": minor.to_string(),
        "gitVersion": format!("v1.{minor}.0-kmm-tui.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}
