//! The console's event loop: connect (to a kubeconfig's cluster or the embedded one), start the watches and,
//! where asked, the engine; then receive [`Action`]s, update the [`App`] and draw only when something changed.
//! The terminal is restored on every exit path: return, error, panic (ratatui's hook) and SIGTERM/SIGHUP. When the
//! server refuses the credentials, the kubeconfig is read again and the watches restart on a new client
//! ([`Request::Reconnect`]).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste, EventStream};
use futures::StreamExt;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::action::{Action, EngineEvent};
use super::app::{App, EngineMode, EngineMove, Request, Session};
use super::fleet_feed::{self, Member, Source};
use super::keymap::Keymap;
use super::reconnect::Backoff;
use super::theme::Theme;
use super::view::engine::CONSOLE_PREFIX;
use super::worded::{self, Why};
use super::{access, feed, live, logs, ui, writes};
use crate::agent::Program;
use kmm_cluster::fleet::{self, EmbeddedFleet, FleetOptions};
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::runtime::endpoint::{self, Reported};
use kmm_engine::runtime::health::{self, Health};
use kmm_engine::runtime::leader::handoff::request_handoff;
use kmm_engine::runtime::leader::{Candidacy, Participate, Participation};
use kmm_engine::{EngineConfig, LeaseConfig, PodImages};

/// The context name the embedded cluster goes by.
pub const EMBEDDED_CONTEXT: &str = "embedded";

/// Which cluster to open.
#[derive(Clone, Debug)]
pub enum ClusterChoice {
    /// The embedded cluster on this scenario, optionally writing a kubeconfig for kubectl.
    Embedded {
        /// Built-in scenario name or scenario file.
        scenario: String,
        /// Where to write a kubeconfig, serving HTTPS on a free loopback port.
        kubeconfig_out: Option<PathBuf>,
    },
    /// A kubeconfig's cluster.
    Kubeconfig {
        /// The kubeconfig file; `None` means `$KUBECONFIG` or `~/.kube/config`.
        path: Option<PathBuf>,
        /// The context; `None` means the current one.
        context: Option<String>,
    },
}

/// Everything the console's command line decides.
#[derive(Clone, Debug)]
pub struct ConsoleOptions {
    /// Which cluster.
    pub cluster: ClusterChoice,
    /// Limit the namespaced lists to one namespace.
    pub namespace: Option<String>,
    /// Whether to run the engine here; `None` means foreground on the embedded cluster, off elsewhere.
    pub engine: Option<EngineMode>,
    /// Refuse every write.
    pub readonly: bool,
    /// Where the foreground engine serves its metrics and probes, if anywhere.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Theme name or file.
    pub theme: Option<String>,
    /// Keymap file.
    pub keymap: Option<PathBuf>,
    /// Images of the pods the engine creates.
    pub images: PodImages,
    /// Which families the foreground engine runs, and their options.
    pub settings: kmm_engine::Settings,
    /// Open on the fleet view rather than one cluster's panes.
    pub fleet: bool,
    /// The contexts the fleet follows; every context of the kubeconfig when None.
    pub contexts: Option<Vec<String>>,
}

/// A connected cluster and what runs against it.
struct Connection {
    client: Client,
    /// `host:port` of the API server, named in failures; None in-process.
    server: Option<String>,
    session: Session,
    embedded: Option<EmbeddedCluster>,
    /// The embedded fleet, when the console runs one.
    fleet: Option<EmbeddedFleet>,
    /// In-process clients of the embedded fleet's clusters, by context.
    members: Vec<(String, Client)>,
    kubeconfig: Option<Kubeconfig>,
}

