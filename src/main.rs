//! The `kmm-tui` command line.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use kmm_tui::cluster::sim::scenario::Scenario;
use kmm_tui::cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_tui::engine::health::{self, Health};
use kmm_tui::engine::leader::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};
use kmm_tui::engine::rbac::EngineRbac;
use kmm_tui::engine::{EngineConfig, Family, LeaseConfig, PodImages, Settings};
use kmm_tui::tui::app::EngineMode;
use kmm_tui::tui::console::{self, ClusterChoice, ConsoleOptions};
use kmm_tui::tui::gallery::{self, GalleryOptions};
use tokio_util::sync::CancellationToken;

/// Identity of the engine `serve --with-engine` runs: fixed, so a restarted server reclaims its own Lease at once.
const EMBEDDED_IDENTITY: &str = "embedded";

/// Lease duration of the engine `serve --with-engine` runs.
const EMBEDDED_LEASE_DURATION: Duration = Duration::from_secs(15);

/// How long `controller` waits for the cluster to answer before giving up.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// A console for the software that lives on Kubernetes nodes: kernel modules, containerd shims and pre-pulled
/// images. Without a subcommand it opens the console: on the kubeconfig's cluster when there is one, else on the
/// embedded cluster with the engine in the foreground.
#[derive(Parser)]
#[command(name = "kmm-tui", version, about, long_about = None, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    console: ConsoleArgs,
    /// Log filter (tracing's env-filter syntax, e.g. `info`, `kmm_tui=debug`). The console logs to
    /// `kmm-tui.log` in the system's temporary directory, never to the terminal it draws on.
    #[arg(long, global = true, env = "KMM_TUI_LOG", default_value = "info")]
    log: String,
}

/// The console's options.
#[derive(Args)]
struct ConsoleArgs {
    /// Open the embedded cluster even when a kubeconfig is available.
    #[arg(long, conflicts_with_all = ["kubeconfig", "context"])]
    embedded: bool,
    /// Kubeconfig to use. Without it: $KUBECONFIG, then ~/.kube/config, then the embedded cluster.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to open instead of its current one.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Show only this namespace's Modules, images, pods and events.
    #[arg(long, short = 'n', value_name = "NS")]
    namespace: Option<String>,
    /// The embedded cluster's scenario: demo, large, chaos, empty, or a scenario file. Implies --embedded.
    #[arg(long, value_name = "NAME|FILE", conflicts_with_all = ["kubeconfig", "context"])]
    scenario: Option<String>,
    /// Serve the embedded cluster on a loopback port and write a kubeconfig for it here, so kubectl can watch
    /// alongside. Implies --embedded.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["kubeconfig", "context"])]
    kubeconfig_out: Option<PathBuf>,
    /// Run the engine in this process (foreground) or leave the cluster to its controller (off). Foreground by
    /// default on the embedded cluster, off on a real one.
    #[arg(long, value_enum, value_name = "MODE")]
    engine: Option<EngineArg>,
    /// Refuse every write: browse only.
    #[arg(long)]
    readonly: bool,
    /// Colour theme: dark, light, high-contrast, or a theme file. NO_COLOR turns colours off.
    #[arg(long, value_name = "NAME|FILE")]
    theme: Option<String>,
    /// Keymap file that rebinds keys by command name (see `?` in the console for the names).
    #[arg(long, value_name = "PATH")]
    keymap: Option<PathBuf>,
    #[command(flatten)]
    images: ImageArgs,
}

/// Where the engine runs.
#[derive(Clone, Copy, clap::ValueEnum)]
enum EngineArg {
    /// In this process.
    Foreground,
    /// Not here.
    Off,
}

impl ConsoleArgs {
    fn options(self) -> ConsoleOptions {
        let embedded = self.embedded || self.scenario.is_some() || self.kubeconfig_out.is_some();
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
            theme: self.theme,
            keymap: self.keymap,
            images: self.images.pod_images(),
        }
    }
}

#[derive(Subcommand)]
enum Command {
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
    /// the real rendered frame (the README's pictures).
    Screenshots(ScreenshotArgs),
}

