//! The command line: every subcommand and option, as clap parses them; what each command does is in `main.rs`.

use clap::{Args, Parser, Subcommand};
use kmm_api::lease::{DEFAULT_LEASE_DURATION, DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_cluster::sim::scenario::Scenario;
use kmm_engine::{Family, LeaseConfig};
use kmm_tui::controller::{ControllerArgs, EngineArgs, ImageArgs, family_parser, parse_duration};
use kmm_tui::tui::app::EngineMode;
use kmm_tui::tui::console::{ClusterChoice, ConsoleOptions};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A console for the software that lives on Kubernetes nodes: kernel modules, containerd shims and pre-pulled
/// images. Without a subcommand it opens the console: on the kubeconfig's cluster when there is one, else on the
/// embedded cluster with the engine in the foreground.
#[derive(Parser)]
#[command(name = "kmm-tui", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) console: ConsoleArgs,
    /// Log filter (tracing's env-filter syntax, e.g. `info`, `kmm_tui=debug`). The console logs to
    /// `$XDG_STATE_HOME/kmm-tui/kmm-tui.log` (`~/.local/state/kmm-tui/kmm-tui.log`, mode 0600), never to the
    /// terminal it draws on.
    #[arg(long, global = true, env = "KMM_TUI_LOG", default_value = "info")]
    pub(crate) log: String,
}

/// The console's options.
#[derive(Args)]
pub(crate) struct ConsoleArgs {
    /// Open the embedded cluster even when a kubeconfig is available.
    #[arg(long, conflicts_with_all = ["kubeconfig", "context"])]
    pub(crate) embedded: bool,
    /// Kubeconfig to use. Without it: $KUBECONFIG, then ~/.kube/config, then the embedded cluster.
    #[arg(long, value_name = "PATH")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to open instead of its current one.
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
    /// Show only this namespace's Modules, images, pods and events.
    #[arg(long, short = 'n', value_name = "NS")]
    pub(crate) namespace: Option<String>,
    // The help lists the built-in scenarios from the table that loads them.
    #[arg(
        long,
        value_name = "NAME|FILE",
        conflicts_with_all = ["kubeconfig", "context"],
        help = scenario_help("Implies --embedded.")
    )]
    pub(crate) scenario: Option<String>,
    /// Serve the embedded cluster on a loopback port and write a kubeconfig for it here, so kubectl can watch
    /// alongside. Implies --embedded.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["kubeconfig", "context"])]
    pub(crate) kubeconfig_out: Option<PathBuf>,
    /// Run the engine in this process (foreground) or leave the cluster to its controller (off). Foreground by
    /// default on the embedded cluster, off on a real one.
    #[arg(long, value_enum, value_name = "MODE")]
    pub(crate) engine: Option<EngineArg>,
    /// Refuse every write: browse only.
    #[arg(long)]
    pub(crate) readonly: bool,
    /// Serve the foreground engine's Prometheus metrics (`/metrics`, with `/healthz` and `/readyz`) here, e.g.
    /// `127.0.0.1:9090`.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Colour theme: dark, light, high-contrast, or a theme file. NO_COLOR turns colours off.
    #[arg(long, value_name = "NAME|FILE")]
    pub(crate) theme: Option<String>,
    /// Keymap file that rebinds keys by command name (see `?` in the console for the names).
    #[arg(long, value_name = "PATH")]
    pub(crate) keymap: Option<PathBuf>,
    /// Open on the fleet view: one row per context of the kubeconfig, each followed cheaply; `enter` opens a
    /// cluster's panes and `esc` comes back (`:fleet` opens it from any pane).
    #[arg(long)]
    pub(crate) fleet: bool,
    /// The contexts the fleet view follows, comma-separated, instead of every context of the kubeconfig.
    /// Implies --fleet.
    #[arg(long, value_name = "A,B,C", value_delimiter = ',', conflicts_with_all = ["embedded", "scenario", "kubeconfig_out"])]
    pub(crate) contexts: Option<Vec<String>>,
    #[command(flatten)]
    pub(crate) images: ImageArgs,
    #[command(flatten)]
    pub(crate) engine_settings: EngineArgs,
}