/// Run the console until the user quits.
pub async fn run(options: ConsoleOptions) -> anyhow::Result<()> {
    let (theme, mut warnings) = match Theme::from_env(options.theme.as_deref()) {
        Ok(loaded) => loaded,
        Err(error) => {
            let (theme, mut warnings) = Theme::from_env(None)?;
            warnings.insert(0, format!("{error}; using the default theme"));
            (theme, warnings)
        }
    };
    let (keymap, keymap_warnings) = load_keymap(options.keymap.as_deref());
    warnings.extend(keymap_warnings);
    let connection = connect(&options).await?;
    let (sender, receiver) = mpsc::unbounded_channel();
    let engine_cancel = CancellationToken::new();
    let candidacy = Candidacy::default();
    let health = Arc::new(Health::default());
    if connection.session.engine == EngineMode::Foreground {
        let reported = Reported {
            health: health.clone(),
            metrics: candidacy.metrics.clone(),
        };
        endpoint::start(
            options.metrics_listen,
            connection.client.clone(),
            reported,
            engine_cancel.clone(),
        )
        .await?;
    }
    let foreground = connection.session.engine == EngineMode::Foreground;
    let spoke_engines = if foreground && connection.fleet.is_some() {
        start_spoke_engines(&connection, &options, &engine_cancel)
    } else {
        Vec::new()
    };
    let engine = foreground.then(|| {
        let config = EngineConfig {
            images: options.images.clone(),
            lease: LeaseConfig::with_defaults(
                connection
                    .session
                    .engine_identity
                    .clone()
                    .unwrap_or_else(console_identity),
            ),
            settings: options.settings.clone(),
        };
        let client = connection.client.clone();
        let cancel = engine_cancel.clone();
        let candidacy = candidacy.clone();
        let health = health.clone();
        tokio::spawn(async move {
            let engine = kmm_engine::run_steered(client, config, candidacy, cancel);
            if let Err(error) = health::track(&health, engine).await {
                tracing::error!(%error, "engine stopped");
            }
        })
    });
    let mut app = App::new(
        connection.session.clone(),
        theme,
        keymap,
        options.namespace.clone(),
    );
    app.warn(&warnings);
    let result = event_loop(
        &mut app,
        Opened {
            client: connection.client.clone(),
            server: connection.server.clone(),
            kubeconfig: connection.kubeconfig.clone(),
            members: connection.members.clone(),
        },
        &options,
        &candidacy.participate,
        sender,
        receiver,
    )
    .await;
    engine_cancel.cancel();
    if let Some(engine) = engine {
        let _ = engine.await;
    }
    for spoke in spoke_engines {
        let _ = spoke.await;
    }
    if let Some(cluster) = connection.embedded {
        cluster.shutdown().await;
    }
    if let Some(fleet) = connection.fleet {
        fleet.shutdown().await;
    }
    result
}

/// The keymap of `--keymap`, else of `$XDG_CONFIG_HOME/kmm-tui/keymap.toml` (or `~/.config/...`) when it
/// exists, else the defaults. A file that cannot be read is a warning, not a reason to refuse to start.
fn load_keymap(path: Option<&std::path::Path>) -> (Keymap, Vec<String>) {
    let path = path.map(std::path::Path::to_path_buf).or_else(|| {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))
            .map(|dir| dir.join("kmm-tui").join("keymap.toml"))
            .filter(|file| file.exists())
    });
    let Some(path) = path else {
        return (Keymap::default(), Vec::new());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let (keymap, warnings) = Keymap::from_toml(&text);
            let warnings = warnings
                .into_iter()
                .map(|warning| format!("keymap {}: {warning}", path.display()))
                .collect();
            (keymap, warnings)
        }
        Err(error) => (
            Keymap::default(),
            vec![format!(
                "keymap {}: {error}; using the default keys",
                path.display()
            )],
        ),
    }
}

