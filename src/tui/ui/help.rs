//! The help view, generated from the keymap and the `:` prompt's command table, so it lists exactly the keys that
//! work, the action names a keymap file binds them by, and every `:` command.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::{App, ListId};
use crate::tui::prompt::PROMPT_COMMANDS;

/// The heading of the `:` commands' section.
const PROMPT_TITLE: &str = "Commands (type : then one of these; tab completes)";

/// The line under the bindings that says how to remap them.
const KEYMAP_NOTE: &str =
    "A keymap file binds keys by the names in the middle column: [keys] approve = [\"A\"]";

/// Every line of help: each scope's bindings, the note on keymap files, then the `:` commands.
fn lines(app: &App) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for section in app.keymap.help_sections() {
        lines.push(Line::from(Span::styled(section.title, app.theme.title())));
        for hint in &section.hints {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<16}", hint.keys), app.theme.key()),
                Span::styled(format!("{:<14}", hint.command.as_str()), app.theme.muted()),
                Span::styled(hint.description, app.theme.text()),
            ]));
        }
        lines.push(Line::default());
    }
    lines.push(Line::from(Span::styled(KEYMAP_NOTE, app.theme.muted())));
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(PROMPT_TITLE, app.theme.title())));
    for command in &PROMPT_COMMANDS {
        lines.push(Line::from(vec![
            Span::styled(format!("  {:<30}", command.usage()), app.theme.key()),
            Span::styled(command.description, app.theme.text()),
        ]));
    }
    lines
}

/// How many lines help has, for scrolling.
pub(crate) fn line_count(app: &App) -> usize {
    lines(app).len()
}

/// Draw every binding, by scope, and every `:` command.
pub(crate) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let selection = app.selection(ListId::Help);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border())
        .title(Span::styled(" Help ", app.theme.title()));
    let scroll = u16::try_from(selection.offset).unwrap_or(u16::MAX);
    frame.render_widget(
        Paragraph::new(lines(app)).block(block).scroll((scroll, 0)),
        area,
    );
}
