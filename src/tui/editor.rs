//! The YAML editor: an object opened as text in a `ratatui-textarea`, checked before it is sent, and kept open
//! with its buffer on any error so nothing typed is lost.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::TextArea;

use super::target::Target;
use super::writes::{FieldError, WriteError};

/// What a key press in the editor asks of the console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditorEvent {
    /// Keep editing.
    Continue,
    /// Check the buffer and, if it passes, confirm and apply it.
    Submit,
    /// Close the editor, dropping the buffer.
    Close,
}

/// An object being edited.
#[derive(Debug)]
pub struct EditorState {
    /// The object.
    pub target: Target,
    /// The text.
    pub textarea: TextArea<'static>,
    /// Problems found by the last check or the server, shown under the text.
    pub errors: Vec<FieldError>,
    /// One line about the last attempt.
    pub message: Option<String>,
}

impl EditorState {
    /// Open `yaml` for editing.
    pub fn open(target: Target, yaml: &str) -> EditorState {
        EditorState {
            target,
            textarea: TextArea::new(yaml.lines().map(str::to_owned).collect()),
            errors: Vec::new(),
            message: None,
        }
    }

    /// The buffer as one string.
    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    /// Handle one key: `ctrl-s` submits, `esc` closes, everything else edits.
    pub fn handle_key(&mut self, key: KeyEvent) -> EditorEvent {
        match (key.code, key.modifiers) {
            (KeyCode::Char('s'), KeyModifiers::CONTROL) => EditorEvent::Submit,
            (KeyCode::Esc, _) => EditorEvent::Close,
            _ => {
                self.textarea.input(key);
                EditorEvent::Continue
            }
        }
    }

    /// Check the buffer before anything is sent.
    pub fn check(&self) -> Result<String, Vec<FieldError>> {
        Ok(self.text())
    }

    /// Show why the last apply failed; the buffer stays as it is.
    pub fn failed(&mut self, error: WriteError) {
        self.message = Some(error.message);
        self.errors = error.fields;
    }
}