/// Open the cluster the options name. With no kubeconfig to be found, the embedded cluster opens instead.
async fn connect(options: &ConsoleOptions) -> anyhow::Result<Connection> {
    let choice = match &options.cluster {
        ClusterChoice::Kubeconfig {
            path: None,
            context: None,
        } if !kubeconfig_available() => ClusterChoice::Embedded {
            scenario: "demo".to_owned(),
            kubeconfig_out: None,
        },
        other => other.clone(),
    };
    match choice {
        ClusterChoice::Embedded {
            scenario,
            kubeconfig_out,
        } if scenario == fleet::SCENARIO => start_fleet_cluster(options, kubeconfig_out).await,
        ClusterChoice::Embedded {
            scenario,
            kubeconfig_out,
        } => {
            let scenario = Scenario::load(&scenario)?;
            let cluster = EmbeddedCluster::start(EmbeddedOptions {
                state_dir: None,
                listen: kubeconfig_out
                    .as_ref()
                    .map(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 0))),
                kubeconfig_out,
                history: None,
                event_ttl: None,
                scenario: Some(scenario),
                connection_limits: None,
                own_image: Some(crate::controller::own_image()),
                name: None,
                rotate_tokens: false,
                kubernetes_minor: None,
                registry: None,
            })
            .await?;
            Ok(Connection {
                client: cluster.client(),
                server: None,
                session: Session {
                    context: EMBEDDED_CONTEXT.to_owned(),
                    contexts: vec![EMBEDDED_CONTEXT.to_owned()],
                    embedded: true,
                    engine: options.engine.clone().unwrap_or(EngineMode::Foreground),
                    readonly: options.readonly,
                    engine_identity: Some(console_identity()),
                },
                embedded: Some(cluster),
                fleet: None,
                members: Vec::new(),
                kubeconfig: None,
            })
        }
        ClusterChoice::Kubeconfig { path, context } => {
            let kubeconfig = read_kubeconfig(path.as_deref())?;
            let fleet_first = options
                .fleet
                .then(|| fleet_contexts(&kubeconfig, options.contexts.as_deref()))
                .transpose()?
                .and_then(|contexts| contexts.into_iter().next());
            let context = context
                .or_else(|| kubeconfig.current_context.clone())
                .or(fleet_first)
                .context("the kubeconfig names no current context; pass --context")?;
            let (client, server) = client_for(&kubeconfig, &context).await?;
            Ok(Connection {
                client,
                server,
                session: Session {
                    contexts: kubeconfig.contexts.iter().map(|c| c.name.clone()).collect(),
                    context,
                    embedded: false,
                    engine: options.engine.clone().unwrap_or(EngineMode::Off),
                    readonly: options.readonly,
                    engine_identity: Some(console_identity()),
                },
                embedded: None,
                fleet: None,
                members: Vec::new(),
                kubeconfig: Some(kubeconfig),
            })
        }
    }
}

/// The engines of an embedded fleet's spokes, beside the console's own on the hub: each spoke's engine loads what
/// the hub delivers, as `serve --scenario fleet --with-engine` runs one on every cluster. They stop with `cancel`;
/// the `:engine` view steers the open cluster's engine only.
fn start_spoke_engines(
    connection: &Connection,
    options: &ConsoleOptions,
    cancel: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    connection
        .members
        .iter()
        .filter(|(context, _)| *context != connection.session.context)
        .map(|(context, client)| {
            let config = EngineConfig {
                images: options.images.clone(),
                lease: LeaseConfig::with_defaults(console_identity()),
                settings: options.settings.clone(),
            };
            let (context, client, cancel) = (context.clone(), client.clone(), cancel.clone());
            tokio::spawn(async move {
                let engine = kmm_engine::run_steered(client, config, Candidacy::default(), cancel);
                if let Err(error) = engine.await {
                    tracing::error!(%error, %context, "a spoke's engine stopped");
                }
            })
        })
        .collect()
}

/// Start an embedded fleet (a hub and three spokes) and open its hub; the fleet view follows every cluster through
/// in-process clients. With `kubeconfig_out`, every cluster is served on a free loopback port too, and the fleet's
/// kubeconfig is written there.
async fn start_fleet_cluster(
    options: &ConsoleOptions,
    kubeconfig_out: Option<PathBuf>,
) -> anyhow::Result<Connection> {
    let mut fleet_options = FleetOptions::new(3, 2);
    fleet_options.listen = kubeconfig_out
        .as_ref()
        .map(|_| std::net::IpAddr::from([127, 0, 0, 1]));
    fleet_options.kubeconfig_out = kubeconfig_out;
    fleet_options.own_image = Some(crate::controller::own_image());
    let running = EmbeddedFleet::start(fleet_options).await?;
    running.apply_sample().await?;
    let mut members = vec![(fleet::HUB.to_owned(), running.hub().client())];
    for name in running.spoke_names() {
        if let Some(spoke) = running.spoke(name) {
            members.push((name.to_owned(), spoke.client()));
        }
    }
    Ok(Connection {
        client: running.hub().client(),
        server: None,
        session: Session {
            context: fleet::HUB.to_owned(),
            contexts: members.iter().map(|(name, _)| name.clone()).collect(),
            embedded: true,
            engine: options.engine.clone().unwrap_or(EngineMode::Foreground),
            readonly: options.readonly,
            engine_identity: Some(console_identity()),
        },
        embedded: None,
        fleet: Some(running),
        members,
        kubeconfig: None,
    })
}

