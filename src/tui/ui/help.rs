//! The help view, generated from the keymap so it lists exactly the keys that work.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::{App, ListId};

/// Draw every binding, by scope.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let mut lines = Vec::new();
    for section in app.keymap.help_sections() {
        lines.push(Line::from(Span::styled(section.title, app.theme.title())));
        for hint in &section.hints {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<16}", hint.keys), app.theme.key()),
                Span::styled(hint.description, app.theme.text()),
            ]));
        }
        lines.push(Line::default());
    }
    lines.push(Line::from(Span::styled(
        "Commands: :modules :images :nodes :events :fleet :ns NAME|all :ctx NAME :help :q   (tab completes)",
        app.theme.muted(),
    )));
    let selection = app.selection(ListId::Help);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border())
        .title(Span::styled(" Help ", app.theme.title()));
    let scroll = u16::try_from(selection.offset).unwrap_or(u16::MAX);
    frame.render_widget(Paragraph::new(lines).block(block).scroll((scroll, 0)), area);
}
