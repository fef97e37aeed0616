//! Small SVG pieces shared by the timeline and the charts.

use std::fmt::Write;

use super::html::esc;
use super::scale::TimeScale;

/// Many rectangles drawn as one `<path>`: one DOM element instead of thousands, which is what
/// keeps a 100,000-op report quick to render.
#[derive(Default)]
pub struct Rects {
    data: String,
}

impl Rects {
    pub fn push(&mut self, x: f64, y: f64, width: f64, height: f64) {
        let _ = write!(
            self.data,
            "M{x:.1} {y:.1}h{width:.1}v{height:.1}h{:.1}z",
            -width
        );
    }

    /// The `<path>`, with `attributes` (already HTML) and a hover `title`; empty if no
    /// rectangle was pushed.
    pub fn path(&self, attributes: &str, title: &str) -> String {
        if self.data.is_empty() {
            return String::new();
        }
        format!(
            "<path {attributes} d=\"{}\"><title>{}</title></path>",
            self.data,
            esc(title)
        )
    }
}

/// A time axis along `scale` at `y`, with grid lines down to `bottom`.
pub fn time_axis(scale: &TimeScale, y: f64, bottom: f64) -> String {
    let mut out = String::from("<g class=\"axis\">");
    for (x, label) in scale.ticks() {
        let _ = write!(
            out,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{:.1}\" y2=\"{bottom:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\">{}</text>",
            y + 4.0,
            esc(&label)
        );
    }
    out.push_str("</g>");
    out
}

/// An `<svg>` element of the given size, with an id and class.
pub fn open(id: &str, class: &str, width: f64, height: f64) -> String {
    format!(
        "<svg id=\"{id}\" class=\"{class}\" xmlns=\"http://www.w3.org/2000/svg\" \
         width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\">"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rects_share_one_path() {
        let mut rects = Rects::default();
        assert_eq!(rects.path("class=\"x\"", "t"), "");
        rects.push(1.0, 2.0, 3.0, 4.0);
        rects.push(10.0, 2.0, 0.5, 4.0);
        let path = rects.path("class=\"x\"", "a <b>");
        assert_eq!(
            path,
            "<path class=\"x\" d=\"M1.0 2.0h3.0v4.0h-3.0zM10.0 2.0h0.5v4.0h-0.5z\">\
             <title>a &lt;b&gt;</title></path>"
        );
    }
}
