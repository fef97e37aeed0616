//! What a library's report card holds: the scenarios of the catalog whose hazard applies to
//! its kind of lock, each with what the library's own design says it should show, and a
//! no-fault control. The scenarios themselves are the catalog's (`scenarios/NAME.toml`), run
//! with the library in place of splitbrain's own client.

use crate::{Kind, Manifest, Renewal};

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

const fn scenario(name: &'static str, expected: &'static str) -> Check {
    Check::Scenario { name, expected }
}

/// The card's lines for a library: the control first, then each scenario its kind of lock
/// is exposed to (a renewing lock's watchdog, a fencing lock's cure only where it has them).
/// A holder cut off from the servers is a hazard only where something renews its lease
/// behind its back: one that does not renew acts within the validity it was granted, which
/// a cut does not shorten (python-etcd3 under `etcd-cut-off-holder`: no stale write in 3 of 3
/// seeds). The cut's fenced cure is not on the cards: an acquire from the cut-off machine
/// hangs (kazoo, Curator) or times out, its outcome unknown, and with it the verdict.
pub fn checks(manifest: &Manifest) -> Vec<Check> {
    let mut checks = vec![Check::Control];
    let renews = manifest.renews != Renewal::No;
    let fences = manifest.fencing;
    let candidates: &[(Check, bool)] = match manifest.kind {
        Kind::Redlock => &[
            (
                scenario(
                    "redlock-restart-hazard",
                    "A master killed under a holder comes back empty within the TTL: without \
                     delayed restarts, a second client wins a majority beside the holder (the \
                     restart hazard).",
                ),
                true,
            ),
            (
                scenario(
                    "redlock-restart-hazard-delayed",
                    "The same kills, each master kept down past the TTL as the Redlock spec \
                     asks: never two holders.",
                ),
                true,
            ),
            (
                scenario(
                    "redlock-restart-hazard-persisted",
                    "The same kills with every write fsynced before it is acknowledged: never \
                     two holders.",
                ),
                true,
            ),
            (
                scenario(
                    "redlock-clock-jump",
                    "A holder's masters' clocks set forward expire its keys early: a second \
                     client wins a majority (Redlock assumes clocks that do not jump).",
                ),
                true,
            ),
        ],
        Kind::SingleRedis => &[
            (
                scenario(
                    "redis-zombie",
                    "A holder paused past its TTL wakes up and writes after another was \
                     granted the lock: a zombie, and writes lost.",
                ),
                true,
            ),
            (
                scenario(
                    "redis-watchdog-zombie",
                    "Its renewal freezes with its paused process: the lease runs out, another \
                     is granted the lock, and the holder wakes up a zombie.",
                ),
                renews,
            ),
            (
                scenario(
                    "redis-zombie-fenced",
                    "The same pause with the lock's fencing token checked by the storage: \
                     every zombie's write refused, none lost.",
                ),
                fences,
            ),
            (
                scenario(
                    "redis-del-release-hijack-compare-and-delete",
                    "A holder paused past its lease then releases: its release deletes only \
                     its own token, never the next holder's lock.",
                ),
                true,
            ),
            (
                scenario(
                    "redis-setnx-expire-stuck-atomic",
                    "Holders killed: the lock was set with its expiry at once, so it runs out \
                     and is never stuck.",
                ),
                true,
            ),
        ],
        Kind::Sentinel => &[(
            scenario(
                "sentinel-failover-hands-on-the-lock",
                "A failover promotes a replica the lock had not reached: a second client is \
                 granted it beside the holder.",
            ),
            true,
        )],
        Kind::Zookeeper => &[
            (
                scenario(
                    "zookeeper-zombie",
                    "A holder paused past its session timeout loses the lock without knowing, \
                     wakes up and writes: a zombie.",
                ),
                true,
            ),
            (
                scenario(
                    "zookeeper-zombie-fenced",
                    "The same pause with the lock's token checked by the storage: every \
                     zombie's write refused, none lost.",
                ),
                fences,
            ),
            (
                scenario(
                    "zookeeper-cut-off-holder",
                    "A holder cut off from the ensemble past its session timeout loses the \
                     lock without knowing, its session kept by heartbeats it does not watch, \
                     and writes: a zombie.",
                ),
                renews,
            ),
        ],
        Kind::Etcd => &[
            (
                scenario(
                    "etcd-zombie",
                    "A holder paused past its lease loses the lock without knowing, wakes up \
                     and writes: a zombie.",
                ),
                true,
            ),
            (
                scenario(
                    "etcd-zombie-fenced",
                    "The same pause with the lock's revision checked by the storage: every \
                     zombie's write refused, none lost.",
                ),
                fences,
            ),
            (
                scenario(
                    "etcd-cut-off-holder",
                    "A holder cut off from the cluster past its lease loses the lock without \
                     knowing, its lease kept alive by a renewal it does not watch, and writes: \
                     a zombie.",
                ),
                renews,
            ),
        ],
    };
    checks.extend(
        candidates
            .iter()
            .filter(|(_, applies)| *applies)
            .map(|(check, _)| *check),
    );
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Language;

    fn manifest(kind: Kind, renews: Renewal, fencing: bool) -> Manifest {
        Manifest {
            summary: String::new(),
            package: "p".into(),
            version: "1".into(),
            language: Language::Python,
            adapter: "adapter.py".into(),
            deployments: vec!["single".into()],
            kind,
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
            names(&manifest(Kind::Redlock, Renewal::No, false)),
            [
                "control",
                "redlock-restart-hazard",
                "redlock-restart-hazard-delayed",
                "redlock-restart-hazard-persisted",
                "redlock-clock-jump"
            ]
        );
        let plain = names(&manifest(Kind::SingleRedis, Renewal::No, false));
        assert!(
            !plain.contains(&"redis-watchdog-zombie") && !plain.contains(&"redis-zombie-fenced")
        );
        let renewing = names(&manifest(Kind::SingleRedis, Renewal::Reported, false));
        assert!(renewing.contains(&"redis-watchdog-zombie"), "{renewing:?}");
        let fenced = names(&manifest(Kind::Zookeeper, Renewal::Silent, true));
        assert_eq!(
            fenced,
            [
                "control",
                "zookeeper-zombie",
                "zookeeper-zombie-fenced",
                "zookeeper-cut-off-holder"
            ]
        );
        let unrenewed = names(&manifest(Kind::Etcd, Renewal::No, false));
        assert_eq!(unrenewed, ["control", "etcd-zombie"]);
    }

    /// Every scenario a card can name, whatever the library, is in the repository's catalog.
    #[test]
    fn every_scenario_a_card_names_is_in_the_catalog() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for kind in [
            Kind::Redlock,
            Kind::SingleRedis,
            Kind::Sentinel,
            Kind::Zookeeper,
            Kind::Etcd,
        ] {
            for check in checks(&manifest(kind, Renewal::Reported, true)) {
                let file = root
                    .join("scenarios")
                    .join(format!("{}.toml", check.name()));
                assert!(
                    check == Check::Control || file.is_file(),
                    "{}",
                    file.display()
                );
            }
        }
    }
}
