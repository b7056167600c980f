//! The Modules pane.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::view::modules::PluginCounts;

/// Draw every Module: where it is loaded, its images, its device plugin and its DRA driver (each when any Module
/// has one), and why it is not available.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    // The plugin column appears once some Module has a device plugin: a cluster without any reads as before.
    let plugins = app.rows.modules.iter().any(|row| row.plugin.is_some());
    let mut columns: Vec<Column<'_>> = if wide {
        vec![
            Column::shrink("NAMESPACE"),
            Column::shrink("NAME"),
            Column::keep("KERNELS"),
            Column::keep("NODES TGT/DES/AV"),
            Column::keep("IMAGES"),
        ]
    } else {
        vec![
            Column::shrink("NAMESPACE/NAME"),
            Column::keep("TGT/DES/AV"),
            Column::keep("IMGS"),
        ]
    };
    if plugins {
        columns.push(Column::keep(if wide { "PLUGIN AV/DES" } else { "PLUG" }));
    }
    // Likewise the DRA column, once some Module has a DRA driver.
    let dra = app.rows.modules.iter().any(|row| row.dra.is_some());
    if dra {
        columns.push(Column::keep(if wide { "DRA AV/DES" } else { "DRA" }));
    }
    columns.push(Column::shrink("REASON"));
    ListTable {
        title: "Modules",
        note: "",
        columns: &columns,
        list: ListId::Modules,
        focused: true,
        empty: "No Modules. Create one with kubectl apply -f module.yaml",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.modules[index];
        let style = health_style(app, row.health);
        let nodes = format!("{}/{}/{}", row.targeted, row.desired, row.available);
        let images = format!("{}/{}", row.images_existing, row.images_total);
        let reason = row.reason.clone().unwrap_or_else(|| "Available".to_owned());
        let cells = if wide {
            TableRow::new()
                .cell(row.namespace.as_str())
                .cell(row.name.as_str())
                .cell(row.kernels.to_string())
                .cell(nodes)
                .cell(images)
        } else {
            TableRow::new()
                .cell(format!("{}/{}", row.namespace, row.name))
                .cell(nodes)
                .cell(images)
        };
        let counts =
            |cells: TableRow, shown: bool, counts: Option<PluginCounts>| match (shown, counts) {
                (false, _) => cells,
                (true, None) => cells.cell("-"),
                (true, Some(counts)) => cells.styled(
                    format!("{}/{}", counts.available, counts.desired),
                    if counts.complete() {
                        app.theme.text()
                    } else {
                        app.theme.warn()
                    },
                ),
            };
        let cells = counts(cells, plugins, row.plugin);
        let cells = counts(cells, dra, row.dra);
        cells.styled(reason, style)
    });
}
