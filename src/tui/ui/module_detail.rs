//! The Module detail pane: a summary line, then the Module's images, nodes and recent events.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::events::ObjectColumn;
use super::table::{Column, ListTable, TableRow};
use super::{events, health_style, images};
use crate::tui::app::{App, DetailSection, ListId};
use crate::tui::target::Target;

/// Draw the detail of the Module `target`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    let Some(detail) = &app.module_detail else {
        super::draw_gone(frame, area, app, target);
        return;
    };
    let image_rows = u16::try_from(app.visible(ListId::Detail(DetailSection::Images)).len())
        .unwrap_or(u16::MAX)
        .clamp(1, 8);
    let [summary, image_area, node_area, event_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Max(image_rows + 3),
        Constraint::Fill(2),
        Constraint::Fill(1),
    ])
    .areas(area);
    let row = &detail.summary;
    let wide = area.width >= 110;
    let mut counts = if wide {
        format!(
            " nodes {}/{}/{} (targeted/desired/available)  images {}/{} existing ",
            row.targeted, row.desired, row.available, row.images_existing, row.images_total
        )
    } else {
        format!(
            " {}/{}/{} nodes  {}/{} images ",
            row.targeted, row.desired, row.available, row.images_existing, row.images_total
        )
    };
    if let Some(plugin) = row.plugin {
        let noun = if wide { "device plugin" } else { "plugin" };
        counts.push_str(&format!(" {noun} {}/{} ", plugin.available, plugin.desired));
    }
    if let Some(dra) = row.dra {
        let noun = if wide { "DRA driver" } else { "DRA" };
        counts.push_str(&format!(" {noun} {}/{} ", dra.available, dra.desired));
    }
    let line = vec![
        Span::styled(
            format!(" {}/{} ", row.namespace, row.name),
            app.theme.title(),
        ),
        Span::styled(counts, app.theme.text()),
        Span::styled(
            row.reason.as_deref().unwrap_or("Available"),
            health_style(app, row.health),
        ),
    ];
    frame.render_widget(Paragraph::new(Line::from(line)), summary);
    let focus = app.section;
    images::draw_list(
        frame,
        image_area,
        app,
        ListId::Detail(DetailSection::Images),
        &detail.images,
        false,
        focus == DetailSection::Images,
    );
    let note = detail
        .node_states
        .iter()
        .map(|(state, count)| format!("{count} {state}"))
        .collect::<Vec<_>>()
        .join(" · ");
    let very_wide = area.width >= 150;
    let columns: &[Column<'_>] = if very_wide {
        &[
            Column::shrink("NODE"),
            Column::shrink("KERNEL"),
            Column::keep("STATE"),
            Column::shrink("IMAGE"),
            Column::shrink("WHY"),
        ]
    } else if wide {
        &[
            Column::shrink("NODE"),
            Column::shrink("KERNEL"),
            Column::keep("STATE"),
            Column::shrink("WHY"),
        ]
    } else {
        &[
            Column::shrink("NODE"),
            Column::keep("STATE"),
            Column::shrink("WHY"),
        ]
    };
    ListTable {
        title: "Nodes",
        note: &note,
        columns,
        list: ListId::Detail(DetailSection::Nodes),
        focused: focus == DetailSection::Nodes,
        empty: "No node matches the Module's selector",
    }
    .draw(frame, node_area, app, |index| {
        let row = &detail.nodes[index];
        let mut cells = TableRow::new().cell(row.node.as_str());
        if wide {
            cells = cells.cell(row.kernel.as_str());
        }
        cells = cells.styled(row.state.as_str(), health_style(app, row.health));
        if very_wide {
            cells = cells.cell(row.image.as_str());
        }
        cells.cell(row.why.as_str())
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
