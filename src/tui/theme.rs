//! Semantic colour themes for the console.
//!
//! Panes never pick raw colours: they ask the [`Theme`] for the style of a [`Role`] (`ok`, `warn`, `selection`, ...),
//! so one file recolours the whole console and a `NO_COLOR` terminal still tells states apart by modifiers alone.
//!
//! Theme files are TOML and map role names to a colour or to a small style table:
//!
//! ```toml
//! ok = "green"
//! muted = "indexed:244"
//! error = { fg = "#f38ba8", bold = true }
//! selection = { fg = "black", bg = "cyan" }
//! ```
//!
//! Colours are ANSI names (`green`, `light-blue`, `dark-gray`, `default` for the terminal's own colour), `#rrggbb`,
//! or `indexed:0` to `indexed:255`. Style tables take `fg`, `bg` and the flags `bold`, `italic`, `dim`, `reversed`
//! and `underlined`. A file may set only some roles; the others keep the `dark` theme's style. Mistakes inside a
//! file are reported as warnings and never stop the console from starting.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::LazyLock;

use ratatui::style::{Color, Modifier, Style};
use toml_edit::{Document, Item, TableLike};

/// Name of the theme used when none is chosen; partial theme files fall back on its styles.
pub const DEFAULT_THEME: &str = "dark";

/// A theme shipped inside the binary, selectable by name.
struct BuiltIn {
    name: &'static str,
    /// Where the file lives in the source tree, named in warnings so they point at something real.
    path: &'static str,
    text: &'static str,
}

const BUILT_IN: [BuiltIn; 3] = [
    BuiltIn {
        name: "dark",
        path: "themes/dark.toml",
        text: include_str!("../../themes/dark.toml"),
    },
    BuiltIn {
        name: "light",
        path: "themes/light.toml",
        text: include_str!("../../themes/light.toml"),
    },
    BuiltIn {
        name: "high-contrast",
        path: "themes/high-contrast.toml",
        text: include_str!("../../themes/high-contrast.toml"),
    },
];

/// The `dark` theme, parsed once: every other theme starts from it.
static DARK: LazyLock<Theme> = LazyLock::new(|| {
    let dark = &BUILT_IN[0];
    // The built-in files are checked by tests; should one ever fail to parse, the console still starts, monochrome.
    parse(Path::new(dark.path), dark.text, &Theme::monochrome())
        .map(|(theme, _)| theme)
        .unwrap_or_else(|_| Theme::monochrome())
});

/// What a piece of text means to the user; each role has one style per theme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Ordinary text and the background panes are filled with.
    Text,
    /// Pane borders and separators.
    Border,
    /// Pane titles and breadcrumbs.
    Title,
    /// Table column headers.
    Header,
    /// Key labels in the hint bar and help.
    Key,
    /// A healthy, finished state (module loaded, image present).
    Ok,
    /// Something that needs attention but still works (degraded, retrying).
    Warn,
    /// A failure the user must act on.
    Error,
    /// Work under way (building, pulling, rolling out).
    Progress,
    /// Secondary detail: ages, counts, unset values.
    Muted,
    /// Emphasis that is not a state: the focused pane, matches of a filter.
    Accent,
    /// The selected row.
    Selection,
}

impl Role {
    /// Every role, in the order their styles are stored.
    pub const ALL: [Role; 12] = [
        Role::Text,
        Role::Border,
        Role::Title,
        Role::Header,
        Role::Key,
        Role::Ok,
        Role::Warn,
        Role::Error,
        Role::Progress,
        Role::Muted,
        Role::Accent,
        Role::Selection,
    ];

    /// The role's key in theme files.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Text => "text",
            Role::Border => "border",
            Role::Title => "title",
            Role::Header => "header",
            Role::Key => "key",
            Role::Ok => "ok",
            Role::Warn => "warn",
            Role::Error => "error",
            Role::Progress => "progress",
            Role::Muted => "muted",
            Role::Accent => "accent",
            Role::Selection => "selection",
        }
    }

    fn from_name(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|role| role.as_str() == name)
    }
}

