//! The Preflight pane: the validation under way (its kernel and whether built images are pushed, with a count of
//! Modules per verdict), then three tables `tab` moves between: the kernels the cluster knows of (with a line under
//! it per OS image whose kernel could not be read), every Module's verdict for the validated kernel, and the device
//! plugins and DRA drivers (with the claims on their devices) each node loses while its module reloads.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, ListId};
use crate::tui::view::preflight::{PreflightPane, PreflightSection, Readiness};

/// Draw the pane.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let pane = &app.preflight.pane;
    let rows = |section| {
        u16::try_from(app.visible(ListId::Preflight(section)).len())
            .unwrap_or(u16::MAX)
            .max(1)
    };
    let room = area.height.saturating_sub(1);
    let notes = u16::try_from(pane.os_image_notes.len())
        .unwrap_or(u16::MAX)
        .min(MOST_NOTES);
    let [summary, kernel_area, note_area, module_area, node_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length((rows(PreflightSection::Kernels) + 3).min(room / 3)),
        Constraint::Length(notes),
        Constraint::Length((rows(PreflightSection::Modules) + 3).min(room / 2)),
        Constraint::Fill(1),
    ])
    .areas(area);
    draw_summary(frame, summary, app, pane);
    draw_kernels(frame, kernel_area, app, pane);
    draw_os_image_notes(frame, note_area, app, pane);
    draw_modules(frame, module_area, app, pane);
    draw_nodes(frame, node_area, app, pane);
}

