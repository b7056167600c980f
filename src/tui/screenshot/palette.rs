//! Turns ratatui colours into the RGB values a screenshot shows.
//!
//! A terminal decides what `Color::Red` or `Color::Indexed(42)` look like; a screenshot has to decide once and for
//! all so the same buffer always yields the same image. The sixteen system colours are xterm's defaults, so a named
//! colour and its index (`Red` and `Indexed(1)`) are the same pixel, exactly as in a terminal:
//!
//! | index | name           | RGB       | index | name            | RGB       |
//! |-------|----------------|-----------|-------|-----------------|-----------|
//! | 0     | `Black`        | `#000000` | 8     | `DarkGray`      | `#7f7f7f` |
//! | 1     | `Red`          | `#cd0000` | 9     | `LightRed`      | `#ff0000` |
//! | 2     | `Green`        | `#00cd00` | 10    | `LightGreen`    | `#00ff00` |
//! | 3     | `Yellow`       | `#cdcd00` | 11    | `LightYellow`   | `#ffff00` |
//! | 4     | `Blue`         | `#0000ee` | 12    | `LightBlue`     | `#5c5cff` |
//! | 5     | `Magenta`      | `#cd00cd` | 13    | `LightMagenta`  | `#ff00ff` |
//! | 6     | `Cyan`         | `#00cdcd` | 14    | `LightCyan`     | `#00ffff` |
//! | 7     | `Gray`         | `#e5e5e5` | 15    | `White`         | `#ffffff` |
//!
//! Indices 16 to 231 are the 6x6x6 colour cube (channel levels 0, 95, 135, 175, 215, 255) and 232 to 255 the grey
//! ramp from `#080808` to `#eeeeee` in steps of 10. `Color::Reset` means "the terminal's own colour": light grey
//! text ([`DEFAULT_FOREGROUND`]) on a near-black background ([`DEFAULT_BACKGROUND`]).

use ratatui::style::Color;

/// One opaque pixel colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rgb {
    pub(super) r: u8,
    pub(super) g: u8,
    pub(super) b: u8,
}

impl Rgb {
    pub(super) const fn new(r: u8, g: u8, b: u8) -> Self {
        Self { r, g, b }
    }

    /// The colour `weight`/255 of the way from `self` to `other`; dimmed text is its colour half-way to the
    /// background.
    pub(super) fn mix(self, other: Rgb, weight: u8) -> Rgb {
        let channel = |from: u8, to: u8| {
            let (from, to, weight) = (u32::from(from), u32::from(to), u32::from(weight));
            // The result lies between `from` and `to`, so it always fits a byte.
            ((from * (255 - weight) + to * weight + 127) / 255) as u8
        };
        Rgb::new(
            channel(self.r, other.r),
            channel(self.g, other.g),
            channel(self.b, other.b),
        )
    }
}

/// What `Color::Reset` text looks like: the light grey of a default terminal foreground.
pub(super) const DEFAULT_FOREGROUND: Rgb = Rgb::new(0xd0, 0xd0, 0xd0);

/// What a `Color::Reset` background looks like: a near-black terminal background.
pub(super) const DEFAULT_BACKGROUND: Rgb = Rgb::new(0x12, 0x14, 0x18);

/// xterm's default sixteen system colours, in index order.
const SYSTEM: [Rgb; 16] = [
    Rgb::new(0x00, 0x00, 0x00),
    Rgb::new(0xcd, 0x00, 0x00),
    Rgb::new(0x00, 0xcd, 0x00),
    Rgb::new(0xcd, 0xcd, 0x00),
    Rgb::new(0x00, 0x00, 0xee),
    Rgb::new(0xcd, 0x00, 0xcd),
    Rgb::new(0x00, 0xcd, 0xcd),
    Rgb::new(0xe5, 0xe5, 0xe5),
    Rgb::new(0x7f, 0x7f, 0x7f),
    Rgb::new(0xff, 0x00, 0x00),
    Rgb::new(0x00, 0xff, 0x00),
    Rgb::new(0xff, 0xff, 0x00),
    Rgb::new(0x5c, 0x5c, 0xff),
    Rgb::new(0xff, 0x00, 0xff),
    Rgb::new(0x00, 0xff, 0xff),
    Rgb::new(0xff, 0xff, 0xff),
];

/// Channel values of the 6x6x6 colour cube.
const CUBE_LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];