/// Why a theme could not be loaded at all. Anything less serious is a warning returned next to the theme.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    /// The theme named a file that could not be read.
    #[error("cannot read theme file {}: {source}", path.display())]
    Read {
        /// The file as named by the user.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{}:{line}:{column}: not a valid theme file: {message}", path.display())]
    Syntax {
        /// The file as named by the user.
        path: PathBuf,
        /// 1-based line of the mistake.
        line: usize,
        /// 1-based column of the mistake, in characters.
        column: usize,
        /// What the TOML parser expected.
        message: String,
    },
}

/// The style of every [`Role`]. Cheap to copy styles out of, so panes read it on every draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Theme {
    styles: [Style; Role::ALL.len()],
}

impl Default for Theme {
    /// The `dark` theme.
    fn default() -> Self {
        DARK.clone()
    }
}

impl Theme {
    /// Names of the themes shipped inside the binary, for `--help` and completion.
    pub fn built_in_names() -> impl Iterator<Item = &'static str> {
        BUILT_IN.iter().map(|built_in| built_in.name)
    }

    /// Loads a built-in theme by name (`dark`, `light`, `high-contrast`) or else a theme file by path.
    ///
    /// Unknown keys and bad values are returned as warnings (`path:line: ...`), and the key keeps the `dark` theme's
    /// style; only an unreadable file or a file that is not TOML is an error.
    pub fn load(name_or_path: &str) -> Result<(Theme, Vec<String>), ThemeError> {
        if let Some(built_in) = BUILT_IN
            .iter()
            .find(|built_in| built_in.name == name_or_path)
        {
            return parse(Path::new(built_in.path), built_in.text, &DARK);
        }
        let path = Path::new(name_or_path);
        let text = std::fs::read_to_string(path).map_err(|source| ThemeError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        parse(path, &text, &DARK)
    }

    /// Picks the theme to start with.
    ///
    /// A theme the user chose explicitly (`choice`) wins, as no-color.org asks of configuration; without one,
    /// `no_color` selects [`Theme::monochrome`] and otherwise the console uses `dark`.
    pub fn resolve(
        choice: Option<&str>,
        no_color: bool,
    ) -> Result<(Theme, Vec<String>), ThemeError> {
        match choice {
            Some(name_or_path) => Theme::load(name_or_path),
            None if no_color => Ok((Theme::monochrome(), Vec::new())),
            None => Ok((Theme::default(), Vec::new())),
        }
    }

    /// [`Theme::resolve`] with `no_color` read from the `NO_COLOR` environment variable (set and not empty).
    pub fn from_env(choice: Option<&str>) -> Result<(Theme, Vec<String>), ThemeError> {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Theme::resolve(choice, no_color)
    }

    /// A theme without a single colour: states differ by modifiers only (ok plain, warn underlined, error bold and
    /// underlined, progress italic, muted dim), and the selection is reversed.
    pub fn monochrome() -> Theme {
        let with = |modifier: Modifier| Style::new().add_modifier(modifier);
        Theme::from_fn(|role| match role {
            Role::Text | Role::Border | Role::Ok => Style::new(),
            Role::Title | Role::Header | Role::Key | Role::Accent => with(Modifier::BOLD),
            Role::Warn => with(Modifier::UNDERLINED),
            Role::Error => with(Modifier::BOLD | Modifier::UNDERLINED),
            Role::Progress => with(Modifier::ITALIC),
            Role::Muted => with(Modifier::DIM),
            Role::Selection => with(Modifier::REVERSED),
        })
    }

    fn from_fn(style_of: impl FnMut(Role) -> Style) -> Theme {
        Theme {
            styles: Role::ALL.map(style_of),
        }
    }

    /// The style of any role, for panes that map a state to a role first.
    pub fn style(&self, role: Role) -> Style {
        self.styles[role as usize]
    }

    /// Ordinary text and pane backgrounds.
    pub fn text(&self) -> Style {
        self.style(Role::Text)
    }

    /// Pane borders and separators.
    pub fn border(&self) -> Style {
        self.style(Role::Border)
    }

    /// Pane titles and breadcrumbs.
    pub fn title(&self) -> Style {
        self.style(Role::Title)
    }

    /// Table column headers.
    pub fn header(&self) -> Style {
        self.style(Role::Header)
    }

    /// Key labels in the hint bar and help.
    pub fn key(&self) -> Style {
        self.style(Role::Key)
    }

    /// A healthy, finished state.
    pub fn ok(&self) -> Style {
        self.style(Role::Ok)
    }

    /// A state that needs attention but still works.
    pub fn warn(&self) -> Style {
        self.style(Role::Warn)
    }

    /// A failure the user must act on.
    pub fn error(&self) -> Style {
        self.style(Role::Error)
    }

    /// Work under way.
    pub fn progress(&self) -> Style {
        self.style(Role::Progress)
    }

    /// Secondary detail.
    pub fn muted(&self) -> Style {
        self.style(Role::Muted)
    }

    /// Emphasis that is not a state.
    pub fn accent(&self) -> Style {
        self.style(Role::Accent)
    }

    /// The selected row (foreground and background).
    pub fn selection(&self) -> Style {
        self.style(Role::Selection)
    }
}

