//! Commands that write to the cluster: which write a command means here, whether it is available,
//! and what its outcome tells the user.

use crate::tui::access::Capability;
use crate::tui::keymap::Command;
use crate::tui::writes::{WriteOutcome, WriteRequest};

use super::{App, Availability, Mode, Severity, View};

impl App {
    /// The write a command asks for on the current selection, or why there is none.
    fn write_for(&self, command: Command) -> Result<WriteRequest, String> {
        if let Availability::Unavailable(why) = self.availability(command) {
            return Err(why);
        }
        if self.in_cache_views() && matches!(command, Command::Recheck | Command::Purge) {
            return self.cache_write(command);
        }
        if self.in_day0_views() && command == Command::Rebuild {
            return self.day0_rebuild();
        }
        if self.view() == &View::Fleet && command == Command::Rebuild {
            return self.hub_rebuild();
        }
        if command == Command::Build {
            return self.preflight_build();
        }
        let image = self.selected_image().map(|row| row.image.clone());
        match command {
            Command::Rebuild => self
                .selected_module()
                .map(|module| WriteRequest::Rebuild { module, image })
                .ok_or_else(|| "Select a Module or an image to rebuild".to_owned()),
            Command::Recheck => self
                .selected_module()
                .map(|module| WriteRequest::Recheck { module, image })
                .ok_or_else(|| "Select a Module or an image to check again".to_owned()),
            Command::Delete => self
                .selected_object()
                .map(|target| WriteRequest::Delete { target })
                .ok_or_else(|| "Nothing selected to delete".to_owned()),
            _ => Err(format!("{command} writes nothing")),
        }
    }

    /// Whether a write command can run here, and if not, why: read-only mode, missing permission, or nothing
    /// selected. The hint bar dims unavailable commands with this.
    pub fn availability(&self, command: Command) -> Availability {
        let capability = match command {
            Command::Approve | Command::PauseResume | Command::Retry | Command::Logs => {
                return self.shim_availability(command);
            }
            Command::HandOff | Command::TakeOver => return self.engine_availability(command),
            Command::Build => return self.preflight_build_availability(),
            Command::Recheck | Command::Purge if self.in_cache_views() => {
                if let Some(missing) = self.cache_selection_missing(command) {
                    return missing;
                }
                Capability::CacheWork
            }
            Command::Purge => {
                return Availability::Unavailable(
                    "Purge works on ImageCaches (:caches)".to_owned(),
                );
            }
            Command::Rebuild if self.in_day0_views() => return self.day0_rebuild_availability(),
            Command::Rebuild if self.view() == &View::Fleet => {
                return self.hub_rebuild_availability();
            }
            Command::Rebuild => Capability::Rebuild,
            Command::Recheck => Capability::Recheck,
            Command::Delete | Command::Edit => match self.selected_object() {
                Some(target) if command == Command::Delete => Capability::Delete(target.kind),
                Some(target) => Capability::Edit(target.kind),
                None => return Availability::Unavailable("Nothing selected".to_owned()),
            },
            _ => return Availability::Available,
        };
        if matches!(command, Command::Rebuild | Command::Recheck)
            && !self.in_cache_views()
            && self.selected_module().is_none()
        {
            return Availability::Unavailable(format!(
                "{} needs a Module or an image",
                command.label()
            ));
        }
        self.permitted(command.label(), capability)
    }

    /// Whether the write called `label` may run for this user: not in read-only mode, and not refused by the access
    /// review of this context. An unanswered review offers the write; the server has the last word.
    pub(super) fn permitted(&self, label: &str, capability: Capability) -> Availability {
        if self.session.readonly {
            return Availability::Unavailable(format!("{label} is off: read-only mode"));
        }
        match self.access.allowed.get(&capability) {
            Some(false) => Availability::Unavailable(format!(
                "{label} is not permitted for you on context {}",
                self.session.context
            )),
            _ => Availability::Available,
        }
    }

    /// Ask for the write `command` means here, or say why there is none.
    pub(super) fn request_write(&mut self, command: Command) {
        match self.write_for(command) {
            Ok(request) => self.ask(request),
            Err(why) => self.set_status(Severity::Warning, why),
        }
    }

    /// Ask for a `y` before a write.
    pub(super) fn ask(&mut self, request: WriteRequest) {
        self.mode = Mode::Confirm(request);
    }

    pub(super) fn on_written(&mut self, outcome: WriteOutcome) {
        let is_apply = matches!(outcome.request, WriteRequest::Apply { .. });
        match outcome.result {
            Ok(message) => {
                if is_apply {
                    self.editor = None;
                }
                self.set_status(Severity::Info, message);
            }
            Err(error) => {
                self.set_status(Severity::Error, error.message.clone());
                if is_apply && let Some(editor) = &mut self.editor {
                    editor.failed(error);
                }
            }
        }
    }
}
