//! The help view, generated from the keymap and the `:` prompt's command table, so it lists exactly the keys that
//! work, the action names a keymap file binds them by, and every `:` command.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::{App, ListId};
use crate::tui::help::{HelpLine, help_lines};

/// Every line of help, styled with the console's theme.
fn lines(app: &App) -> Vec<Line<'static>> {
    help_lines(&app.keymap)
        .into_iter()
        .map(|line| match line {
            HelpLine::Heading(title) => Line::from(Span::styled(title, app.theme.title())),
            HelpLine::Binding(hint) => Line::from(vec![
                Span::styled(format!("  {:<16}", hint.keys), app.theme.key()),
                Span::styled(format!("{:<14}", hint.command.as_str()), app.theme.muted()),
                Span::styled(hint.description, app.theme.text()),
            ]),
            HelpLine::Note(note) => Line::from(Span::styled(note, app.theme.muted())),
            HelpLine::Prompt { usage, description } => Line::from(vec![
                Span::styled(format!("  {usage:<30}"), app.theme.key()),
                Span::styled(description, app.theme.text()),
            ]),
            HelpLine::Blank => Line::default(),
        })
        .collect()
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
