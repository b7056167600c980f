//! Key chords: one key with its modifiers in a canonical form, printed and parsed as keymap files
//! spell them (`ctrl-d`, `G`, `shift-tab`).

use std::fmt;
use std::str::FromStr;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

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
pub(super) const KEY_NAMES: [(&str, KeyCode); 24] = [
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
    pub(super) code: KeyCode,
    pub(super) modifiers: KeyModifiers,
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
    pub(super) const fn plain(code: KeyCode) -> KeyChord {
        KeyChord {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    /// `ctrl` with a lower-case letter.
    pub(super) const fn ctrl(letter: char) -> KeyChord {
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
