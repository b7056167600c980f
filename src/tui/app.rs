//! The console's state and how it changes. The UI task owns one [`App`]; every [`Action`] goes through
//! [`App::update`], which changes the state and queues [`Request`]s (API writes, context switches) for the event
//! loop to carry out. Nothing here does I/O, so every behaviour is tested by feeding actions and reading state.

mod caches;
mod day0;
mod engine;
mod shims;

use std::collections::HashMap;

use crossterm::event::{Event as TerminalEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::access::{AccessReport, Capability};
use super::action::Action;
use super::data::{ClusterData, Kind};
use super::editor::{EditorEvent, EditorState};
use super::keymap::{Command, Keymap, Scope};
use super::target::Target;
use super::theme::Theme;
use super::view::caches::CacheRow;
use super::view::day0::{self as day0_rows, Day0Row};
use super::view::day0_detail::Day0Detail;
use super::view::detail::{self, ModuleDetail};
use super::view::events::{self, EventRow};
use super::view::images::{self, ImageRow};
use super::view::modules::{self, ModuleRow};
use super::view::nodes::{self, NodeRow};
use super::view::shims::{self as shim_rows, ShimRow};
use super::writes::{WriteOutcome, WriteRequest};
use super::yaml;

pub use caches::CacheViews;
pub use engine::{EngineEvent, EngineMove, EnginePane};

/// Which engine acts on the cluster, as the header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineMode {
    /// The engine runs inside the console.
    Foreground,
    /// The console does not run the engine; a controller in the cluster may.
    Off,
}

/// Facts about the session that do not change while it runs (until a context switch).
#[derive(Clone, Debug)]
pub struct Session {
    /// The kubeconfig context, or `embedded`.
    pub context: String,
    /// The contexts `:ctx` offers.
    pub contexts: Vec<String>,
    /// Whether the cluster is the embedded one.
    pub embedded: bool,
    /// Which engine acts.
    pub engine: EngineMode,
    /// Whether every write is refused.
    pub readonly: bool,
    /// The identity the foreground engine holds the engine Lease under, to tell it from a cluster controller.
    pub engine_identity: Option<String>,
}

/// A screen of the console. Lists are roots; the others open on top of them and `esc` closes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum View {
    /// Every Module.
    Modules,
    /// Every image of every ModuleImagesConfig.
    Images,
    /// Every node.
    Nodes,
    /// Recent events.
    Events,
    /// Every ImageCache.
    Caches,
    /// One ImageCache's coverage: nodes × images.
    CacheDetail(Target),
    /// One Module in depth.
    Detail(Target),
    /// One object as YAML.
    Yaml(Target),
    /// Every key binding.
    Help,
    /// Every Shim.
    Shims,
    /// One Shim in depth.
    ShimDetail(Target),
    /// The log of one (installer) pod.
    Logs(Target),
    /// Every ModuleDay0.
    Day0s,
    /// One ModuleDay0 in depth: its pool's nodes, its image pods, its events.
    Day0Detail(Target),
    /// Who holds the engine Lease, where it runs, and who acts on each family.
    Engine,
}

impl View {
    /// The views `:` switches to, by the names it accepts.
    pub const ROOTS: [(&'static str, View); 7] = [
        ("modules", View::Modules),
        ("images", View::Images),
        ("nodes", View::Nodes),
        ("events", View::Events),
        ("shims", View::Shims),
        ("caches", View::Caches),
        ("day0", View::Day0s),
    ];

    /// The key of the view's selection and filter: one per list, one per detail section.
    fn list(&self, section: DetailSection) -> ListId {
        match self {
            View::Modules => ListId::Modules,
            View::Images => ListId::Images,
            View::Nodes => ListId::Nodes,
            View::Events => ListId::Events,
            View::Caches => ListId::Caches,
            // The matrix has the focus first; `tab` moves it to the image summary.
            View::CacheDetail(_) if section == DetailSection::Nodes => ListId::CacheImages,
            View::CacheDetail(_) => ListId::Coverage,
            View::Detail(_) => ListId::Detail(section),
            View::Yaml(_) => ListId::Yaml,
            View::Help => ListId::Help,
            View::Shims => ListId::Shims,
            View::ShimDetail(_) => ListId::Detail(section),
            View::Logs(_) => ListId::Logs,
            View::Day0s => ListId::Day0s,
            View::Day0Detail(_) => ListId::Detail(section),
            View::Engine => ListId::Engine,
        }
    }

    /// The detail section focused when the view opens: a Shim has no image section, and a ModuleDay0 is about
    /// its pool's nodes first.
    fn first_section(&self) -> DetailSection {
        match self {
            View::ShimDetail(_) | View::Day0Detail(_) => DetailSection::Nodes,
            _ => DetailSection::default(),
        }
    }
}

/// The three tables of the detail pane; `tab` moves between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DetailSection {
    /// Image states.
    #[default]
    Images,
    /// Per-node state.
    Nodes,
    /// Recent events.
    Events,
}

