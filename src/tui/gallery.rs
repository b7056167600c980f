//! `kmm-tui screenshots`: run the demo on the embedded cluster with the engine acting, let it converge, then draw
//! each pane exactly as the console draws it and save the rendered buffer as a PNG; then the fleet view of the
//! sample fleet the same way. The README's pictures come from here, so anyone can regenerate them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use kube::Client;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::action::Action;
use super::app::{App, EngineMode, Request, Session};
use super::keymap::Keymap;
use super::theme::Theme;
use super::{feed, live, sample, screenshot, ui};
use kmm_cluster::sim::scenario::Scenario;
use kmm_cluster::{EmbeddedCluster, EmbeddedOptions};
use kmm_engine::{EngineConfig, LeaseConfig, PodImages};

/// What to capture and where.
#[derive(Clone, Debug)]
pub struct GalleryOptions {
    /// Directory the PNGs go to.
    pub out: PathBuf,
    /// Scenario to run.
    pub scenario: String,
    /// How long the engine works before the pictures are taken.
    pub settle: Duration,
    /// Terminal size of the pictures (columns, rows).
    pub size: (u16, u16),
    /// Theme name or file.
    pub theme: String,
}

/// The panes captured, by file name, with the keys that open each from the Modules pane.
const PANES: [(&str, &[Step]); 16] = [
    ("modules", &[]),
    ("module-detail", &[Step::Key(KeyCode::Enter)]),
    ("images", &[Step::Command("images")]),
    ("nodes", &[Step::Command("nodes")]),
    ("events", &[Step::Command("events")]),
    ("caches", &[Step::Command("caches")]),
    (
        "cache-coverage",
        &[
            Step::Command("caches"),
            Step::Key(KeyCode::Enter),
            Step::Key(KeyCode::Right),
        ],
    ),
    ("yaml", &[Step::Key(KeyCode::Char('y'))]),
    ("help", &[Step::Key(KeyCode::Char('?'))]),
    ("shims", &[Step::Command("shims")]),
    // The demo's Shim waiting for approval: the only one whose name has `v2`.
    (
        "shim-detail",
        &[
            Step::Command("shims"),
            Step::Key(KeyCode::Char('/')),
            Step::Key(KeyCode::Char('v')),
            Step::Key(KeyCode::Char('2')),
            Step::Key(KeyCode::Enter),
            Step::Key(KeyCode::Enter),
        ],
    ),
    ("day0", &[Step::Command("day0")]),
    (
        "day0-detail",
        &[Step::Command("day0"), Step::Key(KeyCode::Enter)],
    ),
    ("engine", &[Step::Command("engine")]),
    ("devices", &[Step::Command("devices")]),
    // The demo's planned upgrade, with the Module table focused.
    (
        "preflight",
        &[Step::Command("preflight"), Step::Key(KeyCode::Tab)],
    ),
];

/// One step towards a pane.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Press a key.
    Key(KeyCode),
    /// Run a `:` command.
    Command(&'static str),
}

/// Run the scenario, capture every pane, and return the files written.
pub async fn capture(options: GalleryOptions) -> anyhow::Result<Vec<PathBuf>> {
    let (theme, _) = Theme::load(&options.theme)?;
    let scenario = Scenario::load(&options.scenario)?;
    let cluster = EmbeddedCluster::start(EmbeddedOptions {
        state_dir: None,
        listen: None,
        kubeconfig_out: None,
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
    let cancel = CancellationToken::new();
    let identity = "kmm-tui-screenshots".to_owned();
    let engine = tokio::spawn(kmm_engine::run(
        cluster.client(),
        EngineConfig {
            images: PodImages::default(),
            lease: LeaseConfig::with_defaults(identity.clone()),
            settings: kmm_engine::Settings::default(),
        },
        cancel.clone(),
    ));
    let (sender, mut receiver) = mpsc::unbounded_channel();
    feed::start(&cluster.client(), None, None, &sender, &cancel);
    let session = Session {
        context: super::console::EMBEDDED_CONTEXT.to_owned(),
        contexts: vec![super::console::EMBEDDED_CONTEXT.to_owned()],
        embedded: true,
        engine: EngineMode::Foreground,
        readonly: false,
        engine_identity: Some(identity),
    };
    let mut app = App::new(session, theme, Keymap::default(), None);
    app.update(Action::Terminal(Event::Resize(
        options.size.0,
        options.size.1,
    )));
    let deadline = tokio::time::Instant::now() + options.settle;
    while let Ok(Some(action)) = tokio::time::timeout_at(deadline, receiver.recv()).await {
        app.update(action);
    }
    while let Ok(action) = receiver.try_recv() {
        app.update(action);
    }
    let mut written = write_panes(&mut app, &cluster.client(), &options.out, options.size).await;
    if let Ok(files) = &mut written {
        files.push(write_fleet(app.theme.clone(), &options.out, options.size)?);
    }
    cancel.cancel();
    let _ = engine.await;
    cluster.shutdown().await;
    written
}

/// Draw the fleet view of the sample fleet ([`sample::fleet`]) and write it as `<out>/fleet.png`: a picture of many
/// clusters needs more than the one embedded cluster, so its rows are the sample's, drawn as the console draws them.
fn write_fleet(theme: Theme, out: &Path, size: (u16, u16)) -> anyhow::Result<PathBuf> {
    let session = Session {
        context: "prod-east".to_owned(),
        contexts: sample::fleet::CONTEXTS.map(str::to_owned).to_vec(),
        embedded: false,
        engine: EngineMode::Off,
        readonly: false,
        engine_identity: None,
    };
    let mut app = App::new(session, theme, Keymap::default(), None);
    app.pin_clock(sample::now());
    app.update(Action::Terminal(Event::Resize(size.0, size.1)));
    app.start_in_fleet(&sample::fleet::CONTEXTS.map(str::to_owned));
    for (context, change) in sample::fleet::changes() {
        app.update(Action::Fleet(context, change));
    }
    let mut terminal = Terminal::new(TestBackend::new(size.0, size.1))?;
    terminal.draw(|frame| ui::draw(frame, &app))?;
    let png = screenshot::buffer_to_png(terminal.backend().buffer())?;
    let path = out.join("fleet.png");
    std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Draw each pane of [`PANES`] and write it as `<out>/<name>.png`, reading through `client` what a pane asks of the
/// API server.
async fn write_panes(
    app: &mut App,
    client: &Client,
    out: &Path,
    size: (u16, u16),
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut written = Vec::new();
    for (name, steps) in PANES {
        app.execute("modules");
        for step in steps {
            match step {
                Step::Key(code) => {
                    app.update(Action::Terminal(Event::Key(KeyEvent::new(
                        *code,
                        KeyModifiers::NONE,
                    ))));
                }
                Step::Command(command) => app.execute(command),
            }
        }
        answer_reads(app, client).await;
        let mut terminal = Terminal::new(TestBackend::new(size.0, size.1))?;
        terminal.draw(|frame| ui::draw(frame, app))?;
        let png = screenshot::buffer_to_png(terminal.backend().buffer())?;
        let path = out.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Answer what the steps asked of the API server, as the event loop does: the object the YAML view shows. Other
/// requests (none of the steps writes) are left undone.
async fn answer_reads(app: &mut App, client: &Client) {
    for request in std::mem::take(&mut app.requests) {
        if let Request::Follow(Some(target)) = request {
            let object = live::read(client, &target).await.map(Some);
            app.update(Action::Object(target, object));
        }
    }
}
