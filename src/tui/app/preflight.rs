//! The Preflight pane's part of the console: its tables and sections, picking a kernel to validate against (a row
//! of the kernel table, or `:preflight <kernel>`), and `B`, which has the validation push the images it builds.
//! Both become confirmed [`WriteRequest`]s; nothing here does I/O.

use super::{App, Availability, ListId, View, indices};
use crate::tui::access::Capability;
use crate::tui::data::Kind;
use crate::tui::keymap::Command;
use crate::tui::target::Target;
use crate::tui::view::preflight::{self, PreflightPane, PreflightSection};
use crate::tui::writes::WriteRequest;

/// Name of the PreflightValidation the console creates when the cluster has none, as upstream's sample names it.
pub const DEFAULT_PREFLIGHT_NAME: &str = "preflight";

/// The Preflight pane's tables and focused section.
#[derive(Clone, Debug, Default)]
pub struct PreflightState {
    /// What the pane shows, rebuilt while it is open.
    pub pane: PreflightPane,
    /// The table the keys move in.
    pub section: PreflightSection,
}

impl App {
    /// Rebuild the pane's tables while it is open.
    pub(super) fn refresh_preflight_view(&mut self) {
        if self.view() == &View::Preflight {
            self.preflight.pane = preflight::pane(&self.data);
        }
    }

    /// The visible rows of the pane's tables, after their filters.
    pub(super) fn preflight_visible(
        &self,
        visible: &mut std::collections::HashMap<ListId, Vec<usize>>,
    ) {
        let filter = |section| {
            self.filters
                .get(&ListId::Preflight(section))
                .cloned()
                .unwrap_or_default()
        };
        let pane = &self.preflight.pane;
        let namespace = self.namespace.as_deref();
        let f = filter(PreflightSection::Kernels);
        visible.insert(
            ListId::Preflight(PreflightSection::Kernels),
            indices(&pane.kernels, |r| r.matches(&f)),
        );
        let f = filter(PreflightSection::Modules);
        visible.insert(
            ListId::Preflight(PreflightSection::Modules),
            indices(&pane.modules, |r| {
                namespace.is_none_or(|ns| ns == r.namespace) && r.matches(&f)
            }),
        );
        let f = filter(PreflightSection::Nodes);
        visible.insert(
            ListId::Preflight(PreflightSection::Nodes),
            indices(&pane.nodes, |r| r.matches(&f)),
        );
    }

    /// Move to the next (or previous) table of the pane.
    pub(super) fn switch_preflight_section(&mut self, forward: bool) {
        let section = self.preflight.section;
        self.preflight.section = if forward {
            section.next()
        } else {
            section.previous()
        };
    }

    fn selected_preflight_row(&self, section: PreflightSection) -> Option<usize> {
        if self.view() != &View::Preflight || self.preflight.section != section {
            return None;
        }
        self.selected_index(ListId::Preflight(section))
    }

    /// The object `y`, `e` and `ctrl-d` act on in the pane: the selected Module or node, else the validation.
    pub(super) fn selected_preflight_object(&self) -> Option<Target> {
        let pane = &self.preflight.pane;
        match self.preflight.section {
            PreflightSection::Modules => self
                .selected_preflight_row(PreflightSection::Modules)
                .and_then(|i| pane.modules.get(i))
                .map(|r| Target::namespaced(Kind::Module, &r.namespace, &r.name)),
            PreflightSection::Nodes => self
                .selected_preflight_row(PreflightSection::Nodes)
                .and_then(|i| pane.nodes.get(i))
                .map(|r| Target::cluster(Kind::Node, &r.node)),
            PreflightSection::Kernels => pane
                .preflight
                .as_ref()
                .map(|p| Target::cluster(Kind::PreflightValidation, &p.name)),
        }
    }