impl DetailSection {
    fn next(self) -> DetailSection {
        match self {
            DetailSection::Images => DetailSection::Nodes,
            DetailSection::Nodes => DetailSection::Events,
            DetailSection::Events => DetailSection::Images,
        }
    }

    fn previous(self) -> DetailSection {
        self.next().next()
    }
}

/// Identifies a scrollable list, for its selection and filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListId {
    /// The Modules pane.
    Modules,
    /// The Images pane.
    Images,
    /// The Nodes pane.
    Nodes,
    /// The Events pane.
    Events,
    /// A section of the detail pane.
    Detail(DetailSection),
    /// The Caches pane.
    Caches,
    /// The cache detail's image summary; its selection is the matrix's image column.
    CacheImages,
    /// The cache detail's coverage matrix: one row per node.
    Coverage,
    /// The YAML view's lines.
    Yaml,
    /// Help's lines.
    Help,
    /// The Shims pane.
    Shims,
    /// The log view's lines.
    Logs,
    /// The Day-0 pane.
    Day0s,
    /// The candidates of the `:engine` view.
    Engine,
}

/// The selected row of a list and the first row shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Index into the list's visible rows.
    pub index: usize,
    /// First visible row.
    pub offset: usize,
}

impl Selection {
    /// Move to `index` (clamped to `len`) and scroll so it stays within `height` rows.
    fn set(&mut self, index: usize, len: usize, height: usize) {
        self.index = index.min(len.saturating_sub(1));
        let height = height.max(1);
        if self.index < self.offset {
            self.offset = self.index;
        } else if self.index >= self.offset + height {
            self.offset = self.index + 1 - height;
        }
        self.offset = self.offset.min(len.saturating_sub(height));
    }
}

/// A line the user types: the `:` command or the `/` filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    /// What was typed.
    pub text: String,
}

/// What keys go to.
#[derive(Debug, Default)]
pub enum Mode {
    /// The current view's commands.
    #[default]
    Normal,
    /// The `:` prompt.
    Command(Prompt),
    /// The `/` prompt.
    Filter(Prompt),
    /// A write waiting for `y`.
    Confirm(WriteRequest),
    /// A move of the engine waiting for `y`.
    ConfirmEngine(EngineMove),
}

/// How serious a footer message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// It worked, or just so you know.
    Info,
    /// Something to look at (unknown keys in a config file).
    Warning,
    /// It failed.
    Error,
}

/// The footer's message: the last action's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusLine {
    /// The text.
    pub text: String,
    /// How to colour it.
    pub severity: Severity,
}

/// Work for the event loop: things that leave the UI task.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// Perform a confirmed write.
    Write(WriteRequest),
    /// Connect to another kubeconfig context.
    SwitchContext(String),
    /// Read a pod's log for the log view.
    PodLog(Target),
    /// Hand this console's engine off, or take it over.
    Engine(EngineMove),
}

/// Whether a command can run on the current selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Availability {
    /// It can.
    Available,
    /// It cannot, and this says why (read-only, not permitted, nothing selected).
    Unavailable(String),
}

/// Every row of every list, rebuilt when data changes.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    /// Modules pane.
    pub modules: Vec<ModuleRow>,
    /// Images pane.
    pub images: Vec<ImageRow>,
    /// Nodes pane.
    pub nodes: Vec<NodeRow>,
    /// Events pane.
    pub events: Vec<EventRow>,
    /// Shims pane.
    pub shims: Vec<ShimRow>,
    /// Caches pane.
    pub caches: Vec<CacheRow>,
    /// Day-0 pane.
    pub day0s: Vec<Day0Row>,
}

/// The console's whole state.
pub struct App {
    /// The connection's facts.
    pub session: Session,
    /// Colours.
    pub theme: Theme,
    /// Key bindings.
    pub keymap: Keymap,
    /// The latest lists from the cluster.
    pub data: ClusterData,
    /// Rows of every list.
    pub rows: Rows,
    /// The open Module's detail, when the detail view is open.
    pub detail: Option<ModuleDetail>,
    /// The cache views' detail and matrix scroll.
    pub caches: CacheViews,
    /// The YAML view's text, when it is open: its lines, or why the object cannot be shown.
    pub yaml: Option<Result<Vec<String>, String>>,
    /// The open Shim's detail and the installer log being read.
    pub shim: shims::ShimPane,
    /// The open ModuleDay0's detail, while the Day-0 detail view is open.
    pub day0: Option<Day0Detail>,
    /// This console's engine beyond the Lease: handed off or not, candidates seen, upstream operators.
    pub engine: EnginePane,
    /// Views, root first; the last one is shown.
    pub views: Vec<View>,
    /// What keys go to.
    pub mode: Mode,
    /// The editor, while an object is being edited.
    pub editor: Option<EditorState>,
    /// The focused detail section.
    pub section: DetailSection,
    /// Selections per list.
    pub selections: HashMap<ListId, Selection>,
    /// `/` filters per list (lower-case).
    pub filters: HashMap<ListId, String>,
    /// The `:ns` namespace, or every namespace.
    pub namespace: Option<String>,
    /// Visible row indices per list, after filter and namespace.
    pub visible: HashMap<ListId, Vec<usize>>,
    /// The footer's message.
    pub status: Option<StatusLine>,
    /// What the user may do here.
    pub access: AccessReport,
    /// Access reviews by context: asked once per context, reused when the user switches back.
    reviews: HashMap<String, AccessReport>,
    /// Work for the event loop.
    pub requests: Vec<Request>,
    /// Whether the console should exit.
    pub quit: bool,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// The time ages are measured from, set when data arrives.
    pub now: jiff::Timestamp,
    /// A fixed `now` that data arrivals keep, so snapshots, benchmarks and screenshots show the same ages every run.
    pinned_clock: Option<jiff::Timestamp>,
}

