//! The YAML editor: an object opened as text in a `ratatui-textarea`, checked before it is sent, and kept open
//! with its buffer on any error so nothing typed is lost.
//!
//! `ctrl-s` submits: the local check (YAML syntax with line and column, the object's identity, the shared
//! validation with field paths) runs first, so its problems show inline before anything leaves the console.
//! `esc` closes an unmodified buffer at once; a modified one asks for a second `esc`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Style;
use ratatui_textarea::TextArea;

use super::target::Target;
use super::writes::apply::{check_object, parse_yaml};
use super::writes::{FieldError, WriteError};

/// What the editor says after a first `esc` on a modified buffer.
pub(super) const DISCARD_NOTICE: &str = "unsaved changes: esc again to discard, ctrl-s to apply";

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
    /// The line (0-based) of the last YAML syntax error, highlighted in the text.
    pub error_line: Option<usize>,
    /// Whether a first `esc` on a modified buffer is waiting for its second.
    pub discard_armed: bool,
    /// The text as opened, to tell whether anything was changed.
    opened: String,
}

impl EditorState {
    /// Open `yaml` for editing, with line numbers.
    pub fn open(target: Target, yaml: &str) -> EditorState {
        let lines: Vec<String> = yaml.lines().map(str::to_owned).collect();
        let opened = lines.join("\n");
        let mut textarea = TextArea::new(lines);
        textarea.set_line_number_style(Style::default());
        // The pane draws the cursor line in the theme's colours.
        textarea.set_cursor_line_style(Style::default());
        EditorState {
            target,
            textarea,
            errors: Vec::new(),
            message: None,
            error_line: None,
            discard_armed: false,
            opened,
        }
    }

    /// The buffer as one string.
    pub fn text(&self) -> String {
        self.textarea.lines().join("\n")
    }

    /// Whether the buffer differs from the text as opened.
    pub fn is_modified(&self) -> bool {
        self.textarea.lines().join("\n") != self.opened
    }

    /// The notice waiting for a second `esc`, while it waits.
    pub fn notice(&self) -> Option<&'static str> {
        self.discard_armed.then_some(DISCARD_NOTICE)
    }

    /// Handle one key: `ctrl-s` submits, `esc` closes (twice on a modified buffer), everything else edits.
    pub fn handle_key(&mut self, key: KeyEvent) -> EditorEvent {
        let armed = std::mem::take(&mut self.discard_armed);
        match (key.code, key.modifiers) {
            (KeyCode::Char('s'), KeyModifiers::CONTROL) => EditorEvent::Submit,
            (KeyCode::Esc, _) if armed || !self.is_modified() => EditorEvent::Close,
            (KeyCode::Esc, _) => {
                self.discard_armed = true;
                EditorEvent::Continue
            }
            _ => {
                self.textarea.input(key);
                EditorEvent::Continue
            }
        }
    }

    /// Check the buffer before anything is sent: the text to apply, or every problem found (which the console
    /// shows inline, keeping the buffer).
    pub fn check(&mut self) -> Result<String, Vec<FieldError>> {
        let text = self.text();
        self.error_line = None;
        let object = match parse_yaml(&text) {
            Ok(object) => object,
            Err(syntax) => {
                self.error_line = syntax.line.map(|line| line.saturating_sub(1));
                return Err(vec![syntax.to_field_error()]);
            }
        };
        let problems = check_object(&self.target, &object);
        if !problems.is_empty() {
            return Err(problems);
        }
        self.errors.clear();
        self.message = None;
        Ok(text)
    }

    /// Show why the last apply failed; the buffer stays as it is.
    pub fn failed(&mut self, error: WriteError) {
        self.message = Some(error.message);
        self.errors = error.fields;
        self.error_line = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::data::Kind;

    const NODE: &str =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-0\n  resourceVersion: '7'\n";

    fn editor() -> EditorState {
        EditorState::open(Target::cluster(Kind::Node, "worker-0"), NODE)
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn type_text(editor: &mut EditorState, text: &str) {
        for c in text.chars() {
            let code = if c == '\n' {
                KeyCode::Enter
            } else {
                KeyCode::Char(c)
            };
            editor.handle_key(key(code));
        }
    }

    #[test]
    fn esc_closes_an_unmodified_buffer_at_once() {
        let mut editor = editor();
        assert!(!editor.is_modified());
        assert_eq!(editor.handle_key(key(KeyCode::Esc)), EditorEvent::Close);
    }

    #[test]
    fn esc_on_a_modified_buffer_asks_once_more() {
        let mut editor = editor();
        type_text(&mut editor, "x");
        assert!(editor.is_modified());
        assert_eq!(editor.handle_key(key(KeyCode::Esc)), EditorEvent::Continue);
        assert_eq!(editor.notice(), Some(DISCARD_NOTICE));
        assert_eq!(editor.handle_key(key(KeyCode::Esc)), EditorEvent::Close);
    }

    #[test]
    fn typing_after_the_first_esc_disarms_it() {
        let mut editor = editor();
        type_text(&mut editor, "x");
        editor.handle_key(key(KeyCode::Esc));
        type_text(&mut editor, "y");
        assert_eq!(editor.notice(), None);
        assert_eq!(editor.handle_key(key(KeyCode::Esc)), EditorEvent::Continue);
    }

    #[test]
    fn ctrl_s_submits() {
        let mut editor = editor();
        let save = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(editor.handle_key(save), EditorEvent::Submit);
    }

    #[test]
    fn a_syntax_error_marks_its_line_and_keeps_the_buffer() {
        let mut editor = editor();
        editor
            .textarea
            .move_cursor(ratatui_textarea::CursorMove::Bottom);
        editor
            .textarea
            .move_cursor(ratatui_textarea::CursorMove::End);
        type_text(&mut editor, "\nlabels: {a: b");
        let before = editor.text();
        let problems = editor.check().expect_err("unbalanced braces");
        assert!(problems[0].path.starts_with("line "), "{problems:?}");
        assert!(editor.error_line.is_some());
        assert_eq!(editor.text(), before);
    }

    #[test]
    fn a_clean_check_clears_old_problems() {
        let mut editor = editor();
        editor.failed(WriteError {
            message: "the server rejected Node worker-0".into(),
            fields: vec![FieldError::new("spec", "bad")],
            code: Some(422),
        });
        assert_eq!(editor.check(), Ok(NODE.trim_end().to_owned()));
        assert!(editor.errors.is_empty() && editor.message.is_none());
    }

    #[test]
    fn an_identity_change_is_caught_before_sending() {
        let mut editor = EditorState::open(
            Target::cluster(Kind::Node, "worker-0"),
            &NODE.replace("worker-0", "worker-1"),
        );
        let problems = editor.check().expect_err("renamed");
        assert_eq!(problems[0].path, "metadata.name");
        assert_eq!(editor.error_line, None);
    }
}
