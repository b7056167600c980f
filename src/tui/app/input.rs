//! Keys and pasted text: the `:` prompt, the `/` filter, the editor, and the commands keys trigger.

use crate::tui::editor::EditorEvent;
use crate::tui::keymap::{Command, Scope};
use crate::tui::prompt::{self, PromptAction};
use crate::tui::writes::WriteRequest;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Mode, Request, Selection, Severity, View};

impl App {
    pub(super) fn on_paste(&mut self, text: &str) {
        match (&mut self.mode, &mut self.editor) {
            (Mode::Command(prompt) | Mode::Filter(prompt), _) => {
                prompt
                    .text
                    .push_str(text.lines().next().unwrap_or_default());
                self.live_filter();
            }
            (Mode::Normal, Some(editor)) => {
                editor.textarea.insert_str(text);
            }
            _ => {}
        }
    }

    pub(super) fn on_key(&mut self, key: KeyEvent) {
        match &mut self.mode {
            Mode::Command(_) => self.on_command_key(key),
            Mode::Filter(_) => self.on_filter_key(key),
            Mode::ConfirmEngine(_) => self.on_engine_confirm_key(key),
            Mode::Confirm(_) => match self.keymap.command_for(Scope::Dialog, key) {
                Some(Command::Confirm) => {
                    if let Mode::Confirm(request) = std::mem::take(&mut self.mode) {
                        self.set_status(Severity::Info, format!("{}…", request.describe()));
                        self.requests.push(Request::Write(request));
                    }
                }
                Some(Command::Cancel | Command::Back) => {
                    self.mode = Mode::Normal;
                    self.set_status(Severity::Info, "Cancelled");
                }
                Some(Command::Quit) => self.quit = true,
                _ => {}
            },
            Mode::Normal => {
                if let Some(editor) = &mut self.editor {
                    if key.code == KeyCode::Char('c') && key.modifiers == KeyModifiers::CONTROL {
                        self.quit = true;
                        return;
                    }
                    match editor.handle_key(key) {
                        EditorEvent::Continue => {}
                        EditorEvent::Close => self.editor = None,
                        EditorEvent::Submit => self.submit_editor(),
                    }
                    return;
                }
                if let Some(command) = self.keymap.command_for(Scope::Table, key) {
                    self.run(command);
                }
            }
        }
    }

    fn submit_editor(&mut self) {
        let Some(editor) = &mut self.editor else {
            return;
        };
        match editor.check() {
            Ok(yaml) => {
                let request = WriteRequest::Apply {
                    target: editor.target.clone(),
                    yaml,
                };
                self.ask(request);
            }
            Err(errors) => {
                editor.message = Some(crate::tui::writes::problems_found(errors.len()));
                editor.errors = errors;
            }
        }
    }

