//! The YAML view of one object.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::tui::app::{App, ListId};
use crate::tui::target::Target;

/// Draw `target` as YAML, scrolled to the YAML list's selection; until the object arrives, say it is being read.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border())
        .title(Span::styled(format!(" {target} "), app.theme.title()));
    let lines: Vec<Line<'_>> = match &app.yaml {
        Some(Ok(lines)) => {
            let selection = app.selection(ListId::Yaml);
            let height = usize::from(area.height.saturating_sub(2));
            let first = selection
                .index
                .saturating_sub(height.saturating_sub(1))
                .max(selection.offset.min(selection.index));
            lines
                .iter()
                .enumerate()
                .skip(first)
                .take(height)
                .map(|(number, line)| {
                    let style = if number == selection.index {
                        app.theme.selection()
                    } else {
                        app.theme.text()
                    };
                    Line::from(vec![
                        Span::styled(format!("{:>4} ", number + 1), app.theme.muted()),
                        Span::styled(line.as_str(), style),
                    ])
                })
                .collect()
        }
        Some(Err(why)) => vec![Line::from(Span::styled(why.as_str(), app.theme.warn()))],
        None => vec![Line::from(Span::styled(
            format!("Reading {target}…"),
            app.theme.muted(),
        ))],
    };
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
