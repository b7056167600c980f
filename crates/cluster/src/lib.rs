//! The embedded cluster: a Kubernetes-compatible API server with a durable store, usable in-process through an
//! ordinary `kube::Client` and over HTTPS by kubectl. It is what runs when there is no cluster at hand, and what
//! every test runs against.
//!
//! This crate only puts the cluster together: [`EmbeddedCluster::start`] starts `kmm-apiserver`'s server and, with
//! a scenario, `kmm-sim`'s node simulation. It re-exports both crates' modules under the names the console and the
//! binary use, so they depend on this crate alone.

pub use kmm_apiserver::{
    apiserver, client_with_token, https, kubeconfig, private_files, room, store, tls,
};
pub use kmm_sim as sim;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use apiserver::ApiServer;
use apiserver::auth::credentials::Credentials;
use apiserver::controllers::kubernetes_service;
use kmm_apiserver::bootstrap;

pub mod fleet;
use store::Store;

/// How long an Event lives after its last write unless told otherwise: kube-apiserver's default `--event-ttl`.
/// Without a limit the Events of a long run only pile up.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(60 * 60);

/// How to start an embedded cluster.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedOptions {
    /// Keep the store (and TLS material) here so everything survives restarts; in memory when None.
    pub state_dir: Option<PathBuf>,
    /// Also serve HTTPS on this address (port 0 picks a free port), meant to be loopback: another address is
    /// served with a warning ([`exposure_warning`]); in-process only when None.
    pub listen: Option<SocketAddr>,
    /// Write the kubeconfig for the HTTPS endpoint here (mode 0600), in a directory only the user may write to
    /// ([`private_files::replace`]).
    pub kubeconfig_out: Option<PathBuf>,
    /// How many events the store keeps for watches to resume from; the default when None.
    pub history: Option<usize>,
    /// How long an Event lives after its last write before it is deleted, as kube-apiserver's `--event-ttl`;
    /// [`DEFAULT_EVENT_TTL`] when None.
    pub event_ttl: Option<Duration>,
    /// Simulate the nodes, registry and faults of this scenario; no nodes at all when None.
    pub scenario: Option<sim::scenario::Scenario>,
    /// Deadlines and the connection cap of the HTTPS listener; kube-apiserver-like defaults when None.
    pub connection_limits: Option<https::ConnectionLimits>,
    /// What containers of the cluster's own image run in-process (the binary registers its `controller` command);
    /// such containers run as any other image's when None.
    pub own_image: Option<sim::OwnImagePrograms>,
    /// What the kubeconfig names its cluster, users and contexts ([`kubeconfig::Names`]), so the kubeconfigs of
    /// several clusters merge; [`kubeconfig::DEFAULT_NAME`] when None.
    pub name: Option<String>,
    /// Replace the tokens and signing key kept in the state directory with new ones: every kubeconfig and
    /// ServiceAccount token handed out before stops working. Without a state directory they are new anyway.
    pub rotate_tokens: bool,
    /// Announce Kubernetes `1.<minor>` and serve only that version's built-in API (no `resource.k8s.io/v1` before
    /// 34), to see how a client meets an older cluster; [`apiserver::KUBERNETES_MINOR`] when None.
    pub kubernetes_minor: Option<u32>,
    /// Pull from and push to this registry, shared with other clusters (a fleet's), instead of one of the
    /// scenario's own.
    pub registry: Option<sim::SharedRegistry>,
}

/// A running embedded cluster.
pub struct EmbeddedCluster {
    server: ApiServer,
    simulation: Option<sim::run::Simulation>,
    client: kube::Client,
    address: Option<SocketAddr>,
    kubeconfig: Option<String>,
    listening: Option<kmm_listener::Listening>,
    ca_pem: String,
    stop: CancellationToken,
}