/// The contexts the fleet follows: those chosen (each must be in the kubeconfig), else every one.
fn fleet_contexts(
    kubeconfig: &Kubeconfig,
    chosen: Option<&[String]>,
) -> anyhow::Result<Vec<String>> {
    let all: Vec<String> = kubeconfig.contexts.iter().map(|c| c.name.clone()).collect();
    match chosen {
        None => Ok(all),
        Some(chosen) => {
            if let Some(missing) = chosen.iter().find(|name| !all.contains(name)) {
                anyhow::bail!(
                    "the kubeconfig has no context named {missing} (it has: {})",
                    all.join(", ")
                );
            }
            Ok(chosen.to_vec())
        }
    }
}

/// The clusters the fleet follows: the chosen contexts of the kubeconfig, else the embedded fleet's clusters
/// (`members`), else the embedded cluster alone.
fn fleet_members(
    kubeconfig: Option<&Kubeconfig>,
    options: &ConsoleOptions,
    client: &Client,
    context: &str,
    members: &[(String, Client)],
) -> anyhow::Result<Vec<Member>> {
    let path = match &options.cluster {
        ClusterChoice::Kubeconfig { path, .. } => path.clone(),
        ClusterChoice::Embedded { .. } => None,
    };
    match kubeconfig {
        Some(kubeconfig) => Ok(fleet_contexts(kubeconfig, options.contexts.as_deref())?
            .into_iter()
            .map(|context| Member {
                context,
                source: Source::Kubeconfig(path.clone()),
            })
            .collect()),
        None if !members.is_empty() => Ok(members
            .iter()
            .map(|(context, client)| Member {
                context: context.clone(),
                source: Source::Client(client.clone()),
            })
            .collect()),
        None => Ok(vec![Member {
            context: context.to_owned(),
            source: Source::Client(client.clone()),
        }]),
    }
}

/// Start following the fleet's clusters and show them; the tasks stop with `cancel`.
fn start_fleet(
    app: &mut App,
    members: Vec<Member>,
    sender: &UnboundedSender<Action>,
    cancel: &CancellationToken,
) {
    let contexts: Vec<String> = members.iter().map(|m| m.context.clone()).collect();
    app.fleet_contexts(&contexts);
    fleet_feed::start(members, sender, cancel);
}

/// The identity the console's engine holds the engine Lease under.
fn console_identity() -> String {
    format!("{CONSOLE_PREFIX}{}", std::process::id())
}

/// Carry out a confirmed move of the engine. Hand-off: the engine stands aside (it finishes its work and releases
/// the Lease), and one lease duration later the UI checks that someone took it. Take-over: the engine competes
/// again and, when someone else holds the Lease, it is asked to hand it over.
fn move_engine(
    movement: EngineMove,
    participate: &Participate,
    client: &Client,
    app: &App,
    sender: &UnboundedSender<Action>,
) {
    match movement {
        EngineMove::HandOff => {
            participate.set(Participation::StandAside);
            let sender = sender.clone();
            tokio::spawn(async move {
                tokio::time::sleep(kmm_api::lease::DEFAULT_LEASE_DURATION).await;
                let _ = sender.send(Action::Engine(EngineEvent::HandoffDeadline));
            });
        }
        EngineMove::TakeOver => {
            participate.set(Participation::Compete);
            let own = app.session.engine_identity.clone();
            let held_by_other = app
                .data
                .engine_holder(app.now)
                .is_some_and(|holder| Some(holder) != own.as_deref());
            if let (true, Some(own)) = (held_by_other, own) {
                let client = client.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    let asked = request_handoff(
                        client,
                        kmm_api::lease::DEFAULT_LEASE_NAMESPACE,
                        kmm_api::lease::DEFAULT_LEASE_NAME,
                        Some(&own),
                        writes::FIELD_MANAGER,
                    )
                    .await;
                    if let Err(error) = asked {
                        let message = Why::of(&error, None).detail;
                        let _ = sender.send(Action::Engine(EngineEvent::RequestFailed(message)));
                    }
                });
            }
        }
    }
}

/// Whether a kubeconfig is there to use: `$KUBECONFIG` or `~/.kube/config`.
fn kubeconfig_available() -> bool {
    if std::env::var_os("KUBECONFIG").is_some_and(|value| !value.is_empty()) {
        return true;
    }
    std::env::var_os("HOME")
        .map(|home| PathBuf::from(home).join(".kube").join("config"))
        .is_some_and(|path| path.exists())
}

