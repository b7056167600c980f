//! The console's configuration files: themes load from names or files with warnings instead of failures, and the
//! keymap binds the documented defaults, accepts remaps that show up in hints and help, and reads key chords the way
//! it prints them.

use std::io::Write;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use kmm_tui::tui::keymap::{Command, KeyChord, Keymap, ParseKeyError, Scope};
use kmm_tui::tui::theme::{Role, Theme, ThemeError};
use proptest::prelude::*;
use ratatui::style::{Color, Modifier, Style};
use tempfile::NamedTempFile;

fn theme_file(text: &str) -> NamedTempFile {
    let mut file = NamedTempFile::new().expect("temporary file");
    file.write_all(text.as_bytes()).expect("write theme");
    file
}

fn load_file(file: &NamedTempFile) -> Result<(Theme, Vec<String>), ThemeError> {
    Theme::load(path_text(file.path()))
}

fn path_text(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn dark() -> Theme {
    let (theme, warnings) = Theme::load("dark").expect("dark loads");
    assert!(warnings.is_empty(), "{warnings:?}");
    theme
}

#[test]
fn built_in_themes_load_without_warnings() {
    let names: Vec<&str> = Theme::built_in_names().collect();
    assert_eq!(names, ["dark", "light", "high-contrast"]);
    let mut themes = Vec::new();
    for name in names {
        let (theme, warnings) = Theme::load(name).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(warnings.is_empty(), "{name}: {warnings:?}");
        assert!(
            !themes.contains(&theme),
            "{name} is a copy of another theme"
        );
        themes.push(theme);
    }
}

#[test]
fn dark_is_the_default_theme() {
    assert_eq!(Theme::default(), dark());
    let (resolved, warnings) = Theme::resolve(None, false).expect("default resolves");
    assert_eq!(resolved, dark());
    assert!(warnings.is_empty());
}

#[test]
fn built_in_states_are_told_apart() {
    for name in Theme::built_in_names() {
        let (theme, _) = Theme::load(name).expect("built-in loads");
        let states = [
            theme.ok(),
            theme.warn(),
            theme.error(),
            theme.progress(),
            theme.muted(),
        ];
        for (index, state) in states.iter().enumerate() {
            assert!(
                !states[index + 1..].contains(state),
                "{name}: two states share {state:?}"
            );
        }
        assert!(
            theme.selection().bg.is_some(),
            "{name}: selection needs a background"
        );
    }
}

#[test]
fn a_partial_theme_file_overrides_only_its_keys() {
    let file = theme_file(
        "ok = \"#a6e3a1\"\n\n[selection]\nfg = \"black\"\nbg = \"indexed:33\"\nbold = true\n",
    );
    let (theme, warnings) = load_file(&file).expect("partial theme loads");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(theme.ok(), Style::new().fg(Color::Rgb(0xa6, 0xe3, 0xa1)));
    assert_eq!(
        theme.selection(),
        Style::new()
            .fg(Color::Black)
            .bg(Color::Indexed(33))
            .add_modifier(Modifier::BOLD)
    );
    let dark = dark();
    for role in Role::ALL {
        if role != Role::Ok && role != Role::Selection {
            assert_eq!(theme.style(role), dark.style(role), "{}", role.as_str());
        }
    }
    assert_ne!(theme.ok(), dark.ok());
}

#[test]
fn unknown_keys_and_bad_values_are_warnings() {
    let file = theme_file(
        "okk = \"green\"\nwarn = \"purple-ish\"\nerror = { fg = \"light-red\", blink = true }\nmuted = 3\naccent = { fg = \"blue\", bold = \"yes\" }\n",
    );
    let (theme, warnings) = load_file(&file).expect("a theme with mistakes still loads");
    let path = path_text(file.path());
    let expected = [
        (1, "okk"),
        (2, "purple-ish"),
        (3, "blink"),
        (4, "muted"),
        (5, "bold"),
    ];
    assert_eq!(warnings.len(), expected.len(), "{warnings:?}");
    for (warning, (line, subject)) in warnings.iter().zip(expected) {
        assert!(
            warning.starts_with(&format!("{path}:{line}: ")),
            "{warning}"
        );
        assert!(warning.contains(subject), "{warning}");
    }
    let dark = dark();
    assert_eq!(theme.warn(), dark.warn());
    assert_eq!(theme.muted(), dark.muted());
    assert_eq!(theme.accent(), dark.accent());
    assert_eq!(theme.error(), Style::new().fg(Color::LightRed));
}

#[test]
fn malformed_toml_is_an_error_naming_the_file_and_line() {
    let file = theme_file("ok = \"green\"\nwarn = \nerror = \"red\"\n");
    let error = load_file(&file).expect_err("malformed TOML");
    let path = path_text(file.path());
    match &error {
        ThemeError::Syntax {
            path: named, line, ..
        } => {
            assert_eq!(named, file.path());
            assert_eq!(*line, 2);
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
    assert!(
        error.to_string().starts_with(&format!("{path}:2:")),
        "{error}"
    );
}

#[test]
fn an_unreadable_theme_file_is_an_error_naming_it() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let missing = directory.path().join("missing.toml");
    let error = Theme::load(path_text(&missing)).expect_err("missing file");
    assert!(matches!(error, ThemeError::Read { .. }), "{error:?}");
    assert!(error.to_string().contains(path_text(&missing)), "{error}");
}

#[test]
fn no_color_yields_a_theme_without_colours() {
    let (theme, warnings) = Theme::resolve(None, true).expect("monochrome resolves");
    assert!(warnings.is_empty());
    assert_eq!(theme, Theme::monochrome());
    for role in Role::ALL {
        let style = theme.style(role);
        assert_eq!(
            (style.fg, style.bg, style.underline_color),
            (None, None, None),
            "{}",
            role.as_str()
        );
    }
    let states = [
        theme.ok(),
        theme.warn(),
        theme.error(),
        theme.progress(),
        theme.muted(),
        theme.selection(),
    ];
    for (index, state) in states.iter().enumerate() {
        assert!(
            !states[index + 1..].contains(state),
            "two states share {state:?}"
        );
    }
    assert!(theme.selection().add_modifier.contains(Modifier::REVERSED));
}

#[test]
fn an_explicit_theme_wins_over_no_color() {
    let (chosen, _) = Theme::resolve(Some("light"), true).expect("light resolves");
    let (light, _) = Theme::load("light").expect("light loads");
    assert_eq!(chosen, light);
    assert!(chosen.ok().fg.is_some());
}

#[test]
fn high_contrast_is_bold_states_on_black_with_a_reversed_selection() {
    let (theme, _) = Theme::load("high-contrast").expect("high-contrast loads");
    for role in Role::ALL {
        assert_eq!(
            theme.style(role).bg,
            Some(Color::Indexed(16)),
            "{}",
            role.as_str()
        );
    }
    for state in [theme.ok(), theme.warn(), theme.error(), theme.progress()] {
        assert!(state.add_modifier.contains(Modifier::BOLD), "{state:?}");
    }
    assert!(theme.selection().add_modifier.contains(Modifier::REVERSED));
}

fn key_event(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

fn key(text: &str) -> KeyChord {
    text.parse()
        .unwrap_or_else(|error| panic!("{text}: {error}"))
}

fn printed_keys(keymap: &Keymap, command: Command) -> Vec<String> {
    keymap
        .keys(command)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The bindings the console documents: command, scope, keys.
const DOCUMENTED: [(&str, Scope, &[&str]); 31] = [
    ("command-mode", Scope::Global, &[":"]),
    ("filter", Scope::Table, &["/"]),
    ("help", Scope::Global, &["?"]),
    ("enter", Scope::Table, &["enter"]),
    ("back", Scope::Global, &["esc"]),
    ("up", Scope::Table, &["k", "up"]),
    ("down", Scope::Table, &["j", "down"]),
    ("left", Scope::Table, &["left", "H"]),
    ("right", Scope::Table, &["right", "L"]),
    ("top", Scope::Table, &["g", "home"]),
    ("bottom", Scope::Table, &["G", "end"]),
    ("page-up", Scope::Table, &["ctrl-b", "pageup"]),
    ("page-down", Scope::Table, &["ctrl-f", "pagedown"]),
    ("yaml", Scope::Table, &["y"]),
    ("edit", Scope::Table, &["e"]),
    ("rebuild", Scope::Table, &["R"]),
    ("recheck", Scope::Table, &["P"]),
    ("purge", Scope::Table, &["X"]),
    ("delete", Scope::Table, &["ctrl-d"]),
    ("approve", Scope::Table, &["A"]),
    ("pause-resume", Scope::Table, &["p"]),
    ("retry", Scope::Table, &["r"]),
    ("logs", Scope::Table, &["l"]),
    ("hand-off", Scope::Table, &["h"]),
    ("take-over", Scope::Table, &["t"]),
    ("build", Scope::Table, &["B"]),
    ("quit", Scope::Global, &["ctrl-c"]),
    ("confirm", Scope::Dialog, &["y"]),
    ("cancel", Scope::Dialog, &["n", "esc"]),
    ("next-pane", Scope::Global, &["tab"]),
    ("prev-pane", Scope::Global, &["shift-tab"]),
];

#[test]
fn default_keymap_matches_the_documented_bindings() {
    let keymap = Keymap::default();
    assert_eq!(Command::ALL.len(), DOCUMENTED.len());
    for (name, scope, keys) in DOCUMENTED {
        let command: Command = name.parse().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(command.scope(), scope, "{name}");
        assert_eq!(printed_keys(&keymap, command), keys, "{name}");
        for text in keys {
            let chord = key(text);
            let event = key_event(chord.code(), chord.modifiers());
            assert_eq!(
                keymap.command_for(scope, event),
                Some(command),
                "{name} by {text}"
            );
        }
    }
}

#[test]
fn q_is_free_and_ctrl_c_quits_everywhere() {
    let keymap = Keymap::default();
    for scope in Scope::ALL {
        assert_eq!(
            keymap.command_for(scope, key_event(KeyCode::Char('q'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            keymap.command_for(scope, key_event(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::Quit)
        );
    }
}

#[test]
fn key_events_match_as_terminals_send_them() {
    let keymap = Keymap::default();
    let cases = [
        (
            Scope::Table,
            KeyCode::Char('G'),
            KeyModifiers::SHIFT,
            Some(Command::Bottom),
        ),
        (
            Scope::Table,
            KeyCode::Char('g'),
            KeyModifiers::SHIFT,
            Some(Command::Bottom),
        ),
        (
            Scope::Global,
            KeyCode::BackTab,
            KeyModifiers::SHIFT,
            Some(Command::PrevPane),
        ),
        (
            Scope::Global,
            KeyCode::Tab,
            KeyModifiers::SHIFT,
            Some(Command::PrevPane),
        ),
        (
            Scope::Table,
            KeyCode::Char('?'),
            KeyModifiers::SHIFT,
            Some(Command::Help),
        ),
        (
            Scope::Table,
            KeyCode::Char('D'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT,
            Some(Command::Delete),
        ),
        (
            Scope::Table,
            KeyCode::Char(':'),
            KeyModifiers::NONE,
            Some(Command::CommandMode),
        ),
        (
            Scope::Table,
            KeyCode::Esc,
            KeyModifiers::NONE,
            Some(Command::Back),
        ),
        (
            Scope::Dialog,
            KeyCode::Esc,
            KeyModifiers::NONE,
            Some(Command::Cancel),
        ),
        (
            Scope::Table,
            KeyCode::Char('y'),
            KeyModifiers::NONE,
            Some(Command::Yaml),
        ),
        (
            Scope::Dialog,
            KeyCode::Char('y'),
            KeyModifiers::NONE,
            Some(Command::Confirm),
        ),
        (Scope::Global, KeyCode::Char('y'), KeyModifiers::NONE, None),
        (Scope::Table, KeyCode::Char('d'), KeyModifiers::NONE, None),
        (Scope::Table, KeyCode::Char('j'), KeyModifiers::ALT, None),
        (Scope::Table, KeyCode::CapsLock, KeyModifiers::NONE, None),
    ];
    for (scope, code, modifiers, expected) in cases {
        assert_eq!(
            keymap.command_for(scope, key_event(code, modifiers)),
            expected,
            "{code:?} {modifiers:?} in {}",
            scope.as_str()
        );
    }
    let mut release = key_event(KeyCode::Char('j'), KeyModifiers::NONE);
    release.kind = KeyEventKind::Release;
    assert_eq!(keymap.command_for(Scope::Table, release), None);
    let mut repeat = key_event(KeyCode::Char('j'), KeyModifiers::NONE);
    repeat.kind = KeyEventKind::Repeat;
    assert_eq!(
        keymap.command_for(Scope::Table, repeat),
        Some(Command::Down)
    );
}

#[test]
fn remaps_apply_and_show_in_hints_and_help() {
    let (keymap, warnings) =
        Keymap::from_toml("[keys]\nyaml = \"Y\"\nquit = [\"q\", \"ctrl-c\"]\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        keymap.command_for(
            Scope::Table,
            key_event(KeyCode::Char('Y'), KeyModifiers::SHIFT)
        ),
        Some(Command::Yaml)
    );
    assert_eq!(
        keymap.command_for(
            Scope::Table,
            key_event(KeyCode::Char('y'), KeyModifiers::NONE)
        ),
        None
    );
    assert_eq!(
        keymap.command_for(
            Scope::Table,
            key_event(KeyCode::Char('q'), KeyModifiers::NONE)
        ),
        Some(Command::Quit)
    );

    let table_hints = keymap.hints(Scope::Table);
    let yaml = table_hints
        .iter()
        .find(|hint| hint.command == Command::Yaml)
        .expect("yaml hint");
    assert_eq!(yaml.keys, "Y");
    assert_eq!(yaml.label, Command::Yaml.label());
    let down = table_hints
        .iter()
        .find(|hint| hint.command == Command::Down)
        .expect("down hint");
    assert_eq!(down.keys, "j down");

    let help = keymap.help_sections();
    let global = help
        .iter()
        .find(|section| section.scope == Scope::Global)
        .expect("global section");
    let quit = global
        .hints
        .iter()
        .find(|hint| hint.command == Command::Quit)
        .expect("quit in help");
    assert_eq!(quit.keys, "q ctrl-c");
    assert_eq!(quit.description, Command::Quit.description());
}

#[test]
fn help_lists_every_bound_command_once_under_its_scope() {
    let keymap = Keymap::default();
    let sections = keymap.help_sections();
    let scopes: Vec<Scope> = sections.iter().map(|section| section.scope).collect();
    assert_eq!(scopes, Scope::ALL);
    let mut listed: Vec<Command> = Vec::new();
    for section in &sections {
        assert_eq!(section.title, section.scope.title());
        for hint in &section.hints {
            assert_eq!(hint.command.scope(), section.scope);
            assert!(!hint.description.is_empty() && !hint.label.is_empty());
            listed.push(hint.command);
        }
    }
    assert_eq!(listed, Command::ALL);
}

#[test]
fn unknown_commands_warn_and_change_nothing() {
    let (keymap, warnings) = Keymap::from_toml("[keys]\nyml = \"x\"\nedit = \"E\"\n");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("line 2: ") && warnings[0].contains("`yml`"),
        "{warnings:?}"
    );
    assert_eq!(
        keymap.command_for(
            Scope::Table,
            key_event(KeyCode::Char('x'), KeyModifiers::NONE)
        ),
        None
    );
    assert_eq!(printed_keys(&keymap, Command::Edit), ["E"]);
    assert_eq!(printed_keys(&keymap, Command::Yaml), ["y"]);
}

#[test]
fn unreadable_keys_warn_and_the_readable_ones_apply() {
    let (keymap, warnings) =
        Keymap::from_toml("[keys]\ndelete = \"ctrl+x\"\ndown = [\"j\", \"shift-/\", 7]\nup = 3\n");
    assert_eq!(warnings.len(), 5, "{warnings:?}");
    assert!(
        warnings[0].starts_with("line 2: ") && warnings[0].contains("ctrl+x"),
        "{warnings:?}"
    );
    assert!(warnings[1].contains("keeps its keys"), "{warnings:?}");
    assert!(
        warnings[2].starts_with("line 3: ") && warnings[2].contains("shift-/"),
        "{warnings:?}"
    );
    assert!(
        warnings[3].starts_with("line 3: ") && warnings[3].contains("integer"),
        "{warnings:?}"
    );
    assert!(
        warnings[4].starts_with("line 4: ") && warnings[4].contains("`up`"),
        "{warnings:?}"
    );
    assert_eq!(printed_keys(&keymap, Command::Delete), ["ctrl-d"]);
    assert_eq!(printed_keys(&keymap, Command::Down), ["j"]);
    assert_eq!(printed_keys(&keymap, Command::Up), ["k", "up"]);
}

#[test]
fn a_key_bound_twice_in_one_scope_warns_and_the_last_binding_wins() {
    let (keymap, warnings) =
        Keymap::from_toml("[keys]\nedit = \"y\"\nrebuild = \"x\"\nrecheck = [\"x\", \"P\"]\n");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("`yaml`") && warnings[0].contains("`edit`"),
        "{warnings:?}"
    );
    assert!(
        warnings[1].contains("`rebuild`") && warnings[1].contains("`recheck`"),
        "{warnings:?}"
    );
    let table = |c: char| {
        keymap.command_for(
            Scope::Table,
            key_event(KeyCode::Char(c), KeyModifiers::NONE),
        )
    };
    assert_eq!(table('y'), Some(Command::Edit));
    assert_eq!(table('x'), Some(Command::Recheck));
    assert_eq!(table('e'), None);
    assert!(keymap.keys(Command::Yaml).is_empty());
    assert!(keymap.keys(Command::Rebuild).is_empty());
    let hinted: Vec<Command> = keymap
        .hints(Scope::Table)
        .iter()
        .map(|hint| hint.command)
        .collect();
    assert!(!hinted.contains(&Command::Yaml) && !hinted.contains(&Command::Rebuild));
}

#[test]
fn the_same_key_in_different_scopes_is_no_conflict() {
    let (keymap, warnings) = Keymap::from_toml("[keys]\nconfirm = [\"y\", \"enter\"]\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        keymap.command_for(Scope::Dialog, key_event(KeyCode::Enter, KeyModifiers::NONE)),
        Some(Command::Confirm)
    );
    assert_eq!(
        keymap.command_for(Scope::Table, key_event(KeyCode::Enter, KeyModifiers::NONE)),
        Some(Command::Enter)
    );
}

#[test]
fn an_empty_list_unbinds_a_command() {
    let (keymap, warnings) = Keymap::from_toml("keys = { delete = [] }\n");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        keymap.command_for(
            Scope::Table,
            key_event(KeyCode::Char('d'), KeyModifiers::CONTROL)
        ),
        None
    );
    assert!(
        keymap
            .hints(Scope::Table)
            .iter()
            .all(|hint| hint.command != Command::Delete)
    );
}

#[test]
fn malformed_keymaps_and_unknown_sections_warn_and_keep_defaults() {
    let (keymap, warnings) = Keymap::from_toml("[keys]\nquit = \"q\"\nhelp = \n");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("line 3: "), "{warnings:?}");
    assert_eq!(printed_keys(&keymap, Command::Quit), ["ctrl-c"]);

    let (keymap, warnings) =
        Keymap::from_toml("[colors]\nok = \"green\"\n\n[keys]\nhelp = \"h\"\n");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("line 1: ") && warnings[0].contains("colors"),
        "{warnings:?}"
    );
    assert_eq!(printed_keys(&keymap, Command::Help), ["h"]);
}

#[test]
fn command_names_are_kebab_case_and_round_trip() {
    for command in Command::ALL {
        let name = command.as_str();
        assert!(
            name.split('-')
                .all(|word| !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase())),
            "{name}"
        );
        assert_eq!(name.parse::<Command>(), Ok(command));
        assert_eq!(command.to_string(), name);
    }
    assert!("Quit".parse::<Command>().is_err());
    assert!("page_up".parse::<Command>().is_err());
}

#[test]
fn chords_parse_in_every_documented_spelling() {
    let cases = [
        (
            "ctrl-d",
            KeyCode::Char('d'),
            KeyModifiers::CONTROL,
            "ctrl-d",
        ),
        (
            "Ctrl-D",
            KeyCode::Char('d'),
            KeyModifiers::CONTROL,
            "ctrl-d",
        ),
        (
            "shift-tab",
            KeyCode::BackTab,
            KeyModifiers::NONE,
            "shift-tab",
        ),
        ("backtab", KeyCode::BackTab, KeyModifiers::NONE, "shift-tab"),
        ("G", KeyCode::Char('G'), KeyModifiers::NONE, "G"),
        ("shift-g", KeyCode::Char('G'), KeyModifiers::NONE, "G"),
        ("enter", KeyCode::Enter, KeyModifiers::NONE, "enter"),
        ("Return", KeyCode::Enter, KeyModifiers::NONE, "enter"),
        ("esc", KeyCode::Esc, KeyModifiers::NONE, "esc"),
        ("?", KeyCode::Char('?'), KeyModifiers::NONE, "?"),
        ("/", KeyCode::Char('/'), KeyModifiers::NONE, "/"),
        (":", KeyCode::Char(':'), KeyModifiers::NONE, ":"),
        ("pageup", KeyCode::PageUp, KeyModifiers::NONE, "pageup"),
        ("PgDn", KeyCode::PageDown, KeyModifiers::NONE, "pagedown"),
        ("f1", KeyCode::F(1), KeyModifiers::NONE, "f1"),
        ("alt-F12", KeyCode::F(12), KeyModifiers::ALT, "alt-f12"),
        ("space", KeyCode::Char(' '), KeyModifiers::NONE, "space"),
        (
            "ctrl-space",
            KeyCode::Char(' '),
            KeyModifiers::CONTROL,
            "ctrl-space",
        ),
        ("-", KeyCode::Char('-'), KeyModifiers::NONE, "-"),
        (
            "ctrl--",
            KeyCode::Char('-'),
            KeyModifiers::CONTROL,
            "ctrl--",
        ),
        (
            "alt-shift-up",
            KeyCode::Up,
            KeyModifiers::ALT | KeyModifiers::SHIFT,
            "alt-shift-up",
        ),
        (
            " ctrl-alt-x ",
            KeyCode::Char('x'),
            KeyModifiers::CONTROL | KeyModifiers::ALT,
            "ctrl-alt-x",
        ),
    ];
    for (text, code, modifiers, printed) in cases {
        let chord = key(text);
        assert_eq!(
            (chord.code(), chord.modifiers()),
            (code, modifiers),
            "{text}"
        );
        assert_eq!(chord.to_string(), printed, "{text}");
    }
}

#[test]
fn malformed_chords_are_refused_with_a_reason() {
    let cases = [
        ("", ParseKeyError::Empty),
        ("  ", ParseKeyError::Empty),
        ("ctrl-", ParseKeyError::MissingKey("ctrl-".to_string())),
        ("cmd-x", ParseKeyError::UnknownModifier("cmd".to_string())),
        ("--", ParseKeyError::UnknownModifier(String::new())),
        ("ctrl+x", ParseKeyError::UnknownKey("ctrl+x".to_string())),
        ("f0", ParseKeyError::UnknownKey("f0".to_string())),
        ("shift-/", ParseKeyError::ShiftedSymbol('/')),
    ];
    for (text, expected) in cases {
        assert_eq!(text.parse::<KeyChord>(), Err(expected), "{text:?}");
    }
}

fn any_key_code() -> impl Strategy<Value = KeyCode> {
    prop_oneof![
        any::<char>().prop_map(KeyCode::Char),
        prop::char::range('!', '~').prop_map(KeyCode::Char),
        any::<u8>().prop_map(KeyCode::F),
        prop::sample::select(vec![
            KeyCode::Backspace,
            KeyCode::Enter,
            KeyCode::Left,
            KeyCode::Right,
            KeyCode::Up,
            KeyCode::Down,
            KeyCode::Home,
            KeyCode::End,
            KeyCode::PageUp,
            KeyCode::PageDown,
            KeyCode::Tab,
            KeyCode::BackTab,
            KeyCode::Delete,
            KeyCode::Insert,
            KeyCode::Esc,
            KeyCode::Null,
            KeyCode::CapsLock,
        ]),
    ]
}

proptest! {
    #[test]
    fn chords_print_as_they_parse(code in any_key_code(), bits in any::<u8>()) {
        let modifiers = KeyModifiers::from_bits_truncate(bits);
        if let Some(chord) = KeyChord::new(code, modifiers) {
            prop_assert_eq!(KeyChord::new(chord.code(), chord.modifiers()), Some(chord));
            let printed = chord.to_string();
            prop_assert_eq!(printed.parse::<KeyChord>(), Ok(chord), "printed as {}", printed);
        }
    }

    #[test]
    fn any_text_parses_or_fails_without_panicking(text in "\\PC{0,12}|((ctrl|alt|shift|super)-){0,3}[ -~]{1,9}") {
        if let Ok(chord) = text.parse::<KeyChord>() {
            prop_assert_eq!(chord.to_string().parse::<KeyChord>(), Ok(chord));
        }
    }
}
