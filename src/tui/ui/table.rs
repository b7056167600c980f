//! The table every list pane draws: a titled block, a heading row, and only the rows on screen, so a list of
//! 5,000 nodes costs no more to draw than a list of 40.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};

use crate::tui::app::{App, ListId};

/// A list to draw.
pub struct ListTable<'a> {
    /// Title (the view's name).
    pub title: &'a str,
    /// A summary after the row count (counts by state), or empty.
    pub note: &'a str,
    /// Column headings.
    pub headings: &'a [&'a str],
    /// Column widths.
    pub widths: &'a [Constraint],
    /// Which list's selection and filter apply.
    pub list: ListId,
    /// Whether the list has keyboard focus (detail sections).
    pub focused: bool,
    /// What to say when there are no rows.
    pub empty: &'a str,
}

impl ListTable<'_> {
    /// Draw the visible rows, making each with `row(index into the full list)`.
    pub fn draw<'r>(
        self,
        frame: &mut Frame<'_>,
        area: Rect,
        app: &App,
        row: impl Fn(usize) -> Row<'r>,
    ) {
        let visible = app.visible(self.list);
        let selection = app.selection(self.list);
        let filter = app.filter(self.list);
        let mut title = vec![Span::styled(format!(" {} ", self.title), app.theme.title())];
        title.push(Span::styled(
            format!("[{}] ", visible.len()),
            app.theme.muted(),
        ));
        if !self.note.is_empty() {
            title.push(Span::styled(format!("{} ", self.note), app.theme.muted()));
        }
        if !filter.is_empty() {
            title.push(Span::styled(format!("/{filter} "), app.theme.accent()));
        }
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(if self.focused {
                app.theme.accent()
            } else {
                app.theme.border()
            })
            .title(Line::from(title));
        let inner_height = usize::from(area.height.saturating_sub(3));
        if visible.is_empty() {
            let message = if filter.is_empty() {
                self.empty.to_owned()
            } else {
                format!("No rows match /{filter} (esc clears the filter)")
            };
            frame.render_widget(
                ratatui::widgets::Paragraph::new(Span::styled(message, app.theme.muted()))
                    .block(block),
                area,
            );
            return;
        }
        let offset = selection
            .offset
            .min(visible.len().saturating_sub(1))
            .max((selection.index + 1).saturating_sub(inner_height.max(1)));
        let rows = visible
            .iter()
            .skip(offset)
            .take(inner_height.max(1))
            .map(|index| row(*index));
        let header =
            Row::new(self.headings.iter().map(|h| Cell::from(*h))).style(app.theme.header());
        let table = Table::new(rows, self.widths.iter().copied())
            .header(header)
            .block(block)
            .column_spacing(1)
            // Patched over the cells after they are drawn, so a state colour never hides the selection.
            .row_highlight_style(app.theme.selection());
        // Only the rows on screen are handed to the table, so the selection is relative to the first of them.
        let mut state = TableState::default()
            .with_selected(self.focused.then(|| selection.index.saturating_sub(offset)));
        frame.render_stateful_widget(table, area, &mut state);
    }
}
