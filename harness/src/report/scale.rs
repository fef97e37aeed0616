//! From history time and measured values to pixels, and the ticks of an axis. Pure
//! arithmetic, so that every chart of a report lines up with every other.

/// Maps history time (nanoseconds since the run started) onto `width` pixels from `left`:
/// the whole run, or a window of it (a close-up of a violation).
#[derive(Debug, Clone, Copy)]
pub struct TimeScale {
    start_ns: u64,
    end_ns: u64,
    pub left: f64,
    pub width: f64,
}

impl TimeScale {
    /// A scale from 0 to `end_ns` (at least one millisecond, so that an empty history draws).
    pub fn new(end_ns: u64, left: f64, width: f64) -> TimeScale {
        TimeScale::window(0, end_ns, left, width)
    }

    /// A scale from `start_ns` to `end_ns` (at least a millisecond after it); times outside
    /// it are drawn at its edges.
    pub fn window(start_ns: u64, end_ns: u64, left: f64, width: f64) -> TimeScale {
        TimeScale {
            start_ns,
            end_ns: end_ns.max(start_ns + 1_000_000),
            left,
            width,
        }
    }

    /// Where `ns` falls, from 0 at the start to 1 at the end.
    fn share(&self, ns: u64) -> f64 {
        let span = (self.end_ns - self.start_ns) as f64;
        (ns.clamp(self.start_ns, self.end_ns) - self.start_ns) as f64 / span
    }

    pub fn x(&self, ns: u64) -> f64 {
        self.left + self.width * self.share(ns)
    }

    pub fn x_ms(&self, ms: f64) -> f64 {
        self.x((ms.max(0.0) * 1e6) as u64)
    }

    pub fn right(&self) -> f64 {
        self.left + self.width
    }

    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// Whether any of `from_ms`..`to_ms` lies in the scale's time.
    pub fn shows_ms(&self, from_ms: f64, to_ms: f64) -> bool {
        to_ms * 1e6 >= self.start_ns as f64 && from_ms * 1e6 <= self.end_ns as f64
    }

    /// Which of `buckets` equal columns across the scale `ns` falls in.
    pub fn bucket(&self, ns: u64, buckets: usize) -> usize {
        ((self.share(ns) * buckets as f64) as usize).min(buckets - 1)
    }

    /// About ten ticks at round seconds (or fractions of one), as (x, label).
    pub fn ticks(&self) -> Vec<(f64, String)> {
        let (start_s, end_s) = (self.start_ns as f64 / 1e9, self.end_ns as f64 / 1e9);
        let step = nice_step((end_s - start_s) / 10.0);
        let decimals = if step >= 1.0 {
            0
        } else {
            (-step.log10().floor()) as usize
        };
        let first = (start_s / step - 1e-9).ceil() as i64;
        (first..)
            .map(|i| i as f64 * step)
            .take_while(|s| *s <= end_s + step * 1e-9)
            .map(|s| (self.x((s * 1e9) as u64), format!("{s:.decimals$} s")))
            .collect()
    }
}

/// The smallest of 1, 2 or 5 times a power of ten that is at least `rough`.
pub fn nice_step(rough: f64) -> f64 {
    if rough <= 0.0 || !rough.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= rough * (1.0 - 1e-9))
        .unwrap_or(10.0 * power)
}

/// Maps a positive value (a latency in ms) onto a vertical band, logarithmically: `bottom` is
/// the low end, `bottom - height` the high end.
#[derive(Debug, Clone, Copy)]
pub struct LogScale {
    low_log: f64,
    high_log: f64,
    bottom: f64,
    height: f64,
}

impl LogScale {
    /// Spans whole decades around `min..=max`, so that every tick is a power of ten.
    pub fn new(min: f64, max: f64, bottom: f64, height: f64) -> LogScale {
        let min = min.max(0.001);
        let low_log = min.log10().floor();
        let high_log = max.max(min).log10().ceil().max(low_log + 1.0);
        LogScale {
            low_log,
            high_log,
            bottom,
            height,
        }
    }

    pub fn y(&self, value: f64) -> f64 {
        let at = (value.max(10f64.powf(self.low_log)).log10() - self.low_log)
            / (self.high_log - self.low_log);
        self.bottom - self.height * at.clamp(0.0, 1.0)
    }

    /// One tick per decade, as (y, value).
    pub fn ticks(&self) -> Vec<(f64, f64)> {
        (self.low_log as i32..=self.high_log as i32)
            .map(|power| {
                let value = 10f64.powi(power);
                (self.y(value), value)
            })
            .collect()
    }
}

/// Maps `0..=max` onto a vertical band, `bottom` being 0.
#[derive(Debug, Clone, Copy)]
pub struct LinearScale {
    max: f64,
    bottom: f64,
    height: f64,
}

