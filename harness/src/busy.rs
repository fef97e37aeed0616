//! How busy the machine was during a run. A lock client that is starved of CPU holds past its
//! lease with no fault on it (`slow holder`): the machine's doing, not the system's, and the
//! user must be able to tell the two apart at a glance.

/// The highest one-minute load average seen, sampled as a run goes.
#[derive(Debug, Default, Clone, Copy)]
pub struct Load {
    highest: Option<f64>,
}

impl Load {
    /// Reads the load average now, where the machine says (Linux's `/proc/loadavg`).
    pub fn sample(&mut self) {
        if let Some(now) = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .as_deref()
            .and_then(one_minute)
        {
            self.highest = Some(self.highest.map_or(now, |highest| highest.max(now)));
        }
    }

    /// A warning where the load average rose above the machine's cores.
    pub fn warning(&self) -> Option<String> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        warning(self.highest?, cores)
    }
}

/// The one-minute average of a `/proc/loadavg` line.
fn one_minute(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse().ok()
}

fn warning(highest: f64, cores: usize) -> Option<String> {
    (highest > cores as f64).then(|| {
        format!(
            "warning: the load average reached {highest:.1} on {cores} core{} during the run: a \
             holder that outlived its lease with no fault on it (`slow holder`) may be this \
             machine's doing, not the system's",
            if cores == 1 { "" } else { "s" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_above_the_cores_is_named_and_one_within_them_is_not() {
        assert_eq!(one_minute("3.17 2.02 1.10 3/612 41805\n"), Some(3.17));
        assert_eq!(one_minute(""), None);
        let said = warning(3.17, 2).expect("a warning");
        assert!(said.contains("reached 3.2 on 2 cores"), "{said}");
        assert!(said.contains("slow holder"), "{said}");
        assert_eq!(warning(1.9, 2), None);
        assert_eq!(warning(2.0, 2), None);
    }

    #[test]
    fn the_highest_sample_is_kept() {
        let mut load = Load::default();
        assert_eq!(load.warning(), None, "nothing sampled, nothing said");
        load.sample();
        assert!(load.highest.is_some(), "this machine has a /proc/loadavg");
    }
}
