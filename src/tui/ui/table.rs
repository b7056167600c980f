//! The table every list pane draws: a titled block, a heading row, and only the rows on screen, so a list of
//! 5,000 nodes costs no more to draw than a list of 40.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table, TableState};

use crate::tui::app::{App, ListId};

/// Columns are this far apart.
const SPACING: u16 = 1;

/// A column of a list: its heading, and whether it may be cut short when the rows do not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Column<'a> {
    /// The heading.
    pub heading: &'a str,
    /// Whether the column keeps its full width however narrow the screen (states, counts, ages): those are short
    /// and lose their meaning when cut.
    pub keep: bool,
}

impl<'a> Column<'a> {
    /// A column that is never cut short.
    pub(super) const fn keep(heading: &'a str) -> Column<'a> {
        Column {
            heading,
            keep: true,
        }
    }

    /// A column cut short (with `…`) when the rows do not fit: names, images, messages.
    pub(super) const fn shrink(heading: &'a str) -> Column<'a> {
        Column {
            heading,
            keep: false,
        }
    }
}

/// One row of a list: the text of each cell, with its style (the row's text style when default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct TableRow {
    /// The cells, in column order.
    pub cells: Vec<(String, Style)>,
    /// The cells that are gauges (`███░░ 3/5`): on the selected row they keep their own colour on the selection's
    /// background, since a gauge drawn in the selection's foreground is a solid bar that says nothing.
    pub gauges: Vec<usize>,
}

impl TableRow {
    /// A row with no cells yet.
    pub(super) fn new() -> TableRow {
        TableRow::default()
    }

    /// Add a cell in the row's style.
    pub(super) fn cell(self, text: impl Into<String>) -> TableRow {
        self.styled(text, Style::default())
    }

    /// Add a cell in `style`.
    pub(super) fn styled(mut self, text: impl Into<String>, style: Style) -> TableRow {
        self.cells.push((text.into(), style));
        self
    }

    /// Add a gauge cell in `style`, which keeps its colour when the row is selected.
    pub(super) fn gauge(mut self, text: impl Into<String>, style: Style) -> TableRow {
        self.gauges.push(self.cells.len());
        self.styled(text, style)
    }
}

/// A list to draw.
pub(super) struct ListTable<'a> {
    /// Title (the view's name).
    pub title: &'a str,
    /// A summary after the row count (counts by state), or empty.
    pub note: &'a str,
    /// The columns.
    pub columns: &'a [Column<'a>],
    /// Which list's selection and filter apply.
    pub list: ListId,
    /// Whether the list has keyboard focus (detail sections).
    pub focused: bool,
    /// What to say when there are no rows.
    pub empty: &'a str,
}

