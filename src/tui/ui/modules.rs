//! The Modules pane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};

use super::health_style;
use super::table::ListTable;
use crate::tui::app::{App, ListId};

/// Draw every Module: where it is loaded, its images, and why it is not available.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let widths: &[Constraint] = if wide {
        &[
            Constraint::Length(14),
            Constraint::Length(24),
            Constraint::Length(7),
            Constraint::Length(17),
            Constraint::Length(7),
            Constraint::Min(20),
        ]
    } else {
        &[
            Constraint::Length(26),
            Constraint::Length(10),
            Constraint::Length(5),
            Constraint::Fill(1),
        ]
    };
    let headings: &[&str] = if wide {
        &[
            "NAMESPACE",
            "NAME",
            "KERNELS",
            "NODES TGT/DES/AV",
            "IMAGES",
            "REASON",
        ]
    } else {
        &["NAMESPACE/NAME", "TGT/DES/AV", "IMGS", "REASON"]
    };
    ListTable {
        title: "Modules",
        note: "",
        headings,
        widths,
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
            vec![
                Cell::from(row.namespace.clone()),
                Cell::from(row.name.clone()),
                Cell::from(row.kernels.to_string()),
                Cell::from(nodes),
                Cell::from(images),
                Cell::from(reason).style(style),
            ]
        } else {
            vec![
                Cell::from(format!("{}/{}", row.namespace, row.name)),
                Cell::from(nodes),
                Cell::from(images),
                Cell::from(reason).style(style),
            ]
        };
        Row::new(cells).style(app.theme.text())
    });
}
