//! The `controller` command: its arguments and the engine they configure. The binary runs it as a process, and the
//! embedded cluster runs it in pods of kmm-tui's own image ([`KmmTuiImage`]), so a hand-off to an in-cluster
//! controller reads the very arguments `kmm-tui install` writes into its Deployment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use futures::FutureExt;
use kmm_api::lease::{DEFAULT_LEASE_DURATION, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_cluster::sim::{OwnImage, OwnImagePrograms, Program};
use kmm_engine::{EngineConfig, Family, LeaseConfig, PodImages, Settings};
use tokio_util::sync::CancellationToken;

/// What the engine logs unless `--log` says otherwise.
const DEFAULT_LOG_FILTER: &str = "info";

/// `kmm-tui controller`'s options: where the cluster is, the Lease that elects the acting engine, the images its
/// pods run and the engine's settings.
#[derive(Args)]
pub struct ControllerArgs {
    /// Kubeconfig to use. Without it: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use instead of its current one.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Namespace of the Lease that elects the acting engine.
    #[arg(long, value_name = "NS", default_value = DEFAULT_LEASE_NAMESPACE)]
    pub lease_namespace: String,
    /// Name of the Lease that elects the acting engine.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_LEASE_NAME)]
    pub lease_name: String,
    /// This engine's name in the Lease; must differ between engines. Defaults to `<hostname>-<pid>`.
    #[arg(long, value_name = "ID")]
    pub identity: Option<String>,
    /// Seconds a leader's Lease holds without renewal: how long a standby waits after the leader dies.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_LEASE_DURATION.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub lease_duration: u64,
    /// The images of the pods the engine starts.
    #[command(flatten)]
    pub images: ImageArgs,
    /// How the engine works: its families, workers and resync period.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Serve the probes here (`/healthz`: the engine runs; `/readyz`: it also reaches the API server and, when
    /// acting, its caches have listed), e.g. `0.0.0.0:8081`. The same endpoint serves `/metrics`.
    #[arg(long, value_name = "ADDR")]
    pub health_listen: Option<SocketAddr>,
    /// Serve the engine's Prometheus metrics (`/metrics`, with the probes beside it) here, e.g. `0.0.0.0:8080`.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// Print the least-privilege RBAC the engine needs (ServiceAccount, ClusterRole, Role for the Lease and their
    /// bindings) as YAML, and exit.
    #[arg(long)]
    pub print_rbac: bool,
}

/// Images of the pods the engine creates; each defaults to the upstream project's published image.
#[derive(Args)]
pub struct ImageArgs {
    /// Image of the worker pods that load and unload kernel modules on nodes.
    #[arg(long, value_name = "IMG")]
    pub worker_image: Option<String>,
    /// Image of the pods that build kernel module images.
    #[arg(long, value_name = "IMG")]
    pub build_image: Option<String>,
    /// Image holding `sign-file`, for the pods that sign kernel modules.
    #[arg(long, value_name = "IMG")]
    pub sign_image: Option<String>,
    /// Image of the init container that downloads a shim archive (runtime-class-manager's shim-downloader).
    #[arg(long, value_name = "IMG")]
    pub shim_downloader_image: Option<String>,
    /// Image of the container that installs a shim on its node (runtime-class-manager's node-installer).
    #[arg(long, value_name = "IMG")]
    pub shim_installer_image: Option<String>,
    /// Image whose `echo` the image cache's pull pods run (kube-fledged's busybox).
    #[arg(long, value_name = "IMG")]
    pub cache_busybox_image: Option<String>,
    /// Image with `crictl`, for the pods that purge cached images (kube-fledged's cri-client).
    #[arg(long, value_name = "IMG")]
    pub cache_cri_client_image: Option<String>,
}

impl ImageArgs {
    /// The images asked for, the upstream projects' published ones where none is given.
    pub fn pod_images(self) -> PodImages {
        let defaults = PodImages::default();
        PodImages {
            worker: self.worker_image.unwrap_or(defaults.worker),
            build: self.build_image.unwrap_or(defaults.build),
            sign: self.sign_image.unwrap_or(defaults.sign),
            shim_downloader: self
                .shim_downloader_image
                .unwrap_or(defaults.shim_downloader),
            shim_installer: self.shim_installer_image.unwrap_or(defaults.shim_installer),
            cache_busybox: self.cache_busybox_image.unwrap_or(defaults.cache_busybox),
            cache_cri_client: self
                .cache_cri_client_image
                .unwrap_or(defaults.cache_cri_client),
        }
    }
}

/// What the engine runs, beyond its images.
#[derive(Args)]
pub struct EngineArgs {
    /// The families of reconcilers to run (comma-separated): kmm (kernel modules), shims (containerd shims),
    /// caches (pre-pulled images), day0 (kernel modules in the OS image), hub (kernel modules for a fleet, on an
    /// Open Cluster Management hub; idle elsewhere). All by default.
    #[arg(long, value_parser = family_parser(), value_delimiter = ',', value_name = "FAMILY,...")]
    pub families: Vec<Family>,
    /// Re-pull every cached image this often even when nothing changed (e.g. `30m`, `6h`), for registries whose
    /// tags move. Off by default: caches react at once to new nodes, removed images and spec changes.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub cache_refresh: Option<Duration>,
    /// Retry a failed pull of a cached image this long after it failed (e.g. `30s`, `2m`), doubling per attempt up
    /// to twenty times this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "30s")]
    pub cache_retry: Duration,
    /// How many image cache pull pods may work at once in the whole cluster (all caches together), so a cache of
    /// thousands of nodes never floods the registry or the API server.
    #[arg(long, value_name = "PODS", value_parser = parse_count,
          default_value_t = kmm_engine::imagecache::DEFAULT_CLUSTER_PULLS)]
    pub cache_pulls: usize,
    /// How often every reconciler looks again at each object it owns when nothing it watches changed (e.g. `10m`,
    /// `1h`), so a change no watch delivers heals within it. Each object's period is jittered by a fifth either way.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10m")]
    pub resync_period: Duration,
    /// On a hub: the namespace where each ManagedClusterModule's images are checked, built and signed, and where
    /// their Dockerfile ConfigMaps and secrets are read from (upstream's operator namespace).
    #[arg(long, value_name = "NAMESPACE", default_value = kmm_engine::DEFAULT_HUB_NAMESPACE)]
    pub hub_namespace: String,
}

