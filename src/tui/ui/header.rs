//! The header: where the console is connected, which engine acts, and how many Modules, Shims, ImageCaches,
//! ModuleDay0s and nodes are in each state.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme_health_style;
use crate::tui::app::App;
use crate::tui::theme::Theme;
use crate::tui::view::Health;
use crate::tui::view::day0::Day0State;
use crate::tui::view::shims::ShimState;
use crate::tui::view::summary::Summary;

/// How much the header spells out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Every word.
    Long,
    /// Every piece, with the counts' labels abbreviated.
    Compact,
    /// Who acts in full, everything else as short as it goes: when the engine runs elsewhere, the header names where
    /// (an in-cluster holder's pod name is long).
    Tight,
    /// Abbreviated, and the Shims counted only in the states that want a person.
    Short,
}

/// Draw the header line in the longest form the screen has room for.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    if app.view() == &crate::tui::app::View::Fleet {
        let line = Line::from(super::fleet::header_spans(app));
        frame.render_widget(Paragraph::new(line).style(app.theme.text()), area);
        return;
    }
    let forms: &[Form] = if area.width >= 110 {
        if app.engine_elsewhere() {
            &[Form::Long, Form::Compact, Form::Tight, Form::Short]
        } else {
            &[Form::Long, Form::Compact, Form::Short]
        }
    } else {
        &[Form::Short]
    };
    let fits = |line: &Line<'_>| line.width() <= usize::from(area.width);
    let line = forms
        .iter()
        .map(|form| Line::from(spans(app, *form)))
        .find(fits)
        .unwrap_or_else(|| Line::from(spans(app, Form::Short)));
    frame.render_widget(Paragraph::new(line).style(app.theme.text()), area);
}

/// The header's pieces in `form`.
fn spans(app: &App, form: Form) -> Vec<Span<'static>> {
    let wide = matches!(form, Form::Long | Form::Compact);
    let full_engine = form != Form::Short;
    let theme = &app.theme;
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
        if full_engine {
            format!(" {} ", app.engine_summary())
        } else {
            format!(" {} ", app.engine_badge())
        },
        theme.muted(),
    ));
    if app.session.readonly {
        spans.push(Span::styled(" read-only ", theme.warn()));
    }
    if let Some(namespace) = &app.namespace {
        spans.push(Span::styled(format!(" ns:{namespace} "), theme.accent()));
    }
    if let Some(why) = app.data.unreachable() {
        spans.push(Span::styled(
            format!(" cannot reach the cluster: {why} "),
            theme.error(),
        ));
    } else if let Some(trouble) = app.credentials_trouble() {
        spans.push(Span::styled(format!(" {trouble} "), theme.error()));
    } else if let Some((kind, why)) = app.data.failure() {
        spans.push(Span::styled(
            format!(" {kind} watch failing: {why} "),
            theme.error(),
        ));
    } else if !app.data.loaded() {
        spans.push(Span::styled(" loading… ", theme.progress()));
    }
    let summary = app.summary();
    spans.extend(module_counts(&summary, theme, form));
    spans.extend(shim_counts(&summary, theme, form));
    spans.extend(cache_counts(&summary, theme, wide));
    spans.extend(day0_counts(&summary, theme, wide));
    spans.push(node_count(&summary, theme, wide));
    spans
}

/// `Modules 12 9 ok 1 busy 2 degraded`, `Mod 12 9 ok 1 busy 2 degr` in short forms.
fn module_counts(summary: &Summary, theme: &Theme, form: Form) -> Vec<Span<'static>> {
    let wide = matches!(form, Form::Long | Form::Compact);
    let words = form == Form::Long;
    let total = summary.modules.total;
    let mut spans = vec![Span::styled(
        if wide {
            format!(" Modules {total} ")
        } else {
            format!(" Mod {total} ")
        },
        theme.text(),
    )];
    for (health, label, short, style) in [
        (Health::Ok, "ok", "ok", theme.ok()),
        (Health::Progressing, "busy", "busy", theme.progress()),
        (Health::Warning, "waiting", "wait", theme.warn()),
        (Health::Error, "degraded", "degr", theme.error()),
    ] {
        let n = summary.modules.get(health);
        if n > 0 {
            let label = if words { label } else { short };
            spans.push(Span::styled(format!("{n} {label} "), style));
        }
    }
    spans
}

