//! The vocabulary of the console's state: views, sections, lists, selections, modes and the
//! requests the event loop carries out.

use std::collections::HashMap;

use crate::tui::fleet::modules::HubModuleRow;
use crate::tui::fleet::rows::FleetRow;
use crate::tui::keymap::Pane;
use crate::tui::target::Target;
use crate::tui::view::caches::CacheRow;
use crate::tui::view::day0::Day0Row;
use crate::tui::view::devices::{DeviceRow, NodeDevices};
use crate::tui::view::events::EventRow;
use crate::tui::view::images::ImageRow;
use crate::tui::view::modules::ModuleRow;
use crate::tui::view::nodes::NodeRow;
use crate::tui::view::preflight::PreflightSection;
use crate::tui::view::shims::ShimRow;
use crate::tui::writes::WriteRequest;

use super::EngineMove;

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
    ModuleDetail(Target),
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
    /// Planning a kernel upgrade: kernels to validate against, every Module's verdict, device plugins lost. Opened
    /// with `:preflight`, outside the `tab` cycle of the lists, since `tab` moves between its tables.
    Preflight,
    /// Every cluster of the kubeconfig, one row each; `enter` opens one, `esc` comes back.
    Fleet,
    /// Every DRA device: where it is published and what holds it.
    Devices,
}

impl View {
    /// The views `:` switches to, by the names it accepts.
    pub const ROOTS: [(&'static str, View); 8] = [
        ("modules", View::Modules),
        ("images", View::Images),
        ("nodes", View::Nodes),
        ("events", View::Events),
        ("shims", View::Shims),
        ("caches", View::Caches),
        ("day0", View::Day0s),
        ("devices", View::Devices),
    ];

    /// The kind of pane the view is, for the keymap to tell which commands act on it.
    pub fn pane(&self) -> Pane {
        match self {
            View::Modules => Pane::Modules,
            View::Images => Pane::Images,
            View::Nodes => Pane::Nodes,
            View::Events => Pane::Events,
            View::Caches => Pane::Caches,
            View::CacheDetail(_) => Pane::CacheDetail,
            View::ModuleDetail(_) => Pane::ModuleDetail,
            View::Yaml(_) => Pane::Yaml,
            View::Help => Pane::Help,
            View::Shims => Pane::Shims,
            View::ShimDetail(_) => Pane::ShimDetail,
            View::Logs(_) => Pane::Logs,
            View::Day0s => Pane::Day0s,
            View::Day0Detail(_) => Pane::Day0Detail,
            View::Engine => Pane::Engine,
            View::Preflight => Pane::Preflight,
            View::Fleet => Pane::Fleet,
            View::Devices => Pane::Devices,
        }
    }

    /// The key of the view's selection and filter: one per list, one per detail section.
    pub(super) fn list(&self, section: DetailSection) -> ListId {
        match self {
            View::Modules => ListId::Modules,
            View::Images => ListId::Images,
            View::Nodes => ListId::Nodes,
            View::Events => ListId::Events,
            View::Caches => ListId::Caches,
            // The matrix has the focus first; `tab` moves it to the image summary.
            View::CacheDetail(_) if section == DetailSection::Nodes => ListId::CacheImages,
            View::CacheDetail(_) => ListId::Coverage,
            View::ModuleDetail(_) => ListId::Detail(section),
            View::Yaml(_) => ListId::Yaml,
            View::Help => ListId::Help,
            View::Shims => ListId::Shims,
            View::ShimDetail(_) => ListId::Detail(section),
            View::Logs(_) => ListId::Logs,
            View::Day0s => ListId::Day0s,
            View::Day0Detail(_) => ListId::Detail(section),
            View::Engine => ListId::Engine,
            View::Preflight => ListId::Preflight(PreflightSection::Kernels),
            View::Fleet => ListId::Fleet,
            View::Devices => ListId::Devices,
        }
    }

    /// The detail section focused when the view opens: a Shim has no image section, and a ModuleDay0 is about
    /// its pool's nodes first.
    pub(super) fn first_section(&self) -> DetailSection {
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
    pub(super) fn next(self) -> DetailSection {
        match self {
            DetailSection::Images => DetailSection::Nodes,
            DetailSection::Nodes => DetailSection::Events,
            DetailSection::Events => DetailSection::Images,
        }
    }

    pub(super) fn previous(self) -> DetailSection {
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
    /// A section of the open detail pane: the Module, Shim and ModuleDay0 details share these lists.
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
    /// A table of the Preflight pane.
    Preflight(PreflightSection),
    /// The clusters of the fleet view.
    Fleet,
    /// The hubs' ManagedClusterModules in the fleet view.
    FleetModules,
    /// The Devices pane.
    Devices,
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
    pub(super) fn set(&mut self, index: usize, len: usize, height: usize) {
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
    /// Follow one object for the YAML view, whole, as the API server has it; `None` stops following.
    Follow(Option<Target>),
    /// Read one object whole for the editor.
    Edit(Target),
    /// Hand this console's engine off, or take it over.
    Engine(EngineMove),
    /// Start following every cluster of the fleet, if not yet.
    OpenFleet,
    /// The server refused the credentials: read the kubeconfig again (same file and context), make a new client
    /// and restart the watches on it, no sooner than the backoff allows.
    Reconnect,
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
    /// Fleet view, most urgent first.
    pub fleet: Vec<FleetRow>,
    /// Fleet view: every hub's ManagedClusterModules, a row per selected cluster, most urgent first.
    pub hub_modules: Vec<HubModuleRow>,
    /// Devices pane: every DRA device.
    pub devices: Vec<DeviceRow>,
    /// DRA devices published and allocated per node, by node name, for the Nodes pane.
    pub node_devices: HashMap<String, NodeDevices>,
}
