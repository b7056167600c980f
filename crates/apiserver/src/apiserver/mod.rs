//! A Kubernetes-compatible API server, served in-process to `kube::Client` and over HTTPS to kubectl.
//!
//! The server is a `tower::Service` over `http` requests: [`ApiServer::handle`] turns one request into one
//! response. The in-process client calls it directly (no socket) as the administrator; [`Authenticated`] serves
//! requests that present a bearer token (HTTPS, in-process clients of other identities). Every request is
//! authorized by RBAC ([`auth`]).
//! Semantics follow kube-apiserver closely enough that kube-rs watchers, controllers and kubectl cannot tell the
//! difference for the resources served: see the README for what is and is not implemented.

pub mod admission;
pub mod aggregated_discovery;
pub mod auth;
pub mod builtin;
pub mod certificates;
pub mod cluster_ip;
pub mod context;
pub mod controllers;
pub mod conversion;
pub mod defaults;
pub mod discovery;
pub mod errors;
pub mod events;
pub mod handlers;
pub mod jsonpath;
pub mod logs;
pub mod long_running;
pub mod metrics;
pub mod negotiation;
pub mod node_port;
pub mod objects;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod registry;
pub mod request;
pub mod scale;
pub mod schema;
pub mod selector;
pub mod streams;
pub mod table;
pub mod validation;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::store::Store;
use auth::Auth;
use auth::identity::UserInfo;
use errors::ApiError;
use logs::PodLogs;
use metrics::{ApiMetrics, RequestSample};
use registry::Registry;
use request::{Endpoint, Query, Verb};

/// The body of every response: a full JSON document, or a stream of watch events or log lines.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// The largest request body accepted: kube-apiserver's 3 MiB. Objects are bounded more tightly by the store
/// ([`crate::store::MAX_OBJECT_BYTES`]); the slack is for patches and for JSON's own overhead.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The Kubernetes version the server reports; it serves that version's API for the resources it knows.
pub const KUBERNETES_VERSION: (&str, &str) = ("1", "33");

/// The API server. Cloning is cheap; every clone serves the same store.
#[derive(Clone)]
pub struct ApiServer {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<Store>,
    pub(crate) registry: Registry,
    pub(crate) logs: PodLogs,
    pub(crate) runtime: streams::SharedRuntime,
    pub(crate) auth: Auth,
    pub(crate) metrics: ApiMetrics,
    pub(crate) long_running: Arc<long_running::LongRunning>,
    pub(crate) shutdown: CancellationToken,
    /// Ends the watches open now: a child of `shutdown`, replaced by [`ApiServer::close_watches`].
    pub(crate) open_watches: std::sync::Mutex<CancellationToken>,
}

impl ApiServer {
    /// Serve `store`, registering every CRD it already holds. Background controllers (garbage collection,
    /// namespace deletion) start with [`ApiServer::start_controllers`].
    pub fn new(store: Arc<Store>) -> Self {
        Self::with_credentials(store, &auth::credentials::Credentials::random())
    }