#[derive(Args)]
struct ScreenshotArgs {
    /// Directory to write the PNGs to.
    #[arg(long, value_name = "DIR", default_value = "screenshots")]
    out: PathBuf,
    /// Scenario to run.
    #[arg(long, value_name = "NAME|FILE", default_value = "demo")]
    scenario: String,
    /// Seconds the engine works before the pictures are taken.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    settle: u64,
    /// Terminal columns of the pictures.
    #[arg(long, default_value_t = 120)]
    columns: u16,
    /// Terminal rows of the pictures.
    #[arg(long, default_value_t = 40)]
    rows: u16,
    /// Theme of the pictures.
    #[arg(long, value_name = "NAME|FILE", default_value = "dark")]
    theme: String,
}

#[derive(Args)]
struct ServeArgs {
    /// Address to serve HTTPS on; use port 0 for any free port.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write the kubeconfig (mode 0600). Defaults to `<state-dir>/kubeconfig`, or `kmm-tui.kubeconfig` in
    /// the system's temporary directory without a state directory.
    #[arg(long, value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// Keep the cluster's data here so it survives restarts (and `kill -9`); without it, everything is in memory.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// The simulated nodes, registry and faults: a built-in scenario (demo, large, chaos, empty) or a scenario
    /// file (see the README for the format).
    #[arg(long, value_name = "NAME|FILE", default_value = "demo")]
    scenario: String,
    /// Also run the engine in this process, on the embedded cluster (identity `embedded`). It takes part in
    /// the same leader election as `kmm-tui controller` processes pointed at this cluster.
    #[arg(long)]
    with_engine: bool,
    #[command(flatten)]
    images: ImageArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Args)]
struct ControllerArgs {
    /// Kubeconfig to use. Without it: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use instead of its current one.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
    /// Namespace of the Lease that elects the acting engine.
    #[arg(long, value_name = "NS", default_value = DEFAULT_LEASE_NAMESPACE)]
    lease_namespace: String,
    /// Name of the Lease that elects the acting engine.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_LEASE_NAME)]
    lease_name: String,
    /// This engine's name in the Lease; must differ between engines. Defaults to `<hostname>-<pid>`.
    #[arg(long, value_name = "ID")]
    identity: Option<String>,
    /// Seconds a leader's Lease holds without renewal: how long a standby waits after the leader dies.
    #[arg(long, value_name = "SECS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    lease_duration: u64,
    #[command(flatten)]
    images: ImageArgs,
    #[command(flatten)]
    engine: EngineArgs,
    /// Serve the health endpoint for probes here (`/healthz`: the engine runs; `/readyz`: it also reaches the API
    /// server), e.g. `0.0.0.0:8081`.
    #[arg(long, value_name = "ADDR")]
    health_listen: Option<SocketAddr>,
    /// Print the least-privilege RBAC the engine needs (ServiceAccount, ClusterRole, Role for the Lease and their
    /// bindings) as YAML, and exit.
    #[arg(long)]
    print_rbac: bool,
}

/// The cluster `install` and `uninstall --apply` talk to.
#[derive(Args)]
struct TargetArgs {
    /// Kubeconfig to use. Without it: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Context of the kubeconfig to use instead of its current one.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,
}

/// Where the controller goes and which Lease it elects on: what `install` and `uninstall` share.
#[derive(Args)]
struct PlacementArgs {
    /// Namespace of the controller's Deployment and ServiceAccount (created unless it is one every cluster has).
    #[arg(long, short = 'n', value_name = "NS", default_value = kmm_tui::install::DEFAULT_NAMESPACE)]
    namespace: String,
    /// Namespace of the Lease that elects the acting engine: the console's foreground engine uses the same one.
    #[arg(long, value_name = "NS", default_value = DEFAULT_LEASE_NAMESPACE)]
    lease_namespace: String,
    /// Name of the Lease that elects the acting engine.
    #[arg(long, value_name = "NAME", default_value = DEFAULT_LEASE_NAME)]
    lease_name: String,
}

#[derive(Args)]
struct InstallArgs {
    #[command(flatten)]
    placement: PlacementArgs,
    /// Image of the controller pods (what the repository's Containerfile builds).
    #[arg(long, value_name = "IMG", default_value_t = kmm_tui::install::default_image())]
    image: String,
    /// The families the controller runs and is granted RBAC for (comma-separated): kmm, shims, caches, day0.
    /// All by default.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "FAMILY,...")]
    families: Vec<Family>,
    /// Seconds a leader's Lease holds without renewal: how long the standby waits after the leader dies.
    #[arg(long, value_name = "SECS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    lease_duration: u64,
    /// Controller pods: one acts, the others stand by.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    replicas: u16,
    /// Apply the objects (server-side, field manager `kmm-tui-install`) instead of printing them.
    #[arg(long)]
    apply: bool,
    #[command(flatten)]
    target: TargetArgs,
}

