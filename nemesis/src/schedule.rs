//! The fault schedule: which fault, on which nodes, with what parameters, after how long a
//! quiet time and for how long, step by step, from the seed alone.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::faults::{quiet_time, Action, Layout};
use crate::{Fault, NemesisOptions};

/// One step of the schedule.
#[derive(Clone)]
pub struct Step {
    pub fault: &'static dyn Fault,
    pub action: Action,
    /// Quiet time before the fault starts.
    pub wait: Duration,
    /// How long the fault stays on.
    pub hold: Duration,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "after {:?}: {} {:?} {} for {:?}",
            self.wait,
            self.fault.name(),
            self.action.targets,
            self.action.params,
            self.hold
        )
    }
}

/// An endless, reproducible sequence of steps: the same seed, faults, nodes and options always
/// give the same steps. Faults are dealt like cards: every fault runs once, in a shuffled
/// order, before any runs again.
pub struct Schedule {
    rng: StdRng,
    faults: Vec<&'static dyn Fault>,
    deck: Vec<&'static dyn Fault>,
    layout: Layout,
    options: NemesisOptions,
}

impl Schedule {
    pub fn new(
        seed: u64,
        faults: Vec<&'static dyn Fault>,
        layout: Layout,
        options: NemesisOptions,
    ) -> Schedule {
        Schedule {
            rng: StdRng::seed_from_u64(seed),
            faults,
            deck: Vec::new(),
            layout,
            options,
        }
    }
}

impl Iterator for Schedule {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if self.deck.is_empty() {
            self.deck = self.faults.clone();
            self.deck.shuffle(&mut self.rng);
        }
        let fault = self.deck.pop()?;
        let wait = quiet_time(&self.options, &mut self.rng);
        let action = fault.plan(&self.layout, &self.options, &mut self.rng);
        let hold = fault.hold(&self.options, &mut self.rng);
        Some(Step {
            fault,
            action,
            wait,
            hold,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::all_faults;

    fn layout() -> Layout {
        crate::faults::five_masters()
    }

    fn steps(seed: u64) -> Vec<String> {
        Schedule::new(seed, all_faults(), layout(), NemesisOptions::default())
            .take(50)
            .map(|s| format!("{s:?}"))
            .collect()
    }

    #[test]
    fn a_seed_gives_the_same_schedule_every_time() {
        assert_eq!(steps(42), steps(42));
        assert_ne!(steps(42), steps(43));
    }

    /// Paced by a 3 s failure detector: about one fault in five is shorter than the detector,
    /// the rest 1.5 to 3 times as long; quiet times are one to two detectors; a killed node
    /// stays down as long as other faults last unless `--restart-delay` says otherwise.
    #[test]
    fn faults_paced_by_a_detector_mostly_outlast_it() {
        let detector = Duration::from_secs(3);
        let options = NemesisOptions {
            detector: Some(detector),
            ..NemesisOptions::default()
        };
        let kill = crate::find_fault("kill").unwrap();
        let partition = crate::find_fault("partition").unwrap();
        let steps: Vec<Step> = Schedule::new(3, vec![partition, kill], layout(), options.clone())
            .take(400)
            .collect();
        let short = steps.iter().filter(|s| s.hold < detector).count();
        assert!(
            (40..=120).contains(&short),
            "{short} of 400 shorter than the detector"
        );
        for step in &steps {
            assert!(step.hold >= detector.mul_f64(0.3) && step.hold <= detector * 3);
            assert!(
                step.wait >= detector && step.wait <= detector * 2,
                "{step:?}"
            );
        }
        let delayed = NemesisOptions {
            restart_delay: Some(Duration::from_millis(100)),
            ..options
        };
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(kill.hold(&delayed, &mut rng), Duration::from_millis(100));
        // Without a detector, a killed node comes straight back: the restart hazard.
        assert_eq!(
            kill.hold(&NemesisOptions::default(), &mut rng),
            Duration::ZERO
        );
    }

    #[test]
    fn every_fault_is_used() {
        let steps = steps(1).join("\n");
        for fault in all_faults() {
            assert!(
                steps.contains(fault.name()),
                "{} missing from\n{steps}",
                fault.name()
            );
        }
    }

    #[test]
    fn no_faults_no_steps() {
        let mut none = Schedule::new(1, Vec::new(), layout(), NemesisOptions::default());
        assert!(none.next().is_none());
    }
}
