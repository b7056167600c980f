//! An embedded fleet: a hub and its spokes in one process, each an [`EmbeddedCluster`] with its own API server,
//! store and simulated nodes, joined as Open Cluster Management joins clusters. The hub serves OCM's and KMM's hub
//! kinds and holds a ManagedCluster per spoke; each spoke runs OCM's registration and work agents, API clients of
//! the hub and of their spoke (`kmm_sim::ocm`). Every cluster pulls from and pushes to one registry, as the clusters of
//! a fleet reach one quay.io: what the hub builds, the spokes pull. Served over HTTPS, the fleet writes one kubeconfig with a context
//! per cluster, named after it (`hub`, `spoke-1`, …).

mod hub;
mod kubeconfig;
pub mod sample;
mod spokes;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use kmm_sim::ocm::{HubControllers, SpokeAgents};

pub use spokes::{DEFAULT_KERNELS, SpokeOptions};

use crate::{EmbeddedCluster, EmbeddedOptions, private_files, sim};

/// The name `--scenario` takes for a fleet rather than one cluster.
pub const SCENARIO: &str = "fleet";

/// The hub's name: its kubeconfig context.
pub const HUB: &str = "hub";

/// How often a default fleet's registration agents renew their Leases: a stopped spoke shows as unavailable after
/// five of these. Shorter than OCM's 60 seconds so that a fleet on one machine answers while someone watches.
pub const DEFAULT_LEASE_DURATION_SECONDS: i32 = 10;

/// How long a restarted spoke tries to serve on its old address while the old listener closes.
const REBIND_LIMIT: Duration = Duration::from_secs(5);

/// How to start a fleet.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// The spokes.
    pub spokes: Vec<SpokeOptions>,
    /// Nodes of the hub (on the first default kernel), where its builds run.
    pub hub_nodes: u32,
    /// Serve every cluster over HTTPS on this address, each on a port of its own; in-process only when None.
    pub listen: Option<IpAddr>,
    /// Write the fleet's kubeconfig here (mode 0600), with a context per cluster.
    pub kubeconfig_out: Option<PathBuf>,
    /// Keep each cluster's store under `<state_dir>/<name>`; in memory when None.
    pub state_dir: Option<PathBuf>,
    /// `spec.leaseDurationSeconds` of every ManagedCluster.
    pub lease_duration_seconds: i32,
    /// What containers of the project's own image run in-process, on every cluster.
    pub own_image: Option<sim::OwnImagePrograms>,
    /// Simulated seconds per wall-clock second on every cluster (builds, pulls, loads); the simulation's default
    /// when None. Tests raise it so that a hub's builds take a second, not ten.
    pub time_scale: Option<f64>,
}

impl FleetOptions {
    /// A hub with one node and `spokes` spokes of `nodes_per_kernel` nodes per kernel, in memory and in-process.
    pub fn new(spokes: usize, nodes_per_kernel: u32) -> Self {
        Self {
            spokes: (1..=spokes)
                .map(|number| SpokeOptions::numbered(number, nodes_per_kernel))
                .collect(),
            hub_nodes: 1,
            listen: None,
            kubeconfig_out: None,
            state_dir: None,
            lease_duration_seconds: DEFAULT_LEASE_DURATION_SECONDS,
            own_image: None,
            time_scale: None,
        }
    }
}

/// One spoke: how to start it, and it and its agents while it runs.
struct Spoke {
    options: EmbeddedOptions,
    running: Option<(EmbeddedCluster, SpokeAgents)>,
}

/// A running fleet.
pub struct EmbeddedFleet {
    hub: EmbeddedCluster,
    controllers: HubControllers,
    spokes: Vec<(String, Spoke)>,
    options: FleetOptions,
    kubeconfig: Option<String>,
}