/// The RGB value of `color`, with `reset` standing in for `Color::Reset` (the foreground and background defaults
/// differ).
pub(super) fn resolve(color: Color, reset: Rgb) -> Rgb {
    match color {
        Color::Reset => reset,
        Color::Rgb(r, g, b) => Rgb::new(r, g, b),
        Color::Indexed(index) => indexed(index),
        Color::Black => SYSTEM[0],
        Color::Red => SYSTEM[1],
        Color::Green => SYSTEM[2],
        Color::Yellow => SYSTEM[3],
        Color::Blue => SYSTEM[4],
        Color::Magenta => SYSTEM[5],
        Color::Cyan => SYSTEM[6],
        Color::Gray => SYSTEM[7],
        Color::DarkGray => SYSTEM[8],
        Color::LightRed => SYSTEM[9],
        Color::LightGreen => SYSTEM[10],
        Color::LightYellow => SYSTEM[11],
        Color::LightBlue => SYSTEM[12],
        Color::LightMagenta => SYSTEM[13],
        Color::LightCyan => SYSTEM[14],
        Color::White => SYSTEM[15],
    }
}

/// An entry of the xterm 256-colour palette.
fn indexed(index: u8) -> Rgb {
    match index {
        0..=15 => SYSTEM[usize::from(index)],
        16..=231 => {
            let cube = usize::from(index - 16);
            Rgb::new(
                CUBE_LEVELS[cube / 36],
                CUBE_LEVELS[(cube / 6) % 6],
                CUBE_LEVELS[cube % 6],
            )
        }
        232..=255 => {
            let level = 8 + 10 * (index - 232);
            Rgb::new(level, level, level)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_colours_match_their_system_index() {
        let pairs = [
            (Color::Black, 0),
            (Color::Red, 1),
            (Color::Green, 2),
            (Color::Yellow, 3),
            (Color::Blue, 4),
            (Color::Magenta, 5),
            (Color::Cyan, 6),
            (Color::Gray, 7),
            (Color::DarkGray, 8),
            (Color::LightRed, 9),
            (Color::LightGreen, 10),
            (Color::LightYellow, 11),
            (Color::LightBlue, 12),
            (Color::LightMagenta, 13),
            (Color::LightCyan, 14),
            (Color::White, 15),
        ];
        for (named, index) in pairs {
            assert_eq!(
                resolve(named, DEFAULT_FOREGROUND),
                resolve(Color::Indexed(index), DEFAULT_FOREGROUND),
                "{named:?}"
            );
        }
        assert_eq!(
            resolve(Color::Red, DEFAULT_FOREGROUND),
            Rgb::new(0xcd, 0, 0)
        );
        assert_eq!(
            resolve(Color::LightBlue, DEFAULT_FOREGROUND),
            Rgb::new(0x5c, 0x5c, 0xff)
        );
    }

    #[test]
    fn indexed_colours_follow_the_xterm_cube_and_grey_ramp() {
        assert_eq!(indexed(16), Rgb::new(0, 0, 0));
        assert_eq!(indexed(21), Rgb::new(0, 0, 255));
        assert_eq!(indexed(46), Rgb::new(0, 255, 0));
        assert_eq!(indexed(196), Rgb::new(255, 0, 0));
        assert_eq!(indexed(208), Rgb::new(255, 135, 0));
        assert_eq!(indexed(231), Rgb::new(255, 255, 255));
        assert_eq!(indexed(232), Rgb::new(8, 8, 8));
        assert_eq!(indexed(244), Rgb::new(128, 128, 128));
        assert_eq!(indexed(255), Rgb::new(238, 238, 238));
    }

    #[test]
    fn rgb_passes_through_and_reset_takes_the_given_default() {
        assert_eq!(
            resolve(Color::Rgb(1, 2, 3), DEFAULT_FOREGROUND),
            Rgb::new(1, 2, 3)
        );
        assert_eq!(
            resolve(Color::Reset, DEFAULT_FOREGROUND),
            DEFAULT_FOREGROUND
        );
        assert_eq!(
            resolve(Color::Reset, DEFAULT_BACKGROUND),
            DEFAULT_BACKGROUND
        );
    }

    #[test]
    fn mixing_runs_from_one_colour_to_the_other() {
        let black = Rgb::new(0, 0, 0);
        let white = Rgb::new(255, 255, 255);
        assert_eq!(black.mix(white, 0), black);
        assert_eq!(black.mix(white, 255), white);
        assert_eq!(black.mix(white, 128), Rgb::new(128, 128, 128));
    }
}
