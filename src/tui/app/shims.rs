//! The Shims pane's part of the console: its rows and detail, its selection, the installer log view, and the
//! rollout commands (approve, pause/resume, retry, logs), each turned into a confirmed [`WriteRequest`] or a
//! [`Request::PodLog`]. `App` calls in here; nothing here does I/O.

use super::{App, Availability, DetailSection, ListId, Mode, Request, Severity, View, indices};
use crate::tui::access::Capability;
use crate::tui::data::Kind;
use crate::tui::keymap::Command;
use crate::tui::target::Target;
use crate::tui::view::shim_detail::{self, ShimDetail, ShimNodeRow};
use crate::tui::view::shims::ShimRow;
use crate::tui::writes::WriteRequest;

/// What the Shims pane shows beyond its rows: the open Shim's detail and the installer log being read.
#[derive(Clone, Debug, Default)]
pub struct ShimPane {
    /// The open Shim's detail, while the Shim detail view is open.
    pub detail: Option<ShimDetail>,
    /// The log view's lines, once they arrived, or why the log cannot be read.
    pub log: Option<Result<Vec<String>, String>>,
}

impl App {
    /// Rebuild the open Shim's detail, and drop a log that no view shows any more.
    pub(super) fn refresh_shim_view(&mut self) {
        self.shim.detail = match self.view() {
            View::ShimDetail(target) => shim_detail::detail(&self.data, &target.name, self.now),
            _ => None,
        };
        if !matches!(self.view(), View::Logs(_)) {
            self.shim.log = None;
        }
    }

    /// The visible rows of the Shims list and of the log view.
    pub(super) fn shim_visible(&self, visible: &mut std::collections::HashMap<ListId, Vec<usize>>) {
        let f = self.filter(ListId::Shims);
        visible.insert(ListId::Shims, indices(&self.rows.shims, |r| r.matches(f)));
        if let Some(Ok(lines)) = &self.shim.log {
            let f = self.filter(ListId::Logs);
            visible.insert(
                ListId::Logs,
                indices(lines, |line| line.to_lowercase().contains(f)),
            );
        }
    }

    /// The Shim row selected in the Shims pane, or the open Shim's summary in its detail.
    pub fn selected_shim(&self) -> Option<&ShimRow> {
        match self.view() {
            View::Shims => self
                .selected_index(ListId::Shims)
                .and_then(|i| self.rows.shims.get(i)),
            View::ShimDetail(_) => self.shim.detail.as_ref().map(|d| &d.summary),
            _ => None,
        }
    }

    /// The node row selected in the open Shim's node section.
    pub fn selected_shim_node(&self) -> Option<&ShimNodeRow> {
        if !matches!(self.view(), View::ShimDetail(_)) || self.section != DetailSection::Nodes {
            return None;
        }
        let detail = self.shim.detail.as_ref()?;
        self.selected_index(ListId::Detail(DetailSection::Nodes))
            .and_then(|i| detail.nodes.get(i))
    }

    /// The object `y`, `e` and `ctrl-d` act on in the Shim views, when one of them is open.
    pub(super) fn selected_shim_object(&self) -> Option<Target> {
        match self.view() {
            View::ShimDetail(_) if self.section == DetailSection::Nodes => self
                .selected_shim_node()
                .map(|row| Target::cluster(Kind::Node, &row.node)),
            View::Logs(pod) => Some(pod.clone()),
            _ => self
                .selected_shim()
                .map(|row| Target::cluster(Kind::Shim, &row.name)),
        }
    }

    /// Whether a rollout command can run on the current selection, and if not, why.
    pub(super) fn shim_availability(&self, command: Command) -> Availability {
        let unavailable = |why: String| Availability::Unavailable(why);
        if command == Command::Logs {
            return match self.selected_shim_node() {
                Some(row) if row.pod.is_some() => Availability::Available,
                Some(row) => unavailable(format!("No installer pod on {} to read", row.node)),
                None => unavailable("Logs needs a node of a Shim selected".to_owned()),
            };
        }
        let Some(shim) = self.selected_shim() else {
            return unavailable(format!("{} needs a Shim", command.label()));
        };
        let reason = match command {
            Command::Approve if shim.awaiting_batch.is_none() => {
                Some(format!("{} waits for no approval", shim.name))
            }
            Command::PauseResume if !shim.strategy.starts_with("rolling") => Some(format!(
                "{} is not rolled out in batches: nothing to pause",
                shim.name
            )),
            Command::Retry if shim.failed == 0 && self.failed_node_selected().is_none() => {
                Some(format!("{} has no failed node", shim.name))
            }
            _ => None,
        };
        if let Some(why) = reason {
            return unavailable(why);
        }
        self.permitted(command.label(), Capability::SteerShim)
    }

    /// The selected node of the open Shim, when its install failed.
    fn failed_node_selected(&self) -> Option<&ShimNodeRow> {
        self.selected_shim_node()
            .filter(|row| row.state == "Failed")
    }

    /// Run a rollout command: ask for a confirmation, or fetch a log.
    pub(super) fn run_shim(&mut self, command: Command) {
        if let Availability::Unavailable(why) = self.availability(command) {
            self.set_status(Severity::Warning, why);
            return;
        }
        if command == Command::Logs {
            if let Some(pod) = self.selected_shim_node().and_then(|row| row.pod.clone()) {
                self.shim.log = None;
                self.requests.push(Request::PodLog(pod.clone()));
                self.open(View::Logs(pod));
            }
            return;
        }
        let Some(shim) = self.selected_shim() else {
            return;
        };
        let target = Target::cluster(Kind::Shim, &shim.name);
        let request = match command {
            Command::Approve => shim.awaiting_batch.map(|batch| WriteRequest::ApproveBatch {
                shim: target,
                batch,
            }),
            Command::PauseResume => Some(WriteRequest::SetPaused {
                paused: !shim.paused,
                shim: target,
            }),
            Command::Retry => Some(WriteRequest::RetryNodes {
                shim: target,
                nodes: self
                    .failed_node_selected()
                    .map(|row| vec![row.node.clone()])
                    .unwrap_or_default(),
            }),
            _ => None,
        };
        if let Some(request) = request {
            self.mode = Mode::Confirm(request);
        }
    }

    /// A log arrived: keep it if its view is still open.
    pub(super) fn on_pod_log(&mut self, pod: &Target, log: Result<Vec<String>, String>) {
        if matches!(self.view(), View::Logs(open) if open == pod) {
            self.shim.log = Some(log);
            let lines = self
                .shim
                .log
                .as_ref()
                .and_then(|l| l.as_ref().ok())
                .map_or(0, Vec::len);
            // A log is read from its end: select the last line.
            self.refresh_visible();
            let height = self.page_height();
            self.selections.entry(ListId::Logs).or_default().set(
                lines.saturating_sub(1),
                lines,
                height,
            );
        }
    }
}