/// A client for one context of a kubeconfig, and the `host:port` it talks to. It is not checked to answer: an
/// unreachable cluster shows in the header while the watches retry, and the console stays usable.
async fn client_for(
    kubeconfig: &Kubeconfig,
    context: &str,
) -> anyhow::Result<(Client, Option<String>)> {
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &options)
        .await
        .with_context(|| format!("loading context {context} of the kubeconfig"))?;
    Program::Console.name_in(&mut config);
    let url = config.cluster_url.clone();
    let server = worded::server_of(&config);
    let client =
        Client::try_from(config).with_context(|| format!("setting up a client for {url}"))?;
    Ok((client, server))
}

/// The kubeconfig the console opened, read again from the same place: `path`, else `$KUBECONFIG` or
/// `~/.kube/config`.
fn read_kubeconfig(path: Option<&std::path::Path>) -> anyhow::Result<Kubeconfig> {
    match path {
        Some(path) => Kubeconfig::read_from(path)
            .with_context(|| format!("reading kubeconfig {}", path.display())),
        None => Kubeconfig::read().context("reading the kubeconfig"),
    }
}

/// Start the watches of a connection, and its access review unless one is cached for the context.
fn start_session(
    client: &Client,
    server: Option<&str>,
    context: &str,
    namespace: Option<&str>,
    review: bool,
    sender: &UnboundedSender<Action>,
) -> CancellationToken {
    let cancel = CancellationToken::new();
    feed::start(client, server, namespace, sender, &cancel);
    if !review {
        return cancel;
    }
    let client = client.clone();
    let context = context.to_owned();
    let namespace = namespace.map(str::to_owned);
    let reports = sender.clone();
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            report = access::review_in(&client, &context, namespace.as_deref()) => {
                let _ = reports.send(Action::Access(report));
            }
        }
    });
    cancel
}

/// The cluster the console opened: its client, the server the client talks to, and the kubeconfig it came from.
struct Opened {
    client: Client,
    server: Option<String>,
    kubeconfig: Option<Kubeconfig>,
    members: Vec<(String, Client)>,
}

/// Draw the console, then apply every action and carry out the requests it queues, until the user quits or a
/// signal arrives.
async fn event_loop(
    app: &mut App,
    opened: Opened,
    options: &ConsoleOptions,
    participate: &Participate,
    sender: UnboundedSender<Action>,
    mut receiver: UnboundedReceiver<Action>,
) -> anyhow::Result<()> {
    let mut terminal = ratatui::try_init().context("opening the terminal")?;
    let _restore = RestoreOnDrop;
    crossterm::execute!(std::io::stdout(), EnableBracketedPaste).ok();
    let size = terminal.size()?;
    app.size = (size.width, size.height);
    let mut connections = Connections {
        client: opened.client,
        server: opened.server,
        kubeconfig: opened.kubeconfig,
        members: opened.members,
        options,
        participate,
        sender,
        session: None,
        fleet: CancellationToken::new(),
        fleet_started: false,
        followed: None,
        reconnects: Backoff::default(),
    };
    let _stop_fleet = connections.fleet.clone().drop_guard();
    connections.start(app)?;
    let input = connections.sender.clone();
    tokio::spawn(async move {
        let mut events = EventStream::new();
        while let Some(Ok(event)) = events.next().await {
            if input.send(Action::Terminal(event)).is_err() {
                return;
            }
        }
    });
    let mut signals = Signals::new()?;
    terminal.draw(|frame| ui::draw(frame, app))?;
    loop {
        let action = tokio::select! {
            action = receiver.recv() => action,
            () = signals.recv() => None,
        };
        let Some(action) = action else {
            break;
        };
        let mut changed = app.update(action);
        while let Ok(action) = receiver.try_recv() {
            changed |= app.update(action);
        }
        for request in std::mem::take(&mut app.requests) {
            changed |= connections.carry_out(app, request).await;
        }
        if app.quit {
            break;
        }
        if changed {
            terminal.draw(|frame| ui::draw(frame, app))?;
        }
    }
    if let Some(session) = connections.session {
        session.cancel();
    }
    Ok(())
}

