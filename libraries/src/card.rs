//! What a library's report card holds: the scenarios of the catalog whose hazard applies to
//! its kind of lock (`libraries/kinds/`), each with what the library's own design says it
//! should show, and a no-fault control. The scenarios themselves are the catalog's (`scenarios/NAME.toml`), run
//! with the library in place of splitbrain's own client.

use crate::kind::{Feature, Line};
use crate::{Manifest, Renewal};

/// One line of a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The library on its first deployment with no faults: valid, with grants.
    Control,
    /// A scenario of the catalog, by name, and what the library should show in it.
    Scenario {
        name: &'static str,
        expected: &'static str,
    },
}

impl Check {
    /// The scenario's name, or `control`.
    pub fn name(self) -> &'static str {
        match self {
            Check::Control => "control",
            Check::Scenario { name, .. } => name,
        }
    }

    /// What the library should show, in a sentence.
    pub fn expected(self) -> &'static str {
        match self {
            Check::Control => "With no faults, the lock is granted and never to two at once.",
            Check::Scenario { expected, .. } => expected,
        }
    }
}

/// The card's lines for a library: the control first, then each line of its kind's file, a
/// line marked `only-if` where the library does that (renews its lease, fences its grants).
pub fn checks(manifest: &Manifest) -> Vec<Check> {
    let applies = |line: &Line| match line.only_if {
        None => true,
        Some(Feature::Renews) => manifest.renews != Renewal::No,
        Some(Feature::Fences) => manifest.fencing,
    };
    let scenarios = manifest.kind.lines.iter().filter(|line| applies(line));
    std::iter::once(Check::Control)
        .chain(scenarios.map(|line| Check::Scenario {
            name: &line.scenario,
            expected: &line.expected,
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Language;

    fn manifest(kind: &str, renews: Renewal, fencing: bool) -> Manifest {
        Manifest {
            summary: String::new(),
            package: "p".into(),
            version: "1".into(),
            language: Language::Python,
            adapter: "adapter.py".into(),
            deployments: vec!["single".into()],
            kind: crate::kind::find(kind).unwrap(),
            renews,
            fencing,
            java: None,
            variants: Default::default(),
            not_shown: Vec::new(),
            known_unknowns: Vec::new(),
        }
    }

    #[test]
    fn a_card_holds_the_control_and_the_hazards_of_its_kind() {
        let names = |m: &Manifest| -> Vec<&str> { checks(m).iter().map(|c| c.name()).collect() };
        assert_eq!(
            names(&manifest("redlock", Renewal::No, false)),
            [
                "control",
                "redlock-restart-hazard",
                "redlock-restart-hazard-delayed",
                "redlock-restart-hazard-persisted",
                "redlock-clock-jump"
            ]
        );
        let plain = names(&manifest("single-redis", Renewal::No, false));
        assert!(
            !plain.contains(&"redis-watchdog-zombie") && !plain.contains(&"redis-zombie-fenced")
        );
        let renewing = names(&manifest("single-redis", Renewal::Reported, false));
        assert!(renewing.contains(&"redis-watchdog-zombie"), "{renewing:?}");
        let fenced = names(&manifest("zookeeper", Renewal::Silent, true));
        assert_eq!(
            fenced,
            [
                "control",
                "zookeeper-zombie",
                "zookeeper-zombie-fenced",
                "zookeeper-cut-off-holder"
            ]
        );
        let unrenewed = names(&manifest("etcd", Renewal::No, false));
        assert_eq!(unrenewed, ["control", "etcd-zombie"]);
    }
}
