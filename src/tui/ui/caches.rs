//! The Caches pane: every ImageCache, how many of its nodes hold all their images (as a bar), its state and why.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::view::caches::CacheRow;

/// Draw every ImageCache.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let bar_width = if wide { 12 } else { 6 };
    let columns: &[Column<'_>] = if wide {
        &[
            Column::shrink("NAMESPACE"),
            Column::shrink("NAME"),
            Column::keep("IMAGES"),
            Column::keep("NODES CACHED/TARGETED"),
            Column::keep("STATE"),
            Column::shrink("REASON"),
        ]
    } else {
        &[
            Column::shrink("NAMESPACE/NAME"),
            Column::keep("IMGS"),
            Column::keep("NODES CACHED"),
            Column::keep("STATE"),
            Column::shrink("REASON"),
        ]
    };
    ListTable {
        title: "Caches",
        note: "",
        columns,
        list: ListId::Caches,
        focused: true,
        empty: "No ImageCaches. Create one with kubectl apply -f imagecache.yaml",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.caches[index];
        let style = health_style(app, row.health);
        let cells = if wide {
            TableRow::new()
                .cell(row.namespace.as_str())
                .cell(row.name.as_str())
        } else {
            TableRow::new().cell(format!("{}/{}", row.namespace, row.name))
        };
        cells
            .cell(row.images.to_string())
            .gauge(coverage_bar(row, bar_width), style)
            .styled(row.state.as_str(), style)
            .styled(row.reason.as_deref().unwrap_or("-"), style)
    });
}

/// `██████░░░ 38/40`: the share of targeted nodes holding every image, drawn `width` cells wide.
fn coverage_bar(row: &CacheRow, width: usize) -> String {
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
    format!(
        "{}{} {cached}/{targeted}",
        "█".repeat(filled),
        "░".repeat(width - filled)
    )
}
