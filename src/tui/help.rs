//! What the help view lists, line by line and without styling, so the console can count help's lines for scrolling
//! without asking the drawing code.

use crate::tui::keymap::{Hint, Keymap};
use crate::tui::prompt::PROMPT_COMMANDS;

/// The heading of the `:` commands' section.
const PROMPT_TITLE: &str = "Commands (type : then one of these; tab completes)";

/// The line under the bindings that says how to remap them.
const KEYMAP_NOTE: &str =
    "A keymap file binds keys by the names in the middle column: [keys] approve = [\"A\"]";

/// One line of help, before styling.
pub(crate) enum HelpLine {
    /// A section's heading.
    Heading(&'static str),
    /// A bound command: its keys, action name and description.
    Binding(Hint),
    /// The note on how keymap files rebind keys.
    Note(&'static str),
    /// One `:` command: how to type it and what it does.
    Prompt {
        /// The command with its argument, as typed.
        usage: String,
        /// A sentence on what it does.
        description: &'static str,
    },
    /// An empty line between sections.
    Blank,
}

/// Every line of help: each scope's bindings, the note on keymap files, then the `:` commands.
pub(crate) fn help_lines(keymap: &Keymap) -> Vec<HelpLine> {
    let mut lines = Vec::new();
    for section in keymap.help_sections() {
        lines.push(HelpLine::Heading(section.title));
        lines.extend(section.hints.into_iter().map(HelpLine::Binding));
        lines.push(HelpLine::Blank);
    }
    lines.push(HelpLine::Note(KEYMAP_NOTE));
    lines.push(HelpLine::Blank);
    lines.push(HelpLine::Heading(PROMPT_TITLE));
    lines.extend(PROMPT_COMMANDS.iter().map(|command| HelpLine::Prompt {
        usage: command.usage(),
        description: command.description,
    }));
    lines
}
