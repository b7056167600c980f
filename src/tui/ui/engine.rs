//! The `:engine` view: the engine Lease's holder and where it runs, since when, the last renewal, transitions, a
//! hand-off waiting, who acts on each family, what the acting engine did lately, and every engine identity seen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use crate::tui::app::App;

/// Draw the view from [`App::engine_view`].
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let view = app.engine_view();
    let theme = &app.theme;
    let field = |label: &str, value: String, style| {
        Line::from(vec![
            Span::styled(format!(" {label:<14}"), theme.muted()),
            Span::styled(value, style),
        ])
    };
    let held = if view.holder == "none" {
        theme.warn()
    } else {
        theme.ok()
    };
    let mut lines = vec![
        field("Holder", view.holder.clone(), held),
        field("Runs", view.place.clone(), theme.text()),
        field("Since", view.since.clone(), theme.text()),
        field("Renewed", view.renewed.clone(), theme.text()),
        field("Transitions", view.transitions.clone(), theme.text()),
        field("Lease", view.duration.clone(), theme.text()),
        field("This console", view.this_console.clone(), theme.accent()),
    ];
    if let Some(request) = &view.request {
        lines.push(field("Hand-off", request.clone(), theme.progress()));
    }
    if let Some(notice) = &view.notice {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(format!(" {notice}"), theme.warn())));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(" Who acts", theme.title())));
    for family in &view.families {
        lines.push(field(family.family, family.acts.clone(), theme.text()));
    }
    if let Some(activity) = &view.activity {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            format!(" Activity of the acting engine ({})", activity.window),
            theme.title(),
        )));
        if let Some(stalled) = &activity.stalled {
            lines.push(Line::from(Span::styled(
                format!(" {stalled}"),
                theme.error(),
            )));
        }
        lines.push(Line::from(Span::styled(
            format!(
                " {:<14}{:>14}  {:>6}  {:>7}  {}",
                "", "reconciles/min", "errors", "waiting", "oldest waiting"
            ),
            theme.muted(),
        )));
        for row in &activity.rows {
            let errors = if row.errors == "0" {
                theme.text()
            } else {
                theme.warn()
            };
            lines.push(Line::from(vec![
                Span::styled(format!(" {:<14}", row.family), theme.muted()),
                Span::styled(format!("{:>14}  ", row.per_minute), theme.text()),
                Span::styled(format!("{:>6}  ", row.errors), errors),
                Span::styled(format!("{:>7}  ", row.waiting), theme.text()),
                Span::styled(row.oldest.clone(), theme.text()),
            ]));
        }
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        " Engines seen (identity, last seen · where)",
        theme.title(),
    )));
    if view.candidates.is_empty() {
        lines.push(Line::from(Span::styled(" none yet", theme.muted())));
    }
    let width = view
        .candidates
        .iter()
        .map(|c| c.identity.chars().count())
        .max()
        .unwrap_or(0);
    for candidate in &view.candidates {
        let marker = if candidate.holds { "●" } else { " " };
        lines.push(Line::from(vec![
            Span::styled(format!(" {marker} "), theme.ok()),
            Span::styled(format!("{:<width$}  ", candidate.identity), theme.text()),
            Span::styled(
                format!("{} · {}", candidate.seen, candidate.place),
                theme.muted(),
            ),
        ]));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(Span::styled(" Engine ", theme.title()));
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        area,
    );
}
