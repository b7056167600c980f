//! The `kmm-tui` command line.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use kmm_api::lease::DEFAULT_LEASE_DURATION;
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::runtime::endpoint::{self, Reported};
use kmm_engine::runtime::health::{self, Health};
use kmm_engine::runtime::leader::Candidacy;
use kmm_engine::runtime::rbac::EngineRbac;
use kmm_engine::{EngineConfig, Family, LeaseConfig};
use kmm_tui::tui::console::{self};
#[cfg(feature = "screenshots")]
use kmm_tui::tui::gallery::{self, GalleryOptions};
use tokio_util::sync::CancellationToken;

mod cli;
mod manual;
mod places;

use cli::*;
use kmm_tui::agent::Program;
use kmm_tui::controller::ControllerArgs;

/// mimalloc, as `kmm_tui::allocator` explains: the library leaves the choice to each executable.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

/// Identity of the engine `serve --with-engine` runs: fixed, so a restarted server reclaims its own Lease at once.
const EMBEDDED_IDENTITY: &str = "embedded";

/// How long `controller` waits for the cluster to answer before giving up.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);

/// How long past its shutdown limit an engine is waited for before the process exits without it. The engine keeps
/// that limit itself; this only guards against a wait it fails to bound.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How long the runtime's remaining tasks get once a command is done: a blocking task stuck in a system call (a DNS
/// lookup of a cluster that is gone) must not keep the process alive.
const RUNTIME_DRAIN: Duration = Duration::from_secs(1);

/// Errors end the process with one line on stderr and exit code 1: they are meant for people, not backtraces.
fn main() -> ExitCode {
    kmm_tui::allocator::return_freed_memory_promptly();
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
        let path = places::log_file()?;
        let file = path
            .parent()
            .map_or(Ok(()), kmm_cluster::private_files::owned_dir)
            .and_then(|()| kmm_cluster::private_files::append(&path))
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
    let result = run_command(cli, &runtime);
    runtime.shutdown_timeout(RUNTIME_DRAIN);
    result
}

/// Run the command `cli` names (the console without one) on `runtime`.
fn run_command(cli: Cli, runtime: &tokio::runtime::Runtime) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
        Some(Command::Controller(args)) => runtime.block_on(controller(args)),
        Some(Command::Crds) => {
            print_out(&kmm_api::crds::to_yaml(&kmm_api::crds::all()), "the CRDs")
        }
        Some(Command::Install(args)) => runtime.block_on(install(args)),
        Some(Command::Uninstall(args)) => runtime.block_on(uninstall(args)),
        #[cfg(feature = "screenshots")]
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
        Some(Command::Completions(args)) => {
            print_bytes(&manual::completions(args.shell), "the completion script")
        }
        Some(Command::Man(args)) => match args.out_dir {
            Some(dir) => {
                for path in manual::pages_to(&dir)? {
                    println!("kmm-tui: wrote {}", path.display());
                }
                Ok(())
            }
            None => print_bytes(&manual::page()?, "the manual page"),
        },
        None => runtime.block_on(console::run(cli.console.options())),
    }
}

/// Write `text` to stdout; a reader that stops early (`| head`) is not an error.
fn print_out(text: &str, what: &str) -> anyhow::Result<()> {
    print_bytes(text.as_bytes(), what)
}

