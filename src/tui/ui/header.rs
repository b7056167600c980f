//! The header: where the console is connected, which engine acts, and how many Modules, ImageCaches and nodes are in
//! each state.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::tui::app::{App, EngineMode};
use crate::tui::view::Health;

/// Draw the header line.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let theme = &app.theme;
    let wide = area.width >= 110;
    // Full words for the counts only where they fit beside everything else.
    let roomy = area.width >= 140;
    let mut spans = Vec::new();
    if wide {
        spans.push(Span::styled(" kmm-tui ", theme.title()));
    }
    spans.push(Span::styled(
        format!(" {} ", app.session.context),
        theme.accent(),
    ));
    if app.session.embedded {
        spans.push(Span::styled(" EMBEDDED ", theme.selection()));
    }
    spans.push(Span::styled(
        match (&app.session.engine, wide) {
            (_, true) => format!(" {} ", app.engine_summary()),
            (EngineMode::Foreground, false) => " engine:fg ".to_owned(),
            (EngineMode::Off, false) => " engine:off ".to_owned(),
        },
        theme.muted(),
    ));
    if app.session.readonly {
        spans.push(Span::styled(" read-only ", theme.warn()));
    }
    if let Some(namespace) = &app.namespace {
        spans.push(Span::styled(format!(" ns:{namespace} "), theme.accent()));
    }
    if let Some((kind, message)) = app.data.failure() {
        spans.push(Span::styled(
            format!(" {kind} watch failing: {message} "),
            theme.error(),
        ));
    } else if !app.data.loaded() {
        spans.push(Span::styled(" loading… ", theme.progress()));
    }
    let count = |health: Health| {
        app.rows
            .modules
            .iter()
            .filter(|r| r.health == health)
            .count()
    };
    spans.push(Span::styled(
        if roomy {
            format!(" Modules {} ", app.rows.modules.len())
        } else {
            format!(" Mod {} ", app.rows.modules.len())
        },
        theme.text(),
    ));
    for (health, label, short, style) in [
        (Health::Ok, "ok", "ok", theme.ok()),
        (Health::Progressing, "busy", "busy", theme.progress()),
        (Health::Warning, "waiting", "wait", theme.warn()),
        (Health::Error, "degraded", "degr", theme.error()),
    ] {
        let n = count(health);
        if n > 0 {
            let label = if roomy { label } else { short };
            spans.push(Span::styled(format!("{n} {label} "), style));
        }
    }
    let caches = cache_counts(app, area.width);
    if wide {
        spans.extend(caches.clone());
    }
    let ready = app.rows.nodes.iter().filter(|n| n.ready).count();
    spans.push(Span::styled(
        if wide {
            format!(" Nodes {ready}/{} ready ", app.rows.nodes.len())
        } else {
            format!(" Nodes {ready}/{} ", app.rows.nodes.len())
        },
        if ready == app.rows.nodes.len() {
            theme.text()
        } else {
            theme.warn()
        },
    ));
    if !wide {
        spans.extend(caches);
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.text()), area);
}

/// `Caches 3 1 ok 1 busy 1 degraded` on very wide screens, else `Caches 3 ✗1 ◐1 ●1` (`IC` on narrow ones) with the
/// failures first, or nothing without ImageCaches.
fn cache_counts(app: &App, width: u16) -> Vec<Span<'static>> {
    let theme = &app.theme;
    let rows = &app.rows.caches;
    if rows.is_empty() {
        return Vec::new();
    }
    let roomy = width >= 140;
    let mut spans = vec![Span::styled(
        if width >= 110 {
            format!(" Caches {} ", rows.len())
        } else {
            format!(" IC {} ", rows.len())
        },
        theme.text(),
    )];
    let mut states = [
        (Health::Ok, "ok", "●", theme.ok()),
        (Health::Progressing, "busy", "◐", theme.progress()),
        (Health::Warning, "waiting", "·", theme.warn()),
        (Health::Error, "degraded", "✗", theme.error()),
    ];
    if !roomy {
        states.reverse();
    }
    for (health, label, glyph, style) in states {
        let n = rows.iter().filter(|r| r.health == health).count();
        if n > 0 {
            spans.push(Span::styled(
                if roomy {
                    format!("{n} {label} ")
                } else {
                    format!("{glyph}{n} ")
                },
                style,
            ));
        }
    }
    spans
}
