//! Block elements (U+2580 to U+259F) and braille patterns (U+2800 to U+28FF) drawn from their geometry.
//!
//! Gauges, sparklines and bar charts are built from eighth blocks and charts from braille dots; both only read
//! right when they fill exact fractions of the cell, which no embedded font provides.

use super::mask::Mask;

/// Draws `ch` into `mask` (one cell) and reports whether it is a block element or braille pattern.
pub(super) fn draw(ch: char, mask: &mut Mask) -> bool {
    let code = u32::from(ch);
    match code {
        0x2580..=0x259f => block(ch, mask),
        0x2800..=0x28ff => braille(code - 0x2800, mask),
        _ => return false,
    }
    true
}

/// Which quarters of the cell a quadrant character fills: upper left, upper right, lower left, lower right.
fn quadrants(ch: char) -> Option<[bool; 4]> {
    let filled = match ch {
        '▖' => [false, false, true, false],
        '▗' => [false, false, false, true],
        '▘' => [true, false, false, false],
        '▙' => [true, false, true, true],
        '▚' => [true, false, false, true],
        '▛' => [true, true, true, false],
        '▜' => [true, true, false, true],
        '▝' => [false, true, false, false],
        '▞' => [false, true, true, false],
        '▟' => [false, true, true, true],
        _ => return None,
    };
    Some(filled)
}

fn block(ch: char, mask: &mut Mask) {
    let width = i32::try_from(mask.width()).unwrap_or(i32::MAX);
    let height = i32::try_from(mask.height()).unwrap_or(i32::MAX);
    let eighths_of = |length: i32, eighths: i32| (length * eighths + 4) / 8;
    let code = u32::from(ch);
    match ch {
        '▀' => mask.fill_rect(0, 0, width, height / 2, 255),
        '▔' => mask.fill_rect(0, 0, width, eighths_of(height, 1), 255),
        '▐' => mask.fill_rect(width / 2, 0, width, height, 255),
        '▕' => mask.fill_rect(width - eighths_of(width, 1), 0, width, height, 255),
        '░' => mask.fill_rect(0, 0, width, height, 64),
        '▒' => mask.fill_rect(0, 0, width, height, 128),
        '▓' => mask.fill_rect(0, 0, width, height, 192),
        // ▁ to █: the lower one to eight eighths.
        '▁'..='█' => {
            let eighths = i32::try_from(code - 0x2580).unwrap_or(8);
            mask.fill_rect(0, height - eighths_of(height, eighths), width, height, 255);
        }
        // ▉ to ▏: the left seven eighths down to one eighth.
        '▉'..='▏' => {
            let eighths = 8 - i32::try_from(code - 0x2588).unwrap_or(8);
            mask.fill_rect(0, 0, eighths_of(width, eighths), height, 255);
        }
        _ => {
            if let Some(filled) = quadrants(ch) {
                let (mid_x, mid_y) = (width / 2, height / 2);
                let boxes = [
                    (0, 0, mid_x, mid_y),
                    (mid_x, 0, width, mid_y),
                    (0, mid_y, mid_x, height),
                    (mid_x, mid_y, width, height),
                ];
                for ((x0, y0, x1, y1), on) in boxes.into_iter().zip(filled) {
                    if on {
                        mask.fill_rect(x0, y0, x1, y1, 255);
                    }
                }
            }
        }
    }
}

/// Draws the dots of the braille pattern whose bits (dot 1 = bit 0 ... dot 8 = bit 7) are `dots`: two columns of
/// four dots, each dot a small square centred in its eighth of the cell.
fn braille(dots: u32, mask: &mut Mask) {
    // (column, row) of dots 1 to 8, in bit order.
    const POSITIONS: [(i32, i32); 8] = [
        (0, 0),
        (0, 1),
        (0, 2),
        (1, 0),
        (1, 1),
        (1, 2),
        (0, 3),
        (1, 3),
    ];
    let width = i32::try_from(mask.width()).unwrap_or(i32::MAX);
    let height = i32::try_from(mask.height()).unwrap_or(i32::MAX);
    let size = ((width + 2) / 4).max(1);
    for (bit, (column, row)) in POSITIONS.into_iter().enumerate() {
        if dots & (1 << bit) == 0 {
            continue;
        }
        let centre_x = width * (2 * column + 1) / 4;
        let centre_y = height * (2 * row + 1) / 8;
        let (x0, y0) = (centre_x - size / 2, centre_y - size / 2);
        mask.fill_rect(x0, y0, x0 + size, y0 + size, 255);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTH: usize = 7;
    const HEIGHT: usize = 16;

    fn coverage_rows(ch: char) -> Vec<bool> {
        let mut mask = Mask::default();
        mask.reset(WIDTH, HEIGHT);
        assert!(draw(ch, &mut mask), "{ch:?} is drawn");
        (0..HEIGHT)
            .map(|y| {
                mask.alpha()[y * WIDTH..(y + 1) * WIDTH]
                    .iter()
                    .all(|&a| a == 255)
            })
            .collect()
    }

    #[test]
    fn lower_eighths_fill_from_the_bottom() {
        let half = coverage_rows('▄');
        assert_eq!(half.iter().filter(|&&full| full).count(), HEIGHT / 2);
        assert!(half[HEIGHT - 1] && !half[0]);
        assert!(coverage_rows('█').iter().all(|&full| full));
        assert_eq!(
            coverage_rows('▁').iter().filter(|&&full| full).count(),
            HEIGHT / 8
        );
    }

    #[test]
    fn left_eighths_fill_from_the_left() {
        let mut mask = Mask::default();
        mask.reset(WIDTH, HEIGHT);
        draw('▌', &mut mask);
        let top_row = &mask.alpha()[..WIDTH];
        assert_eq!(top_row[0], 255);
        assert_eq!(top_row[WIDTH - 1], 0);
    }

    #[test]
    fn braille_draws_one_square_per_dot() {
        let mut one = Mask::default();
        one.reset(WIDTH, HEIGHT);
        draw('⠁', &mut one);
        let mut all = Mask::default();
        all.reset(WIDTH, HEIGHT);
        draw('⣿', &mut all);
        let lit = |mask: &Mask| mask.alpha().iter().filter(|&&a| a > 0).count();
        assert!(lit(&one) > 0);
        assert_eq!(lit(&all), 8 * lit(&one));
        let mut blank = Mask::default();
        blank.reset(WIDTH, HEIGHT);
        assert!(draw('⠀', &mut blank));
        assert_eq!(lit(&blank), 0);
    }
}
