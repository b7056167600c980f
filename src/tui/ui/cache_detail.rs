//! The cache detail: a summary line, the per-image summary, the coverage matrix (nodes × images, a glyph and a
//! colour per cell so it reads without colour), and the selected cell's story: its state, why its pull failed,
//! its puller pod and that pod's events. Only the rows and columns on screen are drawn.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::target::Target;
use crate::tui::view::cache_detail::{
    CELL_WIDTH, COUNT_COLUMN, CacheDetail, CellState, CoverageRow, NODE_COLUMN, columns_per_page,
    layout_heights, pod_events,
};

/// The states the legend explains, in the order it lists them.
const LEGEND: [CellState; 4] = [
    CellState::Cached,
    CellState::Pulling,
    CellState::Failed,
    CellState::Missing,
];

/// Draw the coverage of the ImageCache `target`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    let Some(detail) = &app.caches.detail else {
        super::draw_gone(frame, area, app, target);
        return;
    };
    let (images_height, matrix_height, cell_height) =
        layout_heights(area.height, detail.images.len(), detail.nodes.len());
    let [summary, images_area, matrix_area, cell_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(images_height),
        Constraint::Length(matrix_height),
        Constraint::Length(cell_height),
    ])
    .areas(area);
    draw_summary(frame, summary, app, detail);
    draw_images(frame, images_area, app, detail);
    draw_matrix(frame, matrix_area, app, detail);
    draw_cell(frame, cell_area, app, detail, target);
}

fn draw_summary(frame: &mut Frame<'_>, area: Rect, app: &App, detail: &CacheDetail) {
    let row = &detail.summary;
    let line = vec![
        Span::styled(
            format!(" {}/{} ", row.namespace, row.name),
            app.theme.title(),
        ),
        Span::styled(
            format!(
                " {} images  nodes {}/{} cached  ",
                row.images, row.cached, row.targeted
            ),
            app.theme.text(),
        ),
        Span::styled(
            row.reason.clone().unwrap_or_else(|| row.state.clone()),
            health_style(app, row.health),
        ),
    ];
    frame.render_widget(Paragraph::new(Line::from(line)), area);
}

fn draw_images(frame: &mut Frame<'_>, area: Rect, app: &App, detail: &CacheDetail) {
    let wide = area.width >= 110;
    let columns: &[Column<'_>] = if wide {
        &[
            Column::keep("#"),
            Column::shrink("IMAGE"),
            Column::keep("ON NODES"),
            Column::keep("PULLING"),
            Column::keep("FAILED"),
            Column::keep("MISSING"),
        ]
    } else {
        &[
            Column::keep("#"),
            Column::shrink("IMAGE"),
            Column::keep("ON NODES"),
            Column::keep("◐"),
            Column::keep("✗"),
            Column::keep("·"),
        ]
    };
    ListTable {
        title: "Images",
        note: "",
        columns,
        list: ListId::CacheImages,
        focused: app.list() == ListId::CacheImages,
        empty: "The cache lists no images",
    }
    .draw(frame, area, app, |index| {
        let image = &detail.images[index];
        let style = health_style(app, image.health());
        let count = |n: usize| {
            if n == 0 {
                "-".to_owned()
            } else {
                n.to_string()
            }
        };
        TableRow::new()
            .cell((index + 1).to_string())
            .cell(image.image.as_str())
            .styled(format!("{}/{}", image.cached, image.wanted), style)
            .cell(count(image.pulling))
            .cell(count(image.failed))
            .cell(count(image.missing))
    });
}