/// [`print_out`] for bytes.
fn print_bytes(bytes: &[u8], what: &str) -> anyhow::Result<()> {
    match std::io::Write::write_all(&mut std::io::stdout(), bytes) {
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
    let mut options = args.placement.options(
        args.image,
        families,
        Duration::from_secs(args.lease_duration),
        i32::from(args.replicas),
    );
    if !args.apply {
        options.service_monitor = args.service_monitor;
        let objects = kmm_tui::install::manifests(&options);
        return print_out(&kmm_tui::install::to_yaml(&objects), "the manifests");
    }
    let client = connect(
        args.target.kubeconfig.as_deref(),
        args.target.context,
        Program::Install,
    )
    .await?;
    options.service_monitor = kmm_tui::install::serves_service_monitors(&client).await;
    let objects = kmm_tui::install::manifests(&options);
    for line in kmm_tui::install::apply(&client, &objects).await? {
        println!("{line}");
    }
    Ok(())
}

/// Print what install made, or delete it; refuse to remove CRDs holding objects unless forced.
async fn uninstall(args: UninstallArgs) -> anyhow::Result<()> {
    let mut options = args.placement.options(
        kmm_tui::install::default_image(),
        Family::ALL.to_vec(),
        DEFAULT_LEASE_DURATION,
        1,
    );
    let mut client = None;
    if args.apply || (args.include_crds && !args.force) {
        let connected = connect(
            args.target.kubeconfig.as_deref(),
            args.target.context,
            Program::Install,
        )
        .await;
        client = Some(if args.apply {
            connected?
        } else {
            connected.context(
                "--include-crds checks that the CRDs hold no objects first (--force skips the check)",
            )?
        });
    }
    if let Some(client) = &client {
        options.service_monitor = kmm_tui::install::serves_service_monitors(client).await;
    }
    let objects = kmm_tui::install::removals(&options, args.include_crds);
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
    let kubeconfig_out = match (&args.kubeconfig_out, &args.state_dir) {
        (Some(path), _) => path.clone(),
        (None, Some(dir)) => dir.join("kubeconfig"),
        (None, None) => places::default_kubeconfig()?,
    };
    if args.scenario == kmm_cluster::fleet::SCENARIO {
        return serve_fleet(args, kubeconfig_out).await;
    }
    let scenario = Scenario::load(&args.scenario)?;
    let nodes = scenario.node_names().len();
    let names = kmm_cluster::kubeconfig::Names::new(&args.cluster_name());
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        state_dir: args.state_dir.clone(),
        listen: Some(args.listen),
        kubeconfig_out: Some(kubeconfig_out.clone()),
        history: None,
        event_ttl: args.event_ttl,
        scenario: Some(scenario),
        connection_limits: None,
        own_image: Some(kmm_tui::controller::own_image()),
        name: Some(names.cluster.clone()),
        rotate_tokens: args.rotate_tokens,
        kubernetes_minor: None,
        registry: None,
    })
    .await?;
    let address = cluster.address().map(|a| a.to_string()).unwrap_or_default();
    println!(
        "kmm-tui: embedded cluster {} serving https://{address} (scenario {}, {nodes} nodes)",
        names.cluster, args.scenario
    );
    println!(
        "kmm-tui: kubeconfig written to {}",
        kubeconfig_out.display()
    );
    println!(
        "kmm-tui: try   KUBECONFIG={} kubectl get namespaces",
        kubeconfig_out.display()
    );
    println!(
        "kmm-tui: read-only: KUBECONFIG={} kubectl --context {} get namespaces",
        kubeconfig_out.display(),
        names.viewer_context()
    );
    println!(
        "kmm-tui: with a client certificate: KUBECONFIG={} kubectl --context {} get namespaces",
        kubeconfig_out.display(),
        names.certificate_context()
    );
    if args.rotate_tokens {
        println!(
            "kmm-tui: new tokens: kubeconfigs and ServiceAccount tokens issued before no longer work"
        );
    }
    if let Some(warning) = cluster.address().and_then(kmm_cluster::exposure_warning) {
        eprintln!("kmm-tui: warning: {warning}");
    }
    match &args.state_dir {
        Some(dir) => println!("kmm-tui: state kept in {}", dir.display()),
        None => println!("kmm-tui: state kept in memory (pass --state-dir DIR to keep it)"),
    }
    let shutdown = shutdown_on_signal(|| println!("kmm-tui: shutting down"))?;
    // The engine stops (and releases its Lease) before the cluster it talks to goes away.
    let engine = if args.with_engine {
        println!("kmm-tui: engine running in-process as {EMBEDDED_IDENTITY}");
        let lease = LeaseConfig::with_defaults(EMBEDDED_IDENTITY);
        let limit = lease.shutdown_limit() + SHUTDOWN_GRACE;
        let config = EngineConfig {
            images: args.images.pod_images(),
            lease,
            settings: args.engine.settings(),
        };
        let candidacy = Candidacy::default();
        let reported = Reported {
            health: Arc::new(Health::default()),
            metrics: candidacy.metrics.clone(),
        };
        if let Some(address) = args.metrics_listen {
            endpoint::start(
                [address],
                cluster.client(),
                reported.clone(),
                shutdown.clone(),
            )
            .await?;
            println!("kmm-tui: engine metrics on http://{address}/metrics");
        }
        let engine = kmm_engine::run_steered(cluster.client(), config, candidacy, shutdown.clone());
        health::track(&reported.health, stopped_within(engine, &shutdown, limit)).await
    } else {
        shutdown.cancelled().await;
        Ok(())
    };
    cluster.shutdown().await;
    engine
}

