//! The Devices pane (`:devices`): every DRA device, where it is published and what holds it.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::data::{DRA_NOT_SERVED, DraServing};
use crate::tui::view::devices::DeviceState;

/// Draw every device: node, driver, pool, name, state, the claim and pods holding it, and its attributes. On a
/// cluster without DRA the table says so instead of listing nothing.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let columns: Vec<Column<'_>> = if wide {
        vec![
            Column::shrink("NODE"),
            Column::shrink("DRIVER"),
            Column::shrink("POOL"),
            Column::shrink("DEVICE"),
            Column::keep("STATE"),
            Column::shrink("CLAIM"),
            Column::shrink("PODS"),
            Column::shrink("ATTRIBUTES"),
        ]
    } else {
        vec![
            Column::shrink("NODE"),
            Column::shrink("DRIVER"),
            Column::shrink("DEVICE"),
            Column::keep("STATE"),
            Column::shrink("CLAIM"),
            Column::shrink("ATTRIBUTES"),
        ]
    };
    let count = |state: DeviceState| {
        app.rows
            .devices
            .iter()
            .filter(|row| row.state == state)
            .count()
    };
    let withdrawn = count(DeviceState::Withdrawn);
    let note = if app.rows.devices.is_empty() {
        String::new()
    } else if withdrawn > 0 {
        format!(
            "{} allocated, {withdrawn} withdrawn",
            count(DeviceState::Allocated)
        )
    } else {
        format!("{} allocated", count(DeviceState::Allocated))
    };
    let empty = match app.data.dra {
        DraServing::NotServed => DRA_NOT_SERVED,
        DraServing::Unknown => "Asking the cluster whether it serves DRA (resource.k8s.io/v1)…",
        DraServing::Served if !app.data.dra_listed() => "Loading…",
        DraServing::Served => "No DRA devices: no driver publishes a ResourceSlice",
    };
    ListTable {
        title: "Devices",
        note: &note,
        columns: &columns,
        list: ListId::Devices,
        focused: true,
        empty,
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.devices[index];
        let claim = if row.claims.is_empty() {
            "-".to_owned()
        } else {
            row.claims.join(", ")
        };
        let mut cells = TableRow::new()
            .cell(row.node.as_str())
            .cell(row.driver.as_str());
        if wide {
            cells = cells.cell(row.pool.as_str());
        }
        cells = cells
            .cell(row.device.as_str())
            .styled(row.state.label(), health_style(app, row.state.health()))
            .cell(claim);
        if wide {
            cells = cells.cell(if row.pods.is_empty() {
                "-".to_owned()
            } else {
                row.pods.join(", ")
            });
        }
        cells.cell(row.attributes.as_str())
    });
}