    fn on_command_key(&mut self, key: KeyEvent) {
        let Mode::Command(prompt) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.mode = Mode::Normal,
            KeyCode::Enter => {
                let line = prompt.text.trim().to_owned();
                self.mode = Mode::Normal;
                self.execute(&line);
            }
            KeyCode::Tab => {
                if let Some(completed) = self.completions(&prompt_text(&self.mode)).first()
                    && let Mode::Command(prompt) = &mut self.mode
                {
                    prompt.text = completed.clone();
                }
            }
            KeyCode::Backspace if prompt.text.pop().is_none() => self.mode = Mode::Normal,
            KeyCode::Char('c') if key.modifiers == KeyModifiers::CONTROL => self.quit = true,
            KeyCode::Char(c) => prompt.text.push(c),
            _ => {}
        }
    }

    fn on_filter_key(&mut self, key: KeyEvent) {
        let Mode::Filter(prompt) = &mut self.mode else {
            return;
        };
        match key.code {
            KeyCode::Esc => {
                let list = self.list();
                self.filters.remove(&list);
                self.mode = Mode::Normal;
                self.refresh_visible();
            }
            KeyCode::Enter => self.mode = Mode::Normal,
            KeyCode::Backspace => {
                prompt.text.pop();
                self.live_filter();
            }
            KeyCode::Char('c') if key.modifiers == KeyModifiers::CONTROL => self.quit = true,
            KeyCode::Char(c) => {
                prompt.text.push(c);
                self.live_filter();
            }
            _ => {}
        }
    }

    /// Apply the filter prompt to the current list as the user types.
    fn live_filter(&mut self) {
        if let Mode::Filter(prompt) = &self.mode {
            let list = self.list();
            let text = prompt.text.to_lowercase();
            if text.is_empty() {
                self.filters.remove(&list);
            } else {
                self.filters.insert(list, text);
            }
            self.selections.insert(list, Selection::default());
            self.refresh_visible();
        }
    }

    /// The `:` commands that start with what was typed, for `tab` and the prompt's suggestion.
    pub fn completions(&self, typed: &str) -> Vec<String> {
        let typed = typed.trim_start();
        let mut words: Vec<String> = prompt::words().map(str::to_owned).collect();
        if let Some(partial) = typed.strip_prefix("ctx ") {
            words = self
                .session
                .contexts
                .iter()
                .filter(|c| c.starts_with(partial))
                .map(|c| format!("ctx {c}"))
                .collect();
            return words;
        }
        if let Some(partial) = typed.strip_prefix("preflight ") {
            return self.preflight_completions(partial.trim_start());
        }
        if let Some(partial) = typed.strip_prefix("ns ") {
            let mut namespaces: Vec<&str> = self
                .data
                .modules
                .iter()
                .filter_map(|m| m.metadata.namespace.as_deref())
                .chain(
                    self.data
                        .caches
                        .iter()
                        .filter_map(|c| c.metadata.namespace.as_deref()),
                )
                .chain(std::iter::once("all"))
                .collect();
            namespaces.sort_unstable();
            namespaces.dedup();
            return namespaces
                .into_iter()
                .filter(|ns| ns.starts_with(partial))
                .map(|ns| format!("ns {ns}"))
                .collect();
        }
        words.retain(|word| word.starts_with(typed) && word != typed);
        words
    }

    /// Run a `:` command line.
    pub fn execute(&mut self, line: &str) {
        let (word, argument) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(w, a)| (w, a.trim()));
        if word.is_empty() {
            return;
        }
        let Some(command) = prompt::find(word) else {
            self.set_status(
                Severity::Error,
                format!("Unknown command :{word} (try {})", prompt::names()),
            );
            return;
        };
        match command.action {
            PromptAction::Modules => self.show_root(View::Modules),
            PromptAction::Images => self.show_root(View::Images),
            PromptAction::Nodes => self.show_root(View::Nodes),
            PromptAction::Events => self.show_root(View::Events),
            PromptAction::Shims => self.show_root(View::Shims),
            PromptAction::Caches => self.show_root(View::Caches),
            PromptAction::Day0 => self.show_root(View::Day0s),
            PromptAction::Devices => self.show_root(View::Devices),
            PromptAction::Preflight => {
                self.views = vec![View::Preflight];
                self.refresh_open_view();
                self.refresh_visible();
                if !argument.is_empty() {
                    self.validate_kernel(argument);
                }
            }
            PromptAction::Quit => self.quit = true,
            PromptAction::Help => self.open(View::Help),
            PromptAction::Fleet => self.show_fleet(),
            PromptAction::Engine => {
                self.set_root(View::Engine);
                self.refresh_visible();
            }
            PromptAction::Namespace => {
                self.namespace = match argument {
                    "" | "all" | "*" => None,
                    namespace => Some(namespace.to_owned()),
                };
                self.set_status(
                    Severity::Info,
                    match &self.namespace {
                        Some(ns) => format!("Namespace {ns}"),
                        None => "All namespaces".to_owned(),
                    },
                );
                self.refresh_visible();
            }
            PromptAction::Context if argument.is_empty() => {
                let list = self.session.contexts.join(", ");
                self.set_status(
                    Severity::Info,
                    format!("Context {} (available: {list})", self.session.context),
                );
            }
            PromptAction::Context => {
                if self.session.contexts.iter().any(|c| c == argument) {
                    self.requests
                        .push(Request::SwitchContext(argument.to_owned()));
                    self.set_status(Severity::Info, format!("Switching to context {argument}…"));
                } else {
                    self.set_status(Severity::Error, format!("No context named {argument}"));
                }
            }
        }
    }

    /// Make `view` the root of the view stack and show it.
    fn show_root(&mut self, view: View) {
        self.set_root(view);
        self.refresh_open_view();
        self.refresh_visible();
    }
}

/// The text of the `:` prompt, if it is open.
fn prompt_text(mode: &Mode) -> String {
    match mode {
        Mode::Command(prompt) => prompt.text.clone(),
        _ => String::new(),
    }
}
