//! Named console commands, the key chords that trigger them, and the hint bar and help generated from those
//! bindings, so a remapped key shows up everywhere the console mentions it.
//!
//! Every command belongs to a [`Scope`]: global commands work in every pane, table commands in tables and text
//! views, dialog commands in confirmation dialogs. A pane asks [`Keymap::command_for`] with its own scope; keys of
//! that scope win over global keys, which is how `esc` cancels a dialog but goes back everywhere else.
//!
//! Users remap keys in TOML, by command name; a command's list replaces its defaults, and an empty list unbinds it:
//!
//! ```toml
//! [keys]
//! quit = ["q", "ctrl-c"]
//! delete = "ctrl-x"
//! edit = []
//! ```

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use toml_edit::{Document, Item, Value};

/// Where a command applies; help groups commands by scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every pane, unless the pane's own scope binds the same key.
    Global,
    /// Tables and the text views (YAML, help) that scroll like them.
    Table,
    /// Confirmation dialogs.
    Dialog,
}

impl Scope {
    /// Every scope, in the order help lists them.
    pub const ALL: [Scope; 3] = [Scope::Global, Scope::Table, Scope::Dialog];

    /// The scope's name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Table => "table",
            Scope::Dialog => "dialog",
        }
    }

    /// The heading of the scope's section in help.
    pub fn title(self) -> &'static str {
        match self {
            Scope::Global => "Everywhere",
            Scope::Table => "Tables and views",
            Scope::Dialog => "Dialogs",
        }
    }
}

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
    pub const ALL: [Command; 30] = [
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
                "Check the images of the selected object again; in the cache views, pull the selected images again"
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
                "Hand this console's engine off to a controller in the cluster, after confirmation (:engine)"
            }
            Command::TakeOver => {
                "Take the engine back into this console, after confirmation (:engine)"
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
const DEFAULT_KEYS: [(Command, &[KeyChord]); 30] = [
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

/// Modifiers in the order chords print them, with their names.
const MODIFIER_NAMES: [(KeyModifiers, &str); 6] = [
    (KeyModifiers::CONTROL, "ctrl"),
    (KeyModifiers::ALT, "alt"),
    (KeyModifiers::SHIFT, "shift"),
    (KeyModifiers::SUPER, "super"),
    (KeyModifiers::HYPER, "hyper"),
    (KeyModifiers::META, "meta"),
];

/// Key names chords accept. Chords print the first name listed for a key, except `space`, `-` and `shift-tab`.
const KEY_NAMES: [(&str, KeyCode); 24] = [
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("escape", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("space", KeyCode::Char(' ')),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("del", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("ins", KeyCode::Insert),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pgup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("pgdn", KeyCode::PageDown),
    ("pgdown", KeyCode::PageDown),
    ("minus", KeyCode::Char('-')),
];

/// One key with its modifiers, in a canonical form so that the same physical key always compares equal.
///
/// Printed and parsed as `ctrl-d`, `G`, `shift-tab`, `enter`, `space`, `pageup`, `f1`, `?`, `ctrl--`.
/// Canonical form: shift is folded into characters (`shift-g` is `G`; `shift-/` is refused, write `?`), `ctrl`
/// with a letter is lower-case (most terminals cannot tell `ctrl-shift-d` from `ctrl-d`), and shift-tab is
/// `backtab`, which is what terminals send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyChord {
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl KeyChord {
    /// The chord for a key, or `None` for keys the console never binds (lock keys, media keys, control
    /// characters).
    pub fn new(code: KeyCode, modifiers: KeyModifiers) -> Option<KeyChord> {
        let mut modifiers = modifiers;
        let shift = modifiers.contains(KeyModifiers::SHIFT);
        let code = match code {
            KeyCode::Char(c) if c.is_control() || (c.is_whitespace() && c != ' ') => return None,
            KeyCode::Char(c) => {
                modifiers.remove(KeyModifiers::SHIFT);
                if modifiers.contains(KeyModifiers::CONTROL) {
                    KeyCode::Char(c.to_ascii_lowercase())
                } else if shift {
                    KeyCode::Char(c.to_ascii_uppercase())
                } else {
                    KeyCode::Char(c)
                }
            }
            KeyCode::BackTab => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            KeyCode::Tab if shift => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            KeyCode::F(0) => return None,
            KeyCode::Backspace
            | KeyCode::Enter
            | KeyCode::Left
            | KeyCode::Right
            | KeyCode::Up
            | KeyCode::Down
            | KeyCode::Home
            | KeyCode::End
            | KeyCode::PageUp
            | KeyCode::PageDown
            | KeyCode::Tab
            | KeyCode::Delete
            | KeyCode::Insert
            | KeyCode::Esc
            | KeyCode::F(_) => code,
            _ => return None,
        };
        Some(KeyChord { code, modifiers })
    }

    /// The chord a key event carries, ignoring keyboard state such as caps lock.
    pub fn from_event(event: &KeyEvent) -> Option<KeyChord> {
        KeyChord::new(event.code, event.modifiers)
    }

    /// The key without modifiers.
    pub fn code(self) -> KeyCode {
        self.code
    }

    /// The modifiers held with the key (never shift on a character: it is part of the character).
    pub fn modifiers(self) -> KeyModifiers {
        self.modifiers
    }

    /// A key pressed alone; `code` must already be canonical.
    const fn plain(code: KeyCode) -> KeyChord {
        KeyChord {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    /// `ctrl` with a lower-case letter.
    const fn ctrl(letter: char) -> KeyChord {
        KeyChord {
            code: KeyCode::Char(letter),
            modifiers: KeyModifiers::CONTROL,
        }
    }
}

impl fmt::Display for KeyChord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (modifier, name) in MODIFIER_NAMES {
            if self.modifiers.contains(modifier) {
                write!(f, "{name}-")?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::BackTab => f.write_str("shift-tab"),
            KeyCode::F(number) => write!(f, "f{number}"),
            code => match KEY_NAMES.iter().find(|(_, named)| *named == code) {
                Some((name, _)) => f.write_str(name),
                None => write!(f, "{code}"),
            },
        }
    }
}

/// Why a string is not a key chord.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseKeyError {
    /// Nothing but blanks.
    #[error("no key given")]
    Empty,
    /// Modifiers followed by nothing, like `ctrl-`.
    #[error("`{0}` names no key after its modifiers (the minus key is `-` or `ctrl--`)")]
    MissingKey(String),
    /// A modifier other than ctrl, alt, shift, super, hyper or meta.
    #[error("unknown modifier `{0}` (use ctrl, alt, shift, super, hyper or meta)")]
    UnknownModifier(String),
    /// A key name that is not known, or a key the console never binds.
    #[error(
        "unknown key `{0}` (use one character or a name such as enter, esc, tab, space, up, pageup, f1)"
    )]
    UnknownKey(String),
    /// `shift` with a symbol, whose shifted form depends on the keyboard layout.
    #[error(
        "`shift-{0}` depends on the keyboard layout; write the character shift produces instead"
    )]
    ShiftedSymbol(char),
}