impl EmbeddedFleet {
    /// Start the hub (with its CRDs, ManagedClusterSet and binding), then every spoke with its agents, each
    /// registered on the hub; write the fleet's kubeconfig when served.
    pub async fn start(options: FleetOptions) -> anyhow::Result<Self> {
        let mut names = vec![HUB];
        for spoke in &options.spokes {
            crate::kubeconfig::check_name(&spoke.name)
                .map_err(|reason| anyhow::anyhow!("spoke name {:?}: {reason}", spoke.name))?;
            if names.contains(&spoke.name.as_str()) {
                anyhow::bail!("two clusters of the fleet are named {}", spoke.name);
            }
            names.push(&spoke.name);
        }
        let hub_kernels = [DEFAULT_KERNELS[0].0.to_owned()];
        let hub_scenario =
            spokes::scenario(HUB, &hub_kernels, options.hub_nodes, options.time_scale)?;
        // One registry for the whole fleet, as every cluster reaches the same quay.io: what the hub builds, the
        // spokes pull.
        let registry = sim::SharedRegistry::new(&hub_scenario);
        let hub = EmbeddedCluster::start(cluster_options(&options, HUB, hub_scenario, &registry)?)
            .await
            .context("starting the hub")?;
        hub::install(&hub.client()).await?;
        let controllers = HubControllers::start(hub.client());
        let mut fleet = Self {
            hub,
            controllers,
            spokes: Vec::new(),
            options: options.clone(),
            kubeconfig: None,
        };
        for spoke in &options.spokes {
            let scenario = spokes::scenario(
                &spoke.name,
                &spoke.kernels,
                spoke.nodes_per_kernel,
                options.time_scale,
            )?;
            let spoke_options = cluster_options(&options, &spoke.name, scenario, &registry)?;
            fleet.spokes.push((
                spoke.name.clone(),
                Spoke {
                    options: spoke_options,
                    running: None,
                },
            ));
            fleet.launch_spoke(&spoke.name).await?;
        }
        // Written once every cluster serves: whoever waits for the file finds the whole fleet.
        fleet.write_kubeconfig()?;
        Ok(fleet)
    }

    /// Put [`sample`]'s ManagedClusterModule on the hub for every running spoke: what a console opened on an
    /// embedded fleet shows at once.
    pub async fn apply_sample(&self) -> anyhow::Result<()> {
        let spokes: Vec<kube::Client> = self
            .spoke_names()
            .into_iter()
            .filter_map(|name| self.spoke(name))
            .map(EmbeddedCluster::client)
            .collect();
        sample::apply(&self.hub.client(), &spokes)
            .await
            .context("putting the sample ManagedClusterModule on the hub")
    }

    /// The hub.
    pub fn hub(&self) -> &EmbeddedCluster {
        &self.hub
    }

