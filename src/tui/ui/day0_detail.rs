//! The Day-0 detail pane: a summary of the ModuleDay0 (pool, rollout, state, target image and where the image
//! stands), what opting in to cluster upgrades would do when an upgrade waits for it, then three sections `tab`
//! moves between: the pool's nodes with their OS image and kernel before → after, the image's pull, build and
//! sign pods, and recent events.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::day0::rollout_bar;
use super::events::{self, ObjectColumn};
use super::health_style;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, DetailSection, ListId};
use crate::tui::target::Target;
use crate::tui::view::day0_detail::Day0Detail;

/// Draw the detail of the ModuleDay0 `target`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    let Some(detail) = &app.day0_detail else {
        super::draw_gone(frame, area, app, target);
        return;
    };
    let note_rows = match &detail.upgrade_note {
        // Word wrapping leaves lines short: one more row than the characters need.
        Some(note) => u16::try_from(
            note.chars().count() / usize::from(area.width.saturating_sub(20).max(1)) + 1,
        )
        .unwrap_or(1)
        .min(6),
        None => 0,
    };
    let node_rows = u16::try_from(app.visible(ListId::Detail(DetailSection::Nodes)).len())
        .unwrap_or(u16::MAX)
        .max(1);
    let pod_rows = u16::try_from(app.visible(ListId::Detail(DetailSection::Images)).len())
        .unwrap_or(u16::MAX)
        .max(1);
    let room = area.height.saturating_sub(2 + note_rows);
    let [
        summary,
        image_line,
        note_area,
        node_area,
        pod_area,
        event_area,
    ] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(note_rows),
        Constraint::Length((node_rows + 3).min(room / 2)),
        Constraint::Length((pod_rows + 3).min(room / 4).max(4)),
        Constraint::Fill(1),
    ])
    .areas(area);
    let wide = area.width >= 110;
    draw_summary(frame, [summary, image_line, note_area], app, detail, wide);
    draw_nodes(frame, node_area, app, detail, wide);
    draw_pods(frame, pod_area, app, detail);
    events::draw_list(
        frame,
        event_area,
        app,
        ListId::Detail(DetailSection::Events),
        &detail.events,
        ObjectColumn::Compact,
        app.section == DetailSection::Events,
    );
}

/// The summary line, the image line and the upgrade note, when there is one.
fn draw_summary(
    frame: &mut Frame<'_>,
    areas: [Rect; 3],
    app: &App,
    detail: &Day0Detail,
    wide: bool,
) {
    let [summary, image_line, note_area] = areas;
    let row = &detail.summary;
    let style = health_style(app, row.state.health());
    let bar = row.rollout.map_or_else(
        || "no pool".to_owned(),
        |r| rollout_bar(r, if wide { 10 } else { 5 }),
    );
    let mut line = vec![
        Span::styled(
            format!(" {}/{} ", row.namespace, row.name),
            app.theme.title(),
        ),
        Span::styled(format!("pool {}  ", row.pool_label()), app.theme.text()),
        Span::styled(format!("{bar}  "), style),
    ];
    if wide && let Some(config) = &detail.machine_config {
        line.push(Span::styled(format!("mc {config}  "), app.theme.muted()));
    }
    line.push(Span::styled(
        row.why.as_deref().unwrap_or(row.state.label()),
        style,
    ));
    frame.render_widget(Paragraph::new(Line::from(line)), summary);
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(" image ", app.theme.muted()),
            Span::styled(format!("{}  ", row.image), app.theme.text()),
            Span::styled(detail.image_stage.as_str(), app.theme.muted()),
        ])),
        image_line,
    );
    if let Some(note) = &detail.upgrade_note {
        frame.render_widget(
            Paragraph::new(Span::styled(format!(" {note}"), app.theme.warn()))
                .wrap(Wrap { trim: true }),
            note_area,
        );
    }
}

/// The pool's nodes: their OS image and kernel, now and after the update.
fn draw_nodes(frame: &mut Frame<'_>, area: Rect, app: &App, detail: &Day0Detail, wide: bool) {
    let on_target = detail.nodes.iter().filter(|n| n.on_target()).count();
    let note = format!(
        "{on_target}/{} on {}",
        detail.nodes.len(),
        detail.summary.literal
    );
    let columns: &[Column<'_>] = if wide {
        &[
            Column::shrink("NODE"),
            Column::shrink("OS IMAGE (NOW → TARGET)"),
            Column::shrink("KERNEL (NOW → TARGET)"),
            Column::keep("UPDATE"),
        ]
    } else {
        &[
            Column::shrink("NODE"),
            Column::shrink("OS IMAGE (NOW → TARGET)"),
            Column::keep("UPDATE"),
        ]
    };
    ListTable {
        title: "Nodes",
        note: &note,
        columns,
        list: ListId::Detail(DetailSection::Nodes),
        focused: app.section == DetailSection::Nodes,
        empty: "No node in the pool",
    }
    .draw(frame, area, app, |index| {
        let node = &detail.nodes[index];
        let style = health_style(app, node.health);
        let mut cells = TableRow::new()
            .cell(node.node.as_str())
            .styled(node.os_change(), style);
        if wide {
            cells = cells.cell(node.kernel_change());
        }
        cells.cell(if node.update.is_empty() {
            "-"
        } else {
            node.update.as_str()
        })
    });
}

/// The pull, build and sign pods of the ModuleDay0's image.
fn draw_pods(frame: &mut Frame<'_>, area: Rect, app: &App, detail: &Day0Detail) {
    ListTable {
        title: "Image pods",
        note: "",
        columns: &[
            Column::shrink("POD"),
            Column::keep("ROLE"),
            Column::keep("PHASE"),
            Column::keep("AGE"),
        ],
        list: ListId::Detail(DetailSection::Images),
        focused: app.section == DetailSection::Images,
        empty: "No pull, build or sign pod",
    }
    .draw(frame, area, app, |index| {
        let pod = &detail.pods[index];
        TableRow::new()
            .cell(pod.pod.name.as_str())
            .cell(pod.role)
            .styled(pod.phase.as_str(), health_style(app, pod.health))
            .cell(pod.age.as_str())
    });
}
