//! The coverage map a glyph is drawn into before it is coloured.
//!
//! Font rasters and hand-drawn shapes both end up as one byte of coverage per pixel (0 = background, 255 =
//! foreground), so colouring, dimming and reversing happen in one place whatever drew the glyph.

/// Per-pixel coverage of one glyph box, row-major, top row first.
#[derive(Debug, Default)]
pub(super) struct Mask {
    width: usize,
    height: usize,
    alpha: Vec<u8>,
}

/// Samples per pixel along each axis when a shape is anti-aliased.
const SUBSAMPLES: usize = 4;

impl Mask {
    /// Empties the mask and gives it a new size; the allocation is kept so one mask serves every cell.
    pub(super) fn reset(&mut self, width: usize, height: usize) {
        self.width = width;
        self.height = height;
        self.alpha.clear();
        self.alpha.resize(width * height, 0);
    }

    pub(super) fn width(&self) -> usize {
        self.width
    }

    pub(super) fn height(&self) -> usize {
        self.height
    }

    /// Coverage of every pixel, row-major.
    pub(super) fn alpha(&self) -> &[u8] {
        &self.alpha
    }

    /// Covers the half-open rectangle `[x0, x1) x [y0, y1)` with at least `value`; parts outside the mask are
    /// ignored, so shapes may be described in coordinates that overshoot the box.
    pub(super) fn fill_rect(&mut self, x0: i32, y0: i32, x1: i32, y1: i32, value: u8) {
        let clamp_x = |x: i32| usize::try_from(x.max(0)).unwrap_or(0).min(self.width);
        let clamp_y = |y: i32| usize::try_from(y.max(0)).unwrap_or(0).min(self.height);
        let (x0, x1, y0, y1) = (clamp_x(x0), clamp_x(x1), clamp_y(y0), clamp_y(y1));
        for y in y0..y1 {
            for pixel in &mut self.alpha[y * self.width + x0..y * self.width + x1.max(x0)] {
                *pixel = (*pixel).max(value);
            }
        }
    }

    /// Clears one pixel; rounded corners are square corners without their corner pixel.
    pub(super) fn clear_pixel(&mut self, x: i32, y: i32) {
        if let (Ok(x), Ok(y)) = (usize::try_from(x), usize::try_from(y))
            && x < self.width
            && y < self.height
        {
            self.alpha[y * self.width + x] = 0;
        }
    }

    /// Keeps only the pixels for which `keep(x, y)` holds; dashed lines are solid lines with gaps cut out.
    pub(super) fn retain(&mut self, keep: impl Fn(usize, usize) -> bool) {
        for y in 0..self.height {
            for x in 0..self.width {
                if !keep(x, y) {
                    self.alpha[y * self.width + x] = 0;
                }
            }
        }
    }

    /// Covers every pixel in proportion to how much of it lies inside a shape, so small circles and slanted edges
    /// stay smooth. `inside` takes a point in pixel units, `(0, 0)` being the top-left corner of the box.
    pub(super) fn fill_shape(&mut self, inside: impl Fn(f32, f32) -> bool) {
        let step = 1.0 / SUBSAMPLES as f32;
        for y in 0..self.height {
            for x in 0..self.width {
                let mut hits = 0;
                for sy in 0..SUBSAMPLES {
                    for sx in 0..SUBSAMPLES {
                        let px = x as f32 + (sx as f32 + 0.5) * step;
                        let py = y as f32 + (sy as f32 + 0.5) * step;
                        if inside(px, py) {
                            hits += 1;
                        }
                    }
                }
                let value = hits * 255 / (SUBSAMPLES * SUBSAMPLES);
                let pixel = &mut self.alpha[y * self.width + x];
                // `value` is at most 255.
                *pixel = (*pixel).max(value as u8);
            }
        }
    }

    /// Copies a font raster of `raster_width` columns into the mask with its left edge at `x_offset`, clipping
    /// whatever does not fit.
    pub(super) fn copy_raster(&mut self, x_offset: usize, raster: &[u8], raster_width: usize) {
        if raster_width == 0 {
            return;
        }
        let columns = raster_width.min(self.width.saturating_sub(x_offset));
        for (y, row) in raster
            .chunks_exact(raster_width)
            .take(self.height)
            .enumerate()
        {
            let start = y * self.width + x_offset;
            self.alpha[start..start + columns].copy_from_slice(&row[..columns]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(width: usize, height: usize) -> Mask {
        let mut mask = Mask::default();
        mask.reset(width, height);
        mask
    }

    #[test]
    fn rectangles_are_clipped_to_the_box() {
        let mut m = mask(4, 3);
        m.fill_rect(-5, 1, 2, 99, 200);
        assert_eq!(m.alpha(), &[0, 0, 0, 0, 200, 200, 0, 0, 200, 200, 0, 0]);
        m.fill_rect(3, 2, 1, 3, 255);
        assert_eq!(m.alpha()[8..], [200, 200, 0, 0]);
    }

    #[test]
    fn shapes_are_anti_aliased() {
        let mut m = mask(2, 1);
        m.fill_shape(|x, _| x < 1.5);
        assert_eq!(m.alpha(), &[255, 127]);
    }

    #[test]
    fn rasters_wider_than_the_mask_are_clipped() {
        let mut m = mask(3, 2);
        m.copy_raster(1, &[1, 2, 3, 4, 5, 6], 3);
        assert_eq!(m.alpha(), &[0, 1, 2, 0, 4, 5]);
    }
}
