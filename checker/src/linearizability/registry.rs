//! The registry's side of a model: a [`Model`] under its name ([`RegisteredModel`], as
//! [`super::MODELS`] lists them), with its types erased so that models of different op and
//! state types sit in one list, and one key's operations prepared by it, ready to search.

use super::budget::Budget;
use super::calls::PartCalls;
use super::model::{Model, Values};
use super::search::{search, PartOutcome, Prepared};
use super::CheckError;

/// A model under its name, as [`super::MODELS`] lists it.
pub struct RegisteredModel {
    /// The name to ask for it by: `cas-register`.
    pub name: &'static str,
    /// What it models, in one line.
    pub summary: &'static str,
    pub(crate) model: &'static dyn AnyModel,
}

impl RegisteredModel {
    pub const fn new<M: Model + 'static>(
        name: &'static str,
        summary: &'static str,
        model: &'static M,
    ) -> RegisteredModel {
        RegisteredModel {
            name,
            summary,
            model,
        }
    }

    /// The operations (`f`s) the model knows.
    pub fn fs(&self) -> &'static [&'static str] {
        self.model.fs()
    }
}

impl std::fmt::Debug for RegisteredModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredModel")
            .field("name", &self.name)
            .field("fs", &self.fs())
            .finish()
    }
}

/// A [`Model`] with its types erased, as the registry holds it; implemented for every model.
pub(crate) trait AnyModel: Send + Sync {
    /// The operations the model knows.
    fn fs(&self) -> &'static [&'static str];

    /// Prepares one key's operations for the search.
    fn prepare_part<'h>(
        &'h self,
        part: PartCalls<'h>,
    ) -> Result<Box<dyn PreparedPart + 'h>, CheckError>;
}

/// One key's operations prepared by a model, ready to search.
pub(crate) trait PreparedPart: Sync {
    /// Operations the model was given (nil reads included).
    fn ops(&self) -> usize;
    /// Searches for a linearization within `budget`.
    fn search(&self, budget: &Budget) -> PartOutcome;
}

impl<M: Model> AnyModel for M {
    fn fs(&self) -> &'static [&'static str] {
        Model::fs(self)
    }

    fn prepare_part<'h>(
        &'h self,
        mut part: PartCalls<'h>,
    ) -> Result<Box<dyn PreparedPart + 'h>, CheckError> {
        let mut values = Values::default();
        let mut ops = Vec::with_capacity(part.calls.len());
        let mut kept = Vec::with_capacity(part.calls.len());
        let mut passing = 0;
        // Ok calls first: the search numbers operations in this order.
        part.calls
            .sort_by_key(|call| (call.is_unknown(), call.invoke_position));
        for call in part.calls.drain(..) {
            let prepared = self
                .prepare(&call.model_call(), &mut values)
                .map_err(|message| CheckError::BadValue {
                    index: call.invoke.index,
                    f: call.invoke.f.clone(),
                    message,
                })?;
            match prepared {
                Some(op) => {
                    ops.push(op);
                    kept.push(call);
                }
                None => passing += 1,
            }
        }
        part.calls = kept;
        let ok_count = part.calls.iter().filter(|c| !c.is_unknown()).count();
        Ok(Box::new(Prepared {
            model: self,
            values,
            calls: part,
            ops,
            ok_count,
            passing,
        }))
    }
}

impl<M: Model> PreparedPart for Prepared<'_, M> {
    fn ops(&self) -> usize {
        self.ops.len() + self.passing
    }

    fn search(&self, budget: &Budget) -> PartOutcome {
        search(self, budget)
    }
}
