//! The sections of the detail panes: the Module, Shim and ModuleDay0 details list their images (or image pods),
//! nodes and events in the same [`ListId::Detail`] lists, so one rule says which of their rows a section shows.

use std::collections::HashMap;

use super::{App, DetailSection, ListId, indices};

impl App {
    /// The visible rows of the open detail's sections: the rows that pass each section's `/` filter. At most one
    /// detail is open, so at most one of them fills the lists.
    pub(super) fn detail_visible(&self, visible: &mut HashMap<ListId, Vec<usize>>) {
        let mut show = |section: DetailSection, rows: Vec<usize>| {
            visible.insert(ListId::Detail(section), rows);
        };
        let filter = |section: DetailSection| self.filter(ListId::Detail(section));
        let (images, nodes, events) = (
            filter(DetailSection::Images),
            filter(DetailSection::Nodes),
            filter(DetailSection::Events),
        );
        if let Some(detail) = &self.module_detail {
            show(
                DetailSection::Images,
                indices(&detail.images, |r| r.matches(images)),
            );
            show(
                DetailSection::Nodes,
                indices(&detail.nodes, |r| r.matches(nodes)),
            );
            show(
                DetailSection::Events,
                indices(&detail.events, |r| r.matches(events)),
            );
        }
        if let Some(detail) = &self.shim.detail {
            show(
                DetailSection::Nodes,
                indices(&detail.nodes, |r| r.matches(nodes)),
            );
            show(
                DetailSection::Events,
                indices(&detail.events, |r| r.matches(events)),
            );
        }
        if let Some(detail) = &self.day0_detail {
            show(
                DetailSection::Images,
                indices(&detail.pods, |r| r.matches(images)),
            );
            show(
                DetailSection::Nodes,
                indices(&detail.nodes, |r| r.matches(nodes)),
            );
            show(
                DetailSection::Events,
                indices(&detail.events, |r| r.matches(events)),
            );
        }
    }
}
