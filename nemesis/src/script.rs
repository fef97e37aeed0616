//! A fault schedule written out instead of drawn from a seed: each fault at a fixed time from
//! the run's start, on fixed targets. It comes from a file (`--script`, a scenario's
//! `[[fault]]` tables) or from a stored run's history (`--replay`), and injects the same
//! faults at the same times again. The clients' timing is not in it, and cannot be.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use splitbrain_checker::{Op, OpType};

use crate::faults::{client_target, Action, Layout};
use crate::links::link_name;
use crate::{find_fault, Fault, NemesisOptions};

/// One fault of a script.
///
/// ```toml
/// [[fault]]
/// at = "5s 200ms"      # from the run's start (the history's time 0)
/// fault = "kill"
/// targets = ["n3"]
/// for = "1s"           # how long it stays on
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedFault {
    #[serde(with = "readable")]
    pub at: Duration,
    pub fault: String,
    /// Whom it hits, named as the history names them: nodes (`n1`), client links (`g0->n1`),
    /// clients (`client-3`). None for a fault that picks its targets when it starts.
    #[serde(default)]
    pub targets: Vec<String>,
    #[serde(rename = "for", with = "readable")]
    pub hold: Duration,
    /// The fault's parameters, as the history's `value` records them; left out, the seed's
    /// plan gives them, as it would in a random schedule.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub params: serde_json::Value,
}

impl ScriptedFault {
    /// `kill n1,n3 at 5.20 s for 1.00 s`.
    pub fn describe(&self) -> String {
        format!(
            "{} {}at {:.2} s for {:.2} s",
            self.fault,
            if self.targets.is_empty() {
                String::new()
            } else {
                format!("{} ", self.targets.join(","))
            },
            self.at.as_secs_f64(),
            self.hold.as_secs_f64()
        )
    }

    fn end(&self) -> Duration {
        self.at + self.hold
    }
}

/// A scripted fault resolved for a run: the fault itself and its action.
pub struct Planned {
    pub at: Duration,
    pub fault: &'static dyn Fault,
    pub action: Action,
    pub hold: Duration,
}

/// Checks a script against the deployment it will run on, before anything starts: every
/// fault known and fitting, every target one this deployment has, required parameters given,
/// and no two faults of one family, or on one target, on at once.
pub fn check(script: &[ScriptedFault], layout: &Layout) -> Result<(), String> {
    let known = target_names(layout);
    for (number, step) in script.iter().enumerate() {
        let at =
            |why: String| format!("scripted fault {} ({}): {why}", number + 1, step.describe());
        let fault = find_fault(&step.fault).ok_or_else(|| {
            let names: Vec<&str> = crate::FAULTS.iter().map(|f| f.name()).collect();
            at(format!(
                "no fault is called that; choose one of: {}",
                names.join(", ")
            ))
        })?;
        fault.fits(layout).map_err(at)?;
        if let Some(unknown) = step.targets.iter().find(|t| !known.contains(t)) {
            return Err(at(format!(
                "this deployment has no target `{unknown}`; its targets are: {}",
                known.join(", ")
            )));
        }
        // What a fault hits when it has targets at all is in its plan's: none for one that
        // picks them when it starts (the holder's nodes, the master of the moment).
        let planned = fault.plan(
            layout,
            &NemesisOptions::default(),
            &mut StdRng::seed_from_u64(0),
        );
        if step.targets.is_empty() && !planned.targets.is_empty() {
            return Err(at(format!("{} needs targets", fault.name())));
        }
        fault
            .check_scripted(&step.params)
            .map_err(|why| at(format!("{}: {why}", fault.name())))?;
        let overlapping = script[..number]
            .iter()
            .filter(|earlier| earlier.at < step.end() && step.at < earlier.end());
        for earlier in overlapping {
            if find_fault(&earlier.fault).is_some_and(|f| f.family() == fault.family()) {
                return Err(at(format!(
                    "it overlaps {} of the same family ({}), and faults of one family share \
                     their heal: start it after the other ends",
                    earlier.describe(),
                    fault.family()
                )));
            }
            // Docker cannot pause a node while a command starts in it (runc freezes the
            // command half-started, and both hang), so faults on one target take turns.
            if let Some(shared) = step.targets.iter().find(|t| earlier.targets.contains(t)) {
                return Err(at(format!(
                    "it overlaps {} on {shared}: faults on one target must take turns; start \
                     it after the other ends",
                    earlier.describe()
                )));
            }
        }
    }
    Ok(())
}

/// Every name a scripted fault may target on `layout`.
fn target_names(layout: &Layout) -> Vec<String> {
    let links = (0..layout.groups).flat_map(|g| layout.nodes.iter().map(move |n| link_name(g, n)));
    let clients = (0..layout.clients).map(client_target);
    layout
        .nodes
        .iter()
        .cloned()
        .chain(links)
        .chain(clients)
        .collect()
}