/// What the event loop keeps to carry out the UI task's requests: the client of the open cluster and its watches,
/// and the fleet's watches once they started.
struct Connections<'a> {
    client: Client,
    /// `host:port` of the open cluster's API server, named in failures; None in-process.
    server: Option<String>,
    kubeconfig: Option<Kubeconfig>,
    /// In-process clients of an embedded fleet's clusters, by context; empty otherwise.
    members: Vec<(String, Client)>,
    options: &'a ConsoleOptions,
    participate: &'a Participate,
    sender: UnboundedSender<Action>,
    /// The watches (and access review) of the open cluster; none while a console opened on the fleet has not
    /// entered a cluster yet.
    session: Option<CancellationToken>,
    /// Stops the fleet's tasks when the loop ends.
    fleet: CancellationToken,
    fleet_started: bool,
    /// Stops following the YAML view's object; a child of `session`, so leaving the cluster stops it too.
    followed: Option<CancellationToken>,
    /// When the kubeconfig may be read again after the server refused the credentials.
    reconnects: Backoff,
}

impl Connections<'_> {
    /// Start watching: the open cluster, or (a console opened on the fleet) every cluster of the fleet at little
    /// cost and none in full until one is entered.
    fn start(&mut self, app: &mut App) -> anyhow::Result<()> {
        if self.options.fleet {
            let members = fleet_members(
                self.kubeconfig.as_ref(),
                self.options,
                &self.client,
                &app.session.context,
                &self.members,
            )?;
            let contexts: Vec<String> = members.iter().map(|m| m.context.clone()).collect();
            app.start_in_fleet(&contexts);
            fleet_feed::start(members, &self.sender, &self.fleet);
            self.fleet_started = true;
        } else {
            self.session = Some(start_session(
                &self.client,
                self.server.as_deref(),
                &app.session.context,
                self.options.namespace.as_deref(),
                true,
                &self.sender,
            ));
        }
        Ok(())
    }

    /// Carry out one request of the UI task; returns whether the screen must be redrawn now (the other requests
    /// answer later with an action).
    async fn carry_out(&mut self, app: &mut App, request: Request) -> bool {
        match request {
            Request::Write(request) => {
                let client = match request.context() {
                    Some(context) if context != app.session.context => {
                        match self.client_of(context).await {
                            Ok(client) => client,
                            Err(error) => {
                                app.fail(format!("{error:#}"));
                                return true;
                            }
                        }
                    }
                    _ => self.client.clone(),
                };
                let sender = self.sender.clone();
                tokio::spawn(async move {
                    let outcome = writes::perform(&client, request).await;
                    let _ = sender.send(Action::Written(outcome));
                });
                false
            }
            Request::PodLog(pod) => {
                let client = self.client.clone();
                let sender = self.sender.clone();
                tokio::spawn(async move {
                    let log = logs::pod_log(&client, &pod).await;
                    let _ = sender.send(Action::PodLog(pod, log));
                });
                false
            }
            Request::Follow(target) => {
                if let Some(followed) = self.followed.take() {
                    followed.cancel();
                }
                if let Some(target) = target {
                    let stop = self
                        .session
                        .as_ref()
                        .map_or_else(CancellationToken::new, CancellationToken::child_token);
                    live::follow(&self.client, target, &self.sender, stop.clone());
                    self.followed = Some(stop);
                }
                false
            }
            Request::Edit(target) => {
                let client = self.client.clone();
                let sender = self.sender.clone();
                tokio::spawn(async move {
                    let object = live::read(&client, &target).await;
                    let _ = sender.send(Action::Editable(target, object));
                });
                false
            }
            Request::Engine(movement) => {
                move_engine(movement, self.participate, &self.client, app, &self.sender);
                false
            }
            Request::OpenFleet if !self.fleet_started => {
                match fleet_members(
                    self.kubeconfig.as_ref(),
                    self.options,
                    &self.client,
                    &app.session.context,
                    &self.members,
                ) {
                    Ok(members) => {
                        start_fleet(app, members, &self.sender, &self.fleet);
                        self.fleet_started = true;
                    }
                    Err(error) => app.fail(format!("{error:#}")),
                }
                true
            }
            Request::OpenFleet => false,
            Request::SwitchContext(context) => self.switch_context(app, &context).await,
            Request::Reconnect => self.reconnect(app).await,
        }
    }

    /// A client for another context of the fleet, for a write that goes there (a hub's, from the fleet view):
    /// the embedded fleet's in-process client, else one made from the kubeconfig.
    async fn client_of(&self, context: &str) -> anyhow::Result<Client> {
        if let Some((_, client)) = self.members.iter().find(|(name, _)| name == context) {
            return Ok(client.clone());
        }
        match &self.kubeconfig {
            Some(kubeconfig) => Ok(client_for(kubeconfig, context).await?.0),
            None => anyhow::bail!("context {context} is not one this console can reach"),
        }
    }

    /// Leave the open cluster for `context`: stop its watches, connect, and watch the new one. Returns whether
    /// anything changed on screen.
    async fn switch_context(&mut self, app: &mut App, context: &str) -> bool {
        let new_client = match &self.kubeconfig {
            Some(kubeconfig) => client_for(kubeconfig, context).await,
            // A cluster of the embedded fleet, entered from the fleet view.
            None if self.members.iter().any(|(name, _)| name == context) => Ok((
                self.members
                    .iter()
                    .find(|(name, _)| name == context)
                    .map_or_else(|| self.client.clone(), |(_, client)| client.clone()),
                None,
            )),
            // The embedded cluster, entered from the fleet: its watches start now.
            None if context == app.session.context => Ok((self.client.clone(), None)),
            None => return false,
        };
        match new_client {
            Ok((new_client, server)) => {
                if let Some(session) = self.session.take() {
                    session.cancel();
                }
                self.client = new_client;
                self.server = server;
                self.reconnects = Backoff::default();
                app.switch_context(context);
                self.session = Some(start_session(
                    &self.client,
                    self.server.as_deref(),
                    context,
                    self.options.namespace.as_deref(),
                    !app.reviewed(context),
                    &self.sender,
                ));
            }
            Err(error) => app.fail(Why::kubeconfig(&error).detail),
        }
        true
    }
}