impl EngineArgs {
    /// The engine's settings these options ask for, the defaults where none is given.
    pub fn settings(&self) -> Settings {
        let defaults = Settings::default();
        Settings {
            families: if self.families.is_empty() {
                defaults.families
            } else {
                self.families.iter().copied().collect()
            },
            cache_refresh: self.cache_refresh,
            cache_retry: self.cache_retry,
            cache_pulls: self.cache_pulls,
            resync: self.resync_period,
            hub_namespace: self.hub_namespace.clone(),
        }
    }
}

/// A count of at least one.
pub fn parse_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(count) if count > 0 => Ok(count),
        _ => Err(format!("{text:?} is not a count of at least 1")),
    }
}

/// `--families`' values: each family by its engine name, with what it runs beside it in `--help`. The engine
/// knows nothing of the command line, so its names and words are turned into clap's possible values here.
pub fn family_parser() -> impl TypedValueParser<Value = Family> {
    let names = Family::ALL.map(|family| PossibleValue::new(family.as_str()).help(family.runs()));
    PossibleValuesParser::new(names).try_map(|name| name.parse::<Family>())
}

/// A positive duration in seconds (`90`) or with units (`90s`, `30m`, `6h`, `1h30m`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let parsed = match text.parse::<u64>() {
        Ok(seconds) => Some(Duration::from_secs(seconds)),
        Err(_) => text
            .parse::<jiff::SignedDuration>()
            .ok()
            .filter(|d| !d.is_negative())
            .map(|d| d.unsigned_abs()),
    };
    parsed
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("`{text}` is not a positive duration like 90s, 30m or 6h"))
}

impl ControllerArgs {
    /// The Lease that elects the acting engine; this engine's name in it is `--identity`, else `default_identity`.
    pub fn lease(&self, default_identity: impl FnOnce() -> String) -> LeaseConfig {
        LeaseConfig::new(
            &self.lease_namespace,
            &self.lease_name,
            self.identity.clone().unwrap_or_else(default_identity),
            Duration::from_secs(self.lease_duration),
        )
    }
}

