//! The console's commands: their names, scopes, labels, descriptions and default keys.

use std::fmt;
use std::str::FromStr;

use crossterm::event::KeyCode;

use super::{KeyChord, Scope};

/// Something the user can ask the console to do with a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Open the `:` prompt (views, `:q` to quit).
    CommandMode,
    /// Show help.
    Help,
    /// Close the current view or prompt.
    Back,
    /// Focus the next pane.
    NextPane,
    /// Focus the previous pane.
    PrevPane,
    /// Leave the console. Bound to `ctrl-c` only: `q` stays free so a stray key never quits, and `:q` quits from
    /// the prompt.
    Quit,
    /// Open the selected row.
    Enter,
    /// Filter the rows of a table.
    Filter,
    /// Show the selected object as YAML.
    Yaml,
    /// Edit the selected object.
    Edit,
    /// Rebuild the selected module's images.
    Rebuild,
    /// Check the selected object's images again; in the cache views, pull the selected images again.
    Recheck,
    /// Remove the selected ImageCache's images from its nodes.
    Purge,
    /// Delete the selected object, after a confirmation dialog.
    Delete,
    /// Approve the batch a Shim's rollout waits for.
    Approve,
    /// Pause a Shim's rollout, or resume it.
    PauseResume,
    /// Install a Shim again on the failed node(s).
    Retry,
    /// Show the log of the selected node's installer pod.
    Logs,
    /// Hand this console's engine off to a controller in the cluster (`:engine`).
    HandOff,
    /// Take the engine back into this console (`:engine`).
    TakeOver,
    /// Have the kernel validation build and push the images Modules can build for it (`:preflight`).
    Build,
    /// Move the selection up.
    Up,
    /// Move the selection down.
    Down,
    /// Move to the column on the left (the coverage matrix).
    Left,
    /// Move to the column on the right (the coverage matrix).
    Right,
    /// Jump to the first row.
    Top,
    /// Jump to the last row.
    Bottom,
    /// Scroll up one page.
    PageUp,
    /// Scroll down one page.
    PageDown,
    /// Accept a dialog.
    Confirm,
    /// Dismiss a dialog.
    Cancel,
}

impl Command {
    /// Every command, in the order hints and help list them.
    pub const ALL: [Command; 31] = [
        Command::CommandMode,
        Command::Help,
        Command::Back,
        Command::NextPane,
        Command::PrevPane,
        Command::Quit,
        Command::Enter,
        Command::Filter,
        Command::Yaml,
        Command::Edit,
        Command::Rebuild,
        Command::Recheck,
        Command::Purge,
        Command::Delete,
        Command::Approve,
        Command::PauseResume,
        Command::Retry,
        Command::Logs,
        Command::HandOff,
        Command::TakeOver,
        Command::Build,
        Command::Up,
        Command::Down,
        Command::Left,
        Command::Right,
        Command::Top,
        Command::Bottom,
        Command::PageUp,
        Command::PageDown,
        Command::Confirm,
        Command::Cancel,
    ];