    /// [`ApiServer::new`] accepting the tokens and signing key of `credentials`, those a state directory keeps, so
    /// a restarted server accepts what it handed out before.
    pub fn with_credentials(
        store: Arc<Store>,
        credentials: &auth::credentials::Credentials,
    ) -> Self {
        let registry = Registry::with_builtins();
        let crd_key =
            crate::store::ResourceKey::new("apiextensions.k8s.io", "customresourcedefinitions");
        for crd in store.list(&crd_key, None).0 {
            match registry::from_crd(&crd.value()) {
                Ok(rt) => registry.insert(rt),
                Err(e) => tracing::warn!(crd = crd.name(), "stored CRD cannot be served: {e}"),
            }
        }
        let auth = Auth::with_credentials(store.clone(), credentials);
        let shutdown = CancellationToken::new();
        let inner = Inner {
            auth,
            store,
            registry,
            logs: PodLogs::default(),
            runtime: Default::default(),
            metrics: ApiMetrics::default(),
            long_running: Arc::default(),
            open_watches: std::sync::Mutex::new(shutdown.child_token()),
            shutdown,
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Start the cluster-side controllers the API relies on (owner-reference garbage collection, namespace
    /// deletion) and the expiry of the store's objects that have a time to live (Events). They stop when
    /// [`ApiServer::shutdown`] is called.
    pub fn start_controllers(&self) {
        controllers::spawn(self.clone());
        tokio::spawn(crate::store::expiry::run(
            self.store().clone(),
            self.inner.shutdown.clone(),
        ));
    }

    /// End every open watch and log stream and stop the controllers.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// Close every watch open now, as a kube-apiserver does when it restarts or sheds load: each client resumes
    /// from the last resourceVersion it saw (or relists). Watches opened afterwards stay open.
    pub fn close_watches(&self) {
        let mut open = self.open_watches();
        open.cancel();
        *open = self.inner.shutdown.child_token();
    }

    /// What ends a watch opened now: shutdown, or [`ApiServer::close_watches`].
    pub(crate) fn watch_end(&self) -> CancellationToken {
        self.open_watches().clone()
    }

    fn open_watches(&self) -> std::sync::MutexGuard<'_, CancellationToken> {
        self.inner
            .open_watches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The store this server writes to.
    pub fn store(&self) -> &Arc<Store> {
        &self.inner.store
    }

    /// The table of served resources.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Container logs, written by the node simulation and served by `pods/log`.
    pub fn logs(&self) -> &PodLogs {
        &self.inner.logs
    }

    /// Have `pods/exec` run commands with `runtime` (the node simulation's), in place of any before it.
    pub fn set_runtime(&self, runtime: Arc<dyn streams::ContainerRuntime>) {
        *self
            .inner
            .runtime
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(runtime);
    }

    /// The container runtime `pods/exec` runs commands with, if the node simulation has provided one.
    pub(crate) fn runtime(&self) -> Option<Arc<dyn streams::ContainerRuntime>> {
        self.inner
            .runtime
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Serve watches, exec and attach sessions and followed logs within `limits` from now on, in place of
    /// [`long_running::LongRunningLimits::default`].
    pub fn set_long_running_limits(&self, limits: long_running::LongRunningLimits) {
        self.inner.long_running.set_limits(limits);
    }

    /// The limits watches, exec and attach sessions and followed logs are served within.
    pub fn long_running_limits(&self) -> long_running::LongRunningLimits {
        self.inner.long_running.limits()
    }

    /// Count a long-running request of `user` against its limits: the permit gives the count back when dropped.
    pub(crate) fn admit_long_running(
        &self,
        user: &UserInfo,
    ) -> Result<long_running::Permit, ApiError> {
        self.inner.long_running.admit(user)
    }

    /// Credentials, token signing and the RBAC authorizer.
    pub fn auth(&self) -> &Auth {
        &self.inner.auth
    }

    /// May `user` `get` the non-resource `path` (e.g. `/metrics`)? For endpoints served beside the API that must
    /// answer to the same RBAC rules (`nonResourceURLs`).
    pub fn can_get_path(&self, user: &UserInfo, path: &str) -> bool {
        let attributes = auth::rules::Attributes::path("get", path);
        self.inner
            .auth
            .authorizer()
            .authorize(user, &attributes)
            .allowed()
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// The request counters `/metrics` reports.
    pub fn metrics(&self) -> &ApiMetrics {
        &self.inner.metrics
    }

    /// Answer one request whose body has been read, as the administrator (the in-process client). Impersonation
    /// headers are honoured, so an administrator's client can act as another user.
    pub async fn handle(&self, request: Request<Bytes>) -> Response<ResponseBody> {
        self.handle_as(UserInfo::admin(), request).await
    }

    /// Who makes a request: the holder of its connection's trusted client `certificate`, else whoever presents
    /// the bearer token of its `headers`; 401 when neither authenticates anyone.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&auth::identity::PresentedCertificate>,
    ) -> Result<UserInfo, ApiError> {
        self.inner
            .auth
            .authenticate(headers, certificate, &self.inner.store)
    }

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
            Endpoint::Version => Ok(json_response(StatusCode::OK, &version_document())),
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

impl<B> tower::Service<Request<B>> for ApiServer
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let server = self.clone();
        Box::pin(async move {
            Ok(match read_body(request).await {
                Ok(request) => server.handle(request).await,
                Err(response) => response,
            })
        })
    }
}

/// The API server for requests that must authenticate, with a client certificate (its connection's
/// [`auth::identity::PresentedCertificate`], in the request's extensions) or a bearer token: the HTTPS listener and
/// in-process clients acting as a ServiceAccount or the viewer.
#[derive(Clone)]
pub struct Authenticated(pub ApiServer);

impl<B> tower::Service<Request<B>> for Authenticated
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let server = self.0.clone();
        Box::pin(async move {
            // Who is asking is settled before the body is read: an unauthenticated client gets 401 at once.
            let certificate = request
                .extensions()
                .get::<auth::identity::PresentedCertificate>();
            let user = match server.authenticate(request.headers(), certificate) {
                Ok(user) => user,
                Err(e) => {
                    tracing::debug!(method = %request.method(), uri = %request.uri(), "unauthenticated request");
                    return Ok(error_response(&e));
                }
            };
            // A certificate or token that resolved to a user moves its connection out of the listener's unauthenticated budget.
            if let Some(connection) = request.extensions().get::<kmm_listener::Connection>() {
                connection.promote().await;
            }
            Ok(match read_body(request).await {
                Ok(request) => server.handle_as(user, request).await,
                Err(response) => response,
            })
        })
    }
}

/// Read a request's whole body, up to [`MAX_BODY_BYTES`].
async fn read_body<B>(request: Request<B>) -> Result<Request<Bytes>, Response<ResponseBody>>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    let (parts, body) = request.into_parts();
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(Request::from_parts(parts, collected.to_bytes())),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(error_response(
            &ApiError::too_large(format!("limit is {MAX_BODY_BYTES}")),
        )),
        Err(e) => Err(error_response(&ApiError::bad_request(format!(
            "reading request body: {e}"
        )))),
    }
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
fn version_document() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": format!("v{major}.{minor}.0-kmm-tui.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// A whole body.
pub fn full(bytes: Bytes) -> ResponseBody {
    Full::new(bytes).boxed_unsync()
}

/// A JSON response.
pub fn json_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    bytes_response(
        status,
        Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        "application/json",
    )
}

/// A response whose body is already serialised.
pub fn bytes_response(
    status: StatusCode,
    body: Bytes,
    content_type: &'static str,
) -> Response<ResponseBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The `metav1.Status` response for an error.
pub fn error_response(error: &ApiError) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = bytes_response(status, Bytes::from(error.to_body()), "application/json");
    if let Some(seconds) = error.retry_after_seconds() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
