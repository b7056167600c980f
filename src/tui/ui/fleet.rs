//! The fleet view: one row per cluster, most urgent first, with the header's counts of each; below it, when the
//! fleet has hubs, their ManagedClusterModules (a row per module and selected cluster); and the header line that
//! sums the fleet up while it is shown.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Span;

use super::table::{Column, ListTable, TableRow};
use super::theme_health_style;
use crate::tui::app::{App, FleetFocus, ListId};
use crate::tui::fleet::modules::HubModuleRow;
use crate::tui::fleet::rows::{Attention, FleetRow};
use crate::tui::theme::Theme;
use crate::tui::view::Health;
use crate::tui::view::summary::Tally;

/// Draw the clusters and, when there are any, the hubs' modules beneath: the clusters keep the room their rows
/// need (up to half the screen), the modules take the rest.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    if app.rows.hub_modules.is_empty() {
        draw_clusters(frame, area, app);
        return;
    }
    let clusters = u16::try_from(app.visible(ListId::Fleet).len()).unwrap_or(u16::MAX);
    let [top, bottom] = Layout::vertical([
        Constraint::Length(clusters.saturating_add(3).min(area.height / 2)),
        Constraint::Fill(1),
    ])
    .areas(area);
    draw_clusters(frame, top, app);
    draw_modules(frame, bottom, app);
}

/// Draw every cluster. Cells are short, so the selected cluster's full detail (who acts, or why it cannot be
/// reached) is repeated in the title. Narrow screens leave out the Shims, ImageCaches and ModuleDay0s; the
/// approvals and degraded counts still count them.
fn draw_clusters(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let columns: &[Column<'_>] = if wide {
        &[
            Column::keep("CONTEXT"),
            Column::keep("STATE"),
            Column::keep("NODES"),
            Column::keep("MODULES"),
            Column::keep("SHIMS"),
            Column::keep("CACHES"),
            Column::keep("DAY-0"),
            Column::keep("APPR"),
            Column::keep("DEGR"),
            Column::shrink("WHO ACTS / WHY"),
        ]
    } else {
        &[
            Column::keep("CONTEXT"),
            Column::keep("STATE"),
            Column::keep("NODES"),
            Column::keep("MODULES"),
            Column::keep("APPR"),
            Column::keep("DEGR"),
            Column::shrink("WHO ACTS / WHY"),
        ]
    };
    let note = app
        .selected_cluster()
        .map(|row| format!("{}: {}", row.context, row.detail))
        .unwrap_or_default();
    ListTable {
        title: "Fleet",
        note: &note,
        columns,
        list: ListId::Fleet,
        focused: app.fleet_focus == FleetFocus::Clusters,
        empty: "No contexts. The fleet follows every context of the kubeconfig (or those of --contexts)",
    }
    .draw(frame, area, app, |index| {
        let row = &app.rows.fleet[index];
        cells(app, row, wide)
    });
}

/// Draw the hubs' ManagedClusterModules, a row per selected cluster; the selected row's images and full reason
/// are repeated in the title, as its cells are cut short.
fn draw_modules(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let wide = area.width >= 110;
    let columns: &[Column<'_>] = if wide {
        &[
            Column::keep("HUB"),
            Column::keep("MODULE"),
            Column::keep("CLUSTER"),
            Column::keep("STATE"),
            Column::keep("LOADED"),
            Column::shrink("WHY"),
        ]
    } else {
        &[
            Column::keep("MODULE"),
            Column::keep("CLUSTER"),
            Column::keep("STATE"),
            Column::keep("LOADED"),
            Column::shrink("WHY"),
        ]
    };
    let note = app
        .selected_hub_module()
        .map(|row| {
            let to = format!("{} → namespace {}", row.module, row.spoke_namespace);
            match row.images.as_slice() {
                [] => format!("{to}: {}", row.why),
                images => format!("{to}: {} · images {}", row.why, images.join(", ")),
            }
        })
        .unwrap_or_default();
    ListTable {
        title: "ManagedClusterModules",
        note: &note,
        columns,
        list: ListId::FleetModules,
        focused: app.fleet_focus == FleetFocus::Modules,
        empty: "No ManagedClusterModules on the fleet's hubs",
    }
    .draw(frame, area, app, |index| {
        module_cells(app, &app.rows.hub_modules[index], wide)
    });
}

