//! The confirmation dialog every write opens: it names what the write will do and the keys that answer it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::tui::app::App;
use crate::tui::keymap::Command;
use crate::tui::writes::WriteRequest;

/// Draw the dialog for `request`, centred over `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, request: &WriteRequest) {
    ask(frame, area, app, &request.describe());
}

/// Draw a dialog asking `question` (without its question mark), centred over `area`.
pub fn ask(frame: &mut Frame<'_>, area: Rect, app: &App, question: &str) {
    let width = area.width.saturating_sub(4).min(70);
    let [row] = Layout::vertical([Constraint::Length(6)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(row);
    let keys = |command: Command| {
        app.keymap
            .keys(command)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("/")
    };
    let text = vec![
        Line::from(Span::styled(format!("{question}?"), app.theme.text())),
        Line::default(),
        Line::from(vec![
            Span::styled(keys(Command::Confirm), app.theme.key()),
            Span::styled(" yes   ", app.theme.text()),
            Span::styled(keys(Command::Cancel), app.theme.key()),
            Span::styled(" no", app.theme.text()),
        ]),
    ];
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(app.theme.warn())
                .title(Span::styled(" Confirm ", app.theme.title())),
        ),
        popup,
    );
}