/// The script's faults, resolved; parameters left out are the seed's plan for that step.
pub fn plan(
    script: &[ScriptedFault],
    layout: &Layout,
    options: &NemesisOptions,
    seed: u64,
) -> Result<Vec<Planned>, String> {
    check(script, layout)?;
    let mut rng = StdRng::seed_from_u64(seed);
    Ok(script
        .iter()
        .map(|step| {
            let fault = find_fault(&step.fault).expect("checked above");
            let params = if step.params.is_null() {
                fault.plan(layout, options, &mut rng).params
            } else {
                step.params.clone()
            };
            Planned {
                at: step.at,
                fault,
                action: Action {
                    targets: step.targets.clone(),
                    params,
                },
                hold: step.hold,
            }
        })
        .collect())
}

/// The script that does again what a stored history's faults did: each start and its stop
/// as one fault, at the times the history recorded them, with the targets it hit (a fault
/// that aimed when it started becomes the plain fault it aimed with; see
/// [`Fault::repeated`]). Starts that hit nothing (no grant came, no node was master) are
/// left out, and counted.
pub fn from_history(history: &[Op]) -> Result<(Vec<ScriptedFault>, usize), String> {
    let mut script = Vec::new();
    let mut hit_nothing = 0;
    let mut open: BTreeMap<String, (&Op, Option<ScriptedFault>)> = BTreeMap::new();
    let nemesis = history
        .iter()
        .filter(|op| op.process.is_nemesis() && op.kind == OpType::Info);
    for op in nemesis {
        let Some(name) = op.fault.as_deref() else {
            continue;
        };
        let fault = find_fault(name).ok_or_else(|| {
            format!(
                "op {}: the history names an unknown fault `{name}`",
                op.index
            )
        })?;
        match op.f.as_str() {
            "start" => {
                let done = Action {
                    targets: op.node.clone().unwrap_or_default(),
                    params: op.value.clone().unwrap_or_default(),
                };
                let measured = op.measured.clone().unwrap_or_default();
                let repeated = (measured.get("refused").is_none()).then(|| {
                    let (again, action) = fault.repeated(&done, &measured);
                    ScriptedFault {
                        at: to_millis(op.time),
                        fault: again.to_string(),
                        targets: action.targets,
                        hold: Duration::ZERO,
                        params: action.params,
                    }
                });
                if repeated.is_none() {
                    hit_nothing += 1;
                }
                open.insert(name.to_string(), (op, repeated));
            }
            "stop" => {
                if let Some((_, Some(mut step))) = open.remove(name) {
                    step.hold = to_millis(op.time).saturating_sub(step.at);
                    script.push(step);
                }
            }
            _ => {}
        }
    }
    // A fault the run's end healed without a stop op: it lasted until its heal, unknown here;
    // the last op's time is the latest it can have lasted.
    let last = history.last().map_or(0, |op| op.time);
    for (_, (_, step)) in open {
        if let Some(mut step) = step {
            step.hold = to_millis(last).saturating_sub(step.at);
            script.push(step);
        }
    }
    script.sort_by_key(|step| step.at);
    Ok((script, hit_nothing))
}

/// A history time (nanoseconds) to the millisecond.
fn to_millis(nanos: u64) -> Duration {
    Duration::from_millis(nanos / 1_000_000)
}

/// Durations as people write them (`5s 200ms`), in files and in `test.json`.
mod readable {
    use std::time::Duration;