impl ListTable<'_> {
    /// Draw the visible rows, making each with `row(index into the full list)`. Columns are as wide as their
    /// widest content on screen; when that is too wide, the widest columns that may shrink give way first.
    pub(super) fn draw(
        self,
        frame: &mut Frame<'_>,
        area: Rect,
        app: &App,
        row: impl Fn(usize) -> TableRow,
    ) {
        let visible = app.visible(self.list);
        let selection = app.selection(self.list);
        let filter = app.filter(self.list);
        let block = self.block(app, visible.len(), filter);
        let inner_height = usize::from(area.height.saturating_sub(3));
        if visible.is_empty() {
            // Before every list has arrived, an empty list may only not have arrived yet.
            let message = if !filter.is_empty() {
                format!("No rows match /{filter} (esc clears the filter)")
            } else if let Some(why) = app.data.unreachable() {
                format!("Cannot reach the cluster: {why}. Retrying until it answers")
            } else if let Some(trouble) = app.credentials_trouble() {
                format!("Nothing can be listed: {trouble}")
            } else if app.data.loaded() {
                self.empty.to_owned()
            } else {
                "Loading…".to_owned()
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
        let rows: Vec<TableRow> = visible
            .iter()
            .skip(offset)
            .take(inner_height.max(1))
            .map(|index| row(*index))
            .collect();
        let widths = self.widths(&rows, area.width.saturating_sub(2));
        let text = app.theme.text();
        // Only the rows on screen are handed to the table, so the selection is relative to the first of them.
        let selected = self.focused.then(|| selection.index.saturating_sub(offset));
        let selected_gauges: Vec<(usize, Style)> = selected
            .and_then(|index| rows.get(index))
            .map(|r| {
                r.gauges
                    .iter()
                    .filter_map(|column| Some((*column, r.cells.get(*column)?.1)))
                    .collect()
            })
            .unwrap_or_default();
        let rows = rows.into_iter().map(|r| {
            Row::new(
                r.cells
                    .into_iter()
                    .zip(&widths)
                    .map(|((content, style), width)| {
                        Cell::from(cut(&content, *width)).style(style)
                    }),
            )
            .style(text)
        });
        let header = Row::new(
            self.columns
                .iter()
                .zip(&widths)
                .map(|(c, width)| Cell::from(cut(c.heading, *width))),
        )
        .style(app.theme.header());
        let table = Table::new(rows, widths.iter().map(|w| Constraint::Length(*w)))
            .header(header)
            .block(block)
            .column_spacing(SPACING)
            // Patched over the cells after they are drawn, so a state colour never hides the selection.
            .row_highlight_style(app.theme.selection());
        let mut state = TableState::default().with_selected(selected);
        frame.render_stateful_widget(table, area, &mut state);
        if let Some(index) = selected {
            recolour_gauges(frame, area, &widths, index, selected_gauges);
        }
    }

    /// The frame: the title, the row count, the note and the `/` filter; the accent colour when focused.
    fn block(&self, app: &App, rows: usize, filter: &str) -> Block<'static> {
        let mut title = vec![Span::styled(format!(" {} ", self.title), app.theme.title())];
        title.push(Span::styled(format!("[{rows}] "), app.theme.muted()));
        if !self.note.is_empty() {
            title.push(Span::styled(format!("{} ", self.note), app.theme.muted()));
        }
        if !filter.is_empty() {
            title.push(Span::styled(format!("/{filter} "), app.theme.accent()));
        }
        Block::default()
            .borders(Borders::ALL)
            .border_style(if self.focused {
                app.theme.accent()
            } else {
                app.theme.border()
            })
            .title(Line::from(title))
    }

    /// The width of each column for the `rows` on screen, in `inner` columns of screen (see [`fit`]).
    fn widths(&self, rows: &[TableRow], inner: u16) -> Vec<u16> {
        let natural: Vec<u16> = self
            .columns
            .iter()
            .enumerate()
            .map(|(column, c)| {
                rows.iter()
                    .filter_map(|r| r.cells.get(column))
                    .map(|(text, _)| text_width(text))
                    .chain(std::iter::once(text_width(c.heading)))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let floors: Vec<u16> = self
            .columns
            .iter()
            .zip(&natural)
            .map(|(c, n)| (*n).min(text_width(c.heading).max(MIN_SHRUNK)))
            .collect();
        let keep: Vec<bool> = self.columns.iter().map(|c| c.keep).collect();
        let gaps = SPACING * u16::try_from(self.columns.len().saturating_sub(1)).unwrap_or(0);
        fit(&natural, &keep, &floors, inner.saturating_sub(gaps))
    }
}

/// Give the gauges of the selected row (`index` among the rows on screen) their own colour back, on the
/// selection's background.
fn recolour_gauges(
    frame: &mut Frame<'_>,
    area: Rect,
    widths: &[u16],
    index: usize,
    gauges: Vec<(usize, Style)>,
) {
    let y = area.y + 2 + u16::try_from(index).unwrap_or(u16::MAX);
    for (column, style) in gauges {
        let Some(colour) = style.fg else { continue };
        let x = area.x
            + 1
            + widths[..column].iter().sum::<u16>()
            + SPACING * u16::try_from(column).unwrap_or(0);
        let cell = Rect::new(x, y, widths.get(column).copied().unwrap_or(0), 1).intersection(area);
        frame
            .buffer_mut()
            .set_style(cell, Style::default().fg(colour));
    }
}

/// The narrowest a shrinking column gets while its heading is shorter: enough to recognise a name by.
const MIN_SHRUNK: u16 = 8;

/// Column widths for `space` columns of screen: every column as wide as its `natural` width when they all fit
/// (the last one taking what is left). Otherwise the last column (a reason or a message, read from its start)
/// gives way first, down to a quarter of the screen; then the other columns that may shrink (`keep` false) are capped at one
/// common width, as high as fits, never below their `floors`, so only the widest give way.
pub(super) fn fit(natural: &[u16], keep: &[bool], floors: &[u16], space: u16) -> Vec<u16> {
    let total: u32 = natural.iter().map(|w| u32::from(*w)).sum();
    let mut widths = natural.to_vec();
    if total <= u32::from(space) {
        if let Some(last) = widths.last_mut() {
            *last += space - u16::try_from(total).unwrap_or(space);
        }
        return widths;
    }
    let last = natural.len() - 1;
    if !keep[last] {
        let excess = u16::try_from(total - u32::from(space)).unwrap_or(u16::MAX);
        // The last column keeps a quarter of the screen, or all it needs if that is less.
        let floor = floors[last].max(space / 4).min(natural[last]);
        let shrunk = natural[last].saturating_sub(excess).max(floor);
        if natural[last] - shrunk >= excess {
            widths[last] = shrunk;
            return widths;
        }
        let mut natural = natural.to_vec();
        let mut keep = keep.to_vec();
        natural[last] = shrunk;
        keep[last] = true;
        return cap_widest(&natural, &keep, floors, space);
    }
    cap_widest(natural, keep, floors, space)
}

/// The widths when the shrinking columns share what the kept ones leave under one common cap.
fn cap_widest(natural: &[u16], keep: &[bool], floors: &[u16], space: u16) -> Vec<u16> {
    let kept: u32 = natural
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(w, _)| u32::from(*w))
        .sum();
    let budget = u32::from(space).saturating_sub(kept);
    let shrunk = |cap: u16| -> Vec<u16> {
        natural
            .iter()
            .zip(keep)
            .zip(floors)
            .map(|((n, k), floor)| if *k { *n } else { (*n).min(cap.max(*floor)) })
            .collect()
    };
    let used = |widths: &[u16]| -> u32 {
        widths
            .iter()
            .zip(keep)
            .filter(|(_, k)| !**k)
            .map(|(w, _)| u32::from(*w))
            .sum()
    };
    let (mut low, mut high) = (0u16, natural.iter().copied().max().unwrap_or(0));
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        if used(&shrunk(middle)) <= budget {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    let mut widths = shrunk(low);
    // What the common cap leaves over goes to the capped columns, left to right, a column each.
    let mut left = budget.saturating_sub(used(&widths));
    for ((width, natural), k) in widths.iter_mut().zip(natural).zip(keep) {
        if left == 0 {
            break;
        }
        if !*k && *width < *natural {
            *width += 1;
            left -= 1;
        }
    }
    widths
}

/// Columns `text` takes on screen.
fn text_width(text: &str) -> u16 {
    u16::try_from(Span::raw(text).width()).unwrap_or(u16::MAX)
}

/// `text` cut to `width` columns, its last visible character replaced by `…` when it was cut.
pub(super) fn cut(text: &str, width: u16) -> String {
    if text_width(text) <= width {
        return text.to_owned();
    }
    let mut kept = String::new();
    let mut used = 0u16;
    for c in text.chars() {
        let w = text_width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > width {
            break;
        }
        kept.push(c);
        used += w;
    }
    if width > 0 {
        kept.push('…');
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_that_fit_get_their_content_and_the_last_the_rest() {
        assert_eq!(
            fit(&[4, 10, 6], &[true, false, false], &[4, 8, 6], 30),
            vec![4, 10, 16]
        );
    }

    #[test]
    fn the_last_column_gives_way_first() {
        let keep = [true, false, true, false];
        let floors = [5, 8, 12, 8];
        // 5 + 30 + 12 + 40 = 87 columns wanted in 80: the message at the end alone gives way.
        assert_eq!(
            fit(&[5, 30, 12, 40], &keep, &floors, 80),
            vec![5, 30, 12, 33]
        );
        // In 60 the message keeps a quarter, and the name takes what is left.
        assert_eq!(
            fit(&[5, 30, 12, 40], &keep, &floors, 60),
            vec![5, 28, 12, 15]
        );
    }

    #[test]
    fn then_only_the_widest_shrinking_columns_give_way() {
        // The last column keeps a quarter (12); 30 and 40 share the 31 the others leave.
        let widths = fit(
            &[5, 30, 40, 20],
            &[true, false, false, false],
            &[5, 8, 8, 8],
            48,
        );
        assert_eq!(widths.iter().sum::<u16>(), 48);
        assert_eq!((widths[0], widths[3]), (5, 12));
        assert!(widths[1].abs_diff(widths[2]) <= 1, "{widths:?}");
    }

    #[test]
    fn a_short_column_keeps_its_width_while_a_long_one_shrinks() {
        let widths = fit(&[10, 50, 8], &[false, false, true], &[8, 8, 8], 40);
        assert_eq!(widths, vec![10, 22, 8]);
    }

    #[test]
    fn floors_hold_when_nothing_fits() {
        let widths = fit(&[20, 20], &[false, false], &[8, 8], 10);
        assert_eq!(widths, vec![8, 8]);
    }

    #[test]
    fn cut_text_ends_in_an_ellipsis() {
        assert_eq!(cut("worker-0000", 20), "worker-0000");
        assert_eq!(cut("quay.io/acme/kmod:5.14", 10), "quay.io/a…");
        assert_eq!(cut("abc", 0), "");
    }
}