impl LinearScale {
    /// Rounds `max` up to a whole number of nice steps, so that the top tick is the top.
    pub fn new(max: f64, bottom: f64, height: f64) -> LinearScale {
        let step = nice_step(max.max(1.0) / 4.0);
        LinearScale {
            max: (max.max(1.0) / step).ceil() * step,
            bottom,
            height,
        }
    }

    pub fn y(&self, value: f64) -> f64 {
        self.bottom - self.height * (value / self.max).clamp(0.0, 1.0)
    }

    /// About five ticks, as (y, value).
    pub fn ticks(&self) -> Vec<(f64, f64)> {
        let step = nice_step(self.max / 4.0);
        (0..)
            .map(|i| i as f64 * step)
            .take_while(|v| *v <= self.max * (1.0 + 1e-9))
            .map(|v| (self.y(v), v))
            .collect()
    }
}

/// A latency for an axis label: `0.1 ms`, `10 ms`, `1 s`.
pub fn latency_label(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{} s", ms / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_maps_linearly_and_clamps_to_the_end() {
        let scale = TimeScale::new(10_000_000_000, 100.0, 1000.0);
        assert_eq!(scale.x(0), 100.0);
        assert_eq!(scale.x(5_000_000_000), 600.0);
        assert_eq!(scale.x_ms(2_500.0), 350.0);
        assert_eq!(scale.x(20_000_000_000), 1100.0);
        assert_eq!(scale.right(), 1100.0);
    }

    #[test]
    fn a_window_maps_its_own_span_with_ticks_inside_it() {
        let close_up = TimeScale::window(10_300_000_000, 14_300_000_000, 100.0, 1000.0);
        assert_eq!(close_up.x(10_300_000_000), 100.0);
        assert_eq!(close_up.x_ms(12_300.0), 600.0);
        assert_eq!(close_up.x(0), 100.0, "before the window: its left edge");
        assert_eq!(
            close_up.x(60_000_000_000),
            1100.0,
            "after it: its right edge"
        );
        assert!(close_up.shows_ms(9_000.0, 10_400.0));
        assert!(!close_up.shows_ms(14_400.0, 20_000.0));
        let labels: Vec<String> = close_up.ticks().into_iter().map(|(_, l)| l).collect();
        assert_eq!(labels.first().map(String::as_str), Some("10.5 s"));
        assert_eq!(labels.last().map(String::as_str), Some("14.0 s"));
    }

    #[test]
    fn buckets_cover_the_scale_and_the_last_takes_the_end() {
        let scale = TimeScale::new(1_000_000_000, 0.0, 100.0);
        assert_eq!(scale.bucket(0, 10), 0);
        assert_eq!(scale.bucket(99_999_999, 10), 0);
        assert_eq!(scale.bucket(100_000_000, 10), 1);
        assert_eq!(scale.bucket(1_000_000_000, 10), 9);
        assert_eq!(scale.bucket(5_000_000_000, 10), 9);
    }

    #[test]
    fn an_empty_history_still_has_a_scale() {
        let scale = TimeScale::new(0, 0.0, 100.0);
        assert_eq!(scale.x(0), 0.0);
        assert!(!scale.ticks().is_empty());
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(6.5), 10.0);
        assert_eq!(nice_step(0.03), 0.05);
        assert_eq!(nice_step(0.0), 1.0);
    }

    #[test]
    fn ticks_are_round_seconds() {
        let ticks = TimeScale::new(65_000_000_000, 0.0, 650.0).ticks();
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            ["0 s", "10 s", "20 s", "30 s", "40 s", "50 s", "60 s"]
        );
        assert_eq!(ticks[1].0, 100.0);
        let short = TimeScale::new(1_500_000_000, 0.0, 150.0).ticks();
        assert_eq!(short[1].1, "0.2 s");
    }

    #[test]
    fn latencies_scale_by_decade() {
        let scale = LogScale::new(0.3, 450.0, 100.0, 90.0);
        assert_eq!(scale.y(0.1), 100.0);
        assert_eq!(scale.y(1000.0), 10.0);
        assert!((scale.y(10.0) - 55.0).abs() < 1e-9);
        let values: Vec<f64> = scale.ticks().iter().map(|(_, v)| *v).collect();
        assert_eq!(values, [0.1, 1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(latency_label(0.1), "0.1 ms");
        assert_eq!(latency_label(1000.0), "1 s");
    }

    #[test]
    fn linear_scales_round_their_top_up() {
        let scale = LinearScale::new(730.0, 100.0, 100.0);
        let values: Vec<f64> = scale.ticks().iter().map(|(_, v)| *v).collect();
        assert_eq!(values, [0.0, 200.0, 400.0, 600.0, 800.0]);
        assert_eq!(scale.y(800.0), 0.0);
        assert_eq!(scale.y(0.0), 100.0);
    }
}
