//! The Caches pane: every ImageCache, how many of its nodes hold all their images (as a bar), its state and why.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row};

use super::health_style;
use super::table::ListTable;
use crate::tui::app::{App, ListId};
use crate::tui::view::caches::CacheRow;

/// Draw every ImageCache.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let bar_width = if wide { 12 } else { 6 };
    let count_width = 11;
    let widths: &[Constraint] = if wide {
        &[
            Constraint::Length(14),
            Constraint::Length(20),
            Constraint::Length(6),
            Constraint::Length(bar_width + 1 + count_width),
            Constraint::Length(9),
            Constraint::Min(20),
        ]
    } else {
        &[
            Constraint::Length(22),
            Constraint::Length(4),
            Constraint::Length(bar_width + 1 + count_width),
            Constraint::Length(9),
            Constraint::Fill(1),
        ]
    };
    let headings: &[&str] = if wide {
        &[
            "NAMESPACE",
            "NAME",
            "IMAGES",
            "NODES CACHED/TARGETED",
            "STATE",
            "REASON",
        ]
    } else {
        &["NAMESPACE/NAME", "IMGS", "NODES CACHED", "STATE", "REASON"]
    };
    ListTable {
        title: "Caches",
        note: "",
        headings,
        widths,
        list: ListId::Caches,
        focused: true,
        empty: "No ImageCaches. Create one with kubectl apply -f imagecache.yaml",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.caches[index];
        let style = health_style(app, row.health);
        let mut cells = if wide {
            vec![
                Cell::from(row.namespace.clone()),
                Cell::from(row.name.clone()),
            ]
        } else {
            vec![Cell::from(format!("{}/{}", row.namespace, row.name))]
        };
        cells.push(Cell::from(row.images.to_string()));
        cells.push(Cell::from(coverage_bar(app, row, usize::from(bar_width))));
        cells.push(Cell::from(row.state.clone()).style(style));
        cells.push(Cell::from(row.reason.clone().unwrap_or_default()).style(style));
        Row::new(cells).style(app.theme.text())
    });
}

/// `██████░░░ 38/40`: the share of targeted nodes holding every image, drawn `width` cells wide.
fn coverage_bar<'a>(app: &App, row: &CacheRow, width: usize) -> Line<'a> {
    let targeted = usize::try_from(row.targeted).unwrap_or(0);
    let cached = usize::try_from(row.cached).unwrap_or(0).min(targeted);
    let filled = if targeted == 0 {
        0
    } else if cached == targeted {
        width
    } else {
        // Never full while a node lacks an image, never empty once one holds them all.
        (cached * width / targeted).clamp(usize::from(cached > 0), width - 1)
    };
    Line::from(vec![
        Span::styled("█".repeat(filled), health_style(app, row.health)),
        Span::styled("░".repeat(width - filled), app.theme.muted()),
        Span::styled(format!(" {cached}/{targeted}"), app.theme.text()),
    ])
}
