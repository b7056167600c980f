//! The console's state and how it changes. The UI task owns one [`App`]; every [`Action`] goes through
//! [`App::update`], which changes the state and queues [`Request`]s (API writes, context switches) for the event
//! loop to carry out. Nothing here does I/O, so every behaviour is tested by feeding actions and reading state.

mod caches;
mod cluster_writes;
mod commands;
mod credentials;
mod day0;
mod engine;
mod fleet;
mod input;
mod navigation;
mod objects;
mod preflight;
mod sections;
mod selection;
mod shims;
mod state;

use std::collections::HashMap;

use crossterm::event::{Event as TerminalEvent, KeyEventKind};

use super::access::AccessReport;
use super::action::Action;
use super::data::{ClusterData, FeedState, Kind};
use super::editor::EditorState;
use super::fleet::state::Fleet;
use super::keymap::{Keymap, Scope};
use super::target::Target;
use super::theme::Theme;
use super::view::day0::{self as day0_rows};
use super::view::day0_detail::Day0Detail;
use super::view::devices;
use super::view::events::{self};
use super::view::images::{self};
use super::view::module_detail::{self, ModuleDetail};
use super::view::modules::{self};
use super::view::nodes::{self};
use super::view::shims::{self as shim_rows};
use super::view::summary::Summary;

