//! The fault schedule: which fault hits which nodes, step by step, from a seed alone.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::SeedableRng;

use crate::Fault;

/// One step of the schedule.
#[derive(Clone)]
pub struct Step {
    pub fault: &'static dyn Fault,
    pub targets: Vec<String>,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.fault.name(), self.targets)
    }
}

/// An endless, reproducible sequence of steps: the same seed, faults and nodes always give the
/// same steps.
pub struct Schedule {
    rng: StdRng,
    faults: Vec<&'static dyn Fault>,
    nodes: Vec<String>,
}

impl Schedule {
    pub fn new(seed: u64, faults: Vec<&'static dyn Fault>, nodes: Vec<String>) -> Schedule {
        Schedule {
            rng: StdRng::seed_from_u64(seed),
            faults,
            nodes,
        }
    }
}

impl Iterator for Schedule {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let fault = *self.faults.choose(&mut self.rng)?;
        let targets = fault.targets(&self.nodes, &mut self.rng);
        Some(Step { fault, targets })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FAULTS;

    fn nodes() -> Vec<String> {
        (1..=5).map(|i| format!("n{i}")).collect()
    }

    fn names(seed: u64) -> Vec<String> {
        Schedule::new(seed, FAULTS.to_vec(), nodes())
            .take(20)
            .map(|s| format!("{s:?}"))
            .collect()
    }

    #[test]
    fn a_seed_gives_the_same_schedule_every_time() {
        assert_eq!(names(42), names(42));
        assert_ne!(names(42), names(43));
    }

    #[test]
    fn every_fault_is_used() {
        let steps = names(1).join(" ");
        assert!(steps.contains("kill") && steps.contains("pause"), "{steps}");
    }

    #[test]
    fn no_faults_no_steps() {
        assert!(Schedule::new(1, Vec::new(), nodes()).next().is_none());
    }
}
