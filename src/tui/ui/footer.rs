//! The footer: the last action's result (or the prompt being typed), and the key hints of the current scope,
//! generated from the keymap, with commands that cannot run here dimmed.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::tui::app::{App, Availability, Mode, Severity};
use crate::tui::keymap::{Command, Scope};

/// Draw the status line and the hint bar.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let [status_area, hints_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(area);
    let theme = &app.theme;
    let status = match &app.mode {
        Mode::Command(prompt) => {
            let suggestion = app
                .completions(&prompt.text)
                .first()
                .and_then(|c| c.strip_prefix(prompt.text.trim_start()).map(str::to_owned))
                .unwrap_or_default();
            Line::from(vec![
                Span::styled(":", theme.key()),
                Span::styled(prompt.text.as_str(), theme.text()),
                Span::styled(suggestion, theme.muted()),
                Span::styled("▏", theme.accent()),
            ])
        }
        Mode::Filter(prompt) => Line::from(vec![
            Span::styled("/", theme.key()),
            Span::styled(prompt.text.as_str(), theme.text()),
            Span::styled("▏", theme.accent()),
        ]),
        _ => match &app.status {
            Some(line) => Line::from(Span::styled(
                line.text.as_str(),
                match line.severity {
                    Severity::Info => theme.ok(),
                    Severity::Warning => theme.warn(),
                    Severity::Error => theme.error(),
                },
            )),
            None => Line::default(),
        },
    };
    frame.render_widget(Paragraph::new(status), status_area);

    let scope = app.scope();
    let mut hints = app.keymap.hints(scope);
    if scope == Scope::Table {
        hints.extend(app.keymap.hints(Scope::Global).into_iter().filter(|h| {
            matches!(
                h.command,
                Command::CommandMode | Command::Help | Command::Back
            )
        }));
        hints.retain(|h| {
            !matches!(
                h.command,
                Command::Up
                    | Command::Down
                    | Command::Left
                    | Command::Right
                    | Command::Top
                    | Command::Bottom
                    | Command::PageUp
                    | Command::PageDown
            ) && app.applies(h.command)
        });
    }
    hints.retain(|h| app.applies(h.command));
    // Help first: when the bar is too narrow for every hint, the one that lists them all stays; then the commands
    // only this pane has (the rollout commands of the Shim views, the Preflight pane's build), before those every table has.
    hints.sort_by_key(|hint| {
        (
            hint.command != Command::Help,
            !matches!(
                hint.command,
                Command::Approve
                    | Command::PauseResume
                    | Command::Retry
                    | Command::Logs
                    | Command::Build
            ),
        )
    });
    let width = usize::from(area.width);
    let items: Vec<(String, &str, bool)> = if app.editor.is_some() && scope == Scope::Table {
        // The editor takes every key but these two, so the bar names them instead of the table's.
        vec![
            ("<ctrl-s>".to_owned(), "Apply", true),
            ("<esc>".to_owned(), "Close", true),
        ]
    } else {
        hints
            .iter()
            .map(|hint| {
                let available = app.availability(hint.command) == Availability::Available;
                (
                    format!("<{}>", hint.keys),
                    app.hint_label(hint.command),
                    available,
                )
            })
            .collect()
    };
    let spans = fit_hints(&items, width)
        .into_iter()
        .flat_map(|(key, label, available, gap)| {
            let (key_style, label_style) = if available {
                (theme.key(), theme.text())
            } else {
                (theme.muted(), theme.muted())
            };
            [
                Span::styled(key, key_style),
                Span::styled(format!(" {label}{gap}"), label_style),
            ]
        })
        .collect::<Vec<_>>();
    frame.render_widget(Paragraph::new(Line::from(spans)), hints_area);
}

/// The hints that fit in `width` columns: all of them two spaces apart if they fit, else one space apart, else as
/// many as fit one space apart, the last (help and back come last) given up first.
fn fit_hints<'a>(
    items: &'a [(String, &'a str, bool)],
    width: usize,
) -> Vec<(&'a str, &'a str, bool, &'static str)> {
    let length = |items: &[(String, &str, bool)], gap: usize| {
        items
            .iter()
            .map(|(key, label, _)| key.chars().count() + 1 + label.chars().count() + gap)
            .sum::<usize>()
    };
    let gap = if length(items, 2) <= width { "  " } else { " " };
    let mut count = items.len();
    while count > 0 && length(&items[..count], gap.len()) > width {
        count -= 1;
    }
    items[..count]
        .iter()
        .map(|(key, label, available)| (key.as_str(), *label, *available, gap))
        .collect()
}