/// Where the engine runs.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum EngineArg {
    /// In this process.
    Foreground,
    /// Not here.
    Off,
}

impl ConsoleArgs {
    pub(crate) fn options(self) -> ConsoleOptions {
        let embedded = self.embedded || self.scenario.is_some() || self.kubeconfig_out.is_some();
        let fleet = self.fleet
            || self.contexts.is_some()
            || self.scenario.as_deref() == Some(kmm_cluster::fleet::SCENARIO);
        ConsoleOptions {
            cluster: if embedded {
                ClusterChoice::Embedded {
                    scenario: self.scenario.unwrap_or_else(|| "demo".to_owned()),
                    kubeconfig_out: self.kubeconfig_out,
                }
            } else {
                ClusterChoice::Kubeconfig {
                    path: self.kubeconfig,
                    context: self.context,
                }
            },
            namespace: self.namespace,
            engine: self.engine.map(|engine| match engine {
                EngineArg::Foreground => EngineMode::Foreground,
                EngineArg::Off => EngineMode::Off,
            }),
            readonly: self.readonly,
            metrics_listen: self.metrics_listen,
            theme: self.theme,
            keymap: self.keymap,
            images: self.images.pod_images(),
            settings: self.engine_settings.settings(),
            fleet,
            contexts: self.contexts,
        }
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the embedded cluster headless until interrupted (Ctrl-C or SIGTERM), serving the Kubernetes API over
    /// HTTPS on loopback. Point kubectl at it with the kubeconfig it writes. With `--with-engine`, the KMM engine
    /// runs in the same process and acts on the embedded cluster.
    Serve(ServeArgs),
    /// Run the KMM engine headless against a cluster until interrupted (Ctrl-C or SIGTERM). Several engines may
    /// point at one cluster: a Lease elects the one that acts, and a standby takes over when it dies or stops.
    Controller(ControllerArgs),
    /// Print the CustomResourceDefinitions of every kind kmm-tui manages as multi-document YAML, ready for
    /// `kmm-tui crds | kubectl apply -f -`.
    Crds,
    /// Print everything the in-cluster controller needs (CRDs, Namespace, ServiceAccount, least-privilege RBAC and
    /// a Deployment of `kmm-tui controller`) as YAML for `kubectl apply -f -`, or apply it with `--apply`.
    Install(InstallArgs),
    /// Print what `install` made, for `kubectl delete -f -`, or delete it with `--apply`. The CRDs stay unless
    /// `--include-crds`, and CRDs that still hold objects are only removed with `--force`.
    Uninstall(UninstallArgs),
    /// Run the demo on the embedded cluster, let the engine work, then save a PNG of each console pane drawn from
    /// the real rendered frame (the README's pictures). Only in a build with the `screenshots` feature.
    #[cfg(feature = "screenshots")]
    Screenshots(ScreenshotArgs),
    /// Print a completion script for a shell, generated from this command line, e.g.
    /// `kmm-tui completions bash > ~/.local/share/bash-completion/completions/kmm-tui`.
    Completions(CompletionArgs),
    /// Print the manual page (roff), generated from this command line, e.g.
    /// `kmm-tui man > ~/.local/share/man/man1/kmm-tui.1`; with `--out-dir`, write one page per subcommand too.
    Man(ManArgs),
}

#[derive(Args)]
pub(crate) struct CompletionArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

#[derive(Args)]
pub(crate) struct ManArgs {
    /// Write `kmm-tui.1` and a page per subcommand (`kmm-tui-serve.1` …) into this directory instead of printing
    /// the main page.
    #[arg(long, value_name = "DIR")]
    pub(crate) out_dir: Option<PathBuf>,
}

#[cfg(feature = "screenshots")]
#[derive(Args)]
pub(crate) struct ScreenshotArgs {
    /// Directory to write the PNGs to.
    #[arg(long, value_name = "DIR", default_value = "screenshots")]
    pub(crate) out: PathBuf,
    /// Scenario to run.
    #[arg(long, value_name = "NAME|FILE", default_value = "demo")]
    pub(crate) scenario: String,
    /// Seconds the engine works before the pictures are taken.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub(crate) settle: u64,
    /// Terminal columns of the pictures.
    #[arg(long, default_value_t = 120)]
    pub(crate) columns: u16,
    /// Terminal rows of the pictures.
    #[arg(long, default_value_t = 40)]
    pub(crate) rows: u16,
    /// Theme of the pictures.
    #[arg(long, value_name = "NAME|FILE", default_value = "dark")]
    pub(crate) theme: String,
}

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Address to serve HTTPS on; use port 0 for any free port.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub(crate) listen: SocketAddr,
    /// Where to write the kubeconfig (mode 0600), in a directory of yours no one else may write to. Defaults to
    /// `<state-dir>/kubeconfig`, or `~/.kube/kmm-tui.kubeconfig` without a state directory.
    #[arg(long, value_name = "PATH")]
    pub(crate) kubeconfig_out: Option<PathBuf>,
    /// Keep the cluster's data here so it survives restarts (and `kill -9`); without it, everything is in memory.
    /// The tokens the kubeconfig holds are kept here too, so a restart keeps them (see --rotate-tokens).
    #[arg(long, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// What the kubeconfig names the cluster (`NAME`), its users (`NAME-admin`, `NAME-viewer`) and contexts
    /// (`NAME`, current, and the read-only `NAME-viewer`), so the kubeconfigs of several servers merge. Defaults to
    /// the state directory's name, else `kmm-tui-embedded`.
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    pub(crate) name: Option<String>,
    /// Replace the tokens kept in the state directory with new ones: every kubeconfig and ServiceAccount token
    /// handed out before stops working (401), and the kubeconfig written now is the one to use.
    #[arg(long, requires = "state_dir")]
    pub(crate) rotate_tokens: bool,
    // The help lists the built-in scenarios from the table that loads them.
    #[arg(
        long,
        value_name = "NAME|FILE",
        default_value = "demo",
        help = scenario_help("It sets the simulated nodes, registry and faults (see the README for the file format).")
    )]
    pub(crate) scenario: String,
    /// With `--scenario fleet`: how many spokes the hub manages.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=50))]
    pub(crate) spokes: u16,
    /// With `--scenario fleet`: simulated nodes per kernel on each spoke.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) spoke_nodes: u32,
    /// How long an Event lives after its last write before it is deleted (e.g. `90s`, `30m`, `1h`), as
    /// kube-apiserver's `--event-ttl`. 1h by default.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub(crate) event_ttl: Option<Duration>,
    /// Also run the engine in this process, on the embedded cluster (identity `embedded`). It takes part in
    /// the same leader election as `kmm-tui controller` processes pointed at this cluster.
    #[arg(long)]
    pub(crate) with_engine: bool,
    /// With `--with-engine`: serve the engine's Prometheus metrics (`/metrics`) and probes (`/healthz`, `/readyz`)
    /// here, e.g. `127.0.0.1:9090`.
    #[arg(long, value_name = "ADDR", requires = "with_engine")]
    pub(crate) metrics_listen: Option<SocketAddr>,
    #[command(flatten)]
    pub(crate) images: ImageArgs,
    #[command(flatten)]
    pub(crate) engine: EngineArgs,
}