/// Rows taken by the header, footer and table headings: the part of the screen tables do not get.
const CHROME_ROWS: u16 = 6;

impl App {
    /// A console on `session`, with no data yet.
    pub fn new(session: Session, theme: Theme, keymap: Keymap, namespace: Option<String>) -> App {
        let mut app = App {
            session,
            theme,
            keymap,
            data: ClusterData::default(),
            rows: Rows::default(),
            detail: None,
            caches: CacheViews::default(),
            yaml: None,
            shim: shims::ShimPane::default(),
            day0: None,
            engine: EnginePane::default(),
            views: vec![View::Modules],
            mode: Mode::Normal,
            editor: None,
            section: DetailSection::default(),
            selections: HashMap::new(),
            filters: HashMap::new(),
            namespace,
            visible: HashMap::new(),
            status: None,
            access: AccessReport::default(),
            reviews: HashMap::new(),
            requests: Vec::new(),
            quit: false,
            size: (120, 40),
            now: jiff::Timestamp::now(),
            pinned_clock: None,
        };
        app.refresh();
        app
    }

    /// Measure every age from `now`, now and after every data arrival, instead of the wall clock: for pictures of the
    /// console (snapshots, benchmarks, screenshots) that must not change from one run to the next.
    pub fn pin_clock(&mut self, now: jiff::Timestamp) {
        self.pinned_clock = Some(now);
        self.now = now;
        self.refresh();
    }

    /// Show `warnings` (from config files) in the footer.
    pub fn warn(&mut self, warnings: &[String]) {
        if let Some(first) = warnings.first() {
            let more = if warnings.len() > 1 {
                format!(" (and {} more)", warnings.len() - 1)
            } else {
                String::new()
            };
            self.set_status(Severity::Warning, format!("{first}{more}"));
        }
    }

    /// Show a failure in the footer.
    pub fn fail(&mut self, message: impl Into<String>) {
        self.set_status(Severity::Error, message);
    }

    /// Whether the access review of `context` is known already.
    pub fn reviewed(&self, context: &str) -> bool {
        self.reviews.contains_key(context)
    }

    /// Forget the old context's data and permissions: the new context's watches and review refill them.
    pub fn switch_context(&mut self, context: &str) {
        self.session.context = context.to_owned();
        self.data = ClusterData::default();
        self.access = self.reviews.get(context).cloned().unwrap_or_default();
        self.views.truncate(1);
        self.editor = None;
        self.set_status(Severity::Info, format!("Context {context}"));
        self.refresh();
    }

    /// Apply one message. Returns whether the screen must be redrawn.
    pub fn update(&mut self, action: Action) -> bool {
        match action {
            Action::Terminal(TerminalEvent::Key(key)) => {
                if key.kind == KeyEventKind::Release {
                    return false;
                }
                self.on_key(key);
                true
            }
            Action::Terminal(TerminalEvent::Paste(text)) => {
                self.on_paste(&text);
                true
            }
            Action::Terminal(TerminalEvent::Resize(columns, rows)) => {
                self.size = (columns, rows);
                true
            }
            Action::Terminal(_) => false,
            Action::Data(snapshot) => {
                let kind = snapshot.kind();
                self.data.apply(snapshot);
                self.now = self.pinned_clock.unwrap_or_else(jiff::Timestamp::now);
                self.refresh_kind(kind);
                true
            }
            Action::Feed(kind, state) => {
                self.data.set_feed(kind, state);
                true
            }
            Action::Written(outcome) => {
                self.on_written(outcome);
                true
            }
            Action::Access(report) => {
                if report.context == self.session.context {
                    self.access = report.clone();
                }
                self.reviews.insert(report.context.clone(), report);
                true
            }
            Action::EngineLease(lease) => {
                self.data.engine_lease = lease;
                self.now = self.pinned_clock.unwrap_or_else(jiff::Timestamp::now);
                self.on_engine_lease();
                true
            }
            Action::Engine(event) => {
                self.on_engine_event(event);
                true
            }
            Action::PodLog(pod, log) => {
                self.on_pod_log(&pod, log);
                true
            }
        }
    }

    /// The view on screen.
    pub fn view(&self) -> &View {
        self.views.last().unwrap_or(&View::Modules)
    }

    /// The list the keys move in.
    pub fn list(&self) -> ListId {
        self.view().list(self.section)
    }

