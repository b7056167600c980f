//! The `kmm-tui` command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, FromArgMatches, Parser, Subcommand};
use kmm_tui::cluster::sim::scenario::Scenario;
use kmm_tui::cluster::{EmbeddedCluster, EmbeddedOptions};

/// A console for the software that lives on Kubernetes nodes: kernel modules, containerd shims and pre-pulled
/// images. Without a subcommand it runs the embedded cluster (see `serve`).
#[derive(Parser)]
#[command(name = "kmm-tui", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Log filter (tracing's env-filter syntax, e.g. `info`, `kmm_tui=debug`).
    #[arg(long, global = true, env = "KMM_TUI_LOG", default_value = "info")]
    log: String,
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded cluster headless until interrupted (Ctrl-C or SIGTERM), serving the Kubernetes API over
    /// HTTPS on loopback. Point kubectl at it with the kubeconfig it writes.
    Serve(ServeArgs),
    /// Print the CustomResourceDefinitions of every kind kmm-tui manages as multi-document YAML, ready for
    /// `kmm-tui crds | kubectl apply -f -`.
    Crds,
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
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&cli.log)
                .context("--log is not a valid filter")?,
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Some(Command::Serve(args)) => runtime.block_on(serve(args)),
        Some(Command::Crds) => {
            print!(
                "{}",
                kmm_tui::api::crds::to_yaml(&kmm_tui::api::crds::all())
            );
            Ok(())
        }
        None => {
            // No subcommand: serve with every option at its default.
            let defaults =
                ServeArgs::augment_args(clap::Command::new("serve")).get_matches_from(["serve"]);
            runtime.block_on(serve(ServeArgs::from_arg_matches(&defaults)?))
        }
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
    wait_for_signal().await?;
    println!("kmm-tui: shutting down");
    cluster.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}