    use serde::{de, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim() == "0" {
            return Ok(Duration::ZERO);
        }
        humantime::parse_duration(&text).map_err(|e| {
            de::Error::custom(format!(
                "`{text}` is not a duration ({e}); write it as `5s 200ms`"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use splitbrain_checker::Process;

    fn layout() -> Layout {
        crate::faults::five_masters()
    }

    fn nemesis(f: &str, fault: &str, ms: u64, nodes: &[&str]) -> Op {
        let mut op = Op::new(Process::NEMESIS, OpType::Info, f)
            .nodes(nodes.iter().map(|n| n.to_string()).collect());
        op.fault = Some(fault.into());
        op.time = ms * 1_000_000 + 456_789;
        op
    }

    fn step(at_ms: u64, fault: &str, targets: &[&str], hold_ms: u64) -> ScriptedFault {
        ScriptedFault {
            at: Duration::from_millis(at_ms),
            fault: fault.into(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
            hold: Duration::from_millis(hold_ms),
            params: serde_json::Value::Null,
        }
    }

    /// What a history's faults did, as a script: aimed faults become the plain fault on the
    /// targets they hit, with what they measured; a start that hit nothing is left out.
    #[test]
    fn a_history_gives_the_script_of_what_its_faults_did() {
        let mut aimed_kill = nemesis("start", "kill-holder", 1234, &["n2"]);
        aimed_kill.value = Some(serde_json::json!({ "patience_ms": 2000, "pick": 7 }));
        aimed_kill.measured =
            Some(serde_json::json!({ "holder": 3, "granted_by": ["n1", "n2", "n4"] }));
        let mut missed = nemesis("start", "kill-holder", 3000, &[]);
        missed.measured = Some(serde_json::json!({ "refused": "no grant within the patience" }));
        let mut jump = nemesis("start", "clock-holder", 5000, &["n1", "n3"]);
        jump.value = Some(serde_json::json!({ "patience_ms": 2000, "pick": 1, "offset_ms": 4000 }));
        let mut aimed_cut = nemesis("start", "partition", 8000, &["n1", "n2"]);
        aimed_cut.value = Some(serde_json::json!({
            "shape": "isolate", "aim": "master", "grudge": { "n1": ["n2"], "n2": ["n1"] }
        }));
        aimed_cut.measured = Some(serde_json::json!({
            "master": "n2", "grudge": { "n2": ["n1"], "n1": ["n2"] }
        }));
        let mut last = Op::new(Process::Client(0), OpType::Ok, "read");
        last.time = 9_000_000_000;
        let history = [
            aimed_kill,
            nemesis("stop", "kill-holder", 1500, &["n2"]),
            missed,
            nemesis("stop", "kill-holder", 3000, &[]),
            jump,
            nemesis("stop", "clock-holder", 6000, &["n1", "n3"]),
            // The run ended with the partition on: it lasted until the last op at most.
            aimed_cut,
            last,
        ];
        let (script, hit_nothing) = from_history(&history).unwrap();
        assert_eq!(hit_nothing, 1);
        let mut jump = step(5000, "clock-bump", &["n1", "n3"], 1000);
        jump.params = serde_json::json!({ "offset_ms": 4000 });
        let mut cut = step(8000, "partition", &["n1", "n2"], 1000);
        cut.params =
            serde_json::json!({ "shape": "isolate", "grudge": { "n1": ["n2"], "n2": ["n1"] } });
        assert_eq!(script, [step(1234, "kill", &["n2"], 266), jump, cut]);
        check(&script, &layout()).unwrap();
    }

    #[test]
    fn a_script_is_checked_before_it_runs() {
        let refused = |script: &[ScriptedFault]| check(script, &layout()).unwrap_err();
        assert!(refused(&[step(0, "explode", &["n1"], 0)]).contains("choose one of: kill,"));
        let why = refused(&[step(0, "kill", &["n9"], 0)]);
        assert!(
            why.contains("no target `n9`") && why.contains("n5, g0->n1"),
            "{why}"
        );
        assert!(refused(&[step(0, "kill", &[], 0)]).contains("kill needs targets"));
        let why = refused(&[step(0, "partition", &["n1"], 1000)]);
        assert!(why.contains("write out who drops whom"), "{why}");
        let why = refused(&[
            step(0, "kill", &["n1"], 2000),
            step(1500, "kill-holder", &[], 0),
        ]);
        assert!(
            why.starts_with("scripted fault 2 (kill-holder at 1.50 s for 0.00 s): it overlaps kill n1 at 0.00 s"),
            "{why}"
        );
        let why = refused(&[
            step(0, "kill", &["n1"], 2000),
            step(500, "clock-bump", &["n1", "n2"], 100),
        ]);
        assert!(
            why.contains("overlaps kill n1 at 0.00 s for 2.00 s on n1"),
            "{why}"
        );
        // A failover asks the deployment, and needs no targets.
        let failing_over = Layout {
            replication: splitbrain_compose::Replication {
                promoter: Some("a vote"),
                operator_failover: true,
                ..Default::default()
            },
            ..layout()
        };
        check(&[step(0, "failover", &[], 3000)], &failing_over).unwrap();
        // Different families on different targets may overlap; a fault that aims when it
        // starts needs no targets.
        check(
            &[
                step(0, "kill", &["n1"], 2000),
                step(500, "clock-holder", &[], 1000),
                step(500, "link-drop", &["g1->n3"], 1000),
                step(600, "client-crash", &["client-4"], 0),
            ],
            &layout(),
        )
        .unwrap();
    }

    #[test]
    fn parameters_left_out_are_the_seeds_plan() {
        let script = [step(0, "kill-holder", &[], 0), step(10, "kill", &["n1"], 0)];
        let planned = plan(&script, &layout(), &NemesisOptions::default(), 1).unwrap();
        assert!(planned[0].action.params["patience_ms"].as_u64().unwrap() > 0);
        assert_eq!(planned[0].fault.name(), "kill-holder");
        assert_eq!(planned[1].action.targets, ["n1"]);
    }

    #[test]
    fn a_script_reads_back_as_written() {
        #[derive(Serialize, Deserialize)]
        struct File {
            fault: Vec<ScriptedFault>,
        }
        let mut jump = step(5200, "clock-bump", &["n3"], 1500);
        jump.params = serde_json::json!({ "offset_ms": 3000 });
        let file = File {
            fault: vec![step(1000, "kill", &["n1"], 0), jump],
        };
        let text = toml::to_string(&file).unwrap();
        assert!(text.contains("at = \"5s 200ms\""), "{text}");
        let back: File = toml::from_str(&text).unwrap();
        assert_eq!(back.fault, file.fault);
    }
}
