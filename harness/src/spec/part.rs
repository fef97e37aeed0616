//! A part of the run config (the deployment, the client, the workload, the faults, the
//! limits): one struct whose fields are `splitbrain run` options and `test.json` keys at
//! once. Its fields are written down once, with their flag, default and stored form; what
//! the command line prints back is read from the same definition.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Command, FromArgMatches};
use splitbrain_compose::{System, Topology};
use splitbrain_workloads::workload::WorkloadKind;

use super::names::ChosenClient;
use crate::script::Script;

/// Declares a part: the struct, deriving its clap options and its `test.json` form, and
/// [`Part`], which lists each field's value as the command line writes it. A field marked
/// `@shown` is printed in a command line even at its default, as the run's headline
/// (`--deployment`, `--seed`); the others only where they differ from it. A field marked
/// `@flatten` is a set of options of its own (flattened for clap and serde by its attributes),
/// which lists its values itself.
macro_rules! part {
    // A field's values, by the one mark it takes; any other word is a compile error.
    (@values $part:ident $field:ident flatten) => {
        $part.$field.values()
    };
    (@values $part:ident $field:ident shown) => {
        vec![part!(@value $part $field true)]
    };
    (@values $part:ident $field:ident) => {
        vec![part!(@value $part $field false)]
    };
    (@value $part:ident $field:ident $shown:expr) => {
        $crate::spec::part::Value {
            id: stringify!($field),
            text: $crate::spec::part::Flag::arg(&$part.$field),
            shown: $shown,
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(@$mark:ident)?
                $(#[$field_meta:meta])*
                pub $field:ident : $type:ty,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, clap::Args, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            $(
                $(#[$field_meta])*
                pub $field: $type,
            )*
        }

        impl $crate::spec::part::Part for $name {
            fn values(&self) -> Vec<$crate::spec::part::Value> {
                let part = self;
                [$( part!(@values part $field $($mark)?) ),*].into_iter().flatten().collect()
            }
        }
    };
}

pub(super) use part;

/// One option's value in a part, as the command line writes it.
pub struct Value {
    /// The clap id: the field's name.
    pub id: &'static str,
    /// `None` for an option not given (and with no default).
    pub text: Option<String>,
    /// Printed even at its default.
    pub shown: bool,
}

/// A part of the run config: its options' values, by clap id.
pub trait Part: Args + FromArgMatches {
    fn values(&self) -> Vec<Value>;
}

/// An option as the command line prints it: `--flag value`, or `--flag` for a switch.
pub struct Printed {
    pub id: &'static str,
    pub flag: String,
    pub value: Option<String>,
    /// Whether it differs from its default, that is, whether it was given.
    pub given: bool,
    pub shown: bool,
}

/// Every option of `part` with a value, its flag read from clap and whether it was given
/// read against the part's defaults (an empty command line, parsed).
pub fn printed<P: Part>(part: &P) -> Vec<Printed> {
    let command = P::augment_args(Command::new("part"));
    let defaults = command
        .clone()
        .try_get_matches_from(["part"])
        .and_then(|matches| P::from_arg_matches(&matches))
        .expect("every option of a part has a default or none")
        .values();
    part.values()
        .into_iter()
        .zip(defaults)
        .filter_map(|(value, default)| {
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_id() == value.id)
                .expect("a part's field is one of its options");
            let flag = arg
                .get_long()
                .expect("every run option is long")
                .to_string();
            let given = value.text != default.text;
            let switch = !arg.get_action().takes_values();
            Some(Printed {
                id: value.id,
                flag,
                value: if switch { None } else { Some(value.text?) },
                given,
                // A switch is printed only where it is on.
                shown: value.shown && !switch,
            })
        })
        .collect()
}

/// A value as a command line writes it, so that parsing it gives the value back.
pub trait Flag {
    fn arg(&self) -> Option<String>;
}

impl<T: Flag> Flag for Option<T> {
    fn arg(&self) -> Option<String> {
        self.as_ref().and_then(Flag::arg)
    }
}

impl Flag for Duration {
    fn arg(&self) -> Option<String> {
        Some(humantime::format_duration(*self).to_string())
    }
}

macro_rules! flag_by_display {
    ($($type:ty),*) => {
        $(impl Flag for $type {
            fn arg(&self) -> Option<String> {
                Some(self.to_string())
            }
        })*
    };
}

flag_by_display!(bool, usize, u16, u64, f64, String, ChosenClient);

impl Flag for PathBuf {
    fn arg(&self) -> Option<String> {
        Some(self.display().to_string())
    }
}

impl Flag for &'static dyn Topology {
    fn arg(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

impl Flag for &'static dyn System {
    fn arg(&self) -> Option<String> {
        Some(self.name().to_string())
    }
}

impl Flag for &'static WorkloadKind {
    fn arg(&self) -> Option<String> {
        Some(self.name.to_string())
    }
}

impl Flag for Script {
    fn arg(&self) -> Option<String> {
        Some(self.from.display().to_string())
    }
}
