//! The Events pane and the event table of the detail pane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};

use super::health_style;
use super::table::ListTable;
use crate::tui::app::{App, ListId};
use crate::tui::view::events::EventRow;

/// Draw the event rows of `list`.
pub fn draw_list(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    list: ListId,
    rows: &[EventRow],
    show_object: bool,
    focused: bool,
) {
    let wide = area.width >= 110;
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(if wide { 18 } else { 15 }),
    ];
    let mut headings = vec!["AGE", "TYPE", "REASON"];
    if show_object {
        widths.push(Constraint::Length(if wide { 34 } else { 24 }));
        headings.push("OBJECT");
    }
    widths.push(Constraint::Min(10));
    headings.push("MESSAGE");
    ListTable {
        title: "Events",
        note: "",
        headings: &headings,
        widths: &widths,
        list,
        focused,
        empty: "No events",
    }
    .draw(frame, area, app, |index| {
        let row = &rows[index];
        let mut cells = vec![
            Cell::from(row.age.clone()),
            Cell::from(row.type_.clone()).style(health_style(app, row.health)),
            Cell::from(row.reason.clone()),
        ];
        if show_object {
            cells.push(Cell::from(if wide {
                row.object.clone()
            } else {
                short_object(&row.object)
            }));
        }
        let note = if row.count > 1 {
            format!("{} (x{})", row.note, row.count)
        } else {
            row.note.clone()
        };
        cells.push(Cell::from(note));
        Row::new(cells).style(app.theme.text())
    });
}

/// Draw the Events pane.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    draw_list(
        frame,
        area,
        app,
        ListId::Events,
        &app.rows.events,
        true,
        true,
    );
}

/// `Kind namespace/name` with the kind's short name (`mic`, `nmc`, `po`), so narrow screens keep the name.
fn short_object(object: &str) -> String {
    let Some((kind, name)) = object.split_once(' ') else {
        return object.to_owned();
    };
    let short = match kind {
        "Module" => "mod",
        "ModuleImagesConfig" => "mic",
        "ModuleBuildSignConfig" => "mbsc",
        "NodeModulesConfig" => "nmc",
        "Node" => "no",
        "Pod" => "po",
        other => other,
    };
    format!("{short} {name}")
}
