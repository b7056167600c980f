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
    let [summary, image_area, node_area, event_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
        Constraint::Fill(1),
    ])
    .areas(area);
    let row = &detail.summary;
    let mut line = vec![
        Span::styled(
            format!(" {}/{} ", row.namespace, row.name),
            app.theme.title(),
        ),
        Span::styled(
            format!(
                " nodes {}/{}/{} (targeted/desired/available)  images {}/{} ",
                row.targeted, row.desired, row.available, row.images_existing, row.images_total
            ),
            app.theme.text(),
        ),
    ];
    line.push(Span::styled(
        row.reason.clone().unwrap_or_else(|| "Available".to_owned()),
        health_style(app, row.health),
    ));
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
    ListTable {
        title: "Nodes",
        headings: &["NODE", "KERNEL", "STATE", "IMAGE", "WHY"],
        widths: &[
            Constraint::Length(16),
            Constraint::Length(26),
            Constraint::Length(15),
            Constraint::Min(16),
            Constraint::Min(10),
        ],
        list: ListId::Detail(DetailSection::Nodes),
        focused: focus == DetailSection::Nodes,
        empty: "No node is asked to load this Module",
    }
    .draw(frame, node_area, app, |index| {
        let row = &detail.nodes[index];
        Row::new(vec![
            Cell::from(row.node.clone()),
            Cell::from(row.kernel.clone()),
            Cell::from(row.state.clone()).style(health_style(app, row.health)),
            Cell::from(row.image.clone()),
            Cell::from(row.why.clone()),
        ])
        .style(app.theme.text())
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