/// The cells of one module and cluster.
fn module_cells(app: &App, row: &HubModuleRow, wide: bool) -> TableRow {
    let style = theme_health_style(&app.theme, row.health);
    let mut cells = TableRow::new();
    if wide {
        cells = cells.cell(row.hub.as_str());
    }
    cells
        .cell(row.module.as_str())
        .cell(row.cluster.as_deref().unwrap_or("-"))
        .styled(row.state.as_str(), style)
        .cell(row.loaded.as_str())
        .styled(row.why.as_str(), app.theme.muted())
}

/// The cells of one cluster.
fn cells(app: &App, row: &FleetRow, wide: bool) -> TableRow {
    let theme = &app.theme;
    let summary = &row.summary;
    let marker = if row.current { "▸" } else { " " };
    let [modules, shims, caches, day0s] = row.listed;
    let count = |listed: bool, cell: (String, Style)| {
        if listed {
            cell
        } else {
            ("-".to_owned(), theme.muted())
        }
    };
    let (module_text, module_style) =
        count(modules, glyphs(theme, &summary.modules, |health| *health));
    let (shim_text, shim_style) =
        count(shims, glyphs(theme, &summary.shims, |state| state.health()));
    // A cluster that answers shows its version where others show why they do not. The state is coloured by
    // whether the cluster answers; what its objects need shows in their counts and the order of the rows.
    let (state, state_style) = match row.state.as_str() {
        "ok" => (format!("ok {}", row.version), theme.ok()),
        "connecting" | "loading" => (row.state.clone(), theme.progress()),
        _ => (row.state.clone(), theme.error()),
    };
    let mut cells = TableRow::new()
        .cell(format!("{marker}{}", row.context))
        .styled(state, state_style)
        .styled(
            row.nodes.as_str(),
            if row.nodes_short {
                theme.warn()
            } else {
                Style::default()
            },
        )
        .styled(module_text, module_style);
    if wide {
        let (cache_text, cache_style) =
            count(caches, glyphs(theme, &summary.caches, |health| *health));
        let (day0_text, day0_style) =
            count(day0s, glyphs(theme, &summary.day0s, |state| state.health()));
        cells = cells
            .styled(shim_text, shim_style)
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
            if !matches!(row.state.as_str(), "ok" | "connecting" | "loading") {
                theme.error()
            } else {
                theme.muted()
            },
        )
}

/// `12 ✗2 ·1 ◐3 ●6`: the total, then how many are failed, waiting, busy, fine and unknown, as the header's short
/// form counts caches and ModuleDay0s; styled as the worst of them.
fn glyphs<S: Ord + Copy>(
    theme: &Theme,
    tally: &Tally<S>,
    health: impl Fn(&S) -> Health,
) -> (String, Style) {
    let mut text = tally.total.to_string();
    let mut worst = None;
    for (wanted, glyph) in [
        (Health::Error, "✗"),
        (Health::Warning, "·"),
        (Health::Progressing, "◐"),
        (Health::Ok, "●"),
        (Health::Unknown, "?"),
    ] {
        let n: usize = tally
            .by_state
            .iter()
            .filter(|(state, _)| health(state) == wanted)
            .map(|(_, n)| n)
            .sum();
        if n > 0 {
            text.push_str(&format!(" {glyph}{n}"));
            worst = worst.or(Some(wanted));
        }
    }
    let style = match worst {
        Some(health @ (Health::Error | Health::Warning | Health::Progressing)) => {
            theme_health_style(theme, health)
        }
        _ => Style::default(),
    };
    (text, style)
}

/// The header while the fleet is shown: how many clusters, and how many need a person for what.
pub(super) fn header_spans(app: &App) -> Vec<Span<'static>> {
    let theme = &app.theme;
    let rows = &app.rows.fleet;
    let mut spans = vec![
        Span::styled(" kmm-tui ", theme.title()),
        Span::styled(" fleet ", theme.accent()),
        Span::styled(
            match rows.len() {
                1 => " 1 cluster ".to_owned(),
                n => format!(" {n} clusters "),
            },
            theme.text(),
        ),
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