impl FromStr for KeyChord {
    type Err = ParseKeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let (modifier_names, key) = split_modifiers(text)?;
        let mut modifiers = KeyModifiers::NONE;
        for name in modifier_names
            .into_iter()
            .flat_map(|names| names.split('-'))
        {
            modifiers |= MODIFIER_NAMES
                .iter()
                .find(|(_, known)| known.eq_ignore_ascii_case(name))
                .map(|(modifier, _)| *modifier)
                .ok_or_else(|| ParseKeyError::UnknownModifier(name.to_string()))?;
        }
        let code = key_code(key)?;
        if let KeyCode::Char(c) = code
            && modifiers.contains(KeyModifiers::SHIFT)
            && !c.is_ascii_alphabetic()
        {
            return Err(ParseKeyError::ShiftedSymbol(c));
        }
        KeyChord::new(code, modifiers).ok_or_else(|| ParseKeyError::UnknownKey(key.to_string()))
    }
}

/// Splits `ctrl-alt-x` into (`ctrl-alt`, `x`); the key itself may be `-`.
fn split_modifiers(text: &str) -> Result<(Option<&str>, &str), ParseKeyError> {
    if text.is_empty() {
        return Err(ParseKeyError::Empty);
    }
    if text == "-" {
        return Ok((None, "-"));
    }
    if let Some(modifiers) = text.strip_suffix("--") {
        return Ok((Some(modifiers), "-"));
    }
    if text.ends_with('-') {
        return Err(ParseKeyError::MissingKey(text.to_string()));
    }
    Ok(match text.rsplit_once('-') {
        Some((modifiers, key)) => (Some(modifiers), key),
        None => (None, text),
    })
}

/// The key a single character or a key name stands for.
fn key_code(key: &str) -> Result<KeyCode, ParseKeyError> {
    let mut chars = key.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        return Ok(KeyCode::Char(c));
    }
    let lowered = key.to_ascii_lowercase();
    if let Some(code) = KEY_NAMES
        .iter()
        .find(|(name, _)| *name == lowered)
        .map(|(_, code)| *code)
    {
        return Ok(code);
    }
    lowered
        .strip_prefix('f')
        .and_then(|number| number.parse::<u8>().ok())
        .map(KeyCode::F)
        .ok_or_else(|| ParseKeyError::UnknownKey(key.to_string()))
}