/// The validation under way: its kernel, whether builds are pushed, and how many Modules have each verdict.
fn draw_summary(frame: &mut Frame<'_>, area: Rect, app: &App, pane: &PreflightPane) {
    let line = match &pane.preflight {
        Some(p) => {
            let count = |r: Readiness| pane.modules.iter().filter(|m| m.readiness == r).count();
            let mut spans = vec![
                Span::styled(format!(" {} ", p.name), app.theme.title()),
                Span::styled(format!("kernel {}  ", p.kernel), app.theme.text()),
                Span::styled(
                    if p.push_built_image {
                        "builds pushed  "
                    } else {
                        "builds not pushed  "
                    },
                    app.theme.muted(),
                ),
            ];
            for readiness in [
                Readiness::Ready,
                Readiness::Buildable,
                Readiness::Checking,
                Readiness::NotReady,
                Readiness::Waiting,
            ] {
                let n = count(readiness);
                if n > 0 {
                    spans.push(Span::styled(
                        format!("{n} {}  ", readiness.label().to_lowercase()),
                        health_style(app, readiness.health()),
                    ));
                }
            }
            Line::from(spans)
        }
        None => Line::from(Span::styled(
            " No kernel validated yet: pick one below (enter), or type :preflight <kernel>",
            app.theme.muted(),
        )),
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The kernels the cluster knows of, the validated one marked.
fn draw_kernels(frame: &mut Frame<'_>, area: Rect, app: &App, pane: &PreflightPane) {
    ListTable {
        title: "Kernels",
        note: "enter validates every Module against the selected kernel",
        columns: &[
            Column::keep(" "),
            Column::shrink("KERNEL"),
            Column::shrink("KNOWN FROM"),
        ],
        list: ListId::Preflight(PreflightSection::Kernels),
        focused: app.preflight.section == PreflightSection::Kernels,
        empty: "No kernel known: no node reports one",
    }
    .draw(frame, area, app, |index| {
        let row = &pane.kernels[index];
        TableRow::new()
            .styled(if row.validated { "▶" } else { " " }, app.theme.accent())
            .cell(row.kernel.as_str())
            .cell(row.known_from.as_str())
    });
}

/// The most lines the notes on unreadable OS images take; the last says how many more there are.
const MOST_NOTES: u16 = 3;

/// The OS images whose kernel could not be read, and why: what keeps their kernel out of the table.
fn draw_os_image_notes(frame: &mut Frame<'_>, area: Rect, app: &App, pane: &PreflightPane) {
    let shown = usize::from(area.height);
    let notes = &pane.os_image_notes;
    let lines: Vec<Line> = notes
        .iter()
        .enumerate()
        .take(shown)
        .map(|(index, note)| {
            let text = if index + 1 == shown && notes.len() > shown {
                format!(
                    " … and {} more OS images whose kernel is unknown",
                    notes.len() - index
                )
            } else {
                format!(" {note}")
            };
            Line::from(Span::styled(text, app.theme.warn()))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

/// Every Module's verdict for the validated kernel.
fn draw_modules(frame: &mut Frame<'_>, area: Rect, app: &App, pane: &PreflightPane) {
    let buildable = pane.modules.iter().filter(|m| m.can_build).count();
    let module_note = if buildable > 0 {
        format!("{buildable} can build: B builds and pushes")
    } else {
        String::new()
    };
    ListTable {
        title: "Modules",
        note: &module_note,
        columns: &[
            Column::shrink("NAMESPACE"),
            Column::shrink("MODULE"),
            Column::keep("VERDICT"),
            Column::shrink("WHY"),
        ],
        list: ListId::Preflight(PreflightSection::Modules),
        focused: app.preflight.section == PreflightSection::Modules,
        empty: if pane.preflight.is_some() {
            "No Module loads a kernel module"
        } else {
            "Pick a kernel to validate every Module against it"
        },
    }
    .draw(frame, area, app, |index| {
        let row = &pane.modules[index];
        TableRow::new()
            .cell(row.namespace.as_str())
            .cell(row.name.as_str())
            .styled(
                row.readiness.label(),
                health_style(app, row.readiness.health()),
            )
            .cell(row.reason.as_str())
    });
}

/// The nodes that move to the kernel, and the device plugins and DRA drivers each loses while its modules reload,
/// with the claims allocated on those drivers' devices (the DRA columns appear once some node has a DRA driver).
fn draw_nodes(frame: &mut Frame<'_>, area: Rect, app: &App, pane: &PreflightPane) {
    let dra = pane.nodes.iter().any(|n| !n.dra_drivers.is_empty());
    let losing = pane
        .nodes
        .iter()
        .filter(|n| !n.device_plugins.is_empty() || !n.dra_drivers.is_empty())
        .count();
    let node_note = if dra {
        let claims: usize = pane.nodes.iter().map(|n| n.claims.len()).sum();
        format!(
            "{losing} lose a device plugin or DRA driver while their modules reload, {claims} claims disturbed"
        )
    } else {
        format!("{losing} lose a device plugin while their modules reload")
    };
    let mut columns = vec![
        Column::shrink("NODE"),
        Column::shrink("KERNEL NOW"),
        Column::shrink("DEVICE PLUGINS LOST"),
    ];
    if dra {
        columns.push(Column::shrink("DRA DRIVERS LOST"));
        columns.push(Column::shrink("CLAIMS DISTURBED"));
    }
    ListTable {
        title: "Nodes moving to the kernel",
        note: if pane.preflight.is_some() {
            &node_note
        } else {
            ""
        },
        columns: &columns,
        list: ListId::Preflight(PreflightSection::Nodes),
        focused: app.preflight.section == PreflightSection::Nodes,
        empty: if pane.preflight.is_some() {
            "Every node runs the kernel already"
        } else {
            "Pick a kernel to see which nodes move to it"
        },
    }
    .draw(frame, area, app, |index| {
        let row = &pane.nodes[index];
        let lost = |cells: TableRow, names: &[String]| {
            if names.is_empty() {
                cells.styled("none", app.theme.muted())
            } else {
                cells.styled(names.join(", "), app.theme.warn())
            }
        };
        let cells = TableRow::new()
            .cell(row.node.as_str())
            .cell(row.kernel.as_str());
        let cells = lost(cells, &row.device_plugins);
        if dra {
            lost(lost(cells, &row.dra_drivers), &row.claims)
        } else {
            cells
        }
    });
}