    /// The selection of a list.
    pub fn selection(&self, list: ListId) -> Selection {
        self.selections.get(&list).copied().unwrap_or_default()
    }

    /// The visible rows (indices into the full list) of a list.
    pub fn visible(&self, list: ListId) -> &[usize] {
        self.visible.get(&list).map_or(&[], Vec::as_slice)
    }

    /// The `/` filter of a list.
    pub fn filter(&self, list: ListId) -> &str {
        self.filters.get(&list).map_or("", String::as_str)
    }

    /// How many table rows fit on screen.
    pub fn page_height(&self) -> usize {
        let rows = self.size.1.saturating_sub(CHROME_ROWS);
        match self.view() {
            View::Detail(_) | View::Day0Detail(_) => usize::from(rows / 3).max(1),
            View::ShimDetail(_) => usize::from(rows / 2).max(1),
            View::CacheDetail(_) => self.cache_page_height(),
            _ => usize::from(rows).max(1),
        }
    }

    /// The scope whose keys apply now.
    pub fn scope(&self) -> Scope {
        match self.mode {
            Mode::Confirm(_) | Mode::ConfirmEngine(_) => Scope::Dialog,
            _ => Scope::Table,
        }
    }

    fn set_status(&mut self, severity: Severity, text: impl Into<String>) {
        self.status = Some(StatusLine {
            text: text.into(),
            severity,
        });
    }

    /// Rebuild rows, the open detail and YAML, and every list's visible rows; keep selections in range.
    fn refresh(&mut self) {
        self.rows = Rows {
            modules: modules::rows(&self.data),
            images: images::rows(&self.data, self.now),
            nodes: nodes::rows(&self.data),
            events: events::rows(&self.data, self.now),
            shims: shim_rows::rows(&self.data),
            caches: super::view::caches::rows(&self.data),
            day0s: day0_rows::rows(&self.data),
        };
        self.refresh_open_view();
        self.refresh_visible();
    }

    /// Rebuild only the rows a change of `kind` can alter: a node heartbeat must not rebuild every Module row.
    fn refresh_kind(&mut self, kind: Kind) {
        match kind {
            Kind::Module => self.rows.modules = modules::rows(&self.data),
            Kind::ModuleImagesConfig => {
                self.rows.modules = modules::rows(&self.data);
                self.rows.images = images::rows(&self.data, self.now);
            }
            Kind::Pod => self.rows.images = images::rows(&self.data, self.now),
            Kind::Node | Kind::NodeModulesConfig => self.rows.nodes = nodes::rows(&self.data),
            Kind::Event => self.rows.events = events::rows(&self.data, self.now),
            Kind::Shim => self.rows.shims = shim_rows::rows(&self.data),
            Kind::ImageCache => {
                self.rows.caches = super::view::caches::rows(&self.data);
                self.rows.nodes = nodes::rows(&self.data);
            }
            Kind::ModuleDay0 | Kind::MachineConfigPool => {
                self.rows.day0s = day0_rows::rows(&self.data);
            }
        }
        self.refresh_open_view();
        self.refresh_visible();
    }

    fn refresh_open_view(&mut self) {
        self.detail = match self.view() {
            View::Detail(target) => detail::detail(
                &self.data,
                target.namespace.as_deref().unwrap_or_default(),
                &target.name,
                self.now,
            ),
            _ => None,
        };
        self.refresh_cache_detail();
        self.yaml = match self.view() {
            View::Yaml(target) => Some(yaml::object_lines(&self.data, target)),
            _ => None,
        };
        self.refresh_shim_view();
        self.refresh_day0_view();
    }

    fn refresh_visible(&mut self) {
        let namespace = self.namespace.clone();
        let in_namespace = |ns: &str| namespace.as_deref().is_none_or(|wanted| wanted == ns);
        let filter = |list: ListId| self.filters.get(&list).cloned().unwrap_or_default();
        let mut visible = HashMap::new();
        let f = filter(ListId::Modules);
        visible.insert(
            ListId::Modules,
            indices(&self.rows.modules, |r| {
                in_namespace(&r.namespace) && r.matches(&f)
            }),
        );
        let f = filter(ListId::Images);
        visible.insert(
            ListId::Images,
            indices(&self.rows.images, |r| {
                in_namespace(&r.namespace) && r.matches(&f)
            }),
        );
        let f = filter(ListId::Nodes);
        visible.insert(ListId::Nodes, indices(&self.rows.nodes, |r| r.matches(&f)));
        let f = filter(ListId::Events);
        visible.insert(
            ListId::Events,
            indices(&self.rows.events, |r| {
                let namespaced = r.object.split_once(' ').map_or("", |(_, path)| {
                    path.split_once('/').map_or("", |(ns, _)| ns)
                });
                (namespace.is_none() || namespaced.is_empty() || in_namespace(namespaced))
                    && r.matches(&f)
            }),
        );
        if let Some(detail) = &self.detail {
            let f = filter(ListId::Detail(DetailSection::Images));
            visible.insert(
                ListId::Detail(DetailSection::Images),
                indices(&detail.images, |r| r.matches(&f)),
            );
            let f = filter(ListId::Detail(DetailSection::Nodes));
            visible.insert(
                ListId::Detail(DetailSection::Nodes),
                indices(&detail.nodes, |r| r.matches(&f)),
            );
            let f = filter(ListId::Detail(DetailSection::Events));
            visible.insert(
                ListId::Detail(DetailSection::Events),
                indices(&detail.events, |r| r.matches(&f)),
            );
        }
        visible.extend(self.cache_lists(in_namespace));
        if let Some(Ok(lines)) = &self.yaml {
            visible.insert(ListId::Yaml, (0..lines.len()).collect());
        }
        visible.insert(ListId::Help, (0..self.help_lines()).collect());
        self.shim_visible(&mut visible);
        self.day0_visible(&mut visible);
        self.engine_visible(&mut visible);
        self.visible = visible;
        let height = self.page_height();
        for (list, rows) in &self.visible {
            let selection = self.selections.entry(*list).or_default();
            let index = selection.index;
            selection.set(index, rows.len(), height);
        }
    }

