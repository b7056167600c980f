//! The editor pane: the text being edited, and under it the problems the last check or the server found.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::App;
use crate::tui::editor::EditorState;

/// Draw `editor`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, editor: &EditorState) {
    let problems = editor.errors.len() + usize::from(editor.message.is_some());
    let problem_rows = u16::try_from(problems.min(8)).unwrap_or(8);
    let [text_area, problem_area] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(if problems > 0 { problem_rows + 2 } else { 0 }),
    ])
    .areas(area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.accent())
        .title(Span::styled(
            format!(" Editing {} — ctrl-s apply, esc discard ", editor.target),
            app.theme.title(),
        ));
    let inner = block.inner(text_area);
    frame.render_widget(block, text_area);
    frame.render_widget(&editor.textarea, inner);
    if problems > 0 {
        let mut lines = Vec::new();
        if let Some(message) = &editor.message {
            lines.push(Line::from(Span::styled(
                message.as_str(),
                app.theme.error(),
            )));
        }
        for error in &editor.errors {
            lines.push(Line::from(vec![
                Span::styled(format!("{}: ", error.path), app.theme.key()),
                Span::styled(error.message.as_str(), app.theme.error()),
            ]));
        }
        frame.render_widget(
            Paragraph::new(lines).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(app.theme.error())
                    .title(Span::styled(" Problems ", app.theme.title())),
            ),
            problem_area,
        );
    }
}
