//! The log view of one pod: its containers' last lines, scrolled like the YAML view.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::{App, ListId};
use crate::tui::target::Target;

/// Draw the log of `pod`, scrolled to the log list's selection.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, pod: &Target) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border())
        .title(Span::styled(format!(" Log of {pod} "), app.theme.title()));
    let lines: Vec<Line<'_>> = match &app.shim.log {
        Some(Ok(lines)) => {
            let visible = app.visible(ListId::Logs);
            let selection = app.selection(ListId::Logs);
            let height = usize::from(area.height.saturating_sub(2));
            let first = selection
                .index
                .saturating_sub(height.saturating_sub(1))
                .max(selection.offset.min(selection.index));
            visible
                .iter()
                .enumerate()
                .skip(first)
                .take(height)
                .filter_map(|(position, index)| {
                    let line = lines.get(*index)?;
                    let style = if position == selection.index {
                        app.theme.selection()
                    } else if line.starts_with("── ") {
                        app.theme.accent()
                    } else {
                        app.theme.text()
                    };
                    Some(Line::from(Span::styled(line.as_str(), style)))
                })
                .collect()
        }
        Some(Err(why)) => vec![Line::from(Span::styled(why.as_str(), app.theme.warn()))],
        None => vec![Line::from(Span::styled(
            "Reading the log…",
            app.theme.muted(),
        ))],
    };
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
