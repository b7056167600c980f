//! The handful of symbols consoles lean on that the embedded font lacks: dashes, the ellipsis, arrows, bullets,
//! triangles, squares, half-filled circles, check marks and crosses, drawn as anti-aliased shapes so lists and
//! hints stay readable.

use super::mask::Mask;

/// Draws `ch` into `mask` (one cell) and reports whether it is one of the symbols drawn here.
pub(super) fn draw(ch: char, mask: &mut Mask) -> bool {
    let cell = Cell::of(mask);
    match ch {
        '–' | '‒' => mask.fill_shape(|x, y| cell.bar(x, y, 0.1 * cell.width, 0.9 * cell.width)),
        '—' | '―' => mask.fill_shape(|x, y| cell.bar(x, y, 0.0, cell.width)),
        '…' => mask.fill_shape(|x, y| {
            [1.0, 3.0, 5.0].iter().any(|sixths| {
                cell.in_circle(x, y, sixths * cell.width / 6.0, cell.baseline - 1.0, 0.9)
            })
        }),
        '•' | '∙' => mask.fill_shape(|x, y| {
            cell.in_circle(x, y, cell.width / 2.0, cell.middle, 0.22 * cell.width)
        }),
        '●' | '⬤' => mask.fill_shape(|x, y| {
            cell.in_circle(x, y, cell.width / 2.0, cell.middle, 0.42 * cell.width)
        }),
        '○' | '◯' => mask.fill_shape(|x, y| {
            let radius = 0.42 * cell.width;
            cell.in_circle(x, y, cell.width / 2.0, cell.middle, radius)
                && !cell.in_circle(x, y, cell.width / 2.0, cell.middle, radius - 1.2)
        }),
        '◐' => mask.fill_shape(|x, y| {
            let radius = 0.42 * cell.width;
            let centre = cell.width / 2.0;
            cell.in_circle(x, y, centre, cell.middle, radius)
                && (x <= centre || !cell.in_circle(x, y, centre, cell.middle, radius - 1.2))
        }),
        '■' => mask.fill_shape(|x, y| cell.in_square(x, y, 0.4 * cell.width)),
        '▪' => mask.fill_shape(|x, y| cell.in_square(x, y, 0.25 * cell.width)),
        '□' => mask.fill_shape(|x, y| {
            cell.in_square(x, y, 0.4 * cell.width) && !cell.in_square(x, y, 0.4 * cell.width - 1.0)
        }),
        '◆' => mask.fill_shape(|x, y| {
            (x - cell.width / 2.0).abs() + (y - cell.middle).abs() <= 0.45 * cell.width
        }),
        '▲' | '▴' => mask.fill_shape(|x, y| cell.in_triangle(x, y, Direction::Up)),
        '▼' | '▾' => mask.fill_shape(|x, y| cell.in_triangle(x, y, Direction::Down)),
        '▶' | '►' | '▸' => mask.fill_shape(|x, y| cell.in_triangle(x, y, Direction::Right)),
        '◀' | '◄' | '◂' => mask.fill_shape(|x, y| cell.in_triangle(x, y, Direction::Left)),
        '→' => mask.fill_shape(|x, y| cell.in_arrow(x, y, Direction::Right)),
        '←' => mask.fill_shape(|x, y| cell.in_arrow(x, y, Direction::Left)),
        '↑' => mask.fill_shape(|x, y| cell.in_arrow(x, y, Direction::Up)),
        '↓' => mask.fill_shape(|x, y| cell.in_arrow(x, y, Direction::Down)),
        '✓' | '✔' => {
            let (w, m) = (cell.width, cell.middle);
            let stroke = if ch == '✔' { 1.0 } else { 0.7 };
            let (left, bottom, top) = (
                (0.1 * w, m),
                (0.4 * w, m + 0.3 * w),
                (0.95 * w, m - 0.7 * w),
            );
            mask.fill_shape(|x, y| {
                near_segment(x, y, left, bottom, stroke) || near_segment(x, y, bottom, top, stroke)
            });
        }
        '✗' | '✘' => {
            let (w, m) = (cell.width, cell.middle);
            let stroke = if ch == '✘' { 1.0 } else { 0.7 };
            let half = 0.4 * w;
            let (top_left, bottom_right) = ((w / 2.0 - half, m - half), (w / 2.0 + half, m + half));
            let (top_right, bottom_left) = ((w / 2.0 + half, m - half), (w / 2.0 - half, m + half));
            mask.fill_shape(|x, y| {
                near_segment(x, y, top_left, bottom_right, stroke)
                    || near_segment(x, y, top_right, bottom_left, stroke)
            });
        }
        _ => return false,
    }
    true
}

#[derive(Debug, Clone, Copy)]
enum Direction {
    Up,
    Down,
    Left,
    Right,
}

/// Reference lines of a cell, in pixels, that symbols are placed against.
#[derive(Debug, Clone, Copy)]
struct Cell {
    width: f32,
    /// The middle of lower-case letters, where dashes, bullets and arrows sit.
    middle: f32,
    /// The line letters stand on.
    baseline: f32,
}