/// The programs kmm-tui's image runs in the embedded cluster: `kmm-tui controller …` is the real engine, talking
/// to the API server as the pod's ServiceAccount, with the pod's name as its default identity (the hostname a
/// process in the pod would see). Args the binary would refuse fail the container with clap's words, as the
/// process would exit.
pub struct KmmTuiImage;

/// Register [`KmmTuiImage`] with an embedded cluster.
pub fn own_image() -> OwnImagePrograms {
    OwnImagePrograms(std::sync::Arc::new(KmmTuiImage))
}

/// The part of the command line a controller pod's args are: `--log` and the `controller` subcommand.
#[derive(Parser)]
#[command(name = "kmm-tui")]
struct PodCommandLine {
    #[arg(long, global = true, default_value = DEFAULT_LOG_FILTER)]
    log: String,
    #[command(subcommand)]
    command: PodCommand,
}

#[derive(Subcommand)]
enum PodCommand {
    Controller(ControllerArgs),
}

impl OwnImage for KmmTuiImage {
    fn program(&self, args: &[String], pod: &str) -> Option<Program> {
        if args.first().map(String::as_str) != Some("controller") {
            return None;
        }
        let line = std::iter::once("kmm-tui").chain(args.iter().map(String::as_str));
        let program = match PodCommandLine::try_parse_from(line) {
            Ok(PodCommandLine {
                log,
                command: PodCommand::Controller(args),
            }) => {
                let config = EngineConfig {
                    lease: args.lease(|| pod.to_owned()),
                    settings: args.engine.settings(),
                    images: args.images.pod_images(),
                };
                Program {
                    log_filter: log,
                    run: Box::new(move |client| {
                        kmm_engine::run(client, config, CancellationToken::new()).boxed()
                    }),
                }
            }
            Err(refused) => {
                let words = refused.to_string();
                let first = words.lines().next().unwrap_or_default().to_owned();
                Program {
                    log_filter: DEFAULT_LOG_FILTER.to_owned(),
                    run: Box::new(move |_| async move { Err(anyhow::anyhow!(first)) }.boxed()),
                }
            }
        };
        Some(program)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> EngineConfig {
        let line = std::iter::once("kmm-tui").chain(args.iter().copied());
        let PodCommand::Controller(args) = PodCommandLine::try_parse_from(line)
            .expect("valid args")
            .command;
        EngineConfig {
            lease: args.lease(|| "pod-1".to_owned()),
            settings: args.engine.settings(),
            images: args.images.pod_images(),
        }
    }

    #[test]
    fn a_pod_engine_takes_its_pods_name_and_the_families_its_args_name() {
        let all = config(&["controller"]);
        assert_eq!(all.lease.identity, "pod-1");
        assert_eq!(all.settings.families.len(), Family::ALL.len());
        let some = config(&[
            "controller",
            "--families=kmm,caches",
            "--identity",
            "engine-a",
        ]);
        assert_eq!(some.lease.identity, "engine-a");
        assert_eq!(
            some.settings.families.into_iter().collect::<Vec<_>>(),
            [Family::Kmm, Family::Caches]
        );
    }

    #[test]
    fn the_cluster_wide_pull_bound_is_a_setting_of_at_least_one() {
        let default = config(&["controller"]);
        assert_eq!(
            default.settings.cache_pulls,
            kmm_engine::imagecache::DEFAULT_CLUSTER_PULLS
        );
        assert_eq!(
            config(&["controller", "--cache-pulls", "64"])
                .settings
                .cache_pulls,
            64
        );
        let line = ["kmm-tui", "controller", "--cache-pulls", "0"];
        assert!(PodCommandLine::try_parse_from(line).is_err());
    }

    #[test]
    fn other_args_run_nothing_in_process() {
        assert!(
            KmmTuiImage
                .program(&["serve".to_owned()], "pod-1")
                .is_none()
        );
        assert!(KmmTuiImage.program(&[], "pod-1").is_none());
    }
}
