//! The Shims pane: every Shim with its RuntimeClass, rollout strategy, progress, batch and state.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};

/// Cells of the progress bar.
const BAR: usize = 10;

/// Draw every Shim.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let columns: &[Column<'_>] = if wide {
        &[
            Column::shrink("NAME"),
            Column::shrink("RUNTIMECLASS"),
            Column::shrink("STRATEGY"),
            Column::keep("PROGRESS"),
            Column::keep("BATCH"),
            Column::keep("STATE"),
            Column::shrink("REASON"),
        ]
    } else {
        &[
            Column::shrink("NAME"),
            Column::keep("PROGRESS"),
            Column::keep("BATCH"),
            Column::keep("STATE"),
            Column::shrink("REASON"),
        ]
    };
    ListTable {
        title: "Shims",
        note: "",
        columns,
        list: ListId::Shims,
        focused: true,
        empty: "No Shims. Create one with kubectl apply -f shim.yaml",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.shims[index];
        let style = health_style(app, row.health);
        let progress = progress(row.ready, row.targets, if wide { BAR } else { BAR / 2 });
        let mut cells = TableRow::new().cell(row.name.as_str());
        if wide {
            cells = cells
                .cell(row.runtime_class.as_str())
                .cell(row.strategy.as_str());
        }
        cells
            .gauge(progress, style)
            .cell(row.batch_label())
            .styled(row.state.as_str(), style)
            .cell(reason(row.state.as_str(), row.reason.as_deref()))
    });
}

/// The reason without the state it starts with, which the STATE column already shows.
fn reason<'a>(state: &str, reason: Option<&'a str>) -> &'a str {
    let Some(reason) = reason else {
        return "-";
    };
    reason
        .strip_prefix(state)
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(reason)
}

/// `█████░░░░░ 5/10`: how many of the targeted nodes have the shim.
pub(super) fn progress(ready: i32, targets: i32, cells: usize) -> String {
    let ready = ready.clamp(0, targets.max(0));
    let filled = if targets > 0 {
        usize::try_from(ready).unwrap_or(0) * cells / usize::try_from(targets).unwrap_or(1)
    } else {
        0
    };
    format!(
        "{}{} {ready}/{targets}",
        "█".repeat(filled),
        "░".repeat(cells - filled)
    )
}
