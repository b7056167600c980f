//! Driving the console as the event loop does, and reading what it draws: keys go in through `App::update`, the
//! screen comes out of a `TestBackend` as text.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use kmm_tui::tui::action::Action;
use kmm_tui::tui::app::App;
use kmm_tui::tui::ui;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Press `code` without modifiers.
pub(crate) fn press(app: &mut App, code: KeyCode) {
    press_with(app, code, KeyModifiers::NONE);
}

/// Press `code` with `modifiers` held.
pub(crate) fn press_with(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    app.update(Action::Terminal(Event::Key(KeyEvent::new(code, modifiers))));
}

/// Press the keys of `text`, one character each.
pub(crate) fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// Run a `:` command.
pub(crate) fn command(app: &mut App, line: &str) {
    press(app, KeyCode::Char(':'));
    type_text(app, line);
    press(app, KeyCode::Enter);
}

/// The screen as text: one line per row, trailing blanks trimmed.
pub(crate) fn screen(app: &App) -> String {
    let (width, height) = app.size;
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal
        .draw(|frame| ui::draw(frame, app))
        .expect("draw on a test backend");
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..height {
        let line: String = (0..width)
            .map(|x| buffer.cell((x, y)).map_or(" ", |cell| cell.symbol()))
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}
