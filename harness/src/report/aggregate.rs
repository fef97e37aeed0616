//! Drawing many things in few pixels: spans closer than a pixel merged into one bar, and
//! points counted per pixel column and drawn as a density in a few shades. What keeps the
//! timeline of a 100,000-op history to a megabyte and a fraction of a second.

use super::scale::TimeScale;
use super::svg::Rects;

/// The width of a density column, in pixels.
pub const DENSITY_PX: f64 = 2.0;

/// Joins spans (sorted or not) that overlap or lie less than `gap` apart.
pub fn merge_spans(spans: impl Iterator<Item = (u64, u64)>, gap: u64) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = spans.collect();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1.saturating_add(gap) => last.1 = last.1.max(end),
            _ => merged.push((start, end.max(start))),
        }
    }
    merged
}

/// How many shades a density has.
pub const SHADES: usize = 4;

/// How many of `times` fall in each of `columns` columns.
pub fn density(times: impl Iterator<Item = u64>, scale: &TimeScale, columns: usize) -> Vec<u32> {
    let columns = columns.max(1);
    let mut counts = vec![0u32; columns];
    for time in times {
        counts[scale.bucket(time, columns)] += 1;
    }
    counts
}

/// Columns as rectangles `height` high at `y`, grouped by shade: a column's shade is its
/// count relative to the busiest column, rounded up, so that a column of a single op shows.
pub fn shade(counts: &[u32], scale: &TimeScale, y: f64, height: f64) -> Vec<Rects> {
    let busiest = counts.iter().copied().max().unwrap_or(0).max(1);
    let column_width = scale.width / counts.len() as f64;
    let mut shades: Vec<Rects> = (0..SHADES).map(|_| Rects::default()).collect();
    for (i, count) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let level = (*count as usize * SHADES).div_ceil(busiest as usize) - 1;
        let x = scale.left + column_width * i as f64;
        shades[level].push(x, y, column_width, height);
    }
    shades
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_closer_than_the_gap_merge() {
        let spans = [(10, 20), (0, 5), (21, 30), (50, 60), (55, 58)];
        assert_eq!(
            merge_spans(spans.into_iter(), 1),
            [(0, 5), (10, 30), (50, 60)]
        );
        assert_eq!(
            merge_spans(spans.into_iter(), 0),
            [(0, 5), (10, 20), (21, 30), (50, 60)]
        );
        assert!(merge_spans(std::iter::empty(), 5).is_empty());
    }

    #[test]
    fn densities_count_per_column_and_shade_relative_to_the_busiest() {
        let scale = TimeScale::new(1_000, 0.0, 100.0);
        // end_ns is at least 1 ms: 10 columns of 100 µs.
        let times = [0, 1, 2, 3, 150_000, 999_999_999];
        let counts = density(times.into_iter(), &scale, 10);
        assert_eq!(counts, [4, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        let shades = shade(&counts, &scale, 0.0, 3.0);
        let drawn: Vec<bool> = shades.iter().map(|s| !s.path("", "").is_empty()).collect();
        // The busiest column is darkest, and a column of a single op still shows.
        assert_eq!(drawn, [true, false, false, true]);
    }
}
