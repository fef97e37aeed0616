//! Every checker of a lock history at once, and their results together.
//!
//! A checker is its own file and its name in the crate's `checkers!` list, which makes
//! [`CHECKERS`]: its [`Registration`] names it, says what its verdict is to the run's
//! ([`Role`]), starts it on a history's outline and reads its section of `results.json` back.
//! Its streaming half is a [`Checker`]; its result is a [`Checked`] that serde writes.
//! `check`, the end of a run, the summary, the verdict, the matrix and the report go through
//! the list, so a new checker is run, written, read back, summarised and shown without a line
//! anywhere else. Only the linearizability search stands outside it: it needs the history
//! whole.

use std::any::Any;
use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::stream::{Checker, Event, Outline, RunFacts};
use crate::verdict::Checked;
use crate::CHECKERS;

/// A checker in [`CHECKERS`].
#[derive(Debug)]
pub struct Registration {
    /// Its name, which is its section's in `results.json` (`lock-safety`).
    pub name: &'static str,
    /// What its verdict is to the run's.
    pub role: Role,
    /// Starts it on a history with this outline.
    pub start: fn(&Outline, RunFacts) -> Box<dyn Streaming>,
    /// Reads its section of `results.json` back.
    pub read: fn(Value) -> Result<Box<dyn Section>, serde_json::Error>,
}

/// What a checker's verdict is to the run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Its verdict is part of the run's.
    Verdict,
    /// Its verdict is shown beside the run's, never part of it (unfairness is not unsafety).
    Beside,
    /// It measures and passes no verdict (what the faults reached, acquisition statistics).
    Statistics,
}

/// What [`Registration::read`] is for a result type that serde reads.
pub fn read_as<S: Section + DeserializeOwned + 'static>(
    json: Value,
) -> Result<Box<dyn Section>, serde_json::Error> {
    Ok(Box::new(serde_json::from_value::<S>(json)?))
}

/// A checker of [`CHECKERS`] running: a [`Checker`] whose result is a [`Section`].
pub trait Streaming {
    fn observe(&mut self, event: Event<'_>);
    fn finish(self: Box<Self>) -> Box<dyn Section>;
}

impl<C: Checker<Output: Section + 'static>> Streaming for C {
    fn observe(&mut self, event: Event<'_>) {
        Checker::observe(self, event);
    }
    fn finish(self: Box<Self>) -> Box<dyn Section> {
        Box::new(Checker::finish(*self))
    }
}

/// A checker's result, whatever its type: what it found ([`Checked`]), its JSON, and its
/// type for whoever knows it ([`Sections::get`]).
pub trait Section: Checked + Debug + Send + Sync {
    fn to_json(&self) -> Value;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Checked + Serialize + Debug + Send + Sync + 'static> Section for T {
    fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|e| Value::String(e.to_string()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The results of the checkers of [`CHECKERS`], in its order; serialised as `{name: section}`.
#[derive(Debug, Default)]
pub struct Sections(Vec<(&'static Registration, Box<dyn Section>)>);

impl Sections {
    /// The result of type `T`, if its checker ran or its section was read.
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.0.iter().find_map(|(_, s)| s.as_any().downcast_ref())
    }

    /// The result of type `T`, to change (a test's, say).
    pub fn get_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.0
            .iter_mut()
            .find_map(|(_, s)| s.as_any_mut().downcast_mut())
    }

    /// Every result, with its checker's registration.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Registration, &dyn Section)> {
        self.0
            .iter()
            .map(|(registration, s)| (*registration, s.as_ref()))
    }

    /// The results whose verdicts make the run's.
    pub fn in_verdict(&self) -> impl Iterator<Item = &dyn Section> {
        self.iter()
            .filter(|(r, _)| r.role == Role::Verdict)
            .map(|(_, s)| s)
    }

    /// Takes out of `json` (`results.json`) every registered checker's section and reads it;
    /// a section that does not read as its type is given back, by name, beside the rest.
    pub fn read(json: &mut serde_json::Map<String, Value>) -> (Sections, Vec<(String, Value)>) {
        let mut sections = Sections::default();
        let mut unread = Vec::new();
        for registration in CHECKERS {
            let Some(section) = json.remove(registration.name) else {
                continue;
            };
            match (registration.read)(section.clone()) {
                Ok(result) => sections.0.push((registration, result)),
                Err(_) => unread.push((registration.name.to_string(), section)),
            }
        }
        (sections, unread)
    }
}

impl Serialize for Sections {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (registration, section) in &self.0 {
            map.serialize_entry(registration.name, &section.to_json())?;
        }
        map.end()
    }
}

/// Every checker of [`CHECKERS`], fed one stream of events.
pub struct EveryChecker(Vec<(&'static Registration, Box<dyn Streaming>)>);

impl EveryChecker {
    pub fn new(outline: &Outline, facts: RunFacts) -> EveryChecker {
        let mut outline = outline.clone();
        outline.known_workers = facts.concurrency.filter(|&c| c > 0);
        outline.known_groups = facts.client_groups.filter(|&g| g > 0);
        let checkers = CHECKERS.iter().map(|r| (r, (r.start)(&outline, facts)));
        EveryChecker(checkers.collect())
    }
}

impl Checker for EveryChecker {
    type Output = Sections;

    fn observe(&mut self, event: Event<'_>) {
        for (_, checker) in &mut self.0 {
            checker.observe(event);
        }
    }

    fn finish(self) -> Sections {
        Sections(self.0.into_iter().map(|(r, c)| (r, c.finish())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::replay;
    use crate::{Op, OpType, Process};

    #[test]
    fn each_checker_writes_and_reads_back_its_section_under_its_own_name() {
        let history = [
            Op::new(Process::Client(0), OpType::Invoke, "acquire").key("lock"),
            Op::new(Process::Client(0), OpType::Ok, "acquire").key("lock"),
        ];
        let outline = Outline::of(&history);
        let sections = replay(&history, EveryChecker::new(&outline, RunFacts::default()));
        let names: Vec<&str> = sections.iter().map(|(_, s)| s.name()).collect();
        let registered: Vec<&str> = CHECKERS.iter().map(|r| r.name).collect();
        assert_eq!(
            names, registered,
            "a result names itself as its registration does"
        );

        let Value::Object(mut json) = serde_json::to_value(&sections).unwrap() else {
            panic!("the sections are a JSON object");
        };
        json.insert("stuck-lock".into(), Value::String("not a result".into()));
        let (read, unread) = Sections::read(&mut json);
        assert!(
            json.is_empty(),
            "every registered section is taken: {json:?}"
        );
        assert_eq!(unread.len(), 1);
        assert_eq!(unread[0].0, "stuck-lock");
        assert_eq!(read.iter().count(), CHECKERS.len() - 1);
        assert!(read.get::<crate::lock_safety::LockSafety>().is_some());
        assert!(read.get::<crate::stuck_lock::StuckLock>().is_none());
    }
}
