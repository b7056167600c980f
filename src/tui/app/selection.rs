//! What is selected: the row of a list, and the image, Module or object the commands act on in the views that
//! are not a pane's own (each pane's module answers for its own rows).

use crate::tui::data::Kind;
use crate::tui::target::Target;
use crate::tui::view::images::ImageRow;

use super::{App, DetailSection, ListId, View};

impl App {
    /// The row index (into the full list) selected in `list`.
    pub(super) fn selected_index(&self, list: ListId) -> Option<usize> {
        self.visible(list).get(self.selection(list).index).copied()
    }

    /// The selected image row, in the Images pane or the detail's image section.
    pub(super) fn selected_image(&self) -> Option<&ImageRow> {
        match self.view() {
            View::Images => self
                .selected_index(ListId::Images)
                .and_then(|i| self.rows.images.get(i)),
            View::ModuleDetail(_) if self.section == DetailSection::Images => {
                let detail = self.module_detail.as_ref()?;
                self.selected_index(ListId::Detail(DetailSection::Images))
                    .and_then(|i| detail.images.get(i))
            }
            _ => None,
        }
    }

    /// The selected Module: the row in Modules, the module of the selected image, or the open detail's Module.
    pub(super) fn selected_module(&self) -> Option<Target> {
        match self.view() {
            View::Modules => self
                .selected_index(ListId::Modules)
                .and_then(|i| self.rows.modules.get(i))
                .map(|row| Target::namespaced(Kind::Module, &row.namespace, &row.name)),
            View::Images => self
                .selected_image()
                .map(|row| Target::namespaced(Kind::Module, &row.namespace, &row.module)),
            View::ModuleDetail(target) => Some(target.clone()),
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
            View::Devices => self
                .selected_index(ListId::Devices)
                .and_then(|i| self.rows.devices.get(i))
                .map(|row| row.object.clone()),
            View::Caches | View::CacheDetail(_) => self.selected_cache_object(),
            View::ModuleDetail(target) => match self.section {
                DetailSection::Nodes => {
                    let detail = self.module_detail.as_ref()?;
                    self.selected_index(ListId::Detail(DetailSection::Nodes))
                        .and_then(|i| detail.nodes.get(i))
                        .map(|row| Target::cluster(Kind::Node, &row.node))
                }
                _ => Some(target.clone()),
            },
            View::Yaml(target) => Some(target.clone()),
            View::Help | View::Engine | View::Fleet => None,
            View::Shims | View::ShimDetail(_) | View::Logs(_) => self.selected_shim_object(),
            View::Day0s | View::Day0Detail(_) => self.selected_day0_object(),
            View::Preflight => self.selected_preflight_object(),
        }
    }
}