/// A cluster name `serve --name` accepts.
fn parse_name(name: &str) -> Result<String, String> {
    kmm_cluster::kubeconfig::check_name(name).map(|()| name.to_owned())
}

impl ServeArgs {
    /// The name the kubeconfig gives the cluster: `--name`, else the state directory's, else the default.
    pub(crate) fn cluster_name(&self) -> String {
        self.name
            .clone()
            .or_else(|| {
                self.state_dir
                    .as_deref()
                    .and_then(kmm_cluster::kubeconfig::name_of_state_dir)
            })
            .unwrap_or_else(|| kmm_cluster::kubeconfig::DEFAULT_NAME.to_owned())
    }
}

/// The cluster `install` and `uninstall --apply` talk to.
#[derive(Args)]
pub(crate) struct TargetArgs {
    /// Kubeconfig to use. Without it: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.
    #[arg(long, value_name = "PATH")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use instead of its current one.
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
}

/// Where the controller goes and which Lease it elects on: what `install` and `uninstall` share. The namespace's
/// help differs: install creates it, uninstall deletes it.
#[derive(Args)]
pub(crate) struct PlacementArgs {
    // `install` and `uninstall` each word its help for what they do with it.
    #[arg(long, short = 'n', value_name = "NS", default_value = kmm_tui::install::DEFAULT_NAMESPACE)]
    pub(crate) namespace: String,
    /// Namespace of the Lease that elects the acting engine: the console's foreground engine uses the same one.
    #[arg(long, value_name = "NS", default_value = DEFAULT_LEASE_NAMESPACE)]
    pub(crate) lease_namespace: String,
    /// Name of the Lease that elects the acting engine.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_LEASE_NAME)]
    pub(crate) lease_name: String,
}