/// Half the thickness of dashes and arrow shafts.
const HALF_STROKE: f32 = 0.6;

impl Cell {
    fn of(mask: &Mask) -> Cell {
        let height = mask.height() as f32;
        Cell {
            width: mask.width() as f32,
            middle: 0.55 * height,
            baseline: 0.8125 * height,
        }
    }

    fn bar(self, x: f32, y: f32, from: f32, to: f32) -> bool {
        (from..to).contains(&x) && (y - self.middle).abs() <= HALF_STROKE
    }

    fn in_circle(self, x: f32, y: f32, centre_x: f32, centre_y: f32, radius: f32) -> bool {
        let (dx, dy) = (x - centre_x, y - centre_y);
        dx * dx + dy * dy <= radius * radius
    }

    fn in_square(self, x: f32, y: f32, half: f32) -> bool {
        (x - self.width / 2.0).abs() <= half && (y - self.middle).abs() <= half
    }

    /// A filled triangle pointing in `direction`, as wide as the cell allows.
    fn in_triangle(self, x: f32, y: f32, direction: Direction) -> bool {
        let half = 0.45 * self.width;
        // Distance from the centre along the pointing direction (`along`) and across it (`across`).
        let (dx, dy) = (x - self.width / 2.0, y - self.middle);
        let (along, across) = match direction {
            Direction::Up => (-dy, dx),
            Direction::Down => (dy, dx),
            Direction::Left => (-dx, dy),
            Direction::Right => (dx, dy),
        };
        (-half..=half).contains(&along) && across.abs() <= (half - along) / 2.0
    }

    /// An arrow pointing in `direction`: a shaft with a filled head.
    fn in_arrow(self, x: f32, y: f32, direction: Direction) -> bool {
        let vertical = matches!(direction, Direction::Up | Direction::Down);
        let half_length = if vertical {
            0.35 * self.width * 2.0
        } else {
            0.45 * self.width
        };
        let head = if vertical {
            0.5 * self.width
        } else {
            0.45 * self.width
        };
        let (dx, dy) = (x - self.width / 2.0, y - self.middle);
        let (along, across) = match direction {
            Direction::Up => (-dy, dx),
            Direction::Down => (dy, dx),
            Direction::Left => (-dx, dy),
            Direction::Right => (dx, dy),
        };
        if !(-half_length..=half_length).contains(&along) {
            return false;
        }
        let to_tip = half_length - along;
        across.abs() <= HALF_STROKE || (to_tip <= head && across.abs() <= 0.8 * to_tip)
    }
}

/// Whether `(x, y)` lies within `half_width` of the segment from `a` to `b`.
fn near_segment(x: f32, y: f32, a: (f32, f32), b: (f32, f32), half_width: f32) -> bool {
    let (abx, aby) = (b.0 - a.0, b.1 - a.1);
    let length_squared = abx * abx + aby * aby;
    let t = if length_squared > 0.0 {
        (((x - a.0) * abx + (y - a.1) * aby) / length_squared).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (dx, dy) = (x - (a.0 + t * abx), y - (a.1 + t * aby));
    dx * dx + dy * dy <= half_width * half_width
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(ch: char) -> Mask {
        let mut mask = Mask::default();
        mask.reset(7, 16);
        assert!(draw(ch, &mut mask), "{ch:?} is a symbol");
        mask
    }

    /// Coverage summed over the left and right halves of the cell.
    fn halves(mask: &Mask) -> (u32, u32) {
        let mut sums = (0, 0);
        for (i, &alpha) in mask.alpha().iter().enumerate() {
            let x = i % mask.width();
            if x < mask.width() / 2 {
                sums.0 += u32::from(alpha);
            } else if x > mask.width() / 2 {
                sums.1 += u32::from(alpha);
            }
        }
        sums
    }

    #[test]
    fn arrow_heads_sit_where_they_point_and_triangles_narrow_towards_it() {
        let (left, right) = halves(&drawn('→'));
        assert!(right > left, "{left} {right}");
        let (left, right) = halves(&drawn('←'));
        assert!(left > right, "{left} {right}");
        // A triangle's broad base is opposite its tip.
        let (left, right) = halves(&drawn('◀'));
        assert!(right > left, "{left} {right}");
        let (left, right) = halves(&drawn('▶'));
        assert!(left > right, "{left} {right}");
    }

    #[test]
    fn every_symbol_covers_some_pixels() {
        for ch in "–—…•●○■▪□◆▲▼▶◀→←↑↓✓✔✗✘".chars() {
            assert!(drawn(ch).alpha().iter().any(|&a| a > 0), "{ch:?}");
        }
    }

    #[test]
    fn letters_are_not_symbols() {
        let mut mask = Mask::default();
        mask.reset(7, 16);
        assert!(!draw('x', &mut mask));
    }
}
