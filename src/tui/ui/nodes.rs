//! The Nodes pane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};

use super::health_style;
use super::table::ListTable;
use crate::tui::app::{App, ListId};

/// Draw every node: readiness, kernel, OS image, modules loaded, caches complete of those wanted, taints.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let widths: &[Constraint] = if wide {
        &[
            Constraint::Length(18),
            Constraint::Length(9),
            Constraint::Length(29),
            Constraint::Fill(2),
            Constraint::Length(16),
            Constraint::Length(7),
            Constraint::Fill(1),
        ]
    } else {
        &[
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Length(29),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Fill(1),
        ]
    };
    let headings: &[&str] = if wide {
        &[
            "NAME", "STATUS", "KERNEL", "OS IMAGE", "MODULES", "CACHES", "TAINTS",
        ]
    } else {
        &["NAME", "STATUS", "KERNEL", "LOADED", "CACHES", "TAINTS"]
    };
    ListTable {
        title: "Nodes",
        note: "",
        headings,
        widths,
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
        let mut cells = vec![
            Cell::from(row.name.clone()),
            Cell::from(status).style(health_style(app, row.health)),
            Cell::from(row.kernel.clone()),
        ];
        if wide {
            cells.push(Cell::from(row.os_image.clone()));
        }
        cells.push(Cell::from(modules));
        cells.push(if row.caches_wanted == 0 {
            Cell::from("-")
        } else {
            Cell::from(format!("{}/{}", row.caches_complete, row.caches_wanted)).style(
                if row.caches_complete == row.caches_wanted {
                    app.theme.text()
                } else {
                    app.theme.warn()
                },
            )
        });
        cells.push(Cell::from(taints));
        Row::new(cells).style(app.theme.text())
    });
}