impl Connections<'_> {
    /// The server refused the credentials: read the kubeconfig again from where it was read (a restarted server
    /// writes new tokens and perhaps a new CA or port), make a new client for the same context and restart the
    /// watches on it. No sooner than [`Backoff`] allows: until then a timer asks again, so a kubeconfig whose
    /// credentials stay refused is read every few seconds, then every minute, never in a loop.
    async fn reconnect(&mut self, app: &mut App) -> bool {
        let ClusterChoice::Kubeconfig { path, .. } = &self.options.cluster else {
            return false;
        };
        if self.kubeconfig.is_none() {
            return false;
        }
        if let Some(wait) = self.reconnects.wait() {
            let sender = self.sender.clone();
            tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let _ = sender.send(Action::ReconnectDue);
            });
            return false;
        }
        let context = app.session.context.clone();
        let read = match read_kubeconfig(path.as_deref()) {
            Ok(kubeconfig) => client_for(&kubeconfig, &context)
                .await
                .map(|(client, server)| (kubeconfig, client, server)),
            Err(error) => Err(error),
        };
        match read {
            Ok((kubeconfig, client, server)) => {
                if let Some(session) = self.session.take() {
                    session.cancel();
                }
                self.kubeconfig = Some(kubeconfig);
                self.client = client;
                self.server = server;
                self.session = Some(start_session(
                    &self.client,
                    self.server.as_deref(),
                    &context,
                    self.options.namespace.as_deref(),
                    !app.reviewed(&context),
                    &self.sender,
                ));
                app.reconnected();
            }
            Err(error) => {
                app.reconnect_failed(Why::kubeconfig(&error).detail);
                // The next attempt waits out the backoff this one started.
                let _ = self.sender.send(Action::ReconnectDue);
            }
        }
        true
    }
}

/// Restores the terminal when the loop ends, however it ends.
struct RestoreOnDrop;

impl Drop for RestoreOnDrop {
    fn drop(&mut self) {
        crossterm::execute!(std::io::stdout(), DisableBracketedPaste).ok();
        ratatui::restore();
    }
}

/// SIGTERM, SIGHUP and SIGINT (from `kill`; a Ctrl-C key press arrives as a key in raw mode).
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hangup: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                terminate: signal(SignalKind::terminate())
                    .context("installing the SIGTERM handler")?,
                hangup: signal(SignalKind::hangup()).context("installing the SIGHUP handler")?,
                interrupt: signal(SignalKind::interrupt())
                    .context("installing the SIGINT handler")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.hangup.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    }
}
