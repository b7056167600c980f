//! The Day-0 pane: every ModuleDay0 with its pool, target image, the pool's rollout as a bar, state and reason.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::view::day0::Rollout;

/// Cells of the rollout bar.
const BAR: usize = 10;

/// Draw every ModuleDay0.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let columns: &[Column<'_>] = if wide {
        &[
            Column::shrink("NAMESPACE"),
            Column::shrink("NAME"),
            Column::keep("POOL"),
            Column::shrink("TARGET IMAGE"),
            Column::keep("UPDATED/MACHINES"),
            Column::keep("STATE"),
            Column::shrink("REASON"),
        ]
    } else {
        &[
            Column::shrink("NAME"),
            Column::keep("POOL"),
            Column::keep("ROLLOUT"),
            Column::keep("STATE"),
            Column::shrink("REASON"),
        ]
    };
    ListTable {
        title: "Day-0",
        note: "",
        columns,
        list: ListId::Day0s,
        focused: true,
        empty: "No ModuleDay0s. Label a MachineConfig machineconfiguration.openshift.io/kmm-managed=true",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.day0s[index];
        let style = health_style(app, row.state.health());
        let bar = row.rollout.map_or_else(
            || "no pool".to_owned(),
            |r| rollout_bar(r, if wide { BAR } else { BAR / 2 }),
        );
        let mut cells = TableRow::new();
        if wide {
            cells = cells.cell(row.namespace.as_str());
        }
        cells = cells.cell(row.name.as_str()).cell(row.pool_label());
        if wide {
            cells = cells.cell(row.image.as_str());
        }
        cells
            .gauge(bar, style)
            .styled(row.state.label(), style)
            .cell(row.why.as_deref().unwrap_or("-"))
    });
}

/// `███▒▒✗░░░░ 5/10 ✗1`: ready machines `█`, updated but not ready `▒`, degraded `✗`, the rest `░`; then how
/// many are updated, and how many degraded when any are.
pub(super) fn rollout_bar(rollout: Rollout, cells: usize) -> String {
    let machines = usize::try_from(rollout.machines).unwrap_or(0);
    let share = |n: i32| {
        let n = usize::try_from(n).unwrap_or(0).min(machines);
        (n * cells).checked_div(machines).unwrap_or(0)
    };
    let ready = share(rollout.ready.min(rollout.updated));
    let updated = share(rollout.updated).max(ready);
    let degraded = share(rollout.degraded).min(cells - updated);
    let mut bar = format!(
        "{}{}{}{} {}/{}",
        "█".repeat(ready),
        "▒".repeat(updated - ready),
        "✗".repeat(degraded),
        "░".repeat(cells - updated - degraded),
        rollout.updated,
        rollout.machines
    );
    if rollout.degraded > 0 {
        bar.push_str(&format!(" ✗{}", rollout.degraded));
    }
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_splits_ready_updated_and_degraded_machines() {
        let rollout = |machines, updated, ready, degraded| Rollout {
            machines,
            updated,
            ready,
            degraded,
        };
        assert_eq!(rollout_bar(rollout(6, 6, 6, 0), 6), "██████ 6/6");
        assert_eq!(rollout_bar(rollout(6, 3, 2, 1), 6), "██▒✗░░ 3/6 ✗1");
        assert_eq!(rollout_bar(rollout(0, 0, 0, 0), 4), "░░░░ 0/0");
    }
}