    /// Lines of the help view: a heading and a blank line per section, plus one line per binding.
    pub fn help_lines(&self) -> usize {
        self.keymap
            .help_sections()
            .iter()
            .map(|section| section.hints.len() + 2)
            .sum()
    }

    fn on_paste(&mut self, text: &str) {
        match (&mut self.mode, &mut self.editor) {
            (Mode::Command(prompt) | Mode::Filter(prompt), _) => {
                prompt
                    .text
                    .push_str(text.lines().next().unwrap_or_default());
                self.live_filter();
            }
            (Mode::Normal, Some(editor)) => {
                editor.textarea.insert_str(text);
            }
            _ => {}
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        match &mut self.mode {
            Mode::Command(_) => self.on_command_key(key),
            Mode::Filter(_) => self.on_filter_key(key),
            Mode::ConfirmEngine(_) => self.on_engine_confirm_key(key),
            Mode::Confirm(_) => match self.keymap.command_for(Scope::Dialog, key) {
                Some(Command::Confirm) => {
                    if let Mode::Confirm(request) = std::mem::take(&mut self.mode) {
                        self.set_status(Severity::Info, format!("{}…", request.describe()));
                        self.requests.push(Request::Write(request));
                    }
                }
                Some(Command::Cancel | Command::Back) => {
                    self.mode = Mode::Normal;
                    self.set_status(Severity::Info, "Cancelled");
                }
                Some(Command::Quit) => self.quit = true,
                _ => {}
            },
            Mode::Normal => {
                if let Some(editor) = &mut self.editor {
                    if key.code == KeyCode::Char('c') && key.modifiers == KeyModifiers::CONTROL {
                        self.quit = true;
                        return;
                    }
                    match editor.handle_key(key) {
                        EditorEvent::Continue => {}
                        EditorEvent::Close => self.editor = None,
                        EditorEvent::Submit => self.submit_editor(),
                    }
                    return;
                }
                if let Some(command) = self.keymap.command_for(Scope::Table, key) {
                    self.run(command);
                }
            }
        }
    }

    fn submit_editor(&mut self) {
        let Some(editor) = &mut self.editor else {
            return;
        };
        match editor.check() {
            Ok(yaml) => {
                let request = WriteRequest::Apply {
                    target: editor.target.clone(),
                    yaml,
                };
                self.ask(request);
            }
            Err(errors) => {
                editor.message = Some(super::writes::problems_found(errors.len()));
                editor.errors = errors;
            }
        }
    }

    fn on_command_key(&mut self, key: KeyEvent) {
        let Mode::Command(prompt) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.mode = Mode::Normal,
            KeyCode::Enter => {
                let line = prompt.text.trim().to_owned();
                self.mode = Mode::Normal;
                self.execute(&line);
            }
            KeyCode::Tab => {
                if let Some(completed) = self.completions(&prompt_text(&self.mode)).first()
                    && let Mode::Command(prompt) = &mut self.mode
                {
                    prompt.text = completed.clone();
                }
            }
            KeyCode::Backspace if prompt.text.pop().is_none() => self.mode = Mode::Normal,
            KeyCode::Char('c') if key.modifiers == KeyModifiers::CONTROL => self.quit = true,
            KeyCode::Char(c) => prompt.text.push(c),
            _ => {}
        }
    }

