//! The objects the YAML view and the editor show, which the event loop reads whole from the API server
//! ([`crate::tui::live`]): the YAML view follows its object while it is open ([`Request::Follow`]), the editor
//! opens once its object has been read ([`Request::Edit`]). Nothing here does I/O.

use serde_json::Value;

use super::{App, Availability, Request, Severity, View};
use crate::tui::editor::EditorState;
use crate::tui::keymap::Command;
use crate::tui::target::Target;
use crate::tui::yaml;

impl App {
    /// Follow the object of the open YAML view, and stop following once it closes. A newly opened view shows
    /// nothing until its object arrives.
    pub(super) fn follow_yaml_object(&mut self) {
        let wanted = match self.view() {
            View::Yaml(target) => Some(target.clone()),
            _ => None,
        };
        if wanted != self.followed {
            self.yaml = None;
            self.requests.push(Request::Follow(wanted.clone()));
            self.followed = wanted;
        }
    }

    /// The followed object arrived or changed: show it, if its view is still open. Returns whether the screen
    /// changed.
    pub(super) fn on_object(
        &mut self,
        target: &Target,
        object: Result<Option<Value>, String>,
    ) -> bool {
        if !matches!(self.view(), View::Yaml(open) if open == target) {
            return false;
        }
        self.yaml = Some(match object {
            Ok(Some(object)) => yaml::object_lines(target, object),
            Ok(None) => Err(format!("{target} no longer exists")),
            Err(why) => Err(why),
        });
        self.refresh_visible();
        true
    }

    /// Ask for the selected object to edit, when editing is available here; the editor opens once it is read.
    pub(super) fn edit(&mut self) {
        if let Availability::Unavailable(why) = self.availability(Command::Edit) {
            self.set_status(Severity::Warning, why);
            return;
        }
        let Some(target) = self.selected_object() else {
            return;
        };
        self.set_status(Severity::Info, format!("Reading {target}"));
        self.requests.push(Request::Edit(target));
    }

    /// The object to edit was read: open the editor on it, unless another edit is under way.
    pub(super) fn on_editable(&mut self, target: &Target, object: Result<Value, String>) {
        if self.editor.is_some() {
            return;
        }
        match object.and_then(|object| yaml::editable_yaml(target, object)) {
            Ok(text) => {
                self.status = None;
                self.editor = Some(EditorState::open(target.clone(), &text));
            }
            Err(why) => self.set_status(Severity::Error, why),
        }
    }
}
