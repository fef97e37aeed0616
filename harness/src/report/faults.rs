//! Fault periods as shaded bands behind every chart of a report, one colour per fault kind.

use std::fmt::Write;

use splitbrain_checker::windows::FaultWindow;

use super::html::{esc, seconds};
use super::scale::TimeScale;

/// Light colours that stay readable under bars and points; fault kinds take them in name
/// order, and a run with more kinds than colours reuses them.
const COLOURS: [&str; 10] = [
    "#f4c2c2", "#c6d9f2", "#cfe8c4", "#f6dcaa", "#dfcbee", "#c2e6e1", "#f1cde2", "#e4ddbd",
    "#d3d9e1", "#f7d2bb",
];

/// The fault kinds of a run, each with its colour.
pub struct FaultPalette {
    kinds: Vec<String>,
}

impl FaultPalette {
    pub fn new(windows: &[FaultWindow]) -> FaultPalette {
        let mut kinds: Vec<String> = windows.iter().map(|w| w.fault.clone()).collect();
        kinds.sort();
        kinds.dedup();
        FaultPalette { kinds }
    }

    pub fn colour(&self, fault: &str) -> &'static str {
        let at = self.kinds.iter().position(|k| k == fault).unwrap_or(0);
        COLOURS[at % COLOURS.len()]
    }

    /// The legend: a swatch and the name of each fault kind.
    pub fn legend(&self) -> String {
        if self.kinds.is_empty() {
            return "<div class=\"legend\" id=\"fault-legend\"><span class=\"note\">no faults \
                    injected</span></div>"
                .into();
        }
        let mut out = String::from("<div class=\"legend\" id=\"fault-legend\">faults:");
        for kind in &self.kinds {
            let _ = write!(
                out,
                "<span><i class=\"swatch\" style=\"background:{}\"></i>{}</span>",
                self.colour(kind),
                esc(kind)
            );
        }
        out.push_str("</div>");
        out
    }
}

/// One band per fault window, from `top` down `height` pixels; a fault never stopped runs to
/// the end. Each band names its fault, targets and times on hover.
pub fn bands(
    windows: &[FaultWindow],
    palette: &FaultPalette,
    scale: &TimeScale,
    top: f64,
    height: f64,
) -> String {
    let mut out = String::from("<g class=\"fault-bands\">");
    for window in windows {
        let x = scale.x_ms(window.start_ms);
        let end = window
            .stop_ms
            .map_or(scale.right(), |stop| scale.x_ms(stop));
        let _ = write!(
            out,
            "<rect class=\"fault-band\" data-fault=\"{}\" x=\"{x:.1}\" y=\"{top:.1}\" \
             width=\"{:.1}\" height=\"{height:.1}\" fill=\"{}\" fill-opacity=\"0.6\">\
             <title>{}</title></rect>",
            esc(&window.fault),
            (end - x).max(1.0),
            palette.colour(&window.fault),
            esc(&describe(window))
        );
    }
    out.push_str("</g>");
    out
}

/// `kill n1,n2 6.949 s – 7.581 s`.
pub fn describe(window: &FaultWindow) -> String {
    let on = if window.nodes.is_empty() {
        String::new()
    } else {
        format!(" {}", window.nodes.join(","))
    };
    let stop = window.stop_ms.map_or("the end".to_string(), seconds);
    format!("{}{on} {} – {stop}", window.fault, seconds(window.start_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(fault: &str, start_ms: f64, stop_ms: Option<f64>) -> FaultWindow {
        FaultWindow {
            fault: fault.into(),
            nodes: vec!["n1".into()],
            start_ms,
            stop_ms,
        }
    }

    #[test]
    fn each_fault_kind_keeps_one_colour() {
        let windows = [
            window("pause", 0.0, Some(1.0)),
            window("kill", 2.0, Some(3.0)),
            window("pause", 4.0, None),
        ];
        let palette = FaultPalette::new(&windows);
        assert_ne!(palette.colour("kill"), palette.colour("pause"));
        let legend = palette.legend();
        assert!(legend.find("kill").unwrap() < legend.find("pause").unwrap());
    }

    #[test]
    fn bands_span_their_fault_and_an_open_one_runs_to_the_end() {
        let windows = [
            window("kill", 1000.0, Some(2000.0)),
            window("<x>", 5000.0, None),
        ];
        let palette = FaultPalette::new(&windows);
        let scale = TimeScale::new(10_000_000_000, 0.0, 1000.0);
        let svg = bands(&windows, &palette, &scale, 0.0, 50.0);
        assert!(svg.contains("x=\"100.0\" y=\"0.0\" width=\"100.0\""));
        assert!(svg.contains("x=\"500.0\" y=\"0.0\" width=\"500.0\""));
        assert!(svg.contains("data-fault=\"&lt;x&gt;\""));
        assert!(svg.contains("&lt;x&gt; n1 5.000 s – the end"));
    }
}
