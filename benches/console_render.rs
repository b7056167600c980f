//! Frame render time of the console's heaviest panes on 200 Modules × 5,000 nodes (and the coverage matrix of an
//! ImageCache of 5 images on all of them), and the cost of taking in a new list (what every watch update costs the
//! UI task). Run with `cargo bench --bench console_render`.

/// The binary's allocator (`kmm_tui::allocator`): what is measured is what `kmm-tui` does.
#[global_allocator]
static ALLOCATOR: kmm_tui::allocator::Allocator = kmm_tui::allocator::ALLOCATOR;

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::{App, EngineMode, Session};
use kmm_tui::tui::data::KindSnapshot;
use kmm_tui::tui::keymap::Keymap;
use kmm_tui::tui::sample::{now, sample, snapshots};
use kmm_tui::tui::theme::Theme;
use kmm_tui::tui::ui;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const MODULES: usize = 200;
const NODES: usize = 5_000;
const FRAMES: usize = 300;

fn app() -> App {
    let session = Session {
        context: "bench".to_owned(),
        contexts: vec!["bench".to_owned()],
        embedded: true,
        engine: EngineMode::Foreground,
        readonly: false,
        engine_identity: None,
    };
    let (theme, _) = Theme::load("dark").expect("built-in theme");
    let mut app = App::new(session, theme, Keymap::default(), None);
    app.pin_clock(now());
    let data = sample(MODULES, NODES);
    for snapshot in snapshots(&data) {
        app.update(Action::Data(snapshot));
    }
    app
}

fn press(app: &mut App, code: KeyCode) {
    app.update(Action::Terminal(Event::Key(KeyEvent::new(
        code,
        KeyModifiers::NONE,
    ))));
}

/// Draw `FRAMES` frames and return the per-frame times, sorted.
fn frames(app: &App, width: u16, height: u16) -> Vec<Duration> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    let mut times: Vec<Duration> = (0..FRAMES)
        .map(|_| {
            let start = Instant::now();
            terminal.draw(|frame| ui::draw(frame, app)).expect("draw");
            start.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn report(name: &str, times: &[Duration]) {
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(1);
    let p99 = times[times.len() * 99 / 100];
    println!(
        "{name:<40} mean {:>8.1} µs   p50 {:>8.1} µs   p99 {:>8.1} µs",
        mean.as_secs_f64() * 1e6,
        times[times.len() / 2].as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
}

fn main() {
    kmm_tui::allocator::return_freed_memory_promptly();
    let start = Instant::now();
    let mut app = app();
    println!(
        "console render: {MODULES} modules × {NODES} nodes (data built and taken in: {:.2} s)",
        start.elapsed().as_secs_f64()
    );
    for (width, height) in [(120, 40), (200, 60)] {
        app.update(Action::Terminal(Event::Resize(width, height)));
        app.execute("modules");
        report(
            &format!("Modules pane {width}x{height}"),
            &frames(&app, width, height),
        );
        press(&mut app, KeyCode::Char('G'));
        press(&mut app, KeyCode::Enter);
        report(
            &format!("Module detail pane {width}x{height}"),
            &frames(&app, width, height),
        );
        app.execute("nodes");
        press(&mut app, KeyCode::Char('G'));
        report(
            &format!("Nodes pane {width}x{height}"),
            &frames(&app, width, height),
        );
        // The sample's first cache, warm-ml: 5 images over every node.
        app.execute("caches");
        press(&mut app, KeyCode::Char('g'));
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Char('G'));
        press(&mut app, KeyCode::Char('l'));
        report(
            &format!("Coverage matrix 5,000x5 {width}x{height}"),
            &frames(&app, width, height),
        );
    }
    let data = sample(MODULES, NODES);
    let mut takes: Vec<Duration> = (0..20)
        .map(|_| {
            let nodes = KindSnapshot::Nodes(data.nodes.clone());
            let start = Instant::now();
            app.update(Action::Data(nodes));
            start.elapsed()
        })
        .collect();
    takes.sort();
    report("take in 5,000 nodes (matrix open)", &takes);
    app.execute("nodes");
    let mut takes: Vec<Duration> = (0..20)
        .map(|_| {
            let nodes = KindSnapshot::Nodes(data.nodes.clone());
            let start = Instant::now();
            app.update(Action::Data(nodes));
            start.elapsed()
        })
        .collect();
    takes.sort();
    report("take in 5,000 nodes (Nodes pane open)", &takes);
    let mut takes: Vec<Duration> = (0..20)
        .map(|_| {
            let modules = KindSnapshot::Modules(data.modules.clone());
            let start = Instant::now();
            app.update(Action::Data(modules));
            start.elapsed()
        })
        .collect();
    takes.sort();
    report("take in 200 Modules", &takes);
}
