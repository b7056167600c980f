//! Drawing: a pure function of [`App`]. Each pane and widget has its own module; this one lays out the header,
//! the current view, overlays (prompt, confirmation, editor) and the footer.

mod cache_detail;
mod caches;
mod day0;
mod day0_detail;
mod devices;
mod dialog;
mod editor;
mod engine;
mod events;
mod fleet;
mod footer;
mod header;
pub(crate) mod help;
mod images;
mod logs;
mod module_detail;
mod modules;
mod nodes;
mod preflight;
mod shim_detail;
mod shims;
mod table;
mod yaml;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;

use super::app::{App, Mode, View};
use super::target::Target;
use super::theme::Theme;
use super::view::Health;

/// Draw the whole console.
pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let [header_area, body, footer_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(2),
    ])
    .areas(frame.area());
    header::draw(frame, header_area, app);
    if let Some(editor) = &app.editor {
        editor::draw(frame, body, app, editor);
    } else {
        match app.view() {
            View::Modules => modules::draw(frame, body, app),
            View::Images => images::draw(frame, body, app),
            View::Nodes => nodes::draw(frame, body, app),
            View::Events => events::draw(frame, body, app),
            View::Caches => caches::draw(frame, body, app),
            View::CacheDetail(target) => cache_detail::draw(frame, body, app, target),
            View::ModuleDetail(target) => module_detail::draw(frame, body, app, target),
            View::Yaml(target) => yaml::draw(frame, body, app, target),
            View::Help => help::draw(frame, body, app),
            View::Shims => shims::draw(frame, body, app),
            View::ShimDetail(target) => shim_detail::draw(frame, body, app, target),
            View::Logs(pod) => logs::draw(frame, body, app, pod),
            View::Day0s => day0::draw(frame, body, app),
            View::Day0Detail(target) => day0_detail::draw(frame, body, app, target),
            View::Engine => engine::draw(frame, body, app),
            View::Preflight => preflight::draw(frame, body, app),
            View::Fleet => fleet::draw(frame, body, app),
            View::Devices => devices::draw(frame, body, app),
        }
    }
    footer::draw(frame, footer_area, app);
    match &app.mode {
        Mode::Confirm(request) => dialog::draw(frame, body, app, request),
        Mode::ConfirmEngine(movement) => dialog::ask(frame, body, app, movement.describe()),
        _ => {}
    }
}

/// What a detail view shows once its object is gone: deleted while open, or never there.
fn draw_gone(frame: &mut Frame<'_>, area: Rect, app: &App, target: &Target) {
    frame.render_widget(
        Paragraph::new(Span::styled(
            format!("{target} does not exist (any more). esc goes back."),
            app.theme.warn(),
        )),
        area,
    );
}

/// The theme style of a health.
pub(crate) fn health_style(app: &App, health: Health) -> ratatui::style::Style {
    theme_health_style(&app.theme, health)
}

/// The style of a health in `theme`.
pub(crate) fn theme_health_style(theme: &Theme, health: Health) -> ratatui::style::Style {
    match health {
        Health::Ok => theme.ok(),
        Health::Progressing => theme.progress(),
        Health::Warning => theme.warn(),
        Health::Error => theme.error(),
        Health::Unknown => theme.muted(),
    }
}
