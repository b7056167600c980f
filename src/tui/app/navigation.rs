//! Moving around: opening a view, leaving it, moving between panes or sections, and entering what is selected.

use crate::tui::data::Kind;
use crate::tui::target::Target;

use super::{App, DetailSection, View};

impl App {
    /// Open a view on top of the current one.
    pub(super) fn open(&mut self, view: View) {
        self.section = view.first_section();
        if self.view() != &view {
            self.views.push(view);
        }
        self.refresh_open_view();
        self.refresh_visible();
    }

    /// Clear the list's filter, or else leave the view for the one under it.
    pub(super) fn back(&mut self) {
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

    /// Move to the next (or previous) section of a detail, or root pane.
    pub(super) fn switch_pane(&mut self, forward: bool) {
        if matches!(self.view(), View::CacheDetail(_)) {
            self.switch_cache_section();
            return;
        }
        if self.view() == &View::Preflight {
            self.switch_preflight_section(forward);
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
        if matches!(self.view(), View::ModuleDetail(_) | View::Day0Detail(_)) {
            self.section = if forward {
                self.section.next()
            } else {
                self.section.previous()
            };
            return;
        }
        if self.view() == &View::Fleet {
            self.switch_fleet_table();
            return;
        }
        let roots: Vec<View> = View::ROOTS.iter().map(|(_, v)| v.clone()).collect();
        let position = roots.iter().position(|v| v == self.view()).unwrap_or(0);
        let next = if forward {
            (position + 1) % roots.len()
        } else {
            (position + roots.len() - 1) % roots.len()
        };
        self.set_root(roots[next].clone());
        self.refresh_open_view();
        self.refresh_visible();
    }

    /// Open what is selected: a row's detail, or an object's YAML from a detail.
    pub(super) fn enter(&mut self) {
        match self.view() {
            View::Modules | View::Images => {
                if let Some(module) = self.selected_module() {
                    self.open(View::ModuleDetail(module));
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
            View::Preflight => self.enter_preflight(),
            View::Fleet => self.enter_fleet(),
            View::Nodes
            | View::Devices
            | View::ModuleDetail(_)
            | View::ShimDetail(_)
            | View::CacheDetail(_)
            | View::Day0Detail(_) => {
                if let Some(target) = self.selected_object()
                    && !matches!(self.view(), View::ModuleDetail(t) | View::ShimDetail(t) | View::CacheDetail(t) | View::Day0Detail(t) if *t == target)
                {
                    self.open(View::Yaml(target));
                }
            }
            View::Events | View::Yaml(_) | View::Help | View::Logs(_) | View::Engine => {}
        }
    }
}