/// Serve a hub and its spokes until a signal: every cluster over HTTPS on a port of its own, one kubeconfig with a
/// context per cluster. With `--with-engine`, an engine runs on every cluster of the fleet.
async fn serve_fleet(args: ServeArgs, kubeconfig_out: std::path::PathBuf) -> anyhow::Result<()> {
    if args.name.is_some() {
        anyhow::bail!(
            "--name names one cluster; a fleet's clusters are named {} and spoke-1, spoke-2, …",
            kmm_cluster::fleet::HUB
        );
    }
    if args.metrics_listen.is_some() {
        anyhow::bail!(
            "--metrics-listen serves one engine's metrics; a fleet runs one engine per cluster"
        );
    }
    let mut options =
        kmm_cluster::fleet::FleetOptions::new(usize::from(args.spokes), args.spoke_nodes);
    options.listen = Some(args.listen.ip());
    options.kubeconfig_out = Some(kubeconfig_out.clone());
    options.state_dir = args.state_dir.clone();
    options.own_image = Some(kmm_tui::controller::own_image());
    let spokes = options.spokes.clone();
    let fleet = kmm_cluster::fleet::EmbeddedFleet::start(options).await?;
    for (name, address) in fleet.addresses() {
        let kernels = spokes
            .iter()
            .find(|spoke| spoke.name == name)
            .map(|spoke| format!(" (kernels {})", spoke.kernels.join(", ")))
            .unwrap_or_default();
        println!("kmm-tui: {name} serving https://{address}{kernels}");
    }
    println!(
        "kmm-tui: kubeconfig with a context per cluster written to {}",
        kubeconfig_out.display()
    );
    println!(
        "kmm-tui: try   KUBECONFIG={} kubectl --context {} get managedclusters",
        kubeconfig_out.display(),
        kmm_cluster::fleet::HUB
    );
    if let Some(warning) = fleet
        .addresses()
        .first()
        .and_then(|(_, address)| kmm_cluster::exposure_warning(*address))
    {
        eprintln!("kmm-tui: warning: {warning}");
    }
    match &args.state_dir {
        Some(dir) => println!(
            "kmm-tui: state kept in {}, one directory per cluster",
            dir.display()
        ),
        None => println!("kmm-tui: state kept in memory (pass --state-dir DIR to keep it)"),
    }
    let shutdown = shutdown_on_signal(|| println!("kmm-tui: shutting down"))?;
    let mut engines = Vec::new();
    if args.with_engine {
        println!("kmm-tui: an engine runs in-process on every cluster as {EMBEDDED_IDENTITY}");
        let clients = std::iter::once(fleet.hub().client()).chain(
            fleet
                .spoke_names()
                .into_iter()
                .filter_map(|name| fleet.spoke(name))
                .map(EmbeddedCluster::client),
        );
        let images = args.images.pod_images();
        for client in clients {
            let config = EngineConfig {
                images: images.clone(),
                lease: LeaseConfig::with_defaults(EMBEDDED_IDENTITY),
                settings: args.engine.settings(),
            };
            let limit = config.lease.shutdown_limit() + SHUTDOWN_GRACE;
            let stop = shutdown.clone();
            engines.push(tokio::spawn(async move {
                let engine =
                    kmm_engine::run_steered(client, config, Candidacy::default(), stop.clone());
                stopped_within(engine, &stop, limit).await
            }));
        }
    }
    shutdown.cancelled().await;
    let mut result = Ok(());
    for engine in engines {
        match engine.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => result = Err(error),
            Err(error) => result = Err(anyhow::Error::new(error).context("an engine task failed")),
        }
    }
    fleet.shutdown().await;
    result
}