/// Reads a theme file over `base`: every role the file sets replaces the base's style.
fn parse(path: &Path, text: &str, base: &Theme) -> Result<(Theme, Vec<String>), ThemeError> {
    let document = Document::parse(text).map_err(|error| {
        let (line, column) =
            line_and_column(text, error.span().map_or(text.len(), |span| span.start));
        ThemeError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: error.message().trim().to_string(),
        }
    })?;
    let mut theme = base.clone();
    let mut warnings = Vec::new();
    for (name, item) in document.iter() {
        let span = document.key(name).and_then(|key| key.span());
        let (line, _) = line_and_column(text, span.map_or(0, |span: Range<usize>| span.start));
        let at = format!("{}:{line}", path.display());
        let Some(role) = Role::from_name(name) else {
            let known: Vec<&str> = Role::ALL.iter().map(|role| role.as_str()).collect();
            warnings.push(format!(
                "{at}: unknown theme key `{name}` (known: {})",
                known.join(", ")
            ));
            continue;
        };
        match style_of(item) {
            Ok((style, notes)) => {
                theme.styles[role as usize] = style;
                warnings.extend(
                    notes
                        .into_iter()
                        .map(|note| format!("{at}: `{name}`: {note}")),
                );
            }
            Err(problem) => warnings.push(format!(
                "{at}: `{name}`: {problem}; keeping the {DEFAULT_THEME} theme's style"
            )),
        }
    }
    Ok((theme, warnings))
}

/// Style flags a theme file may set, by their key in a style table.
const FLAGS: [(&str, Modifier); 5] = [
    ("bold", Modifier::BOLD),
    ("italic", Modifier::ITALIC),
    ("dim", Modifier::DIM),
    ("reversed", Modifier::REVERSED),
    ("underlined", Modifier::UNDERLINED),
];

/// The style one theme key describes, with notes about ignored fields, or why the key is unusable.
fn style_of(item: &Item) -> Result<(Style, Vec<String>), String> {
    if let Some(colour) = item.as_str() {
        return Ok((Style::new().fg(parse_colour(colour)?), Vec::new()));
    }
    let Some(table) = item.as_table_like() else {
        return Err(format!(
            "expected a colour or a table of fg, bg and flags, found {}",
            item.type_name()
        ));
    };
    style_of_table(table)
}

