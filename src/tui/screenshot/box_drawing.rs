//! Box-drawing characters (U+2500 to U+257F) drawn from their geometry rather than from a font.
//!
//! Borders only look like borders when the strokes of neighbouring cells meet exactly, so every line here runs
//! from the cell edge to the cell centre at fixed positions: a `─` in one cell always continues the `┐` next to it.

use super::mask::Mask;

/// How a stroke from the centre of a cell towards one edge is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arm {
    None,
    Light,
    Heavy,
    Double,
}

impl Arm {
    fn from_code(code: u8) -> Arm {
        match code {
            b'l' => Arm::Light,
            b'h' => Arm::Heavy,
            b'd' => Arm::Double,
            _ => Arm::None,
        }
    }

    /// How far a single stroke spreads either side of its centre line.
    fn half_width(self) -> i32 {
        match self {
            Arm::Heavy => 1,
            _ => 0,
        }
    }

    fn is_single(self) -> bool {
        matches!(self, Arm::Light | Arm::Heavy)
    }
}

/// Arms of U+2500 to U+254F and U+2550 to U+257F, each written as up, right, down, left with `l` light, `h` heavy,
/// `d` double and `.` none. Diagonals (U+2571 to U+2573) have no arms and are drawn separately.
const ARMS_2500: [&str; 80] = [
    ".l.l", ".h.h", "l.l.", "h.h.", ".l.l", ".h.h", "l.l.",
    "h.h.", // ─ ━ │ ┃ ┄ ┅ ┆ ┇
    ".l.l", ".h.h", "l.l.", "h.h.", ".ll.", ".hl.", ".lh.",
    ".hh.", // ┈ ┉ ┊ ┋ ┌ ┍ ┎ ┏
    "..ll", "..lh", "..hl", "..hh", "ll..", "lh..", "hl..",
    "hh..", // ┐ ┑ ┒ ┓ └ ┕ ┖ ┗
    "l..l", "l..h", "h..l", "h..h", "lll.", "lhl.", "hll.",
    "llh.", // ┘ ┙ ┚ ┛ ├ ┝ ┞ ┟
    "hlh.", "hhl.", "lhh.", "hhh.", "l.ll", "l.lh", "h.ll",
    "l.hl", // ┠ ┡ ┢ ┣ ┤ ┥ ┦ ┧
    "h.hl", "h.lh", "l.hh", "h.hh", ".lll", ".llh", ".hll",
    ".hlh", // ┨ ┩ ┪ ┫ ┬ ┭ ┮ ┯
    ".lhl", ".lhh", ".hhl", ".hhh", "ll.l", "ll.h", "lh.l",
    "lh.h", // ┰ ┱ ┲ ┳ ┴ ┵ ┶ ┷
    "hl.l", "hl.h", "hh.l", "hh.h", "llll", "lllh", "lhll",
    "lhlh", // ┸ ┹ ┺ ┻ ┼ ┽ ┾ ┿
    "hlll", "llhl", "hlhl", "hllh", "hhll", "llhh", "lhhl",
    "hhlh", // ╀ ╁ ╂ ╃ ╄ ╅ ╆ ╇
    "lhhh", "hlhh", "hhhl", "hhhh", ".l.l", ".h.h", "l.l.",
    "h.h.", // ╈ ╉ ╊ ╋ ╌ ╍ ╎ ╏
];

const ARMS_2550: [&str; 48] = [
    ".d.d", "d.d.", ".dl.", ".ld.", ".dd.", "..ld", "..dl",
    "..dd", // ═ ║ ╒ ╓ ╔ ╕ ╖ ╗
    "ld..", "dl..", "dd..", "l..d", "d..l", "d..d", "ldl.",
    "dld.", // ╘ ╙ ╚ ╛ ╜ ╝ ╞ ╟
    "ddd.", "l.ld", "d.dl", "d.dd", ".dld", ".ldl", ".ddd",
    "ld.d", // ╠ ╡ ╢ ╣ ╤ ╥ ╦ ╧
    "dl.l", "dd.d", "ldld", "dldl", "dddd", ".ll.", "..ll",
    "l..l", // ╨ ╩ ╪ ╫ ╬ ╭ ╮ ╯
    "ll..", "....", "....", "....", "...l", "l...", ".l..",
    "..l.", // ╰ ╱ ╲ ╳ ╴ ╵ ╶ ╷
    "...h", "h...", ".h..", "..h.", ".h.l", "l.h.", ".l.h",
    "h.l.", // ╸ ╹ ╺ ╻ ╼ ╽ ╾ ╿
];