/// Run the engine against the cluster the arguments point at, until a signal stops it.
async fn controller(args: ControllerArgs) -> anyhow::Result<()> {
    let lease = args.lease(default_identity);
    let settings = args.engine.settings();
    if args.print_rbac {
        let families: Vec<Family> = settings.families.iter().copied().collect();
        print!("{}", EngineRbac::for_families(&lease, &families).to_yaml());
        return Ok(());
    }
    let client = connect(
        args.kubeconfig.as_deref(),
        args.context,
        Program::Controller,
    )
    .await?;
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
    let limit = config.lease.shutdown_limit() + SHUTDOWN_GRACE;
    let candidacy = Candidacy::default();
    let reported = Reported {
        health: Arc::new(Health::default()),
        metrics: candidacy.metrics.clone(),
    };
    endpoint::start(
        args.health_listen.into_iter().chain(args.metrics_listen),
        client.clone(),
        reported.clone(),
        shutdown.clone(),
    )
    .await?;
    let health = reported.health;
    let engine = kmm_engine::run_steered(client, config, candidacy, shutdown.clone());
    health::track(&health, stopped_within(engine, &shutdown, limit)).await?;
    tracing::info!("engine stopped");
    Ok(())
}

/// Run `engine` until it returns, or until `limit` has passed since `shutdown` was cancelled: then leave it
/// unfinished and fail, so the process exits anyway.
async fn stopped_within(
    engine: impl Future<Output = anyhow::Result<()>>,
    shutdown: &CancellationToken,
    limit: Duration,
) -> anyhow::Result<()> {
    let overdue = async {
        shutdown.cancelled().await;
        tokio::time::sleep(limit).await;
    };
    tokio::select! {
        result = engine => result,
        () = overdue => anyhow::bail!("the engine did not stop within {limit:?} of the signal; exiting without it"),
    }
}

/// A client for the cluster of `kubeconfig` (or the inferred one), checked to answer: a wrong address or bad
/// credentials are better reported at once than retried forever.
async fn connect(
    kubeconfig: Option<&Path>,
    context: Option<String>,
    program: Program,
) -> anyhow::Result<kube::Client> {
    let options = kube::config::KubeConfigOptions {
        context,
        ..Default::default()
    };
    let mut config = match kubeconfig {
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
    program.name_in(&mut config);
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

/// A token cancelled on the first Ctrl-C or SIGTERM, after `announce` has run. A second signal ends the process at
/// once, with the status a shell reports for a process the signal killed (130 for Ctrl-C, 143 for SIGTERM): whoever
/// signals again does not want to wait for the shutdown. The handlers are installed at once, so a signal arriving
/// right after this returns is not lost.
fn shutdown_on_signal(announce: fn()) -> anyhow::Result<CancellationToken> {
    let token = CancellationToken::new();
    let mut signals = Signals::install()?;
    let cancel = token.clone();
    tokio::spawn(async move {
        signals.next().await;
        announce();
        cancel.cancel();
        let status = signals.next().await;
        tracing::warn!("second signal received; exiting at once without waiting for the shutdown");
        std::process::exit(status);
    });
    Ok(token)
}

/// The signals that stop the process: Ctrl-C (SIGINT) and, on unix, SIGTERM.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    #[cfg(unix)]
    fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            interrupt: signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?,
            terminate: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
        })
    }

    #[cfg(not(unix))]
    fn install() -> anyhow::Result<Self> {
        Ok(Self {})
    }

    /// Wait for the next signal; the exit status of a process it kills.
    async fn next(&mut self) -> i32 {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => 130,
                _ = self.terminate.recv() => 143,
            }
        }
        #[cfg(not(unix))]
        {
            if let Err(error) = tokio::signal::ctrl_c().await {
                tracing::warn!(%error, "Ctrl-C cannot be caught");
                std::future::pending::<()>().await;
            }
            130
        }
    }
}
