use crossterm::event::KeyModifiers;

use super::chord::KEY_NAMES;
use super::command::DEFAULT_KEYS;
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
