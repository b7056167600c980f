//! Chooses how each character is drawn: from the embedded Noto Sans Mono rasters, from geometry (box drawing,
//! blocks, braille and common symbols), or as a hollow box when nothing can draw it.
//!
//! The rasters are compiled into the binary, so a screenshot looks the same on every machine whatever fonts it
//! has installed.

use noto_sans_mono_bitmap::{FontWeight, RasterHeight, get_raster, get_raster_width};

use super::mask::Mask;
use super::{blocks, box_drawing, symbols};

/// Raster height of the embedded font, which is also the height of a cell in pixels.
const RASTER_HEIGHT: RasterHeight = RasterHeight::Size16;

/// Width of one cell in pixels: the advance of the monospace font.
pub(super) const CELL_WIDTH: usize = get_raster_width(FontWeight::Regular, RASTER_HEIGHT);

/// Height of one cell in pixels.
pub(super) const CELL_HEIGHT: usize = RASTER_HEIGHT.val();

/// Draws the first character of `symbol` into `mask`, which spans the cells the symbol occupies. Combining marks
/// after the first character are not drawn.
pub(super) fn draw(symbol: &str, bold: bool, mask: &mut Mask) {
    let Some(ch) = symbol.chars().next() else {
        return;
    };
    if ch.is_whitespace() {
        return;
    }
    let weight = if bold {
        FontWeight::Bold
    } else {
        FontWeight::Regular
    };
    if let Some(raster) = get_raster(substitute(ch), weight, RASTER_HEIGHT) {
        // A single-width glyph in a wider span sits in the middle, as terminals centre it.
        let offset = mask.width().saturating_sub(raster.width()) / 2;
        mask.copy_raster(offset, raster.pixels(), raster.width());
        return;
    }
    if mask.width() == CELL_WIDTH
        && (box_drawing::draw(ch, mask) || blocks::draw(ch, mask) || symbols::draw(ch, mask))
    {
        return;
    }
    missing_glyph(mask);
}

/// The font character that stands in for a typographic one the font lacks: curly quotes, primes and hyphen
/// variants look close enough to their ASCII forms at this size.
fn substitute(ch: char) -> char {
    match ch {
        '‘' | '’' | '‚' | '‛' | '′' => '\'',
        '“' | '”' | '„' | '‟' | '″' => '"',
        '‐' | '‑' | '−' => '-',
        '⁄' | '∕' => '/',
        other => other,
    }
}

/// A hollow box filling the span, the way terminals show a character they have no glyph for.
fn missing_glyph(mask: &mut Mask) {
    let width = i32::try_from(mask.width()).unwrap_or(i32::MAX);
    let height = i32::try_from(mask.height()).unwrap_or(i32::MAX);
    let (left, right) = (1, width - 1);
    let (top, bottom) = (height / 4, height - height / 8);
    mask.fill_rect(left, top, right, top + 1, 255);
    mask.fill_rect(left, bottom - 1, right, bottom, 255);
    mask.fill_rect(left, top, left + 1, bottom, 255);
    mask.fill_rect(right - 1, top, right, bottom, 255);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(symbol: &str, cells: usize) -> Mask {
        let mut mask = Mask::default();
        mask.reset(cells * CELL_WIDTH, CELL_HEIGHT);
        draw(symbol, false, &mut mask);
        mask
    }

    fn lit(mask: &Mask) -> usize {
        mask.alpha().iter().filter(|&&a| a > 0).count()
    }

    #[test]
    fn letters_come_from_the_font_in_both_weights() {
        let regular = drawn("M", 1);
        let mut bold = Mask::default();
        bold.reset(CELL_WIDTH, CELL_HEIGHT);
        draw("M", true, &mut bold);
        assert!(lit(&regular) > 0);
        assert_ne!(regular.alpha(), bold.alpha());
    }

    #[test]
    fn blanks_draw_nothing() {
        assert_eq!(lit(&drawn(" ", 1)), 0);
        assert_eq!(lit(&drawn("", 1)), 0);
        assert_eq!(lit(&drawn("\u{2800}", 1)), 0);
    }

    #[test]
    fn curly_quotes_borrow_the_ascii_glyph() {
        assert_eq!(drawn("’", 1).alpha(), drawn("'", 1).alpha());
    }

    #[test]
    fn unknown_characters_become_a_hollow_box_across_their_span() {
        let single = drawn("\u{4e00}", 1);
        let double = drawn("\u{4e00}", 2);
        assert!(lit(&single) > 0);
        assert!(lit(&double) > lit(&single));
        // Hollow: the middle of the box is empty.
        let middle = (CELL_HEIGHT / 2) * double.width() + double.width() / 2;
        assert_eq!(double.alpha()[middle], 0);
    }
}
