//! The Shim detail pane: a summary line, the archive when every node gets the same one, then every node the Shim
//! targets with its state, batch, artifact (when they differ) and why, and the recent events of the Shim and its
//! installer pods.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::events::{self, ObjectColumn};
use super::health_style;
use super::shims::progress;
use super::table::{Column, ListTable, TableRow};
use crate::tui::app::{App, DetailSection, ListId};
use crate::tui::target::Target;
use crate::tui::view::consequences::names;
use crate::tui::view::shim_detail::ShimDetail;

/// The archive every node gets, the batch waiting for approval with its nodes, and the approvals so far: what `A`
/// would start, and who let the earlier batches start and when.
fn rollout_lines<'a>(app: &App, detail: &ShimDetail) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    if let Some(artifact) = &detail.shared_artifact {
        lines.push(Line::from(vec![
            Span::styled(" archive   ", app.theme.muted()),
            Span::styled(artifact.clone(), app.theme.text()),
        ]));
    }
    if let Some((batch, nodes)) = &detail.next_batch {
        lines.push(Line::from(vec![
            Span::styled(" next      ", app.theme.muted()),
            Span::styled(
                format!("batch {batch} waits for approval: {}", names(nodes)),
                app.theme.warn(),
            ),
        ]));
    }
    if !detail.approvals.is_empty() {
        let history = detail
            .approvals
            .iter()
            .map(|a| format!("batch {} by {} {} ago", a.batch, a.by, a.age))
            .collect::<Vec<_>>()
            .join(" · ");
        lines.push(Line::from(vec![
            Span::styled(" approved  ", app.theme.muted()),
            Span::styled(history, app.theme.text()),
        ]));
    }
    lines
}

/// Draw the detail of the Shim `target`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    let Some(detail) = &app.shim.detail else {
        super::draw_gone(frame, area, app, target);
        return;
    };
    // The node table takes what its rows need, up to two thirds; the events get the rest.
    let node_rows = u16::try_from(app.visible(ListId::Detail(DetailSection::Nodes)).len())
        .unwrap_or(u16::MAX)
        .max(1);
    let rollout = rollout_lines(app, detail);
    let header = 1 + u16::try_from(rollout.len()).unwrap_or(0);
    let most = area.height.saturating_sub(header) * 2 / 3;
    let [summary, node_area, event_area] = Layout::vertical([
        Constraint::Length(header),
        Constraint::Length((node_rows + 3).min(most)),
        Constraint::Fill(1),
    ])
    .areas(area);
    let row = &detail.summary;
    let wide = area.width >= 110;
    let style = health_style(app, row.health);
    let mut line = vec![
        Span::styled(format!(" {} ", row.name), app.theme.title()),
        Span::styled(format!("{} ", progress(row.ready, row.targets, 10)), style),
    ];
    if wide {
        line.push(Span::styled(
            format!(
                "runtimeclass {}  {}  batch {}  ",
                row.runtime_class,
                row.strategy,
                row.batch_label()
            ),
            app.theme.text(),
        ));
    } else {
        line.push(Span::styled(
            format!("batch {}  ", row.batch_label()),
            app.theme.text(),
        ));
    }
    line.push(Span::styled(
        row.reason.as_deref().unwrap_or(row.state.as_str()),
        style,
    ));
    let mut lines = vec![Line::from(line)];
    lines.extend(rollout);
    frame.render_widget(Paragraph::new(lines), summary);
    let focus = app.section;
    let note = detail
        .node_states
        .iter()
        .map(|(state, count)| format!("{count} {state}"))
        .collect::<Vec<_>>()
        .join(" · ");
    let artifact_column = wide && detail.shared_artifact.is_none();
    let columns: &[Column<'_>] = if artifact_column {
        &[
            Column::shrink("NODE"),
            Column::keep("STATE"),
            Column::keep("BATCH"),
            Column::shrink("ARTIFACT"),
            Column::keep("SINCE"),
            Column::shrink("WHY"),
        ]
    } else {
        &[
            Column::shrink("NODE"),
            Column::keep("STATE"),
            Column::keep("BATCH"),
            Column::keep("SINCE"),
            Column::shrink("WHY"),
        ]
    };
    ListTable {
        title: "Nodes",
        note: &note,
        columns,
        list: ListId::Detail(DetailSection::Nodes),
        focused: focus == DetailSection::Nodes,
        empty: "No node matches the Shim's selector",
    }
    .draw(frame, node_area, app, |index| {
        let row = &detail.nodes[index];
        let mut cells = TableRow::new()
            .cell(row.node.as_str())
            .styled(row.state, health_style(app, row.health))
            .cell(row.batch_label());
        if artifact_column {
            cells = cells.cell(row.artifact.as_str());
        }
        cells.cell(row.since.as_str()).cell(row.why.as_str())
    });
    events::draw_list(
        frame,
        event_area,
        app,
        ListId::Detail(DetailSection::Events),
        &detail.events,
        ObjectColumn::Compact,
        focus == DetailSection::Events,
    );
}