    /// `enter` in the pane: validate against the selected kernel, or open the selected Module.
    pub(super) fn enter_preflight(&mut self) {
        match self.preflight.section {
            PreflightSection::Kernels => {
                let kernel = self
                    .selected_preflight_row(PreflightSection::Kernels)
                    .and_then(|i| self.preflight.pane.kernels.get(i))
                    .map(|r| r.kernel.clone());
                if let Some(kernel) = kernel {
                    self.validate_kernel(&kernel);
                }
            }
            PreflightSection::Modules => {
                if let Some(module) = self.selected_preflight_object() {
                    self.open(View::ModuleDetail(module));
                }
            }
            PreflightSection::Nodes => {}
        }
    }

    /// Ask to validate every Module against `kernel`: the pane's PreflightValidation moves to it (or one is
    /// created), or, when it validates that kernel already, nothing is written.
    pub(super) fn validate_kernel(&mut self, kernel: &str) {
        let kernel = kernel.trim();
        if kernel.is_empty() {
            self.set_status(
                super::Severity::Warning,
                "Name a kernel: :preflight <kernel version>",
            );
            return;
        }
        if let Availability::Unavailable(why) = self.permitted("Validate", Capability::Preflight) {
            self.set_status(super::Severity::Warning, why);
            return;
        }
        let current = preflight::current(&self.data);
        if current.is_some_and(|p| p.spec.kernel_version.trim() == kernel) {
            self.set_status(
                super::Severity::Info,
                format!("Every Module is being validated against {kernel} already"),
            );
            return;
        }
        let name = current
            .and_then(|p| p.metadata.name.clone())
            .unwrap_or_else(|| DEFAULT_PREFLIGHT_NAME.to_owned());
        self.ask(WriteRequest::ValidateKernel {
            preflight: Target::cluster(Kind::PreflightValidation, &name),
            kernel: kernel.to_owned(),
            create: current.is_none(),
        });
    }

    /// The hint bar's word for `enter` in the kernel table.
    pub(super) fn preflight_hint_label(&self, command: Command) -> Option<&'static str> {
        (command == Command::Enter
            && self.view() == &View::Preflight
            && self.preflight.section == PreflightSection::Kernels)
            .then_some("Validate")
    }

    /// Whether `B` can run, and if not, why: no validation, nothing to build, pushing on already, read-only, or
    /// not permitted.
    pub(super) fn preflight_build_availability(&self) -> Availability {
        let pane = &self.preflight.pane;
        let Some(summary) = &pane.preflight else {
            return Availability::Unavailable(
                "Build needs a kernel being validated: pick one first".to_owned(),
            );
        };
        if summary.push_built_image {
            return Availability::Unavailable(format!(
                "{} builds and pushes the images already",
                summary.name
            ));
        }
        if !pane.modules.iter().any(|m| m.can_build) {
            return Availability::Unavailable(format!(
                "No Module builds or signs its image for {}",
                summary.kernel
            ));
        }
        self.permitted("Build", Capability::Preflight)
    }

    /// The write `B` asks for, or why there is none.
    pub(super) fn preflight_build(&self) -> Result<WriteRequest, String> {
        if let Availability::Unavailable(why) = self.preflight_build_availability() {
            return Err(why);
        }
        let pane = &self.preflight.pane;
        let summary = pane
            .preflight
            .as_ref()
            .ok_or_else(|| "Pick a kernel first".to_owned())?;
        Ok(WriteRequest::PushBuiltImages {
            preflight: Target::cluster(Kind::PreflightValidation, &summary.name),
            kernel: summary.kernel.clone(),
            modules: pane
                .modules
                .iter()
                .filter(|m| m.can_build)
                .map(|m| format!("{}/{}", m.namespace, m.name))
                .collect(),
        })
    }

    /// The `:preflight <kernel>` completions: the kernels the pane knows of.
    pub(super) fn preflight_completions(&self, partial: &str) -> Vec<String> {
        let mut kernels: Vec<String> = preflight::pane(&self.data)
            .kernels
            .into_iter()
            .map(|r| r.kernel)
            .filter(|k| k.starts_with(partial))
            .map(|k| format!("preflight {k}"))
            .collect();
        kernels.dedup();
        kernels
    }
}