fn style_of_table(table: &dyn TableLike) -> Result<(Style, Vec<String>), String> {
    let mut style = Style::new();
    let mut notes = Vec::new();
    for (field, value) in table.iter() {
        match field {
            "fg" | "bg" => {
                let text = value
                    .as_str()
                    .ok_or_else(|| format!("`{field}` must be a colour string, found {}", value.type_name()))?;
                let colour = parse_colour(text)?;
                style = if field == "fg" { style.fg(colour) } else { style.bg(colour) };
            }
            _ => match FLAGS.iter().find(|(flag, _)| *flag == field) {
                Some((_, modifier)) => {
                    let on = value
                        .as_bool()
                        .ok_or_else(|| format!("`{field}` must be true or false, found {}", value.type_name()))?;
                    if on {
                        style = style.add_modifier(*modifier);
                    }
                }
                None => notes.push(format!(
                    "unknown style field `{field}` ignored (known: fg, bg, bold, italic, dim, reversed, underlined)"
                )),
            },
        }
    }
    Ok((style, notes))
}

/// Reads `green`, `light-blue`, `#a6e3a1` or `indexed:244`, and the other spellings ratatui's
/// `Color::from_str` knows (`bright-red`, `dark_grey`, `reset`).
fn parse_colour(text: &str) -> Result<Color, String> {
    let lowered = text.trim().to_ascii_lowercase();
    let colour = match lowered.strip_prefix("indexed:").map(str::trim) {
        // Only a palette number: ratatui would read a colour name here too.
        Some(index) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => {
            Color::from_str(index).ok()
        }
        Some(_) => None,
        None if lowered == "default" => Some(Color::Reset),
        // ratatui reads each channel with `from_str_radix`, which takes a sign (`#+12345`).
        None if lowered.starts_with('#')
            && !lowered[1..].bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            None
        }
        None => Color::from_str(&lowered).ok(),
    };
    colour.ok_or_else(|| {
        format!("`{text}` is not a colour (use a name such as `green` or `light-blue`, `#rrggbb`, or `indexed:0` to `indexed:255`)")
    })
}

/// 1-based line and character column of a byte offset, for messages that point into the file.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_parse_in_every_notation() {
        assert_eq!(parse_colour("green"), Ok(Color::Green));
        assert_eq!(parse_colour("Light-Blue"), Ok(Color::LightBlue));
        assert_eq!(parse_colour("dark_grey"), Ok(Color::DarkGray));
        assert_eq!(parse_colour("default"), Ok(Color::Reset));
        assert_eq!(parse_colour("#a6E3a1"), Ok(Color::Rgb(0xa6, 0xe3, 0xa1)));
        assert_eq!(parse_colour("indexed:244"), Ok(Color::Indexed(244)));
        assert_eq!(parse_colour("Indexed: 7"), Ok(Color::Indexed(7)));
        assert_eq!(parse_colour(" bright-red "), Ok(Color::LightRed));
        assert_eq!(parse_colour("Grey"), Ok(Color::Gray));
    }

    #[test]
    fn built_in_themes_load_without_notes() {
        for name in Theme::built_in_names() {
            let (_, notes) = Theme::load(name).expect(name);
            assert!(notes.is_empty(), "{name}: {notes:?}");
        }
    }

    #[test]
    fn bad_colours_are_rejected_with_the_value_named() {
        for bad in [
            "#12345",
            "#gggggg",
            "#+12345",
            "indexed:256",
            "indexed:",
            "indexed:red",
            "purple-ish",
            "",
        ] {
            let problem = parse_colour(bad).expect_err(bad);
            assert!(problem.contains(&format!("`{bad}`")), "{problem}");
        }
    }

    #[test]
    fn built_in_themes_set_every_role_themselves() {
        for built_in in &BUILT_IN {
            let document = Document::parse(built_in.text).expect(built_in.path);
            for role in Role::ALL {
                assert!(
                    document.contains_key(role.as_str()),
                    "{} lacks `{}`",
                    built_in.path,
                    role.as_str()
                );
            }
        }
    }

    #[test]
    fn lines_and_columns_count_from_one() {
        let text = "a = 1\nbé = x\n";
        assert_eq!(line_and_column(text, 0), (1, 1));
        assert_eq!(line_and_column(text, text.find('x').expect("x")), (2, 6));
        assert_eq!(
            line_and_column(text, text.find('é').expect("é") + 1),
            (2, 2)
        );
        assert_eq!(line_and_column(text, text.len() + 10), (3, 1));
    }
}