pub use caches::CachePane;
pub use credentials::Credentials;
pub use engine::{EngineMove, EnginePane};
pub use fleet::FleetFocus;
pub use preflight::{DEFAULT_PREFLIGHT_NAME, PreflightState};
pub use state::{
    Availability, DetailSection, EngineMode, ListId, Mode, Prompt, Request, Rows, Selection,
    Session, Severity, StatusLine, View,
};

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
    /// What the node rows were made from, so a change to a few nodes remakes only their rows.
    node_sources: nodes::NodeSources,
    /// The open Module's detail, when the detail view is open.
    pub module_detail: Option<ModuleDetail>,
    /// The cache views' detail and matrix scroll.
    pub caches: CachePane,
    /// The YAML view's text, when it is open and its object has arrived: its lines, or why the object cannot be
    /// shown.
    pub yaml: Option<Result<Vec<String>, String>>,
    /// The object the YAML view follows (asked of the event loop with [`Request::Follow`]).
    followed: Option<Target>,
    /// The open Shim's detail and the installer log being read.
    pub shim: shims::ShimPane,
    /// The open ModuleDay0's detail, while the Day-0 detail view is open.
    pub day0_detail: Option<Day0Detail>,
    /// This console's engine beyond the Lease: handed off or not, candidates seen, upstream operators.
    pub engine: EnginePane,
    /// The Preflight pane's tables and focused table.
    pub preflight: PreflightState,
    /// Every cluster of the fleet, once the fleet view was opened.
    pub fleet: Option<Fleet>,
    /// The fleet view's table the keys move in.
    pub fleet_focus: FleetFocus,
    /// Whether the watches of `session.context` run: in a console opened on the fleet they start with the first
    /// cluster entered.
    pub watching: bool,
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
    /// Whether the server accepts the kubeconfig's credentials, and what was done when it did not.
    pub credentials: Credentials,
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
            node_sources: nodes::NodeSources::default(),
            module_detail: None,
            caches: CachePane::default(),
            yaml: None,
            followed: None,
            shim: shims::ShimPane::default(),
            day0_detail: None,
            engine: EnginePane::default(),
            preflight: PreflightState::default(),
            fleet: None,
            watching: true,
            views: vec![View::Modules],
            mode: Mode::Normal,
            editor: None,
            section: DetailSection::default(),
            fleet_focus: FleetFocus::default(),
            selections: HashMap::new(),
            filters: HashMap::new(),
            namespace,
            visible: HashMap::new(),
            status: None,
            access: AccessReport::default(),
            credentials: Credentials::default(),
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
        self.credentials = Credentials::default();
        self.access = self.reviews.get(context).cloned().unwrap_or_default();
        self.watching = true;
        if self.views.first() == Some(&View::Fleet) {
            // Entered from the fleet: the cluster's panes, with the fleet one `esc` away.
            self.views = vec![View::Fleet, View::Modules];
        } else {
            self.views.truncate(1);
        }
        self.editor = None;
        self.set_status(Severity::Info, format!("Context {context}"));
        self.refresh();
    }

    /// Apply one message. Returns whether the screen must be redrawn.
    ///
    /// A footer message belongs to the pane it was said on: when the message moves the console to another pane, a
    /// message said before it is cleared (one said while moving is about the new pane, and stays).
    pub fn update(&mut self, action: Action) -> bool {
        let view = self.view().clone();
        let status = self.status.clone();
        let redraw = self.apply(action);
        if self.view() != &view && self.status == status {
            self.status = None;
        }
        redraw
    }

    /// Apply one message to the state. Returns whether the screen must be redrawn.
    fn apply(&mut self, action: Action) -> bool {
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
                self.on_feed_delivered();
                self.now = self.pinned_clock.unwrap_or_else(jiff::Timestamp::now);
                self.refresh_kind(kind);
                true
            }
            Action::Listing(snapshot) => {
                let kind = snapshot.kind();
                self.data.apply(snapshot);
                self.data.set_feed(kind, FeedState::Loading);
                self.now = self.pinned_clock.unwrap_or_else(jiff::Timestamp::now);
                self.refresh_kind(kind);
                true
            }
            Action::Feed(kind, state) => {
                if let FeedState::Failing(why) = &state {
                    self.on_feed_failure(why);
                }
                let delivered = state == FeedState::Live;
                self.data.set_feed(kind, state);
                if delivered {
                    self.on_feed_delivered();
                }
                true
            }
            Action::Dra(serving) => {
                self.data.dra = serving;
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
                let shown = self.engine_shown();
                self.data.engine_lease = lease;
                self.now = self.pinned_clock.unwrap_or_else(jiff::Timestamp::now);
                self.on_engine_lease();
                // A renewal every few seconds moves only the renew time; outside `:engine` it shows nowhere.
                self.view() == &View::Engine || self.engine_shown() != shown
            }
            Action::OsImageKernels(record) => {
                self.data.os_image_kernels = record;
                // Only the Preflight pane shows them.
                self.refresh_open_view();
                self.refresh_visible();
                true
            }
            Action::Engine(event) => {
                self.on_engine_event(event);
                true
            }
            Action::Object(target, object) => self.on_object(&target, object),
            Action::Editable(target, object) => {
                self.on_editable(&target, object);
                true
            }
            Action::PodLog(pod, log) => {
                self.on_pod_log(&pod, log);
                true
            }
            Action::Fleet(context, change) => self.on_fleet_change(&context, change),
            Action::ReconnectDue => {
                self.reconnect_due();
                false
            }
        }
    }

    /// The view on screen.
    pub fn view(&self) -> &View {
        self.views.last().unwrap_or(&View::Modules)
    }

    /// The list the keys move in.
    pub fn list(&self) -> ListId {
        match self.view() {
            View::Preflight => ListId::Preflight(self.preflight.section),
            View::Fleet if self.fleet_focus == FleetFocus::Modules => ListId::FleetModules,
            view => view.list(self.section),
        }
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
            View::ModuleDetail(_) | View::Day0Detail(_) | View::Preflight => {
                usize::from(rows / 3).max(1)
            }
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
        self.node_sources.clear();
        self.rows = Rows {
            modules: modules::rows(&self.data),
            images: images::rows(&self.data, self.now),
            nodes: nodes::rows_reusing(&self.data, Vec::new(), &mut self.node_sources),
            events: events::rows(&self.data, self.now),
            shims: shim_rows::rows(&self.data),
            caches: super::view::caches::rows(&self.data),
            day0s: day0_rows::rows(&self.data),
            fleet: self.fleet_rows(),
            hub_modules: self.rows.hub_modules.clone(),
            devices: devices::rows(&self.data),
            node_devices: HashMap::new(),
        };
        self.rows.node_devices = devices::per_node(&self.rows.devices);
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
            Kind::Node | Kind::NodeModulesConfig => self.refresh_node_rows(),
            Kind::Event => {
                self.rows.events = events::rows(&self.data, self.now);
                // A MachineConfig waiting to be handed over shows the engine's latest word on it.
                self.rows.day0s = day0_rows::rows(&self.data);
            }
            Kind::Shim => self.rows.shims = shim_rows::rows(&self.data),
            Kind::ImageCache => {
                self.rows.caches = super::view::caches::rows(&self.data);
                self.node_sources.clear();
                self.refresh_node_rows();
            }
            Kind::ModuleDay0 | Kind::MachineConfigPool | Kind::MachineConfig => {
                self.rows.day0s = day0_rows::rows(&self.data);
            }
            // Only the Preflight pane shows them, rebuilt with the open view below.
            Kind::PreflightValidation => {}
            Kind::ResourceSlice | Kind::ResourceClaim => self.refresh_devices(),
            // Only the fleet view shows them, from each cluster's own data.
            Kind::ManagedClusterModule => {}
        }
        self.refresh_open_view();
        self.refresh_visible();
    }

    /// Remake the device rows and each node's device counts.
    fn refresh_devices(&mut self) {
        self.rows.devices = devices::rows(&self.data);
        self.rows.node_devices = devices::per_node(&self.rows.devices);
    }

    /// Remake the node rows whose Node or NodeModulesConfig changed; move the others over.
    fn refresh_node_rows(&mut self) {
        let previous = std::mem::take(&mut self.rows.nodes);
        self.rows.nodes = nodes::rows_reusing(&self.data, previous, &mut self.node_sources);
    }

    fn refresh_open_view(&mut self) {
        self.module_detail = match self.view() {
            View::ModuleDetail(target) => module_detail::detail(
                &self.data,
                target.namespace.as_deref().unwrap_or_default(),
                &target.name,
                self.now,
            ),
            _ => None,
        };
        self.refresh_cache_detail();
        self.follow_yaml_object();
        self.refresh_shim_view();
        self.refresh_day0_view();
        self.refresh_preflight_view();
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
        self.detail_visible(&mut visible);
        visible.extend(self.cache_lists(in_namespace));
        if let Some(Ok(lines)) = &self.yaml {
            visible.insert(ListId::Yaml, (0..lines.len()).collect());
        }
        visible.insert(ListId::Help, (0..self.help_lines()).collect());
        self.shim_visible(&mut visible);
        self.day0_visible(&mut visible);
        self.preflight_visible(&mut visible);
        self.engine_visible(&mut visible);
        let f = filter(ListId::Devices);
        visible.insert(
            ListId::Devices,
            indices(&self.rows.devices, |r| r.matches(&f)),
        );
        let f = filter(ListId::Fleet);
        visible.insert(ListId::Fleet, indices(&self.rows.fleet, |r| r.matches(&f)));
        let f = filter(ListId::FleetModules);
        visible.insert(
            ListId::FleetModules,
            indices(&self.rows.hub_modules, |r| r.matches(&f)),
        );
        self.visible = visible;
        let height = self.page_height();
        for (list, rows) in &self.visible {
            let selection = self.selections.entry(*list).or_default();
            let index = selection.index;
            selection.set(index, rows.len(), height);
        }
    }

    /// The header's counts of the open cluster.
    pub fn summary(&self) -> Summary {
        let ready = self.rows.nodes.iter().filter(|n| n.ready).count();
        Summary::of(
            &self.rows.modules,
            &self.rows.shims,
            &self.rows.caches,
            &self.rows.day0s,
        )
        .with_nodes(ready, self.rows.nodes.len())
    }

    /// What the header and footer show of the engine Lease: who acts, in both lengths, and the footer's message.
    fn engine_shown(&self) -> (String, &'static str, Option<StatusLine>) {
        (
            self.engine_summary(),
            self.engine_badge(),
            self.status.clone(),
        )
    }

    /// Lines of the help view, as it draws them.
    pub fn help_lines(&self) -> usize {
        super::help::help_lines(&self.keymap).len()
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
