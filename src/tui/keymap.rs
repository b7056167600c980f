//! Named console commands, the key chords that trigger them, and the hint bar and help generated from those
//! bindings, so a remapped key shows up everywhere the console mentions it.
//!
//! Every command knows the [`Pane`]s it acts on, so the hint bar offers it only there.
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

mod chord;
mod command;
mod pane;

use std::collections::HashMap;

use crossterm::event::{KeyEvent, KeyEventKind};
use toml_edit::{Document, Item, Value};

pub use chord::{KeyChord, ParseKeyError};
pub use command::{Command, UnknownCommand};
pub use pane::Pane;

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
mod tests;
