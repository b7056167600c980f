//! The editor pane: the text being edited with line numbers and the cursor line marked, and under it the
//! problems the last check or the server found. A YAML syntax error's line is marked in the text too.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::App;
use crate::tui::editor::EditorState;

/// Most problem lines shown under the text; the rest are left out.
const MOST_PROBLEMS: usize = 8;

/// Draw `editor`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, editor: &EditorState) {
    let lines = problem_lines(app, editor);
    let problem_rows = u16::try_from(lines.len().min(MOST_PROBLEMS)).unwrap_or(0);
    let [text_area, problem_area] = Layout::vertical([
        Constraint::Min(3),
        Constraint::Length(if lines.is_empty() {
            0
        } else {
            problem_rows + 2
        }),
    ])
    .areas(area);
    let modified = if editor.is_modified() {
        " [modified]"
    } else {
        ""
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.accent())
        .title(Span::styled(
            format!(
                " Editing {}{modified} — ctrl-s apply · esc close ",
                editor.target
            ),
            app.theme.title(),
        ));
    let inner = block.inner(text_area);
    frame.render_widget(block, text_area);
    frame.render_widget(&editor.textarea, inner);
    mark_lines(frame, inner, app, editor);
    if !lines.is_empty() {
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

/// The notice, the last attempt's message and each field's problem.
fn problem_lines<'a>(app: &App, editor: &'a EditorState) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if let Some(notice) = editor.notice() {
        lines.push(Line::from(Span::styled(notice, app.theme.warn())));
    }
    if let Some(message) = &editor.message {
        lines.push(Line::from(Span::styled(
            message.as_str(),
            app.theme.error(),
        )));
    }
    for error in &editor.errors {
        let path = if error.path.is_empty() {
            "object"
        } else {
            error.path.as_str()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{path}: "), app.theme.key()),
            Span::styled(error.message.as_str(), app.theme.error()),
        ]));
    }
    lines
}

/// Colour the line-number gutter, the cursor line and a syntax error's line, over what the text area drew in
/// `area` (which it scrolled to keep the cursor in view).
fn mark_lines(frame: &mut Frame<'_>, area: Rect, app: &App, editor: &EditorState) {
    let gutter = editor.textarea.line_number_width().min(area.width);
    let text_width = area.width - gutter;
    let top = usize::from(editor.textarea.scroll_offset().0);
    let row_of = |line: usize| {
        line.checked_sub(top)
            .and_then(|row| u16::try_from(row).ok())
            .filter(|row| *row < area.height)
            .map(|row| area.y + row)
    };
    let buffer = frame.buffer_mut();
    buffer.set_style(
        Rect {
            width: gutter,
            ..area
        },
        app.theme.muted(),
    );
    let row = |y: u16, x: u16, width: u16| Rect {
        x,
        y,
        width,
        height: 1,
    };
    if let Some(y) = row_of(editor.textarea.cursor().0) {
        buffer.set_style(row(y, area.x, gutter), app.theme.selection());
        buffer.set_style(
            row(y, area.x + gutter, text_width),
            Style::default().add_modifier(Modifier::BOLD),
        );
    }
    if let Some(y) = editor.error_line.and_then(row_of) {
        buffer.set_style(row(y, area.x, gutter), app.theme.error());
        buffer.set_style(
            row(y, area.x + gutter, text_width),
            app.theme.error().add_modifier(Modifier::UNDERLINED),
        );
    }
}