#[derive(Args)]
struct UninstallArgs {
    #[command(flatten)]
    placement: PlacementArgs,
    /// Remove the CRDs too, once they hold no objects.
    #[arg(long)]
    include_crds: bool,
    /// With --include-crds: remove the CRDs even when they hold objects (those objects go with them).
    #[arg(long, requires = "include_crds")]
    force: bool,
    /// Delete the objects instead of printing them.
    #[arg(long)]
    apply: bool,
    #[command(flatten)]
    target: TargetArgs,
}

impl PlacementArgs {
    fn options(
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
        }
    }
}

/// Images of the pods the engine creates; each defaults to the upstream project's published image.
#[derive(Args)]
struct ImageArgs {
    /// Image of the worker pods that load and unload kernel modules on nodes.
    #[arg(long, value_name = "IMG")]
    worker_image: Option<String>,
    /// Image of the pods that build kernel module images.
    #[arg(long, value_name = "IMG")]
    build_image: Option<String>,
    /// Image holding `sign-file`, for the pods that sign kernel modules.
    #[arg(long, value_name = "IMG")]
    sign_image: Option<String>,
    /// Image of the init container that downloads a shim archive (runtime-class-manager's shim-downloader).
    #[arg(long, value_name = "IMG")]
    shim_downloader_image: Option<String>,
    /// Image of the container that installs a shim on its node (runtime-class-manager's node-installer).
    #[arg(long, value_name = "IMG")]
    shim_installer_image: Option<String>,
    /// Image whose `echo` the image cache's pull pods run (kube-fledged's busybox).
    #[arg(long, value_name = "IMG")]
    cache_busybox_image: Option<String>,
    /// Image with `crictl`, for the pods that purge cached images (kube-fledged's cri-client).
    #[arg(long, value_name = "IMG")]
    cache_cri_client_image: Option<String>,
}

impl ImageArgs {
    fn pod_images(self) -> PodImages {
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
struct EngineArgs {
    /// The families of reconcilers to run (comma-separated): kmm (kernel modules), shims (containerd shims),
    /// caches (pre-pulled images), day0 (kernel modules in the OS image). All by default.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "FAMILY,...")]
    families: Vec<Family>,
    /// Re-pull every cached image this often even when nothing changed (e.g. `30m`, `6h`), for registries whose
    /// tags move. Off by default: caches react at once to new nodes, removed images and spec changes.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    cache_refresh: Option<Duration>,
}

impl EngineArgs {
    fn settings(&self) -> Settings {
        let defaults = Settings::default();
        Settings {
            families: if self.families.is_empty() {
                defaults.families
            } else {
                self.families.iter().copied().collect()
            },
            cache_refresh: self.cache_refresh,
        }
    }
}

/// A positive duration in seconds (`90`) or with units (`90s`, `30m`, `6h`, `1h30m`).
fn parse_duration(text: &str) -> Result<Duration, String> {
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

/// Errors end the process with one line on stderr and exit code 1: they are meant for people, not backtraces.
fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kmm-tui: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line. Many causes repeat their own cause in their message; those repeats are
/// left out.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let message = cause
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if !line.contains(&message) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&message);
        }
    }
    line
}

/// The log filter `--log` asks for. kube's client logs every failed request as an error of its own; the engine
/// already reports failures with what it was doing, so those are left out unless the filter names `kube_client`.
fn log_filter(log: &str) -> anyhow::Result<tracing_subscriber::EnvFilter> {
    let filter =
        tracing_subscriber::EnvFilter::try_new(log).context("--log is not a valid filter")?;
    Ok(if log.contains("kube_client") {
        filter
    } else {
        filter.add_directive("kube_client::client::builder=off".parse()?)
    })
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let filter = log_filter(&cli.log)?;
    if cli.command.is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .init();
    } else {
        let path = std::env::temp_dir().join("kmm-tui.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening the log file {}", path.display()))?;
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
        Some(Command::Controller(args)) => runtime.block_on(controller(args)),
        Some(Command::Crds) => print_out(
            &kmm_tui::api::crds::to_yaml(&kmm_tui::api::crds::all()),
            "the CRDs",
        ),
        Some(Command::Install(args)) => runtime.block_on(install(args)),
        Some(Command::Uninstall(args)) => runtime.block_on(uninstall(args)),
        Some(Command::Screenshots(args)) => {
            let written = runtime.block_on(gallery::capture(GalleryOptions {
                out: args.out,
                scenario: args.scenario,
                settle: Duration::from_secs(args.settle),
                size: (args.columns, args.rows),
                theme: args.theme,
            }))?;
            for path in written {
                println!("kmm-tui: wrote {}", path.display());
            }
            Ok(())
        }
        None => runtime.block_on(console::run(cli.console.options())),
    }
}

