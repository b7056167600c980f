//! The Images pane: every image of every ModuleImagesConfig.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Cell, Row};

use super::health_style;
use super::table::ListTable;
use crate::tui::app::{App, ListId};
use crate::tui::view::images::ImageRow;

/// Draw the image rows of `list`.
pub fn draw_list(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    list: ListId,
    rows: &[ImageRow],
    show_module: bool,
    focused: bool,
) {
    let wide = area.width >= 110;
    let mut widths = Vec::new();
    let mut headings = Vec::new();
    if show_module {
        widths.push(Constraint::Length(if wide { 24 } else { 14 }));
        headings.push("MODULE");
    }
    widths.extend([
        Constraint::Min(20),
        Constraint::Length(13),
        Constraint::Length(7),
        Constraint::Length(if wide { 15 } else { 10 }),
    ]);
    headings.extend(["IMAGE", "STATE", "GEN", "POD"]);
    if wide {
        widths.push(Constraint::Length(5));
        headings.push("AGE");
    }
    ListTable {
        title: "Images",
        note: "",
        headings: &headings,
        widths: &widths,
        list,
        focused,
        empty: "No images yet: the engine lists them once a Module targets nodes",
    }
    .draw(frame, area, app, |index| {
        let row = &rows[index];
        let mut cells = Vec::new();
        if show_module {
            cells.push(Cell::from(format!("{}/{}", row.namespace, row.module)));
        }
        cells.push(Cell::from(row.image.clone()));
        cells.push(Cell::from(row.state_label()).style(health_style(app, row.health)));
        let observed = row
            .observed_generation
            .map_or_else(|| "-".to_owned(), |g| g.to_string());
        cells.push(Cell::from(format!("{}/{observed}", row.generation)));
        cells.push(Cell::from(row.pod.as_ref().map_or_else(
            || "-".to_owned(),
            |pod| format!("{} {}", pod.role, pod.phase),
        )));
        if wide {
            cells.push(Cell::from(row.age.clone()));
        }
        Row::new(cells).style(app.theme.text())
    });
}

/// Draw the Images pane.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    draw_list(
        frame,
        area,
        app,
        ListId::Images,
        &app.rows.images,
        true,
        true,
    );
}