    /// The command's kebab-case name, as keymap files spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::CommandMode => "command-mode",
            Command::Help => "help",
            Command::Back => "back",
            Command::NextPane => "next-pane",
            Command::PrevPane => "prev-pane",
            Command::Quit => "quit",
            Command::Enter => "enter",
            Command::Filter => "filter",
            Command::Yaml => "yaml",
            Command::Edit => "edit",
            Command::Rebuild => "rebuild",
            Command::Recheck => "recheck",
            Command::Purge => "purge",
            Command::Delete => "delete",
            Command::Approve => "approve",
            Command::PauseResume => "pause-resume",
            Command::Retry => "retry",
            Command::Logs => "logs",
            Command::HandOff => "hand-off",
            Command::TakeOver => "take-over",
            Command::Build => "build",
            Command::Up => "up",
            Command::Down => "down",
            Command::Left => "left",
            Command::Right => "right",
            Command::Top => "top",
            Command::Bottom => "bottom",
            Command::PageUp => "page-up",
            Command::PageDown => "page-down",
            Command::Confirm => "confirm",
            Command::Cancel => "cancel",
        }
    }

    /// Where the command applies.
    pub fn scope(self) -> Scope {
        match self {
            Command::CommandMode
            | Command::Help
            | Command::Back
            | Command::NextPane
            | Command::PrevPane
            | Command::Quit => Scope::Global,
            Command::Enter
            | Command::Filter
            | Command::Yaml
            | Command::Edit
            | Command::Rebuild
            | Command::Recheck
            | Command::Purge
            | Command::Delete
            | Command::Approve
            | Command::PauseResume
            | Command::Retry
            | Command::Logs
            | Command::HandOff
            | Command::TakeOver
            | Command::Build
            | Command::Up
            | Command::Down
            | Command::Left
            | Command::Right
            | Command::Top
            | Command::Bottom
            | Command::PageUp
            | Command::PageDown => Scope::Table,
            Command::Confirm | Command::Cancel => Scope::Dialog,
        }
    }

    /// A word or two for the hint bar, where space is short.
    pub fn label(self) -> &'static str {
        match self {
            Command::CommandMode => "Command",
            Command::Help => "Help",
            Command::Back => "Back",
            Command::NextPane => "Next pane",
            Command::PrevPane => "Previous pane",
            Command::Quit => "Quit",
            Command::Enter => "Open",
            Command::Filter => "Filter",
            Command::Yaml => "YAML",
            Command::Edit => "Edit",
            Command::Rebuild => "Rebuild",
            Command::Recheck => "Recheck",
            Command::Purge => "Purge",
            Command::Delete => "Delete",
            Command::Approve => "Approve",
            Command::PauseResume => "Pause/resume",
            Command::Retry => "Retry",
            Command::Logs => "Logs",
            Command::HandOff => "Hand off",
            Command::TakeOver => "Take over",
            Command::Build => "Build",
            Command::Up => "Up",
            Command::Down => "Down",
            Command::Left => "Left",
            Command::Right => "Right",
            Command::Top => "Top",
            Command::Bottom => "Bottom",
            Command::PageUp => "Page up",
            Command::PageDown => "Page down",
            Command::Confirm => "Yes",
            Command::Cancel => "No",
        }
    }

    /// One line for help, saying what the command does.
    pub fn description(self) -> &'static str {
        match self {
            Command::CommandMode => "Open the command prompt to switch views (`:q` quits)",
            Command::Help => "Show every key binding",
            Command::Back => "Close the current view or prompt and go back",
            Command::NextPane => "Focus the next pane",
            Command::PrevPane => "Focus the previous pane",
            Command::Quit => "Quit kmm-tui",
            Command::Enter => "Open the selected row",
            Command::Filter => "Filter the rows of the table",
            Command::Yaml => "Show the selected object as YAML",
            Command::Edit => "Edit the selected object",
            Command::Rebuild => "Rebuild the images of the selected module",
            Command::Recheck => {
                "Check the selected object's images again; in the cache views, pull them again"
            }
            Command::Purge => {
                "Remove the selected ImageCache's images from its nodes, after confirmation"
            }
            Command::Delete => "Delete the selected object, after confirmation",
            Command::Approve => "Approve the batch the selected Shim's rollout waits for",
            Command::PauseResume => "Pause the selected Shim's rollout, or resume it",
            Command::Retry => {
                "Install the Shim again on the selected failed node, or on every failed node"
            }
            Command::Logs => "Show the log of the selected node's installer pod",
            Command::HandOff => {
                "Hand this console's engine off to a cluster controller, after confirmation (:engine)"
            }
            Command::TakeOver => {
                "Take the engine back into this console, after confirmation (:engine)"
            }
            Command::Build => {
                "Build and push the images the validated kernel needs, after confirming (:preflight)"
            }
            Command::Up => "Move the selection up",
            Command::Down => "Move the selection down",
            Command::Left => "Move to the column on the left (coverage matrix)",
            Command::Right => "Move to the column on the right (coverage matrix)",
            Command::Top => "Jump to the first row",
            Command::Bottom => "Jump to the last row",
            Command::PageUp => "Scroll up one page",
            Command::PageDown => "Scroll down one page",
            Command::Confirm => "Accept the dialog",
            Command::Cancel => "Dismiss the dialog",
        }
    }

    /// The keys bound to the command when no keymap file says otherwise.
    pub fn default_keys(self) -> &'static [KeyChord] {
        DEFAULT_KEYS
            .iter()
            .find(|(command, _)| *command == self)
            .map_or(&[], |(_, keys)| *keys)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of [`Command::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown command `{0}`")]
pub struct UnknownCommand(pub String);

impl FromStr for Command {
    type Err = UnknownCommand;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Command::ALL
            .into_iter()
            .find(|command| command.as_str() == name)
            .ok_or_else(|| UnknownCommand(name.to_string()))
    }
}

/// The default bindings, in the order they are shown.
pub(super) const DEFAULT_KEYS: [(Command, &[KeyChord]); 31] = [
    (Command::CommandMode, &[KeyChord::plain(KeyCode::Char(':'))]),
    (Command::Help, &[KeyChord::plain(KeyCode::Char('?'))]),
    (Command::Back, &[KeyChord::plain(KeyCode::Esc)]),
    (Command::NextPane, &[KeyChord::plain(KeyCode::Tab)]),
    (Command::PrevPane, &[KeyChord::plain(KeyCode::BackTab)]),
    (Command::Quit, &[KeyChord::ctrl('c')]),
    (Command::Enter, &[KeyChord::plain(KeyCode::Enter)]),
    (Command::Filter, &[KeyChord::plain(KeyCode::Char('/'))]),
    (Command::Yaml, &[KeyChord::plain(KeyCode::Char('y'))]),
    (Command::Edit, &[KeyChord::plain(KeyCode::Char('e'))]),
    (Command::Rebuild, &[KeyChord::plain(KeyCode::Char('R'))]),
    (Command::Recheck, &[KeyChord::plain(KeyCode::Char('P'))]),
    (Command::Purge, &[KeyChord::plain(KeyCode::Char('X'))]),
    (Command::Delete, &[KeyChord::ctrl('d')]),
    (Command::Approve, &[KeyChord::plain(KeyCode::Char('A'))]),
    (Command::PauseResume, &[KeyChord::plain(KeyCode::Char('p'))]),
    (Command::Retry, &[KeyChord::plain(KeyCode::Char('r'))]),
    (Command::Logs, &[KeyChord::plain(KeyCode::Char('l'))]),
    (Command::HandOff, &[KeyChord::plain(KeyCode::Char('h'))]),
    (Command::TakeOver, &[KeyChord::plain(KeyCode::Char('t'))]),
    (Command::Build, &[KeyChord::plain(KeyCode::Char('B'))]),
    (
        Command::Up,
        &[
            KeyChord::plain(KeyCode::Char('k')),
            KeyChord::plain(KeyCode::Up),
        ],
    ),
    (
        Command::Down,
        &[
            KeyChord::plain(KeyCode::Char('j')),
            KeyChord::plain(KeyCode::Down),
        ],
    ),
    (
        Command::Left,
        &[
            KeyChord::plain(KeyCode::Left),
            KeyChord::plain(KeyCode::Char('H')),
        ],
    ),
    (
        Command::Right,
        &[
            KeyChord::plain(KeyCode::Right),
            KeyChord::plain(KeyCode::Char('L')),
        ],
    ),
    (
        Command::Top,
        &[
            KeyChord::plain(KeyCode::Char('g')),
            KeyChord::plain(KeyCode::Home),
        ],
    ),
    (
        Command::Bottom,
        &[
            KeyChord::plain(KeyCode::Char('G')),
            KeyChord::plain(KeyCode::End),
        ],
    ),
    (
        Command::PageUp,
        &[KeyChord::ctrl('b'), KeyChord::plain(KeyCode::PageUp)],
    ),
    (
        Command::PageDown,
        &[KeyChord::ctrl('f'), KeyChord::plain(KeyCode::PageDown)],
    ),
    (Command::Confirm, &[KeyChord::plain(KeyCode::Char('y'))]),
    (
        Command::Cancel,
        &[
            KeyChord::plain(KeyCode::Char('n')),
            KeyChord::plain(KeyCode::Esc),
        ],
    ),
];
