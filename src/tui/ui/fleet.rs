//! The fleet view: one row per cluster, most urgent first, with the header's counts of each; and the header line
//! that sums the fleet up while it is shown.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use super::header::{self, Form};
use super::table::{Column, ListTable, TableRow};
use super::{health_style, theme_health_style};
use crate::tui::app::{App, ListId};
use crate::tui::theme::Theme;
use crate::tui::view::Health;
use crate::tui::view::fleet::{Attention, FleetRow};
use crate::tui::view::summary::Tally;

/// Draw every cluster.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let columns: &[Column<'_>] = if wide {
        &[
            Column::shrink("CONTEXT"),
            Column::keep("STATE"),
            Column::keep("VERSION"),
            Column::keep("NODES"),
            Column::shrink("MODULES"),
            Column::shrink("SHIMS"),
            Column::shrink("CACHES"),
            Column::shrink("DAY-0"),
            Column::keep("APPROVE"),
            Column::keep("DEGRADED"),
            Column::shrink("WHO ACTS / WHY"),
        ]
    } else {
        &[
            Column::shrink("CONTEXT"),
            Column::keep("STATE"),
            Column::keep("NODES"),
            Column::shrink("MODULES"),
            Column::shrink("SHIMS"),
            Column::keep("APPR"),
            Column::keep("DEGR"),
            Column::shrink("WHO ACTS / WHY"),
        ]
    };
    ListTable {
        title: "Fleet",
        note: "",
        columns,
        list: ListId::Fleet,
        focused: true,
        empty: "No contexts. The fleet follows every context of the kubeconfig (or those of --contexts)",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.fleet[index];
        cells(app, row, wide)
    });
}

/// The cells of one cluster.
fn cells(app: &App, row: &FleetRow, wide: bool) -> TableRow {
    let theme = &app.theme;
    let summary = &row.summary;
    let marker = if row.current { "▸ " } else { "  " };
    let state_style = health_style(app, row.attention.health());
    let [modules, shims, caches, day0s] = row.listed;
    let counts = |listed: bool, spans: Vec<Span<'static>>, style: Style| {
        if listed {
            (text(&spans, "0"), style)
        } else {
            ("-".to_owned(), theme.muted())
        }
    };
    let (module_text, module_style) = counts(
        modules,
        header::module_counts(summary, theme, Form::Short, false),
        worst(theme, &summary.modules, |health| *health),
    );
    let (shim_text, shim_style) = counts(
        shims,
        header::shim_counts(summary, theme, Form::Short, false),
        worst(theme, &summary.shims, |state| state.health()),
    );
    let mut cells = TableRow::new()
        .cell(format!("{marker}{}", row.context))
        .styled(row.state.as_str(), state_style);
    if wide {
        cells = cells.cell(row.version.as_str());
    }
    cells = cells
        .styled(
            row.nodes.as_str(),
            if row.nodes_short {
                theme.warn()
            } else {
                Style::default()
            },
        )
        .styled(module_text, module_style)
        .styled(shim_text, shim_style);
    if wide {
        let (cache_text, cache_style) = counts(
            caches,
            header::cache_counts(summary, theme, false, false),
            worst(theme, &summary.caches, |health| *health),
        );
        let (day0_text, day0_style) = counts(
            day0s,
            header::day0_counts(summary, theme, false, false),
            worst(theme, &summary.day0s, |state| state.health()),
        );
        cells = cells
            .styled(cache_text, cache_style)
            .styled(day0_text, day0_style);
    }
    cells
        .styled(
            row.approvals.to_string(),
            if row.approvals > 0 {
                theme.warn()
            } else {
                Style::default()
            },
        )
        .styled(
            row.degraded.to_string(),
            if row.degraded > 0 {
                theme.error()
            } else {
                Style::default()
            },
        )
        .styled(
            row.detail.as_str(),
            if matches!(row.attention, Attention::Unreachable) || row.state == "watch failing" {
                theme.error()
            } else {
                theme.muted()
            },
        )
}

/// The spans' text on one line, or `empty` when there are none (a kind with no objects).
fn text(spans: &[Span<'static>], empty: &str) -> String {
    let joined: String = spans.iter().map(|span| span.content.as_ref()).collect();
    let joined = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.is_empty() {
        empty.to_owned()
    } else {
        joined
    }
}

/// The style of the worst state counted: degraded before waiting before busy.
fn worst<S: Ord + Copy>(theme: &Theme, tally: &Tally<S>, health: impl Fn(&S) -> Health) -> Style {
    let healths: Vec<Health> = tally.by_state.keys().map(&health).collect();
    let worst = [Health::Error, Health::Warning, Health::Progressing]
        .into_iter()
        .find(|wanted| healths.contains(wanted));
    match worst {
        Some(health) => theme_health_style(theme, health),
        None => Style::default(),
    }
}

/// The header while the fleet is shown: how many clusters, and how many need a person for what.
pub fn header_spans(app: &App) -> Vec<Span<'static>> {
    let theme = &app.theme;
    let rows = &app.rows.fleet;
    let mut spans = vec![
        Span::styled(" kmm-tui ", theme.title()),
        Span::styled(" fleet ", theme.accent()),
        Span::styled(format!(" {} clusters ", rows.len()), theme.text()),
    ];
    let count = |attention: Attention| rows.iter().filter(|r| r.attention == attention).count();
    for (attention, label, style) in [
        (Attention::Unreachable, "unreachable", theme.error()),
        (Attention::Degraded, "degraded", theme.error()),
        (Attention::Approval, "awaiting approval", theme.warn()),
        (Attention::Waiting, "waiting", theme.warn()),
        (Attention::Connecting, "connecting", theme.progress()),
        (Attention::Fine, "ok", theme.ok()),
    ] {
        let n = count(attention);
        if n > 0 {
            spans.push(Span::styled(format!("{n} {label} "), style));
        }
    }
    if app.session.readonly {
        spans.push(Span::styled(" read-only ", theme.warn()));
    }
    spans
}
