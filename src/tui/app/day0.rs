//! The Day-0 pane's part of the console: its rows and detail, its selection, and the rebuild of a ModuleDay0's
//! image turned into a confirmed [`WriteRequest`]. `App` calls in here; nothing here does I/O.

use super::{App, Availability, DetailSection, ListId, Selection, View, indices};
use crate::tui::access::Capability;
use crate::tui::data::Kind;
use crate::tui::keymap::Command;
use crate::tui::target::Target;
use crate::tui::view::day0::Day0Row;
use crate::tui::view::day0_detail::{self, Day0NodeRow, Day0PodRow};
use crate::tui::writes::WriteRequest;
use kmm_engine::day0::images::mic_name;

impl App {
    /// Rebuild the open ModuleDay0's detail.
    pub(super) fn refresh_day0_view(&mut self) {
        self.day0_detail = match self.view() {
            View::Day0Detail(target) => day0_detail::detail(
                &self.data,
                target.namespace.as_deref().unwrap_or_default(),
                &target.name,
                self.now,
            ),
            _ => None,
        };
    }

    /// Whether a Day-0 view is open.
    pub(super) fn in_day0_views(&self) -> bool {
        matches!(self.view(), View::Day0s | View::Day0Detail(_))
    }

    /// The visible rows of the Day-0 list, in the `:ns` namespace.
    pub(super) fn day0_visible(&self, visible: &mut std::collections::HashMap<ListId, Vec<usize>>) {
        let namespace = self.namespace.as_deref();
        let f = self.filter(ListId::Day0s);
        visible.insert(
            ListId::Day0s,
            indices(&self.rows.day0s, |r| {
                namespace.is_none_or(|ns| ns == r.namespace) && r.matches(f)
            }),
        );
    }

    /// The ModuleDay0 row selected in the Day-0 pane, or the open ModuleDay0's summary in its detail.
    pub fn selected_day0(&self) -> Option<&Day0Row> {
        match self.view() {
            View::Day0s => self
                .selected_index(ListId::Day0s)
                .and_then(|i| self.rows.day0s.get(i)),
            View::Day0Detail(_) => self.day0_detail.as_ref().map(|d| &d.summary),
            _ => None,
        }
    }

    /// The node row selected in the open ModuleDay0's node section.
    pub fn selected_day0_node(&self) -> Option<&Day0NodeRow> {
        if !matches!(self.view(), View::Day0Detail(_)) || self.section != DetailSection::Nodes {
            return None;
        }
        let detail = self.day0_detail.as_ref()?;
        self.selected_index(ListId::Detail(DetailSection::Nodes))
            .and_then(|i| detail.nodes.get(i))
    }

    /// The image pod row selected in the open ModuleDay0's pod section.
    fn selected_day0_pod(&self) -> Option<&Day0PodRow> {
        if !matches!(self.view(), View::Day0Detail(_)) || self.section != DetailSection::Images {
            return None;
        }
        let detail = self.day0_detail.as_ref()?;
        self.selected_index(ListId::Detail(DetailSection::Images))
            .and_then(|i| detail.pods.get(i))
    }

    /// The object `y`, `e` and `ctrl-d` act on in the Day-0 views: the selected node or pod in the detail, else
    /// the ModuleDay0.
    pub(super) fn selected_day0_object(&self) -> Option<Target> {
        match (self.view(), self.section) {
            (View::Day0Detail(_), DetailSection::Nodes) => self
                .selected_day0_node()
                .map(|row| Target::cluster(Kind::Node, &row.node)),
            (View::Day0Detail(_), DetailSection::Images) => {
                self.selected_day0_pod().map(|row| row.pod.clone())
            }
            _ => self.selected_day0().map(day0_target),
        }
    }

    /// Open the selected ModuleDay0's detail; for a MachineConfig waiting to be handed over, the Events pane
    /// filtered on its name, where the engine's word on what blocks it is shown whole (`esc` clears the filter,
    /// then goes back).
    pub(super) fn open_day0(&mut self) {
        let Some(row) = self.selected_day0() else {
            return;
        };
        if row.awaiting_hand_over {
            let filter = row.name.to_lowercase();
            self.filters.insert(ListId::Events, filter);
            self.selections.insert(ListId::Events, Selection::default());
            self.open(View::Events);
        } else {
            let target = day0_target(row);
            self.open(View::Day0Detail(target));
        }
    }

    /// Whether the selected ModuleDay0's image can be rebuilt, and if not, why: nothing selected, no image work
    /// under way (the engine keeps a ModuleImagesConfig only while the pool is not on the image), read-only, or
    /// not permitted.
    pub(super) fn day0_rebuild_availability(&self) -> Availability {
        let unavailable = |why: String| Availability::Unavailable(why);
        let Some(row) = self.selected_day0() else {
            return unavailable("Rebuild needs a ModuleDay0".to_owned());
        };
        if self
            .data
            .mic(&row.namespace, &mic_name(&row.name))
            .is_none()
        {
            return unavailable(format!(
                "{} has no image work under way: its pool runs the image, or it waits for its pool",
                row.name
            ));
        }
        self.permitted(Command::Rebuild.label(), Capability::Rebuild)
    }

    /// The rebuild of the selected ModuleDay0's image, or why there is none.
    pub(super) fn day0_rebuild(&self) -> Result<WriteRequest, String> {
        if let Availability::Unavailable(why) = self.day0_rebuild_availability() {
            return Err(why);
        }
        self.selected_day0()
            .map(|row| WriteRequest::RebuildDay0 {
                day0: day0_target(row),
            })
            .ok_or_else(|| "Select a ModuleDay0 to rebuild".to_owned())
    }
}

/// The object a row shows: its ModuleDay0, or the MachineConfig waiting to be handed over.
fn day0_target(row: &Day0Row) -> Target {
    if row.awaiting_hand_over {
        Target::cluster(Kind::MachineConfig, &row.name)
    } else {
        Target::namespaced(Kind::ModuleDay0, &row.namespace, &row.name)
    }
}