/// Write `text` to stdout; a reader that stops early (`| head`) is not an error.
fn print_out(text: &str, what: &str) -> anyhow::Result<()> {
    match std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(error).context(format!("writing {what}")))
        }
        _ => Ok(()),
    }
}

/// Print the controller's objects, or apply them.
async fn install(args: InstallArgs) -> anyhow::Result<()> {
    let families = if args.families.is_empty() {
        Family::ALL.to_vec()
    } else {
        Family::ALL
            .into_iter()
            .filter(|f| args.families.contains(f))
            .collect()
    };
    let options = args.placement.options(
        args.image,
        families,
        Duration::from_secs(args.lease_duration),
        i32::from(args.replicas),
    );
    let objects = kmm_tui::install::manifests(&options);
    if !args.apply {
        return print_out(&kmm_tui::install::to_yaml(&objects), "the manifests");
    }
    let client = connect(args.target.kubeconfig.as_deref(), args.target.context).await?;
    for line in kmm_tui::install::apply(&client, &objects).await? {
        println!("{line}");
    }
    Ok(())
}

/// Print what install made, or delete it; refuse to remove CRDs holding objects unless forced.
async fn uninstall(args: UninstallArgs) -> anyhow::Result<()> {
    let options = args.placement.options(
        kmm_tui::install::default_image(),
        Family::ALL.to_vec(),
        Duration::from_secs(15),
        1,
    );
    let objects = kmm_tui::install::removals(&options, args.include_crds);
    let mut client = None;
    if args.apply || (args.include_crds && !args.force) {
        let connected = connect(args.target.kubeconfig.as_deref(), args.target.context).await;
        client = Some(if args.apply {
            connected?
        } else {
            connected.context(
                "--include-crds checks that the CRDs hold no objects first (--force skips the check)",
            )?
        });
    }
    if let (Some(client), true, false) = (&client, args.include_crds, args.force) {
        let held = kmm_tui::install::crd_contents(client).await?;
        if !held.is_empty() {
            let counts: Vec<String> = held
                .iter()
                .map(|(resource, count)| format!("{count} {resource}"))
                .collect();
            anyhow::bail!(
                "refusing to remove the CRDs: they still hold {}. Delete those objects first, or pass --force to \
                 delete them with their CRDs; nothing was removed",
                counts.join(", ")
            );
        }
    }
    match client {
        Some(client) if args.apply => {
            for line in kmm_tui::install::delete(&client, &objects).await? {
                println!("{line}");
            }
            if !args.include_crds {
                println!("CRDs kept: pass --include-crds to remove them too");
            }
            Ok(())
        }
        _ => print_out(
            &kmm_tui::install::to_yaml(&objects),
            "the objects to delete",
        ),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let kubeconfig_out = args
        .kubeconfig_out
        .clone()
        .unwrap_or_else(|| match &args.state_dir {
            Some(dir) => dir.join("kubeconfig"),
            None => std::env::temp_dir().join("kmm-tui.kubeconfig"),
        });
    let scenario = Scenario::load(&args.scenario)?;
    let nodes = scenario.node_names().len();
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        state_dir: args.state_dir.clone(),
        listen: Some(args.listen),
        kubeconfig_out: Some(kubeconfig_out.clone()),
        history: None,
        scenario: Some(scenario),
    })
    .await?;
    let address = cluster.address().map(|a| a.to_string()).unwrap_or_default();
    println!(
        "kmm-tui: embedded cluster serving https://{address} (scenario {}, {nodes} nodes)",
        args.scenario
    );
    println!(
        "kmm-tui: kubeconfig written to {}",
        kubeconfig_out.display()
    );
    println!(
        "kmm-tui: try   KUBECONFIG={} kubectl get namespaces",
        kubeconfig_out.display()
    );
    match &args.state_dir {
        Some(dir) => println!("kmm-tui: state kept in {}", dir.display()),
        None => println!("kmm-tui: state kept in memory (pass --state-dir DIR to keep it)"),
    }
    let shutdown = shutdown_on_signal(|| println!("kmm-tui: shutting down"))?;
    // The engine stops (and releases its Lease) before the cluster it talks to goes away.
    let engine = if args.with_engine {
        println!("kmm-tui: engine running in-process as {EMBEDDED_IDENTITY}");
        let config = EngineConfig {
            images: args.images.pod_images(),
            lease: LeaseConfig::new(
                DEFAULT_LEASE_NAMESPACE,
                DEFAULT_LEASE_NAME,
                EMBEDDED_IDENTITY,
                EMBEDDED_LEASE_DURATION,
            ),
            settings: args.engine.settings(),
        };
        kmm_tui::engine::run(cluster.client(), config, shutdown).await
    } else {
        shutdown.cancelled().await;
        Ok(())
    };
    cluster.shutdown().await;
    engine
}

