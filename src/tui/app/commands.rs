//! What a command means in the current view (whether it applies, what the hint bar calls it) and the one place
//! every [`Command`] is dispatched: to the navigation, the prompts, the editor, and the writes and pane actions
//! that live with their panes. Nothing here changes the cluster: writes are asked for, confirmed, and carried out
//! by the event loop.

use crate::tui::keymap::Command;

use super::{App, Mode, Prompt, Severity, View};

impl App {
    /// The word the hint bar shows for `command` here: `P` pulls again in the cache views.
    pub fn hint_label(&self, command: Command) -> &'static str {
        if let Some(label) = self.preflight_hint_label(command) {
            return label;
        }
        match command {
            Command::Recheck if self.in_cache_views() => "Re-pull",
            other => other.label(),
        }
    }

    /// Whether a command means something in the current view, as the keymap knows it: the hint bar lists only those.
    pub fn applies(&self, command: Command) -> bool {
        command.acts_on(self.view().pane())
    }

    /// Run `command` on the current view and selection.
    pub(super) fn run(&mut self, command: Command) {
        let list = self.list();
        let len = self.visible(list).len();
        let height = self.page_height();
        let current = self.selection(list).index;
        let select = |app: &mut App, index: usize| {
            app.selections
                .entry(list)
                .or_default()
                .set(index, len, height);
        };
        match command {
            Command::CommandMode => self.mode = Mode::Command(Prompt::default()),
            Command::Filter => {
                self.mode = Mode::Filter(Prompt {
                    text: self.filter(list).to_owned(),
                })
            }
            Command::Help => self.open(View::Help),
            Command::Back => self.back(),
            Command::Quit => self.quit = true,
            Command::NextPane | Command::PrevPane => self.switch_pane(command == Command::NextPane),
            Command::Up => select(self, current.saturating_sub(1)),
            Command::Down => select(self, current + 1),
            Command::Top => select(self, 0),
            Command::Bottom => select(self, len.saturating_sub(1)),
            Command::PageUp => select(self, current.saturating_sub(height)),
            Command::PageDown => select(self, current + height),
            Command::Enter => self.enter(),
            Command::Left | Command::Right => self.move_column(command == Command::Right),
            Command::Yaml => match self.selected_object() {
                Some(target) => self.open(View::Yaml(target)),
                None => self.set_status(Severity::Info, "Nothing selected"),
            },
            Command::Edit => self.edit(),
            Command::Approve | Command::PauseResume | Command::Retry | Command::Logs => {
                self.run_shim(command);
            }
            Command::Rebuild
            | Command::Recheck
            | Command::Purge
            | Command::Delete
            | Command::Build => self.request_write(command),
            Command::HandOff | Command::TakeOver => self.run_engine(command),
            Command::Confirm | Command::Cancel => {}
        }
    }
}
