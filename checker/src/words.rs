//! How findings are put in words: times, counts, and the line that says how many a list left
//! out.

/// A time in the history as the summary shows it: `12.345s`.
pub(crate) fn seconds(ms: f64) -> String {
    format!("{:.3}s", ms / 1000.0)
}

/// The line that says how many of `noun` a list of `total` left out after its first `limit`:
/// `... and 68 more double grants (results.json and the report have them all)`.
pub(crate) fn and_more(total: usize, limit: usize, noun: &str) -> Option<String> {
    let more = total.saturating_sub(limit);
    let plural = if more == 1 { "" } else { "s" };
    (more > 0).then(|| {
        format!("... and {more} more {noun}{plural} (results.json and the report have them all)")
    })
}

/// `n` of `noun`, pluralised with an `s`: `1 double grant`, `3 double grants`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_list_says_how_many_it_left_out() {
        assert_eq!(and_more(3, 3, "double grant"), None);
        assert_eq!(
            and_more(71, 3, "double grant").unwrap(),
            "... and 68 more double grants (results.json and the report have them all)"
        );
        assert!(and_more(4, 3, "stuck period")
            .unwrap()
            .starts_with("... and 1 more stuck period ("));
    }
}