/// Draws `ch` into `mask` (one cell) and reports whether it is a box-drawing character at all.
pub(super) fn draw(ch: char, mask: &mut Mask) -> bool {
    let code = u32::from(ch);
    let arms = match code {
        0x2500..=0x254f => ARMS_2500[(code - 0x2500) as usize],
        0x2550..=0x257f => ARMS_2550[(code - 0x2550) as usize],
        _ => return false,
    };
    match ch {
        '╱' => diagonal(mask, true),
        '╲' => diagonal(mask, false),
        '╳' => {
            diagonal(mask, true);
            diagonal(mask, false);
        }
        _ => {
            let bytes = arms.as_bytes();
            let [up, right, down, left] = [0, 1, 2, 3].map(|i| Arm::from_code(bytes[i]));
            draw_arms(
                mask,
                Arms {
                    up,
                    right,
                    down,
                    left,
                },
            );
            if let Some(dashes) = dash_count(ch) {
                cut_dashes(mask, dashes, matches!(right, Arm::None));
            }
            if matches!(ch, '╭' | '╮' | '╯' | '╰') {
                let (x, y) = centre(mask);
                mask.clear_pixel(x, y);
            }
        }
    }
    true
}

/// The four arms of one character.
#[derive(Debug, Clone, Copy)]
struct Arms {
    up: Arm,
    right: Arm,
    down: Arm,
    left: Arm,
}

/// The pixel every arm starts from; double lines sit one pixel either side of it.
fn centre(mask: &Mask) -> (i32, i32) {
    let width = i32::try_from(mask.width()).unwrap_or(i32::MAX);
    let height = i32::try_from(mask.height()).unwrap_or(i32::MAX);
    (width / 2, (height - 1) / 2)
}

fn draw_arms(mask: &mut Mask, arms: Arms) {
    let (cx, cy) = centre(mask);
    let width = i32::try_from(mask.width()).unwrap_or(i32::MAX);
    let height = i32::try_from(mask.height()).unwrap_or(i32::MAX);
    let horizontal = [
        (arms.left, arms.right, true),
        (arms.right, arms.left, false),
    ];
    for (arm, opposite, towards_left) in horizontal {
        let span = |reach: i32| {
            if towards_left {
                (0, cx + reach + 1)
            } else {
                (cx - reach, width)
            }
        };
        match arm {
            Arm::None => {}
            Arm::Light | Arm::Heavy => {
                let reach = single_reach(arms.up, arms.down, opposite);
                let (from, to) = span(reach);
                let half = arm.half_width();
                mask.fill_rect(from, cy - half, to, cy + half + 1, 255);
            }
            Arm::Double => {
                let (top, bottom) = double_reaches(arms.up, arms.down);
                let (from, to) = span(top);
                mask.fill_rect(from, cy - 1, to, cy, 255);
                let (from, to) = span(bottom);
                mask.fill_rect(from, cy + 1, to, cy + 2, 255);
            }
        }
    }
    let vertical = [(arms.up, arms.down, true), (arms.down, arms.up, false)];
    for (arm, opposite, towards_top) in vertical {
        let span = |reach: i32| {
            if towards_top {
                (0, cy + reach + 1)
            } else {
                (cy - reach, height)
            }
        };
        match arm {
            Arm::None => {}
            Arm::Light | Arm::Heavy => {
                let reach = single_reach(arms.left, arms.right, opposite);
                let (from, to) = span(reach);
                let half = arm.half_width();
                mask.fill_rect(cx - half, from, cx + half + 1, to, 255);
            }
            Arm::Double => {
                let (left, right) = double_reaches(arms.left, arms.right);
                let (from, to) = span(left);
                mask.fill_rect(cx - 1, from, cx, to, 255);
                let (from, to) = span(right);
                mask.fill_rect(cx + 1, from, cx + 2, to, 255);
            }
        }
    }
}

/// How far past the centre a light or heavy arm runs, given the arms across it (`side_a`, `side_b`) and the arm
/// opposite it: far enough to close the corner it makes with them.
fn single_reach(side_a: Arm, side_b: Arm, opposite: Arm) -> i32 {
    let doubles = [side_a, side_b]
        .iter()
        .filter(|arm| **arm == Arm::Double)
        .count();
    match doubles {
        // Meets a double line that carries on: stop at its near stroke, unless this line carries on too.
        2 if opposite.is_single() => 0,
        2 => -1,
        // Meets the end of a double line: reach its far stroke so both strokes are joined.
        1 => 1,
        _ => side_a.half_width().max(side_b.half_width()),
    }
}

