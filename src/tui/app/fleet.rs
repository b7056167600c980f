//! The fleet view's side of the console: opening it, taking in what the per-cluster tasks report, entering a
//! cluster (the context switch `:ctx` does) and coming back with `esc`.

use super::{App, ListId, Request, Severity, View};
use crate::tui::fleet::rows::{self as fleet_rows, FleetRow};
use crate::tui::fleet::state::{Fleet, FleetChange};

impl App {
    /// Open the fleet view on these contexts at start-up, before any cluster's panes: their watches wait until
    /// a cluster is entered.
    pub fn start_in_fleet(&mut self, contexts: &[String]) {
        self.watching = false;
        self.fleet_contexts(contexts);
        self.views = vec![View::Fleet];
        self.refresh_visible();
    }

    /// Follow these contexts in the fleet view (the event loop started their tasks).
    pub fn fleet_contexts(&mut self, contexts: &[String]) {
        self.fleet
            .get_or_insert_with(Fleet::default)
            .add(contexts, self.now);
        self.rows.fleet = self.fleet_rows();
        self.refresh_visible();
    }

    /// `:fleet`: show every cluster, starting their tasks the first time.
    pub(super) fn show_fleet(&mut self) {
        if self.fleet.is_none() {
            self.fleet = Some(Fleet::default());
            self.requests.push(Request::OpenFleet);
        }
        self.views = vec![View::Fleet];
        self.rows.fleet = self.fleet_rows();
        self.refresh_visible();
    }

    /// Take in news about one cluster. Returns whether the screen changes: only the fleet view shows it, and a
    /// Lease renewal that changes no row changes nothing. When rows move, a selection on the top row stays on top
    /// (the cluster that most needs a person), and one the user moved down stays on its cluster, so `enter` opens
    /// the cluster chosen.
    pub(super) fn on_fleet_change(&mut self, context: &str, change: FleetChange) -> bool {
        let now = self.pinned_clock.unwrap_or_else(jiff::Timestamp::now);
        let Some(fleet) = &mut self.fleet else {
            return false;
        };
        fleet.apply(context, change, now);
        self.now = now;
        let rows = self.fleet_rows();
        if rows == self.rows.fleet {
            return false;
        }
        let selected = (self.selection(ListId::Fleet).index > 0)
            .then(|| self.selected_cluster().map(|row| row.context.clone()))
            .flatten();
        self.rows.fleet = rows;
        self.refresh_visible();
        if let Some(selected) = selected {
            let visible = self.visible(ListId::Fleet);
            let position = visible
                .iter()
                .position(|index| self.rows.fleet[*index].context == selected);
            if let Some(position) = position {
                let (len, height) = (visible.len(), self.page_height());
                self.selections
                    .entry(ListId::Fleet)
                    .or_default()
                    .set(position, len, height);
            }
        }
        self.view() == &View::Fleet
    }

    /// The fleet's rows, most urgent first; none before the fleet was opened.
    pub(super) fn fleet_rows(&self) -> Vec<FleetRow> {
        self.fleet.as_ref().map_or_else(Vec::new, |fleet| {
            fleet_rows::rows(
                fleet,
                &self.session.context,
                self.session.engine_identity.as_deref(),
                self.now,
            )
        })
    }

    /// The selected cluster of the fleet view.
    pub fn selected_cluster(&self) -> Option<&FleetRow> {
        self.selected_index(ListId::Fleet)
            .and_then(|index| self.rows.fleet.get(index))
    }

    /// `enter` on a cluster: its panes, through the context switch unless they are the ones already watched.
    pub(super) fn enter_cluster(&mut self) {
        let Some(context) = self.selected_cluster().map(|row| row.context.clone()) else {
            return;
        };
        if context == self.session.context && self.watching {
            self.views = vec![View::Fleet, View::Modules];
            self.refresh_open_view();
            self.refresh_visible();
        } else {
            self.requests.push(Request::SwitchContext(context.clone()));
            self.set_status(Severity::Info, format!("Opening context {context}…"));
        }
    }

    /// Replace the root view, keeping the fleet beneath when the console came from it.
    pub(super) fn set_root(&mut self, view: View) {
        self.views = if self.views.first() == Some(&View::Fleet) && view != View::Fleet {
            vec![View::Fleet, view]
        } else {
            vec![view]
        };
    }
}
