//! A Kubernetes-compatible API server, served in-process to `kube::Client` and over HTTPS to kubectl.
//!
//! The server is a `tower::Service` over `http` requests (`service`): [`ApiServer::handle`] turns one request
//! into one response. The in-process client calls it directly (no socket) as the administrator; [`Authenticated`]
//! serves requests that present a bearer token (HTTPS, in-process clients of other identities). Every request is
//! authorized by RBAC ([`auth`]), then routed to what answers it (`dispatch`), which builds its response with the
//! shared helpers (`responses`). This module holds the server's handle, [`ApiServer`], and what it offers.
//! Semantics follow kube-apiserver closely enough that kube-rs watchers, controllers and kubectl cannot tell the
//! difference for the resources served: see the README for what is and is not implemented.

pub(crate) mod admission;
mod admission_policy;
pub(crate) mod aggregated_discovery;
pub mod auth;
pub(crate) mod builtin;
pub mod certificates;
pub(crate) mod cluster_ip;
pub(crate) mod context;
pub mod controllers;
pub mod conversion;
pub(crate) mod defaults;
pub(crate) mod discovery;
mod dispatch;
pub mod errors;
pub mod events;
pub(crate) mod handlers;
pub mod jsonpath;
mod list_snapshots;
pub mod logs;
pub mod long_running;
pub mod metrics;
pub(crate) mod negotiation;
pub(crate) mod node_port;
pub(crate) mod objects;
pub(crate) mod openapi;
pub(crate) mod patch;
pub mod protobuf;
pub mod registry;
pub(crate) mod request;
mod responses;
pub(crate) mod scale;
pub(crate) mod schema;
pub mod selector;
mod service;
pub mod streams;
pub(crate) mod table;
pub(crate) mod validation;

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use tokio_util::sync::CancellationToken;

use crate::identity::{PresentedCertificate, UserInfo};
use crate::store::Store;
use auth::Auth;
use errors::ApiError;
use logs::PodLogs;
use metrics::ApiMetrics;
use registry::Registry;
pub use responses::{ResponseBody, bytes_response, error_response, full, json_response};
pub use service::Authenticated;

/// The largest request body accepted: kube-apiserver's 3 MiB. Objects are bounded more tightly by the store
/// ([`crate::store::MAX_OBJECT_BYTES`]); the slack is for patches and for JSON's own overhead.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The Kubernetes minor version the server announces unless told otherwise (`1.34`); it serves that version's API
/// for the resources it knows.
pub const KUBERNETES_MINOR: u32 = 34;

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
    /// ValidatingAdmissionPolicies and bindings, compiled once per resourceVersion.
    pub(crate) admission_policies: admission_policy::Compiled,
    /// The lists read in pages, for the pages after the first.
    pub(crate) list_snapshots: list_snapshots::ListSnapshots,
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
        Self::announcing(store, credentials, KUBERNETES_MINOR)
    }

    /// [`ApiServer::with_credentials`] announcing Kubernetes `1.<minor>` and serving only the API that version
    /// had, so a client's handling of an older cluster (one without `resource.k8s.io/v1`) can be tried.
    pub fn announcing(
        store: Arc<Store>,
        credentials: &auth::credentials::Credentials,
        minor: u32,
    ) -> Self {
        let registry = Registry::for_minor(minor);
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
            admission_policies: admission_policy::Compiled::default(),
            list_snapshots: list_snapshots::ListSnapshots::default(),
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

    /// The Kubernetes minor version the server announces (`34` for 1.34).
    pub fn kubernetes_minor(&self) -> u32 {
        self.inner.registry.kubernetes_minor()
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
        certificate: Option<&PresentedCertificate>,
    ) -> Result<UserInfo, ApiError> {
        self.inner
            .auth
            .authenticate(headers, certificate, &self.inner.store)
    }
}
