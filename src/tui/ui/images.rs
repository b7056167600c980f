//! The Images pane: every image of every ModuleImagesConfig.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::view::images::ImageRow;

/// Draw the image rows of `list`.
pub(super) fn draw_list(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    list: ListId,
    rows: &[ImageRow],
    show_module: bool,
    focused: bool,
) {
    let wide = area.width >= 110;
    let mut columns = Vec::new();
    if show_module {
        columns.push(Column::shrink("MODULE"));
    }
    columns.extend([
        Column::shrink("IMAGE"),
        Column::keep("STATE"),
        Column::keep("GEN"),
        Column::shrink("POD"),
    ]);
    if wide {
        columns.push(Column::keep("AGE"));
    }
    ListTable {
        title: "Images",
        note: "",
        columns: &columns,
        list,
        focused,
        empty: "No images yet: the engine lists them once a Module targets nodes",
    }
    .draw(frame, area, app, |index| {
        let row = &rows[index];
        let mut cells = TableRow::new();
        if show_module {
            cells = cells.cell(format!("{}/{}", row.namespace, row.module));
        }
        let observed = row
            .observed_generation
            .map_or_else(|| "-".to_owned(), |g| g.to_string());
        cells = cells
            .cell(row.image.as_str())
            .styled(row.state_label(), health_style(app, row.health))
            .cell(format!("{}/{observed}", row.generation))
            .cell(
                row.pod
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), |pod| pod.summary()),
            );
        if wide {
            cells = cells.cell(row.age.as_str());
        }
        cells
    });
}

/// Draw the Images pane.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
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
