//! The Nodes pane.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::data::{DRA_NOT_SERVED, DraServing};

/// Draw every node: readiness, kernel, OS image, modules loaded, device plugins ready of those meant to run there
/// (when any node has one), DRA devices allocated of those published there (when any node publishes one), caches
/// complete of those wanted, taints. On a cluster without DRA the title says so.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    // The plugin column appears once some node is meant to run a device plugin: a cluster without any reads as
    // before.
    let plugins = app
        .rows
        .nodes
        .iter()
        .any(|row| row.plugins_target > 0 || row.plugins_ready > 0);
    let mut columns: Vec<Column<'_>> = if wide {
        vec![
            Column::shrink("NAME"),
            Column::keep("STATUS"),
            Column::shrink("KERNEL"),
            Column::shrink("OS IMAGE"),
            Column::keep("MODULES"),
        ]
    } else {
        vec![
            Column::shrink("NAME"),
            Column::keep("STATUS"),
            Column::shrink("KERNEL"),
            Column::keep("LOADED"),
        ]
    };
    if plugins {
        columns.push(Column::keep(if wide { "PLUGINS RDY/TGT" } else { "PLUG" }));
    }
    // Beside it, the DRA devices, once some node publishes one.
    let devices = !app.rows.node_devices.is_empty();
    if devices {
        columns.push(Column::keep(if wide { "DEVICES ALLOC/PUB" } else { "DEV" }));
    }
    columns.push(Column::keep("CACHES"));
    columns.push(Column::shrink("TAINTS"));
    ListTable {
        title: "Nodes",
        note: if app.data.dra == DraServing::NotServed {
            DRA_NOT_SERVED
        } else {
            ""
        },
        columns: &columns,
        list: ListId::Nodes,
        focused: true,
        empty: "No nodes",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.nodes[index];
        let status = match (row.ready, row.unschedulable) {
            (true, false) => "Ready",
            (true, true) => "Cordoned",
            (false, _) => "NotReady",
        };
        let modules = if !wide {
            format!(
                "{}/{}",
                row.modules_loaded.len(),
                row.modules_loaded.len() + row.modules_pending
            )
        } else if row.modules_pending > 0 {
            format!(
                "{} (+{} pending)",
                row.modules_loaded.len(),
                row.modules_pending
            )
        } else {
            row.modules_loaded.len().to_string()
        };
        let taints = if row.taints.is_empty() {
            "-".to_owned()
        } else {
            row.taints.join(", ")
        };
        let mut cells = TableRow::new()
            .cell(row.name.as_str())
            .styled(status, health_style(app, row.health))
            .cell(row.kernel.as_str());
        if wide {
            cells = cells.cell(row.os_image.as_str());
        }
        let cells = cells.cell(modules);
        let cells = if !plugins {
            cells
        } else if row.plugins_target == 0 && row.plugins_ready == 0 {
            cells.cell("-")
        } else {
            cells.styled(
                format!("{}/{}", row.plugins_ready, row.plugins_target),
                if row.plugins_ready >= row.plugins_target {
                    app.theme.text()
                } else {
                    app.theme.warn()
                },
            )
        };
        let cells = if !devices {
            cells
        } else {
            match app.rows.node_devices.get(&row.name) {
                None => cells.cell("-"),
                Some(counts) => cells.cell(format!("{}/{}", counts.allocated, counts.published)),
            }
        };
        let caches = if row.caches_wanted == 0 {
            cells.cell("-")
        } else {
            let complete = row.caches_complete == row.caches_wanted;
            cells.styled(
                format!("{}/{}", row.caches_complete, row.caches_wanted),
                if complete {
                    app.theme.text()
                } else {
                    app.theme.warn()
                },
            )
        };
        caches.cell(taints)
    });
}