/// Run the engine against the cluster the arguments point at, until a signal stops it.
async fn controller(args: ControllerArgs) -> anyhow::Result<()> {
    let identity = args.identity.unwrap_or_else(default_identity);
    let lease = LeaseConfig::new(
        args.lease_namespace,
        args.lease_name,
        identity,
        Duration::from_secs(args.lease_duration),
    );
    let settings = args.engine.settings();
    if args.print_rbac {
        let families: Vec<Family> = settings.families.iter().copied().collect();
        print!("{}", EngineRbac::for_families(&lease, &families).to_yaml());
        return Ok(());
    }
    let client = connect(args.kubeconfig.as_deref(), args.context).await?;
    let shutdown = shutdown_on_signal(|| tracing::info!("signal received; shutting down"))?;
    tracing::info!(
        identity = %lease.identity,
        lease = %format!("{}/{}", lease.namespace, lease.name),
        "engine started; electing the acting engine"
    );
    let config = EngineConfig {
        images: args.images.pod_images(),
        lease,
        settings,
    };
    let health = Arc::new(Health::default());
    if let Some(address) = args.health_listen {
        let listener = health::bind(address)
            .await
            .with_context(|| format!("serving the health endpoint on {address}"))?;
        tokio::spawn(health::serve(listener, health.clone(), shutdown.clone()));
        tokio::spawn(health::check_api(
            client.clone(),
            health.clone(),
            shutdown.clone(),
        ));
    }
    health::track(&health, kmm_tui::engine::run(client, config, shutdown)).await?;
    tracing::info!("engine stopped");
    Ok(())
}

/// A client for the cluster of `kubeconfig` (or the inferred one), checked to answer: a wrong address or bad
/// credentials are better reported at once than retried forever.
async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<String>,
) -> anyhow::Result<kube::Client> {
    let options = kube::config::KubeConfigOptions {
        context,
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))?
        }
        None if options.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("loading the kubeconfig")?,
        None => kube::Config::infer()
            .await
            .context("finding a cluster (no kubeconfig, no in-cluster service account)")?,
    };
    let url = config.cluster_url.clone();
    let client =
        kube::Client::try_from(config).with_context(|| format!("setting up a client for {url}"))?;
    match tokio::time::timeout(CONNECT_LIMIT, client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(client),
        Ok(Err(error)) => {
            Err(anyhow::Error::new(error).context(format!("cannot reach the cluster at {url}")))
        }
        Err(_) => {
            anyhow::bail!("cannot reach the cluster at {url}: no answer within {CONNECT_LIMIT:?}")
        }
    }
}

/// `<hostname>-<pid>`: unique among engines on one cluster, and says where the leader runs.
fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "kmm-tui".to_owned());
    format!("{host}-{}", std::process::id())
}

/// A token cancelled on Ctrl-C or SIGTERM, after `announce` has run. The handlers are installed at once, so a
/// signal arriving right after this returns is not lost.
fn shutdown_on_signal(announce: fn()) -> anyhow::Result<CancellationToken> {
    let token = CancellationToken::new();
    #[cfg(unix)]
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let cancel = token.clone();
    tokio::spawn(async move {
        #[cfg(unix)]
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => {
                if let Err(error) = interrupted {
                    tracing::warn!(%error, "Ctrl-C cannot be caught; stop with SIGTERM");
                    terminate.recv().await;
                }
            }
            _ = terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        announce();
        cancel.cancel();
    });
    Ok(token)
}