/// One line of the hint bar or of help: the keys of a command and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    /// The command the keys trigger.
    pub command: Command,
    /// Every key bound to the command, separated by spaces (`k up`).
    pub keys: String,
    /// A word or two, for the hint bar.
    pub label: &'static str,
    /// A sentence, for help.
    pub description: &'static str,
}

/// The hints of one scope, under the heading help shows them with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelpSection {
    /// Whose commands these are.
    pub scope: Scope,
    /// The section's heading.
    pub title: &'static str,
    /// The bound commands of the scope, in [`Command::ALL`] order.
    pub hints: Vec<Hint>,
}

/// Which keys trigger which commands.
#[derive(Clone, Debug)]
pub struct Keymap {
    /// Keys per command, indexed by the command's position in [`Command::ALL`].
    keys: Vec<Vec<KeyChord>>,
    /// The same bindings keyed for lookup on every key press.
    lookup: HashMap<(Scope, KeyChord), Command>,
}

impl Default for Keymap {
    /// The bindings listed by [`Command::default_keys`].
    fn default() -> Self {
        Keymap::with_keys(default_key_lists())
    }
}

impl Keymap {
    fn with_keys(keys: Vec<Vec<KeyChord>>) -> Keymap {
        let lookup = Command::ALL
            .iter()
            .zip(&keys)
            .flat_map(|(command, chords)| {
                chords
                    .iter()
                    .map(|chord| ((command.scope(), *chord), *command))
            })
            .collect();
        Keymap { keys, lookup }
    }

    /// Reads a keymap file over the defaults.
    ///
    /// The `[keys]` table maps command names to a key or a list of keys, replacing that command's defaults.
    /// Nothing in the file is fatal: unknown commands, unreadable keys and malformed TOML are warnings
    /// (`line N: ...`) and leave the affected bindings at their defaults. A key given to a second command of the
    /// same scope moves to the command named last, with a warning.
    pub fn from_toml(text: &str) -> (Keymap, Vec<String>) {
        let mut warnings = Vec::new();
        let document = match Document::parse(text) {
            Ok(document) => document,
            Err(error) => {
                let line = line_of(text, error.span().map_or(text.len(), |span| span.start));
                warnings.push(format!(
                    "line {line}: the keymap is not valid TOML ({}); using the default keys",
                    error.message().trim()
                ));
                return (Keymap::default(), warnings);
            }
        };
        let mut keys = default_key_lists();
        for (section, item) in document.iter() {
            let line = line_of(
                text,
                document
                    .key(section)
                    .and_then(|key| key.span())
                    .map_or(0, |span| span.start),
            );
            if section != "keys" {
                warnings.push(format!(
                    "line {line}: unknown section `{section}` ignored (bindings go under [keys])"
                ));
                continue;
            }
            let Some(table) = item.as_table_like() else {
                warnings.push(format!(
                    "line {line}: `keys` must be a table of command names"
                ));
                continue;
            };
            for (name, value) in table.iter() {
                let span = table.get_key_value(name).and_then(|(key, _)| key.span());
                let at = format!("line {}", line_of(text, span.map_or(0, |span| span.start)));
                let Ok(command) = name.parse::<Command>() else {
                    warnings.push(format!("{at}: unknown command `{name}` ignored"));
                    continue;
                };
                if let Some(chords) = chords_of(value, &at, command, &mut warnings) {
                    rebind(&mut keys, command, chords, &at, &mut warnings);
                }
            }
        }
        (Keymap::with_keys(keys), warnings)
    }

    /// The command a key press triggers in a pane of `scope`: the scope's own binding first, then the global one.
    /// Key releases trigger nothing.
    pub fn command_for(&self, scope: Scope, event: KeyEvent) -> Option<Command> {
        if event.kind == KeyEventKind::Release {
            return None;
        }
        let chord = KeyChord::from_event(&event)?;
        self.lookup
            .get(&(scope, chord))
            .or_else(|| self.lookup.get(&(Scope::Global, chord)))
            .copied()
    }

    /// The keys bound to a command, for messages such as "press y to confirm".
    pub fn keys(&self, command: Command) -> &[KeyChord] {
        self.keys.get(command as usize).map_or(&[], Vec::as_slice)
    }

    /// The hint bar of a scope: its bound commands with their keys. Global commands are not repeated.
    pub fn hints(&self, scope: Scope) -> Vec<Hint> {
        Command::ALL
            .into_iter()
            .filter(|command| command.scope() == scope)
            .filter_map(|command| self.hint(command))
            .collect()
    }

