//! The confirmation dialog every write opens: it names the context it acts on, what the write will do, to which
//! nodes or images (see [`consequences`]), and the keys that answer it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::tui::app::App;
use crate::tui::keymap::Command;
use crate::tui::view::consequences::consequences;
use crate::tui::writes::WriteRequest;

/// Draw the dialog for `request`, centred over `area`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, request: &WriteRequest) {
    let details = consequences(&app.data, request);
    let context = request.context().unwrap_or(&app.session.context);
    ask_with(frame, area, app, context, &request.describe(), &details);
}

/// Draw a dialog asking `question` (without its question mark), centred over `area`.
pub(super) fn ask(frame: &mut Frame<'_>, area: Rect, app: &App, question: &str) {
    ask_with(frame, area, app, &app.session.context, question, &[]);
}

/// Draw a dialog asking `question` of the cluster of `context` (the write goes there), with `details` (what will
/// happen) under it.
fn ask_with(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    context: &str,
    question: &str,
    details: &[String],
) {
    let width = area.width.saturating_sub(4).min(70);
    // Each line wraps at the dialog's inner width, word by word, so the keys below stay in sight.
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let wrapped = |text: &str| u16::try_from(wrapped_rows(text, inner)).unwrap_or(u16::MAX);
    let detail_rows: u16 = details.iter().map(|d| wrapped(d)).sum();
    // Borders, a blank line and the keys around the text; never shorter than a one-line question needs.
    let text_rows = wrapped(question) + detail_rows + u16::from(!details.is_empty());
    let height = (text_rows + 4).max(6).min(area.height);
    let [row] = Layout::vertical([Constraint::Length(height)])
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
    let mut text = vec![Line::from(Span::styled(
        format!("{question}?"),
        app.theme.text(),
    ))];
    if !details.is_empty() {
        text.push(Line::default());
    }
    text.extend(
        details
            .iter()
            .map(|detail| Line::from(Span::styled(detail.clone(), app.theme.muted()))),
    );
    text.extend([
        Line::default(),
        Line::from(vec![
            Span::styled(keys(Command::Confirm), app.theme.key()),
            Span::styled(" yes   ", app.theme.text()),
            Span::styled(keys(Command::Cancel), app.theme.key()),
            Span::styled(" no", app.theme.text()),
        ]),
    ]);
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).wrap(Wrap { trim: true }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(app.theme.warn())
                .title(Span::styled(
                    format!(" Confirm on {context} "),
                    app.theme.title(),
                )),
        ),
        popup,
    );
}

/// How many rows `text` takes wrapped word by word at `width` columns (a word longer than a row is broken).
fn wrapped_rows(text: &str, width: usize) -> usize {
    let mut rows = 1;
    let mut used = 0;
    for word in text.split_whitespace() {
        let length = word.chars().count();
        if used > 0 && used + 1 + length <= width {
            used += 1 + length;
            continue;
        }
        if used > 0 {
            rows += 1;
        }
        rows += length.saturating_sub(1) / width;
        used = (length - 1) % width + 1;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_count_whole_words() {
        assert_eq!(wrapped_rows("", 10), 1);
        assert_eq!(wrapped_rows("aaaa bbbb", 9), 1);
        assert_eq!(wrapped_rows("aaaa bbbbb", 9), 2);
        assert_eq!(wrapped_rows("aaaaaaaaaaaaaaaaaaaa", 9), 3);
    }
}