/// The coverage matrix, nodes × images: only the rows and image columns on screen are drawn.
fn draw_matrix(frame: &mut Frame<'_>, area: Rect, app: &App, detail: &CacheDetail) {
    let visible = app.visible(ListId::Coverage);
    let focused = app.list() == ListId::Coverage;
    let filter = app.filter(ListId::Coverage);
    let block = matrix_block(app, visible.len(), filter, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if visible.is_empty() {
        let message = if filter.is_empty() {
            "No node matches the cache's node selectors".to_owned()
        } else {
            format!("No nodes match /{filter} (esc clears the filter)")
        };
        frame.render_widget(
            Paragraph::new(Span::styled(message, app.theme.muted())),
            inner,
        );
        return;
    }
    let columns = app.visible(ListId::CacheImages);
    let selected_column = app.selection(ListId::CacheImages).index;
    let first_column = app.column_offset();
    let shown: Vec<(usize, usize)> = columns
        .iter()
        .copied()
        .enumerate()
        .skip(first_column)
        .take(columns_per_page(area.width))
        .collect();
    let more = shown
        .last()
        .is_some_and(|(position, _)| position + 1 < columns.len());
    let height = usize::from(inner.height.saturating_sub(1)).max(1);
    let selection = app.selection(ListId::Coverage);
    let offset = selection
        .offset
        .min(visible.len().saturating_sub(1))
        .max((selection.index + 1).saturating_sub(height));
    let mut lines = vec![matrix_heading(
        app,
        &shown,
        first_column > 0,
        more,
        selected_column,
    )];
    for (position, index) in visible.iter().enumerate().skip(offset).take(height) {
        let on_row = focused && position == selection.index;
        lines.push(matrix_row(
            app,
            &detail.nodes[*index],
            &shown,
            on_row.then_some(selected_column),
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The matrix's frame: its title with the node count, the legend of cell glyphs, and the `/` filter.
fn matrix_block(app: &App, nodes: usize, filter: &str, focused: bool) -> Block<'static> {
    let mut title = vec![
        Span::styled(" Coverage ", app.theme.title()),
        Span::styled(format!("[{nodes}] "), app.theme.muted()),
    ];
    for state in LEGEND {
        title.push(Span::styled(
            state.glyph(),
            health_style(app, state.health()),
        ));
        title.push(Span::styled(
            format!(" {} ", state.label()),
            app.theme.muted(),
        ));
    }
    if !filter.is_empty() {
        title.push(Span::styled(format!("/{filter} "), app.theme.accent()));
    }
    Block::default()
        .borders(Borders::ALL)
        .border_style(if focused {
            app.theme.accent()
        } else {
            app.theme.border()
        })
        .title(Line::from(title))
}

/// The heading row: image numbers of the `shown` columns (position among the visible ones, image index), with
/// `<` and `>` where columns are scrolled off either side.
fn matrix_heading(
    app: &App,
    shown: &[(usize, usize)],
    more_left: bool,
    more_right: bool,
    selected_column: usize,
) -> Line<'static> {
    let node_width = usize::from(NODE_COLUMN);
    let cell_width = usize::from(CELL_WIDTH);
    let mut heading = vec![Span::styled(
        format!(
            "{:<node_width$}{}",
            "NODE",
            if more_left { "<" } else { " " }
        ),
        app.theme.header(),
    )];
    for (position, image) in shown {
        let style = if *position == selected_column {
            app.theme.selection()
        } else {
            app.theme.header()
        };
        heading.push(Span::styled(format!("{:>cell_width$}", image + 1), style));
    }
    heading.push(Span::styled(
        format!(
            "{}{:>width$}",
            if more_right { ">" } else { " " },
            "CACHED",
            width = usize::from(COUNT_COLUMN) - 1
        ),
        app.theme.header(),
    ));
    Line::from(heading)
}

/// One node's row: its name, a glyph per shown image, and how many of its images it holds. `selected_column` is
/// the selected column when this is the selected row.
fn matrix_row(
    app: &App,
    row: &CoverageRow,
    shown: &[(usize, usize)],
    selected_column: Option<usize>,
) -> Line<'static> {
    let node_width = usize::from(NODE_COLUMN);
    let cell_width = usize::from(CELL_WIDTH);
    let name: String = row.node.chars().take(node_width).collect();
    let mut spans = vec![Span::styled(
        format!("{name:<node_width$} "),
        if selected_column.is_some() {
            app.theme.selection()
        } else {
            app.theme.text()
        },
    )];
    for (column, image) in shown {
        let state = row.cells[*image];
        let style: Style = if selected_column == Some(*column) {
            app.theme.selection()
        } else {
            health_style(app, state.health())
        };
        spans.push(Span::styled(
            format!("{:>cell_width$}", state.glyph()),
            style,
        ));
    }
    spans.push(Span::styled(
        format!(
            " {:>width$}",
            format!("{}/{}", row.cached, row.wanted),
            width = usize::from(COUNT_COLUMN) - 1
        ),
        health_style(app, row.health()),
    ));
    Line::from(spans)
}

fn draw_cell(frame: &mut Frame<'_>, area: Rect, app: &App, detail: &CacheDetail, target: &Target) {
    let Some((row, column)) = app.selected_cell() else {
        frame.render_widget(
            Paragraph::new(Span::styled(
                " Select a node and an image",
                app.theme.muted(),
            ))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(app.theme.border()),
            ),
            area,
        );
        return;
    };
    let image = detail
        .images
        .get(column)
        .map_or("", |image| image.image.as_str());
    let state = row
        .cells
        .get(column)
        .copied()
        .unwrap_or(CellState::NotWanted);
    let note = row.note(column);
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{} {}", state.glyph(), state.label()),
            health_style(app, state.health()),
        ),
        Span::styled(
            match note.and_then(|n| n.pod.as_deref()) {
                Some(pod) => format!("   puller pod {pod}"),
                None => "   no puller pod".to_owned(),
            },
            app.theme.muted(),
        ),
    ])];
    if let Some(why) = note.and_then(|n| n.why.as_deref()) {
        lines.push(Line::from(Span::styled(why.to_owned(), app.theme.error())));
    }
    let room = usize::from(area.height.saturating_sub(2)).saturating_sub(lines.len());
    if let Some(pod) = note.and_then(|n| n.pod.as_deref()) {
        let namespace = target.namespace.as_deref().unwrap_or_default();
        for event in pod_events(&app.data, namespace, pod, app.now, room) {
            lines.push(Line::from(vec![
                Span::styled(format!("{:>4} ", event.age), app.theme.muted()),
                Span::styled(
                    format!("{} ", event.reason),
                    health_style(app, event.health),
                ),
                Span::styled(event.note, app.theme.text()),
            ]));
        }
    }
    let title = Line::from(vec![
        Span::styled(format!(" {} ", row.node), app.theme.title()),
        Span::styled(format!("× {image} "), app.theme.text()),
    ]);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(app.theme.border())
                .title(title),
        ),
        area,
    );
}