/// How far past the centre the two strokes of a double arm run, given the arms across it; the first stroke is the
/// one nearer `side_a` (the top or left stroke).
fn double_reaches(side_a: Arm, side_b: Arm) -> (i32, i32) {
    let reach = |near: Arm, far: Arm| {
        if near == Arm::Double {
            -1
        } else if far == Arm::Double {
            1
        } else {
            0
        }
    };
    (reach(side_a, side_b), reach(side_b, side_a))
}

/// How many dashes a dashed line character has per cell.
fn dash_count(ch: char) -> Option<usize> {
    match ch {
        '╌' | '╍' | '╎' | '╏' => Some(2),
        '┄' | '┅' | '┆' | '┇' => Some(3),
        '┈' | '┉' | '┊' | '┋' => Some(4),
        _ => None,
    }
}

/// Cuts `dashes` evenly spaced gaps into a solid line running along the cell (vertically when `vertical`).
fn cut_dashes(mask: &mut Mask, dashes: usize, vertical: bool) {
    let length = if vertical {
        mask.height()
    } else {
        mask.width()
    };
    mask.retain(|x, y| {
        let position = if vertical { y } else { x };
        (position * dashes * 2 / length.max(1)).is_multiple_of(2)
    });
}

/// A one-pixel line from corner to corner: rising (`╱`) or falling (`╲`).
fn diagonal(mask: &mut Mask, rising: bool) {
    let width = i32::try_from(mask.width()).unwrap_or(i32::MAX);
    let height = i32::try_from(mask.height()).unwrap_or(i32::MAX);
    let rows = (height - 1).max(1);
    for y in 0..height {
        let along = if rising { height - 1 - y } else { y };
        let x = (along * (width - 1) + rows / 2) / rows;
        mask.fill_rect(x, y, x + 1, y + 1, 255);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDTH: usize = 7;
    const HEIGHT: usize = 16;

    fn drawn(ch: char) -> Mask {
        let mut mask = Mask::default();
        mask.reset(WIDTH, HEIGHT);
        assert!(draw(ch, &mut mask), "{ch:?} is box drawing");
        mask
    }

    fn covered(mask: &Mask, x: usize, y: usize) -> bool {
        mask.alpha()[y * WIDTH + x] > 0
    }

    #[test]
    fn lines_reach_the_edges_they_point_to() {
        let (cx, cy) = (WIDTH / 2, (HEIGHT - 1) / 2);
        let horizontal = drawn('─');
        assert!(covered(&horizontal, 0, cy) && covered(&horizontal, WIDTH - 1, cy));
        assert!(!covered(&horizontal, cx, 0));
        let corner = drawn('┌');
        assert!(covered(&corner, WIDTH - 1, cy) && covered(&corner, cx, HEIGHT - 1));
        assert!(!covered(&corner, 0, cy) && !covered(&corner, cx, 0));
    }

    #[test]
    fn double_corners_join_outer_and_inner_strokes() {
        let (cx, cy) = (WIDTH / 2, (HEIGHT - 1) / 2);
        let corner = drawn('╔');
        // Outer stroke: top line meets the left line.
        assert!(covered(&corner, cx - 1, cy - 1));
        // Inner stroke starts one pixel in and the gap between strokes stays open.
        assert!(covered(&corner, cx + 1, cy + 1));
        assert!(!covered(&corner, cx, cy));
        assert!(!covered(&corner, cx - 1, cy - 2));
    }

    #[test]
    fn rounded_corners_leave_out_the_corner_pixel() {
        let (cx, cy) = (WIDTH / 2, (HEIGHT - 1) / 2);
        let square = drawn('┌');
        let rounded = drawn('╭');
        assert!(covered(&square, cx, cy));
        assert!(!covered(&rounded, cx, cy));
        assert!(covered(&rounded, cx + 1, cy) && covered(&rounded, cx, cy + 1));
    }

    #[test]
    fn dashed_lines_have_gaps() {
        let cy = (HEIGHT - 1) / 2;
        let dashed = drawn('┄');
        let lit = (0..WIDTH).filter(|&x| covered(&dashed, x, cy)).count();
        assert!(lit > 0 && lit < WIDTH);
    }

    #[test]
    fn other_characters_are_left_alone() {
        let mut mask = Mask::default();
        mask.reset(WIDTH, HEIGHT);
        assert!(!draw('a', &mut mask));
        assert!(!draw('▀', &mut mask));
        assert!(mask.alpha().iter().all(|&a| a == 0));
    }
}
