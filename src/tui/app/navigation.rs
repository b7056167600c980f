//! Moving around: opening and leaving views, running navigation commands, and what is selected.

use crate::tui::data::Kind;
use crate::tui::editor::EditorState;
use crate::tui::keymap::Command;
use crate::tui::target::Target;
use crate::tui::view::images::ImageRow;
use crate::tui::yaml;

use super::{App, Availability, DetailSection, ListId, Mode, Prompt, Severity, View};

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

    pub(super) fn run(&mut self, command: Command) {
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
            Command::Build => match self.write_for(command) {
                Ok(request) => self.ask(request),
                Err(why) => self.set_status(Severity::Warning, why),
            },
            Command::Confirm | Command::Cancel => {}
        }
    }

    fn switch_pane(&mut self, forward: bool) {
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
        if matches!(self.view(), View::Detail(_) | View::Day0Detail(_)) {
            self.section = if forward {
                self.section.next()
            } else {
                self.section.previous()
            };
            return;
        }
        if self.view() == &View::Fleet {
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
            View::Detail(_) if self.section == DetailSection::Images => {
                let detail = self.detail.as_ref()?;
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
            View::Help | View::Engine | View::Fleet => None,
            View::Shims | View::ShimDetail(_) | View::Logs(_) => self.selected_shim_object(),
            View::Day0s | View::Day0Detail(_) => self.selected_day0_object(),
            View::Preflight => self.selected_preflight_object(),
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
            View::Preflight => self.enter_preflight(),
            View::Fleet => self.enter_cluster(),
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
}
