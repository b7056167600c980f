//! The Events pane and the event table of the detail panes.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::view::events::EventRow;

/// How a list of events names the object each is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ObjectColumn {
    /// `Kind namespace/name` (short kinds on narrow screens): the Events pane, where events of every namespace
    /// mix.
    Full,
    /// `Kind/name`: a detail's events, all about one object and the pods and nodes working for it.
    Compact,
}

/// Draw the event rows of `list`.
pub(super) fn draw_list(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    list: ListId,
    rows: &[EventRow],
    object: ObjectColumn,
    focused: bool,
) {
    let wide = area.width >= 110;
    let columns = [
        Column::keep("AGE"),
        Column::keep("TYPE"),
        Column::shrink("REASON"),
        Column::shrink("OBJECT"),
        Column::shrink("MESSAGE"),
    ];
    ListTable {
        title: "Events",
        note: "",
        columns: &columns,
        list,
        focused,
        empty: "No events",
    }
    .draw(frame, area, app, |index| {
        let row = &rows[index];
        let note = if row.count > 1 {
            format!("{} (x{})", row.note, row.count)
        } else {
            row.note.clone()
        };
        let object = match object {
            ObjectColumn::Full if wide => row.object.clone(),
            ObjectColumn::Full => short_object(&row.object),
            ObjectColumn::Compact => compact_object(&row.object),
        };
        TableRow::new()
            .cell(row.age.as_str())
            .styled(row.type_.as_str(), health_style(app, row.health))
            .cell(row.reason.as_str())
            .cell(object)
            .cell(note)
    });
}

/// Draw the Events pane.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    draw_list(
        frame,
        area,
        app,
        ListId::Events,
        &app.rows.events,
        ObjectColumn::Full,
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
        "Shim" => "sh",
        other => other,
    };
    format!("{short} {name}")
}

/// `Kind namespace/name` as `Kind/name`.
fn compact_object(object: &str) -> String {
    let Some((kind, path)) = object.split_once(' ') else {
        return object.to_owned();
    };
    let name = path.rsplit_once('/').map_or(path, |(_, name)| name);
    format!("{kind}/{name}")
}