impl EmbeddedCluster {
    /// Open the store, start the API server and its controllers, install the namespaces every cluster has (each
    /// with its `default` ServiceAccount and root CA ConfigMap) and the project's CRDs, (with `listen`) serve
    /// HTTPS and write the kubeconfig, and install the `default/kubernetes` Service that points at the server.
    pub async fn start(options: EmbeddedOptions) -> anyhow::Result<Self> {
        let history = options.history.unwrap_or(store::DEFAULT_HISTORY);
        let store = match &options.state_dir {
            Some(dir) => {
                private_files::private_dir(dir).context("the state directory")?;
                room::ensure(dir)?;
                Store::open(dir, history)
                    .with_context(|| format!("opening the store in {}", dir.display()))?
            }
            None => Store::in_memory(history),
        };
        let store = store
            .with_ttl(
                apiserver::events::stored_events(),
                options.event_ttl.unwrap_or(DEFAULT_EVENT_TTL),
            )
            .context("reading when the stored Events were written")?;
        let credentials = match &options.state_dir {
            Some(dir) if options.rotate_tokens => Credentials::rotate(dir),
            Some(dir) => Credentials::load_or_create(dir),
            None => Ok(Credentials::random()),
        }?;
        let minor = options
            .kubernetes_minor
            .unwrap_or(apiserver::KUBERNETES_MINOR);
        let server = ApiServer::announcing(Arc::new(store), &credentials, minor);
        server.start_controllers();
        // The CA the served kubeconfig names is the one every namespace publishes, so it exists before serving.
        let tls = tls::TlsMaterial::load_or_generate(options.state_dir.as_deref())?;
        apiserver::controllers::namespace_basics::spawn(server.clone(), tls.ca_pem.clone());
        apiserver::certificates::signer::spawn(server.clone(), tls.authority()?);
        let client = kube::Client::new(server.clone(), "default");
        bootstrap::run(&client)
            .await
            .context("installing the cluster's namespaces and CRDs")?;
        apiserver::controllers::namespace_basics::provisioned(
            &client,
            bootstrap::NAMESPACES,
            Duration::from_secs(10),
        )
        .await;
        let simulation = match options.scenario {
            Some(scenario) => Some(
                sim::run::Simulation::start(
                    server.clone(),
                    client.clone(),
                    scenario,
                    options.own_image,
                    options.registry,
                )
                .await?,
            ),
            None => None,
        };
        let stop = CancellationToken::new();
        let (address, kubeconfig, listening) = match options.listen {
            Some(listen) => {
                let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| {
                    format!("cannot listen on {listen}; is another server using it? Pass --listen 127.0.0.1:0 for any free port")
                })?;
                let address = listener.local_addr()?;
                let tokens = kubeconfig::Tokens {
                    admin: server.auth().admin_token(),
                    viewer: server.auth().viewer_token(),
                };
                let (cert_pem, key_pem) = admin_certificate(&tls)?;
                let credentials = kubeconfig::Credentials {
                    tokens,
                    certificate: kubeconfig::ClientCertificate {
                        cert_pem: &cert_pem,
                        key_pem: &key_pem,
                    },
                };
                let names = kubeconfig::Names::new(
                    options.name.as_deref().unwrap_or(kubeconfig::DEFAULT_NAME),
                );
                let config = kubeconfig::render(
                    &names,
                    &format!("https://{address}"),
                    &tls.ca_pem,
                    credentials,
                )?;
                if let Some(warning) = exposure_warning(address) {
                    tracing::warn!("{warning}");
                }
                let listening = https::spawn(
                    listener,
                    server.clone(),
                    &tls,
                    options.connection_limits.unwrap_or_default(),
                    stop.clone(),
                )?;
                if let Some(path) = &options.kubeconfig_out {
                    private_files::replace(path, config.as_bytes(), private_files::Readers::Owner)
                        .context("writing the kubeconfig")?;
                }
                (Some(address), Some(config), Some(listening))
            }
            None => (None, None, None),
        };
        let api_endpoint = address.map_or(
            kubernetes_service::IN_PROCESS_ENDPOINT,
            kubernetes_service::reachable,
        );
        kubernetes_service::start(server.clone(), api_endpoint).await;
        Ok(Self {
            server,
            simulation,
            client,
            address,
            kubeconfig,
            listening,
            ca_pem: tls.ca_pem.clone(),
            stop,
        })
    }

    /// A client served in-process (no socket, no TLS): the same API kubectl sees over HTTPS.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A client served in-process that presents `token` as its bearer token, so it acts as whoever the token
    /// names (a ServiceAccount's token from a TokenRequest, the viewer's token) under RBAC, exactly as over HTTPS.
    pub fn client_with_token(&self, token: &str) -> anyhow::Result<kube::Client> {
        client_with_token(&self.server, token)
    }

    /// A client served in-process, as [`Self::client`], that names itself `agent` in its `User-Agent`: the API
    /// server's metrics then count its requests and what it is sent apart from everyone else's.
    pub fn client_named(&self, agent: &'static str) -> kube::Client {
        kmm_apiserver::client_named(&self.server, agent)
    }

    /// The API server, for the parts of the simulation that live beside it (e.g. container logs).
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// The node simulation, when the cluster runs a scenario.
    pub fn simulation(&self) -> Option<&sim::run::Simulation> {
        self.simulation.as_ref()
    }

    /// Where HTTPS is served, when it is.
    pub fn address(&self) -> Option<SocketAddr> {
        self.address
    }

    /// The HTTPS listener's connections now, when HTTPS is served: how many hold an authenticated slot, how many
    /// wait in the unauthenticated budget, how many that budget evicted.
    pub fn https_census(&self) -> Option<https::Census> {
        self.listening.as_ref().map(kmm_listener::Listening::census)
    }

    /// The PEM of the CA that signs the HTTPS serving certificate, for whoever must trust the endpoint (a hub's
    /// ManagedCluster names it as the spoke's CA bundle).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The kubeconfig for the HTTPS endpoint, when it is served.
    pub fn kubeconfig(&self) -> Option<&str> {
        self.kubeconfig.as_deref()
    }

    /// Stop serving: close the listener, end watches and controllers. Every acknowledged write is already durable.
    pub async fn shutdown(self) {
        if let Some(simulation) = self.simulation {
            simulation.shutdown();
        }
        self.stop.cancel();
        self.server.shutdown();
        tokio::task::yield_now().await;
    }
}

/// A client certificate for the administrator (in `system:masters`), signed by the cluster's CA for a year, for the
/// kubeconfig's certificate context. Issued anew on every start, as the kubeconfig is written anew.
fn admin_certificate(tls: &tls::TlsMaterial) -> anyhow::Result<(String, String)> {
    use apiserver::auth::identity::{ADMIN_USER, MASTERS};
    tls.authority()?
        .issue_client(
            ADMIN_USER,
            MASTERS,
            std::time::SystemTime::now(),
            tls::issue::CLIENT_LIFETIME,
        )
        .context("issuing the administrator's client certificate")
}

/// What to tell the user when the API is served beyond this machine: anyone who reaches the address can try its
/// tokens and, with the administrator's token from the kubeconfig, do anything. None on loopback.
pub fn exposure_warning(address: SocketAddr) -> Option<String> {
    (!address.ip().is_loopback()).then(|| {
        format!(
            "the API is served on {address}, beyond this machine: anyone who can reach it may try to authenticate, \
             and whoever holds the kubeconfig's administrator token controls the cluster. The serving certificate \
             names only localhost, 127.0.0.1 and ::1. Listen on 127.0.0.1 unless other machines must connect."
        )
    })
}
