//! The fleet view's side of the console: opening it, taking in what the per-cluster tasks report, entering a
//! cluster (the context switch `:ctx` does) and coming back with `esc`; and its second table, the hubs'
//! ManagedClusterModules, where `enter` opens a selected cluster's panes and `R` has the hub build its images
//! again.

use super::{App, Availability, ListId, Request, Severity, View};
use crate::tui::data::Kind;
use crate::tui::fleet::modules::{self as hub_rows, HubModuleRow};
use crate::tui::fleet::rows::{self as fleet_rows, FleetRow};
use crate::tui::fleet::state::{Fleet, FleetChange};
use crate::tui::target::Target;
use crate::tui::writes::WriteRequest;

/// The fleet view's table the keys move in; `tab` moves between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FleetFocus {
    /// One row per cluster.
    #[default]
    Clusters,
    /// The hubs' ManagedClusterModules, a row per selected cluster.
    Modules,
}

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
        self.rows.hub_modules = self.hub_module_rows();
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
        self.rows.hub_modules = self.hub_module_rows();
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
        let modules = self.hub_module_rows();
        let modules_changed = modules != self.rows.hub_modules;
        if modules_changed {
            self.rows.hub_modules = modules;
            self.refresh_visible();
        }
        let rows = self.fleet_rows();
        if rows == self.rows.fleet {
            return modules_changed && self.view() == &View::Fleet;
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

    /// The hubs' ManagedClusterModule rows; none before the fleet was opened.
    fn hub_module_rows(&self) -> Vec<HubModuleRow> {
        self.fleet.as_ref().map_or_else(Vec::new, hub_rows::rows)
    }

    /// The selected row of the fleet view's ManagedClusterModule table, while that table has the keys.
    pub fn selected_hub_module(&self) -> Option<&HubModuleRow> {
        if self.view() != &View::Fleet || self.fleet_focus != FleetFocus::Modules {
            return None;
        }
        self.selected_index(ListId::FleetModules)
            .and_then(|index| self.rows.hub_modules.get(index))
    }

    /// `tab` in the fleet view: the other table, when the fleet has hubs with ManagedClusterModules.
    pub(super) fn switch_fleet_table(&mut self) {
        self.fleet_focus = match self.fleet_focus {
            FleetFocus::Clusters if !self.rows.hub_modules.is_empty() => FleetFocus::Modules,
            _ => FleetFocus::Clusters,
        };
    }

    /// `enter` in the fleet view: the selected cluster's panes, from either table. A module's row opens the
    /// selected cluster's, which the fleet knows by a context of the same name.
    pub(super) fn enter_fleet(&mut self) {
        if self.fleet_focus == FleetFocus::Clusters {
            self.enter_cluster();
            return;
        }
        let Some(row) = self.selected_hub_module() else {
            return;
        };
        let Some(cluster) = row.cluster.clone() else {
            let hub = row.hub.clone();
            self.open_context(hub);
            return;
        };
        let known = self
            .fleet
            .as_ref()
            .is_some_and(|fleet| fleet.members.contains_key(&cluster));
        if known {
            self.open_context(cluster);
        } else {
            self.set_status(
                Severity::Warning,
                format!("No context named {cluster} in the fleet: add it to the kubeconfig (or --contexts) to open it"),
            );
        }
    }

    /// `R` in the fleet view's module table: the hub builds again the images the selected cluster uses (every
    /// image of the module on a row about the whole module), and the dialog names every cluster they serve.
    pub(super) fn hub_rebuild(&self) -> Result<WriteRequest, String> {
        let row = self.selected_hub_module().ok_or_else(|| {
            "Select a ManagedClusterModule (tab to its table) to rebuild".to_owned()
        })?;
        let clusters = match &row.cluster {
            Some(_) if row.images.is_empty() => {
                return Err(format!(
                    "{} has no image to rebuild for {}: {}",
                    row.module,
                    row.cluster.as_deref().unwrap_or_default(),
                    row.why
                ));
            }
            Some(_) => hub_rows::sharing(&self.rows.hub_modules, row)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            None => Vec::new(),
        };
        Ok(WriteRequest::RebuildOnHub {
            hub: row.hub.clone(),
            module: Target::cluster(Kind::ManagedClusterModule, &row.module),
            images: if row.cluster.is_some() {
                row.images.clone()
            } else {
                Vec::new()
            },
            clusters,
        })
    }

    /// Whether `R` can run in the fleet view: on a module row, outside read-only mode. The hub's API server
    /// judges the permission (the access review is the open cluster's).
    pub(super) fn hub_rebuild_availability(&self) -> Availability {
        if self.session.readonly {
            return Availability::Unavailable("Rebuild is off: read-only mode".to_owned());
        }
        match self.hub_rebuild() {
            Ok(_) => Availability::Available,
            Err(why) => Availability::Unavailable(why),
        }
    }

    /// The selected cluster of the fleet view.
    pub fn selected_cluster(&self) -> Option<&FleetRow> {
        self.selected_index(ListId::Fleet)
            .and_then(|index| self.rows.fleet.get(index))
    }

    /// `enter` on a cluster: its panes, through the context switch unless they are the ones already watched.
    fn enter_cluster(&mut self) {
        let Some(context) = self.selected_cluster().map(|row| row.context.clone()) else {
            return;
        };
        self.open_context(context);
    }

    /// The panes of `context`, through the context switch unless they are the ones already watched.
    fn open_context(&mut self, context: String) {
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