    /// The spokes' names, in order.
    pub fn spoke_names(&self) -> Vec<&str> {
        self.spokes.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// Spoke `name`, while it runs.
    pub fn spoke(&self, name: &str) -> Option<&EmbeddedCluster> {
        self.find(name)?
            .running
            .as_ref()
            .map(|(cluster, _)| cluster)
    }

    /// The fleet's kubeconfig (a context per cluster, the hub's current), when it is served.
    pub fn kubeconfig(&self) -> Option<&str> {
        self.kubeconfig.as_deref()
    }

    /// Every cluster's name and HTTPS address, the hub first, for those served.
    pub fn addresses(&self) -> Vec<(&str, SocketAddr)> {
        let hub = self.hub.address().map(|address| (HUB, address));
        let spokes = self.spokes.iter().filter_map(|(name, spoke)| {
            let (cluster, _) = spoke.running.as_ref()?;
            Some((name.as_str(), cluster.address()?))
        });
        hub.into_iter().chain(spokes).collect()
    }

    /// Stop spoke `name` and its agents, as if the cluster went away: the hub stops hearing from it.
    pub async fn stop_spoke(&mut self, name: &str) -> anyhow::Result<()> {
        let spoke = self
            .find_mut(name)
            .with_context(|| format!("the fleet has no spoke {name}"))?;
        if let Some((cluster, agents)) = spoke.running.take() {
            agents.stop().await;
            cluster.shutdown().await;
        }
        Ok(())
    }

    /// Start spoke `name` again (on its old address when served), register it on the hub, start its agents and
    /// write the kubeconfig again (a spoke without a state directory comes back with new credentials).
    pub async fn start_spoke(&mut self, name: &str) -> anyhow::Result<()> {
        self.launch_spoke(name).await?;
        self.write_kubeconfig()
    }

    /// Start spoke `name`, register it on the hub and start its agents.
    async fn launch_spoke(&mut self, name: &str) -> anyhow::Result<()> {
        let lease = self.options.lease_duration_seconds;
        let hub_client = self.hub.client();
        let spoke = self
            .find_mut(name)
            .with_context(|| format!("the fleet has no spoke {name}"))?;
        if spoke.running.is_some() {
            return Ok(());
        }
        let cluster = start_serving(&spoke.options, name).await?;
        if let Some(address) = cluster.address() {
            spoke.options.listen = Some(address);
        }
        let endpoint = cluster.address().map(|address| hub::Endpoint {
            url: format!("https://{address}"),
            ca_pem: cluster.ca_pem(),
        });
        hub::register(&hub_client, name, lease, endpoint).await?;
        let agents = SpokeAgents::start(hub_client, cluster.client(), name);
        spoke.running = Some((cluster, agents));
        Ok(())
    }

    /// Stop every spoke, then the hub.
    pub async fn shutdown(mut self) {
        let names: Vec<String> = self.spokes.iter().map(|(name, _)| name.clone()).collect();
        for name in names {
            // Every name is the fleet's own.
            let _ = self.stop_spoke(&name).await;
        }
        self.controllers.stop().await;
        self.hub.shutdown().await;
    }

    fn find(&self, name: &str) -> Option<&Spoke> {
        self.spokes.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    fn find_mut(&mut self, name: &str) -> Option<&mut Spoke> {
        self.spokes
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s)
    }

    /// Merge the running clusters' kubeconfigs, the hub's first, and write the result where asked.
    fn write_kubeconfig(&mut self) -> anyhow::Result<()> {
        let hub = self.hub.kubeconfig();
        let spokes = self
            .spokes
            .iter()
            .filter_map(|(_, spoke)| spoke.running.as_ref()?.0.kubeconfig());
        let Some(merged) = kubeconfig::merge(hub.into_iter().chain(spokes))? else {
            return Ok(());
        };
        if let Some(path) = &self.options.kubeconfig_out {
            private_files::replace(path, merged.as_bytes(), private_files::Readers::Owner)
                .context("writing the fleet's kubeconfig")?;
        }
        self.kubeconfig = Some(merged);
        Ok(())
    }
}

/// The options of cluster `name` of the fleet.
fn cluster_options(
    fleet: &FleetOptions,
    name: &str,
    scenario: sim::scenario::Scenario,
    registry: &sim::SharedRegistry,
) -> anyhow::Result<EmbeddedOptions> {
    Ok(EmbeddedOptions {
        state_dir: fleet.state_dir.as_ref().map(|dir| dir.join(name)),
        listen: fleet.listen.map(|ip| SocketAddr::new(ip, 0)),
        kubeconfig_out: None,
        history: None,
        event_ttl: None,
        scenario: Some(scenario),
        connection_limits: None,
        own_image: fleet.own_image.clone(),
        name: Some(name.to_owned()),
        rotate_tokens: false,
        kubernetes_minor: None,
        registry: Some(registry.clone()),
    })
}

/// Start a cluster; a restarted one retries its old address while the listener it had closes.
async fn start_serving(options: &EmbeddedOptions, name: &str) -> anyhow::Result<EmbeddedCluster> {
    let deadline = tokio::time::Instant::now() + REBIND_LIMIT;
    loop {
        match EmbeddedCluster::start(options.clone()).await {
            Ok(cluster) => return Ok(cluster),
            Err(error)
                if options.listen.is_some_and(|a| a.port() != 0)
                    && tokio::time::Instant::now() < deadline
                    && error.to_string().contains("cannot listen") =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => return Err(error.context(format!("starting spoke {name}"))),
        }
    }
}