/// `Shims 3 1 complete 2 awaiting`, or nothing without Shims; the short form names only the states that want a
/// person.
fn shim_counts(summary: &Summary, theme: &Theme, form: Form) -> Vec<Span<'static>> {
    let wide = matches!(form, Form::Long | Form::Compact);
    let words = form == Form::Long;
    let total = summary.shims.total;
    if total == 0 {
        return Vec::new();
    }
    let mut spans = vec![Span::styled(
        if wide {
            format!(" Shims {total} ")
        } else {
            format!(" Sh {total} ")
        },
        theme.text(),
    )];
    for state in ShimState::ALL {
        let n = summary.shims.get(state);
        let shown = wide || matches!(state.health(), Health::Warning | Health::Error);
        if n > 0 && shown {
            let label = if words {
                state.label()
            } else {
                state.short_label()
            };
            spans.push(Span::styled(
                format!("{n} {label} "),
                theme_health_style(theme, state.health()),
            ));
        }
    }
    spans
}

/// `Nodes 38/40 ready`, `Nodes 38/40` in short forms, warning-coloured when some are not ready.
fn node_count(summary: &Summary, theme: &Theme, wide: bool) -> Span<'static> {
    let (ready, total) = (summary.nodes_ready, summary.nodes_total);
    Span::styled(
        if wide {
            format!(" Nodes {ready}/{total} ready ")
        } else {
            format!(" Nodes {ready}/{total} ")
        },
        if ready == total {
            theme.text()
        } else {
            theme.warn()
        },
    )
}

/// `Caches 3 1 ok 1 busy 1 degraded` in the long form, `IC 3 ✗1 ◐1 ●1` in the short one with the failures first,
/// or nothing without ImageCaches.
fn cache_counts(summary: &Summary, theme: &Theme, wide: bool) -> Vec<Span<'static>> {
    let total = summary.caches.total;
    if total == 0 {
        return Vec::new();
    }
    let mut spans = vec![Span::styled(
        if wide {
            format!(" Caches {total} ")
        } else {
            format!(" IC {total} ")
        },
        theme.text(),
    )];
    let mut states = [
        (Health::Ok, "ok", "●", theme.ok()),
        (Health::Progressing, "busy", "◐", theme.progress()),
        (Health::Warning, "waiting", "·", theme.warn()),
        (Health::Error, "degraded", "✗", theme.error()),
    ];
    if !wide {
        states.reverse();
    }
    for (health, label, glyph, style) in states {
        let n = summary.caches.get(health);
        if n > 0 {
            spans.push(Span::styled(
                if wide {
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

/// `Day-0 3 1 Available 1 Kept 1 Degraded` in the long form, `D0 3 ✗1 ·1 ●1` in the short one with the failures
/// first, or nothing without ModuleDay0s.
fn day0_counts(summary: &Summary, theme: &Theme, wide: bool) -> Vec<Span<'static>> {
    let total = summary.day0s.total;
    if total == 0 {
        return Vec::new();
    }
    let mut spans = vec![Span::styled(
        if wide {
            format!(" Day-0 {total} ")
        } else {
            format!(" D0 {total} ")
        },
        theme.text(),
    )];
    let mut states = Day0State::ALL;
    if !wide {
        states.reverse();
    }
    for state in states {
        let n = summary.day0s.get(state);
        if n > 0 {
            spans.push(Span::styled(
                if wide {
                    format!("{n} {} ", state.label())
                } else {
                    format!("{}{n} ", state.glyph())
                },
                theme_health_style(theme, state.health()),
            ));
        }
    }
    spans
}