    fn on_filter_key(&mut self, key: KeyEvent) {
        let Mode::Filter(prompt) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Esc => {
                let list = self.list();
                self.filters.remove(&list);
                self.mode = Mode::Normal;
                self.refresh_visible();
            }
            KeyCode::Enter => self.mode = Mode::Normal,
            KeyCode::Backspace => {
                prompt.text.pop();
                self.live_filter();
            }
            KeyCode::Char('c') if key.modifiers == KeyModifiers::CONTROL => self.quit = true,
            KeyCode::Char(c) => {
                prompt.text.push(c);
                self.live_filter();
            }
            _ => {}
        }
    }

    /// Apply the filter prompt to the current list as the user types.
    fn live_filter(&mut self) {
        if let Mode::Filter(prompt) = &self.mode {
            let list = self.list();
            let text = prompt.text.to_lowercase();
            if text.is_empty() {
                self.filters.remove(&list);
            } else {
                self.filters.insert(list, text);
            }
            self.selections.insert(list, Selection::default());
            self.refresh_visible();
        }
    }

    /// The `:` commands that start with what was typed, for `tab` and the prompt's suggestion.
    pub fn completions(&self, typed: &str) -> Vec<String> {
        let typed = typed.trim_start();
        let mut words: Vec<String> = View::ROOTS
            .iter()
            .map(|(name, _)| (*name).to_owned())
            .chain(["help", "q", "quit", "ns", "ctx", "engine"].map(str::to_owned))
            .collect();
        if let Some(partial) = typed.strip_prefix("ctx ") {
            words = self
                .session
                .contexts
                .iter()
                .filter(|c| c.starts_with(partial))
                .map(|c| format!("ctx {c}"))
                .collect();
            return words;
        }
        if let Some(partial) = typed.strip_prefix("ns ") {
            let mut namespaces: Vec<&str> = self
                .data
                .modules
                .iter()
                .filter_map(|m| m.metadata.namespace.as_deref())
                .chain(
                    self.data
                        .caches
                        .iter()
                        .filter_map(|c| c.metadata.namespace.as_deref()),
                )
                .chain(std::iter::once("all"))
                .collect();
            namespaces.sort_unstable();
            namespaces.dedup();
            return namespaces
                .into_iter()
                .filter(|ns| ns.starts_with(partial))
                .map(|ns| format!("ns {ns}"))
                .collect();
        }
        words.retain(|word| word.starts_with(typed) && word != typed);
        words
    }

    /// Run a `:` command line.
    pub fn execute(&mut self, line: &str) {
        let (word, argument) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(w, a)| (w, a.trim()));
        if let Some((_, view)) = View::ROOTS
            .iter()
            .find(|(name, _)| *name == word || (word.len() >= 2 && name.starts_with(word)))
        {
            self.views = vec![view.clone()];
            self.refresh_open_view();
            self.refresh_visible();
            return;
        }
        match word {
            "q" | "q!" | "quit" => self.quit = true,
            "help" => self.open(View::Help),
            "engine" => {
                self.views = vec![View::Engine];
                self.refresh_visible();
            }
            "ns" => {
                self.namespace = match argument {
                    "" | "all" | "*" => None,
                    namespace => Some(namespace.to_owned()),
                };
                self.set_status(
                    Severity::Info,
                    match &self.namespace {
                        Some(ns) => format!("Namespace {ns}"),
                        None => "All namespaces".to_owned(),
                    },
                );
                self.refresh_visible();
            }
            "ctx" if argument.is_empty() => {
                let list = self.session.contexts.join(", ");
                self.set_status(
                    Severity::Info,
                    format!("Context {} (available: {list})", self.session.context),
                );
            }
            "ctx" => {
                if self.session.contexts.iter().any(|c| c == argument) {
                    self.requests.push(Request::SwitchContext(argument.to_owned()));
                    self.set_status(Severity::Info, format!("Switching to context {argument}…"));
                } else {
                    self.set_status(Severity::Error, format!("No context named {argument}"));
                }
            }
            "" => {}
            other => self.set_status(
                Severity::Error,
                format!("Unknown command :{other} (try :modules, :images, :nodes, :events, :shims, :caches, :day0, :engine, :ns, :ctx, :q)"),
            ),
        }
    }

    /// Open a view on top of the current one.
    fn open(&mut self, view: View) {
        self.section = view.first_section();
        if self.view() != &view {
            self.views.push(view);
        }
        self.refresh_open_view();
        self.refresh_visible();
    }

    fn back(&mut self) {
        let list = self.list();
        if self.filters.remove(&list).is_some() {
            self.refresh_visible();
        } else if self.views.len() > 1 {
            self.views.pop();
            self.section = self.view().first_section();
            self.refresh_open_view();
            self.refresh_visible();
        }
    }

    fn run(&mut self, command: Command) {
        let list = self.list();
        let len = self.visible(list).len();
        let height = self.page_height();
        let current = self.selection(list).index;
        let select = |app: &mut App, index: usize| {
            app.selections
                .entry(list)
                .or_default()
                .set(index, len, height);
        };
        match command {
            Command::CommandMode => self.mode = Mode::Command(Prompt::default()),
            Command::Filter => {
                self.mode = Mode::Filter(Prompt {
                    text: self.filter(list).to_owned(),
                })
            }
            Command::Help => self.open(View::Help),
            Command::Back => self.back(),
            Command::Quit => self.quit = true,
            Command::NextPane | Command::PrevPane => self.switch_pane(command == Command::NextPane),
            Command::Up => select(self, current.saturating_sub(1)),
            Command::Down => select(self, current + 1),
            Command::Top => select(self, 0),
            Command::Bottom => select(self, len.saturating_sub(1)),
            Command::PageUp => select(self, current.saturating_sub(height)),
            Command::PageDown => select(self, current + height),
            Command::Enter => self.enter(),
            Command::Left | Command::Right => self.move_column(command == Command::Right),
            Command::Yaml => match self.selected_object() {
                Some(target) => self.open(View::Yaml(target)),
                None => self.set_status(Severity::Info, "Nothing selected"),
            },
            Command::Edit => self.edit(),
            Command::Approve | Command::PauseResume | Command::Retry | Command::Logs => {
                self.run_shim(command);
            }
            Command::Rebuild | Command::Recheck | Command::Purge | Command::Delete => {
                match self.write_for(command) {
                    Ok(request) => self.ask(request),
                    Err(why) => self.set_status(Severity::Warning, why),
                }
            }
            Command::HandOff | Command::TakeOver => self.run_engine(command),
            Command::Confirm | Command::Cancel => {}
        }
    }

    fn switch_pane(&mut self, forward: bool) {
        if matches!(self.view(), View::CacheDetail(_)) {
            self.switch_cache_section();
            return;
        }
        if matches!(self.view(), View::ShimDetail(_)) {
            self.section = if self.section == DetailSection::Nodes {
                DetailSection::Events
            } else {
                DetailSection::Nodes
            };
            return;
        }
        if matches!(self.view(), View::Detail(_) | View::Day0Detail(_)) {
            self.section = if forward {
                self.section.next()
            } else {
                self.section.previous()
            };
            return;
        }
        let roots: Vec<View> = View::ROOTS.iter().map(|(_, v)| v.clone()).collect();
        let position = roots.iter().position(|v| v == self.view()).unwrap_or(0);
        let next = if forward {
            (position + 1) % roots.len()
        } else {
            (position + roots.len() - 1) % roots.len()
        };
        self.views = vec![roots[next].clone()];
        self.refresh_open_view();
        self.refresh_visible();
    }

    /// The row index (into the full list) selected in `list`.
    fn selected_index(&self, list: ListId) -> Option<usize> {
        self.visible(list).get(self.selection(list).index).copied()
    }

    /// The selected image row, in the Images pane or the detail's image section.
    fn selected_image(&self) -> Option<&ImageRow> {
        match self.view() {
            View::Images => self
                .selected_index(ListId::Images)
                .and_then(|i| self.rows.images.get(i)),
            View::Detail(_) if self.section == DetailSection::Images => {
                let detail = self.detail.as_ref()?;
                self.selected_index(ListId::Detail(DetailSection::Images))
                    .and_then(|i| detail.images.get(i))
            }
            _ => None,
        }
    }

    /// The selected Module: the row in Modules, the module of the selected image, or the open detail's Module.
    fn selected_module(&self) -> Option<Target> {
        match self.view() {
            View::Modules => self
                .selected_index(ListId::Modules)
                .and_then(|i| self.rows.modules.get(i))
                .map(|row| Target::namespaced(Kind::Module, &row.namespace, &row.name)),
            View::Images => self
                .selected_image()
                .map(|row| Target::namespaced(Kind::Module, &row.namespace, &row.module)),
            View::Detail(target) => Some(target.clone()),
            _ => None,
        }
    }

    /// The object `y`, `e` and `ctrl-d` act on.
    pub fn selected_object(&self) -> Option<Target> {
        match self.view() {
            View::Modules => self.selected_module(),
            View::Images => self.selected_image().map(|row| {
                Target::namespaced(Kind::ModuleImagesConfig, &row.namespace, &row.module)
            }),
            View::Nodes => self
                .selected_index(ListId::Nodes)
                .and_then(|i| self.rows.nodes.get(i))
                .map(|row| Target::cluster(Kind::Node, &row.name)),
            View::Events => None,
            View::Caches | View::CacheDetail(_) => self.selected_cache_object(),
            View::Detail(target) => match self.section {
                DetailSection::Nodes => {
                    let detail = self.detail.as_ref()?;
                    self.selected_index(ListId::Detail(DetailSection::Nodes))
                        .and_then(|i| detail.nodes.get(i))
                        .map(|row| Target::cluster(Kind::Node, &row.node))
                }
                _ => Some(target.clone()),
            },
            View::Yaml(target) => Some(target.clone()),
            View::Help | View::Engine => None,
            View::Shims | View::ShimDetail(_) | View::Logs(_) => self.selected_shim_object(),
            View::Day0s | View::Day0Detail(_) => self.selected_day0_object(),
        }
    }

    fn enter(&mut self) {
        match self.view() {
            View::Modules | View::Images => {
                if let Some(module) = self.selected_module() {
                    self.open(View::Detail(module));
                }
            }
            View::Shims => {
                if let Some(shim) = self.selected_shim() {
                    let target = Target::cluster(Kind::Shim, &shim.name);
                    self.open(View::ShimDetail(target));
                }
            }
            View::Caches => self.open_cache(),
            View::Day0s => self.open_day0(),
            View::Nodes
            | View::Detail(_)
            | View::ShimDetail(_)
            | View::CacheDetail(_)
            | View::Day0Detail(_) => {
                if let Some(target) = self.selected_object()
                    && !matches!(self.view(), View::Detail(t) | View::ShimDetail(t) | View::CacheDetail(t) | View::Day0Detail(t) if *t == target)
                {
                    self.open(View::Yaml(target));
                }
            }
            View::Events | View::Yaml(_) | View::Help | View::Logs(_) | View::Engine => {}
        }
    }

    fn edit(&mut self) {
        if let Availability::Unavailable(why) = self.availability(Command::Edit) {
            self.set_status(Severity::Warning, why);
            return;
        }
        let Some(target) = self.selected_object() else {
            return;
        };
        match yaml::editable_yaml(&self.data, &target) {
            Ok(text) => self.editor = Some(EditorState::open(target, &text)),
            Err(why) => self.set_status(Severity::Error, why),
        }
    }

    /// The write a command asks for on the current selection, or why there is none.
    fn write_for(&self, command: Command) -> Result<WriteRequest, String> {
        if let Availability::Unavailable(why) = self.availability(command) {
            return Err(why);
        }
        if self.in_cache_views() && matches!(command, Command::Recheck | Command::Purge) {
            return self.cache_write(command);
        }
        if self.in_day0_views() && command == Command::Rebuild {
            return self.day0_rebuild();
        }
        let image = self.selected_image().map(|row| row.image.clone());
        match command {
            Command::Rebuild => self
                .selected_module()
                .map(|module| WriteRequest::Rebuild { module, image })
                .ok_or_else(|| "Select a Module or an image to rebuild".to_owned()),
            Command::Recheck => self
                .selected_module()
                .map(|module| WriteRequest::Recheck { module, image })
                .ok_or_else(|| "Select a Module or an image to check again".to_owned()),
            Command::Delete => self
                .selected_object()
                .map(|target| WriteRequest::Delete { target })
                .ok_or_else(|| "Nothing selected to delete".to_owned()),
            _ => Err(format!("{command} writes nothing")),
        }
    }

    /// Whether a write command can run here, and if not, why: read-only mode, missing permission, or nothing
    /// selected. The hint bar dims unavailable commands with this.
    pub fn availability(&self, command: Command) -> Availability {
        let capability = match command {
            Command::Approve | Command::PauseResume | Command::Retry | Command::Logs => {
                return self.shim_availability(command);
            }
            Command::HandOff | Command::TakeOver => return self.engine_availability(command),
            Command::Recheck | Command::Purge if self.in_cache_views() => {
                if let Some(missing) = self.cache_selection_missing(command) {
                    return missing;
                }
                Capability::CacheWork
            }
            Command::Purge => {
                return Availability::Unavailable(
                    "Purge works on ImageCaches (:caches)".to_owned(),
                );
            }
            Command::Rebuild if self.in_day0_views() => return self.day0_rebuild_availability(),
            Command::Rebuild => Capability::Rebuild,
            Command::Recheck => Capability::Recheck,
            Command::Delete | Command::Edit => match self.selected_object() {
                Some(target) if command == Command::Delete => Capability::Delete(target.kind),
                Some(target) => Capability::Edit(target.kind),
                None => return Availability::Unavailable("Nothing selected".to_owned()),
            },
            _ => return Availability::Available,
        };
        if matches!(command, Command::Rebuild | Command::Recheck)
            && !self.in_cache_views()
            && self.selected_module().is_none()
        {
            return Availability::Unavailable(format!(
                "{} needs a Module or an image",
                command.label()
            ));
        }
        if self.session.readonly {
            return Availability::Unavailable(format!(
                "{} is off: read-only mode",
                command.label()
            ));
        }
        match self.access.allowed.get(&capability) {
            Some(false) => Availability::Unavailable(format!(
                "{} is not permitted for you on context {}",
                command.label(),
                self.session.context
            )),
            _ => Availability::Available,
        }
    }

    /// Ask for a `y` before a write.
    fn ask(&mut self, request: WriteRequest) {
        self.mode = Mode::Confirm(request);
    }

    fn on_written(&mut self, outcome: WriteOutcome) {
        let is_apply = matches!(outcome.request, WriteRequest::Apply { .. });
        match outcome.result {
            Ok(message) => {
                if is_apply {
                    self.editor = None;
                }
                self.set_status(Severity::Info, message);
            }
            Err(error) => {
                self.set_status(Severity::Error, error.message.clone());
                if is_apply && let Some(editor) = &mut self.editor {
                    editor.failed(error);
                }
            }
        }
    }
}

/// The text of the `:` prompt, if it is open.
fn prompt_text(mode: &Mode) -> String {
    match mode {
        Mode::Command(prompt) => prompt.text.clone(),
        _ => String::new(),
    }
}

/// Indices of the rows that pass `keep`.
fn indices<T>(rows: &[T], keep: impl Fn(&T) -> bool) -> Vec<usize> {
    rows.iter()
        .enumerate()
        .filter(|(_, row)| keep(row))
        .map(|(index, _)| index)
        .collect()
}
