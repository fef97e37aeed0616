//! The models, one file each, and the table that names them.
//!
//! A new model is a file here implementing [`Model`](super::Model) and one line in
//! [`MODELS`].

mod counter;
mod multi_register;
mod mutex;
mod owner_mutex;
mod register;
mod set;

use super::RegisteredModel;

/// Every model the checker knows, by name.
pub static MODELS: &[RegisteredModel] = &[
    RegisteredModel::new(
        "register",
        "a read/write register, nil at first (knossos's register)",
        &register::Register::PLAIN,
    ),
    RegisteredModel::new(
        "cas-register",
        "a register with compare-and-set: value [expected, new] (knossos's cas-register)",
        &register::Register::CAS,
    ),
    RegisteredModel::new(
        "mutex",
        "a lock that anyone may release: acquire when free, release when held (knossos's mutex)",
        &mutex::Mutex,
    ),
    RegisteredModel::new(
        "owner-mutex",
        "a lock that only its holder, the process that acquired it, may release",
        &owner_mutex::OwnerMutex,
    ),
    RegisteredModel::new(
        "set",
        "a set: add an element, read all of them (an array, compared as a set)",
        &set::Set,
    ),
    RegisteredModel::new(
        "counter",
        "an integer counter from 0: add a delta, read the total",
        &counter::Counter,
    ),
    RegisteredModel::new(
        "multi-register",
        "named registers: read or write several at once as an object {register: value}, \
         or a txn [[f register value] ...] (knossos's multi-register)",
        &multi_register::MultiRegister,
    ),
];

/// The model registered as `name`.
pub fn find_model(name: &str) -> Option<&'static RegisteredModel> {
    MODELS.iter().find(|model| model.name == name)
}