    /// Every scope with at least one bound command, for the help view.
    pub fn help_sections(&self) -> Vec<HelpSection> {
        Scope::ALL
            .into_iter()
            .map(|scope| HelpSection {
                scope,
                title: scope.title(),
                hints: self.hints(scope),
            })
            .filter(|section| !section.hints.is_empty())
            .collect()
    }

    fn hint(&self, command: Command) -> Option<Hint> {
        let keys = self.keys(command);
        if keys.is_empty() {
            return None;
        }
        let keys: Vec<String> = keys.iter().map(KeyChord::to_string).collect();
        Some(Hint {
            command,
            keys: keys.join(" "),
            label: command.label(),
            description: command.description(),
        })
    }
}

/// The default keys of every command, indexed like [`Command::ALL`].
fn default_key_lists() -> Vec<Vec<KeyChord>> {
    Command::ALL
        .iter()
        .map(|command| command.default_keys().to_vec())
        .collect()
}

/// The chords a keymap value names, or `None` when the command should keep its keys.
fn chords_of(
    value: &Item,
    at: &str,
    command: Command,
    warnings: &mut Vec<String>,
) -> Option<Vec<KeyChord>> {
    let elements: Vec<&Value> = if let Some(value) = value.as_value().filter(|value| value.is_str())
    {
        vec![value]
    } else if let Some(array) = value.as_array() {
        array.iter().collect()
    } else {
        warnings.push(format!(
            "{at}: `{command}` must be a key or a list of keys, found {}; keeping its keys",
            value.type_name()
        ));
        return None;
    };
    let mut chords = Vec::new();
    let mut unreadable = false;
    for element in elements {
        let parsed = match element.as_str() {
            Some(text) => text
                .parse::<KeyChord>()
                .map_err(|error| format!("cannot read key `{text}`: {error}")),
            None => Err(format!("{} is not a key", element.type_name())),
        };
        match parsed {
            Ok(chord) if !chords.contains(&chord) => chords.push(chord),
            Ok(_) => {}
            Err(problem) => {
                warnings.push(format!("{at}: `{command}`: {problem}"));
                unreadable = true;
            }
        }
    }
    if chords.is_empty() && unreadable {
        warnings.push(format!("{at}: `{command}` keeps its keys"));
        return None;
    }
    Some(chords)
}

/// Gives `chords` to `command`, taking them from any other command of the same scope.
fn rebind(
    keys: &mut [Vec<KeyChord>],
    command: Command,
    chords: Vec<KeyChord>,
    at: &str,
    warnings: &mut Vec<String>,
) {
    let scope = command.scope();
    for (other, other_keys) in Command::ALL.iter().zip(keys.iter_mut()) {
        if *other == command || other.scope() != scope {
            continue;
        }
        other_keys.retain(|chord| {
            let taken = chords.contains(chord);
            if taken {
                warnings.push(format!(
                    "{at}: `{chord}` was bound to `{other}` in the {} scope and now triggers `{command}`",
                    scope.as_str()
                ));
            }
            !taken
        });
    }
    if let Some(slot) = keys.get_mut(command as usize) {
        *slot = chords;
    }
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.bytes()
        .take(offset)
        .filter(|byte| *byte == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_order_matches_declaration_order() {
        for (index, command) in Command::ALL.into_iter().enumerate() {
            assert_eq!(command as usize, index, "{command}");
        }
    }

    #[test]
    fn every_command_has_one_default_entry() {
        for command in Command::ALL {
            let entries = DEFAULT_KEYS
                .iter()
                .filter(|(listed, _)| *listed == command)
                .count();
            assert_eq!(entries, 1, "{command}");
        }
    }

    #[test]
    fn default_chords_are_canonical() {
        for (command, chords) in DEFAULT_KEYS {
            for chord in chords {
                assert_eq!(
                    KeyChord::new(chord.code, chord.modifiers),
                    Some(*chord),
                    "{command}"
                );
            }
        }
    }

    #[test]
    fn default_keys_never_collide_within_a_scope() {
        let keymap = Keymap::default();
        let bound: usize = keymap.keys.iter().map(Vec::len).sum();
        assert_eq!(keymap.lookup.len(), bound);
    }

    #[test]
    fn key_names_print_as_they_parse() {
        for (_, code) in KEY_NAMES {
            if let Some(chord) = KeyChord::new(code, KeyModifiers::NONE) {
                assert_eq!(chord.to_string().parse::<KeyChord>(), Ok(chord));
            }
        }
    }
}
