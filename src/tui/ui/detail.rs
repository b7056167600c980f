//! The Module detail pane: a summary line, then the Module's images, nodes and recent events.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row};

use super::table::ListTable;
use super::{events, health_style, images};
use crate::tui::app::{App, DetailSection, ListId};
use crate::tui::target::Target;

/// Draw the detail of the Module `target`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    let Some(detail) = &app.detail else {
        frame.render_widget(
            Paragraph::new(Span::styled(
                format!("{target} does not exist (any more). esc goes back."),
                app.theme.warn(),
            )),
            area,
        );
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
    let counts = if wide {
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
    let (headings, widths): (&[&str], &[Constraint]) = if very_wide {
        (
            &["NODE", "KERNEL", "STATE", "IMAGE", "WHY"],
            &[
                Constraint::Length(18),
                Constraint::Length(24),
                Constraint::Length(15),
                Constraint::Fill(2),
                Constraint::Fill(3),
            ],
        )
    } else if wide {
        (
            &["NODE", "KERNEL", "STATE", "WHY"],
            &[
                Constraint::Length(18),
                Constraint::Length(29),
                Constraint::Length(15),
                Constraint::Fill(1),
            ],
        )
    } else {
        (
            &["NODE", "STATE", "WHY"],
            &[
                Constraint::Length(16),
                Constraint::Length(15),
                Constraint::Fill(1),
            ],
        )
    };
    ListTable {
        title: "Nodes",
        note: &note,
        headings,
        widths,
        list: ListId::Detail(DetailSection::Nodes),
        focused: focus == DetailSection::Nodes,
        empty: "No node matches the Module's selector",
    }
    .draw(frame, node_area, app, |index| {
        let row = &detail.nodes[index];
        let state = Cell::from(row.state.as_str()).style(health_style(app, row.health));
        let cells = if very_wide {
            vec![
                Cell::from(row.node.as_str()),
                Cell::from(row.kernel.as_str()),
                state,
                Cell::from(row.image.as_str()),
                Cell::from(row.why.as_str()),
            ]
        } else if wide {
            vec![
                Cell::from(row.node.as_str()),
                Cell::from(row.kernel.as_str()),
                state,
                Cell::from(row.why.as_str()),
            ]
        } else {
            vec![
                Cell::from(row.node.as_str()),
                state,
                Cell::from(row.why.as_str()),
            ]
        };
        Row::new(cells).style(app.theme.text())
    });
    events::draw_list(
        frame,
        event_area,
        app,
        ListId::Detail(DetailSection::Events),
        &detail.events,
        false,
        focus == DetailSection::Events,
    );
}
