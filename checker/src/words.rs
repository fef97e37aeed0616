//! How findings are put in words: times, counts, a choice among names (which the other crates'
//! messages use too), and the line that says how many a list left out.

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

/// Names as a choice in a sentence: `a`, `a or b`, `a, b or c`.
pub fn one_of(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// `n` of `noun`, pluralised with an `s`: `1 double grant`, `3 double grants`.
pub(crate) fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_joined_with_commas_and_one_or() {
        assert_eq!(one_of(&[]), "");
        assert_eq!(one_of(&["etcd"]), "etcd");
        assert_eq!(one_of(&["etcd", "zookeeper"]), "etcd or zookeeper");
        assert_eq!(
            one_of(&["etcd", "zookeeper", "postgres"]),
            "etcd, zookeeper or postgres"
        );
    }

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