/// `install`'s options.
#[derive(Args)]
#[command(mut_arg("namespace", |arg| arg.help(
    "Namespace of the controller's Deployment and ServiceAccount (created unless it is one every cluster has, such as kube-system)"
)))]
pub(crate) struct InstallArgs {
    #[command(flatten)]
    pub(crate) placement: PlacementArgs,
    /// Image of the controller pods (what the repository's Containerfile builds).
    #[arg(long, value_name = "IMG", default_value_t = kmm_tui::install::default_image())]
    pub(crate) image: String,
    /// The families the controller runs and is granted RBAC for (comma-separated): kmm, shims, caches, day0.
    /// All by default.
    #[arg(long, value_parser = family_parser(), value_delimiter = ',', value_name = "FAMILY,...")]
    pub(crate) families: Vec<Family>,
    /// Seconds a leader's Lease holds without renewal: how long the standby waits after the leader dies.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_LEASE_DURATION.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) lease_duration: u64,
    /// Controller pods: one acts, the others stand by.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) replicas: u16,
    /// Apply the objects (server-side, field manager `kmm-tui-install`) instead of printing them. A
    /// ServiceMonitor is applied too when the cluster serves `monitoring.coreos.com`.
    #[arg(long)]
    pub(crate) apply: bool,
    /// Print a ServiceMonitor for the Prometheus Operator as well (applying checks the cluster instead).
    #[arg(long)]
    pub(crate) service_monitor: bool,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
}

/// `uninstall`'s options.
#[derive(Args)]
#[command(mut_arg("namespace", |arg| arg.help(
    "Namespace install put the controller in: deleted with everything in it, unless it is one every cluster has (such as kube-system), where only kmm-tui's objects are deleted"
)))]
pub(crate) struct UninstallArgs {
    #[command(flatten)]
    pub(crate) placement: PlacementArgs,
    /// Remove the CRDs too, once they hold no objects.
    #[arg(long)]
    pub(crate) include_crds: bool,
    /// With --include-crds: remove the CRDs even when they hold objects (those objects go with them).
    #[arg(long, requires = "include_crds")]
    pub(crate) force: bool,
    /// Delete the objects instead of printing them.
    #[arg(long)]
    pub(crate) apply: bool,
    #[command(flatten)]
    pub(crate) target: TargetArgs,
}

/// The help of `--scenario`: the built-in scenarios, named by the table that loads them so the list cannot drift,
/// then `tail`.
fn scenario_help(tail: &str) -> String {
    format!(
        "The embedded cluster's scenario: a built-in one ({}), a scenario file, or `{}` for a hub and its spokes \
         (see the README). {tail}",
        Scenario::built_in_names().join(", "),
        kmm_cluster::fleet::SCENARIO
    )
}

impl PlacementArgs {
    pub(crate) fn options(
        &self,
        image: String,
        families: Vec<Family>,
        lease_duration: Duration,
        replicas: i32,
    ) -> kmm_tui::install::InstallOptions {
        kmm_tui::install::InstallOptions {
            namespace: self.namespace.clone(),
            image,
            families,
            lease: LeaseConfig::new(
                self.lease_namespace.clone(),
                self.lease_name.clone(),
                "$(POD_NAME)",
                lease_duration,
            ),
            replicas,
            service_monitor: false,
        }
    }
}
