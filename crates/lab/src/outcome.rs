//! What a run gives: the record of a simulated run ([`Simulated`]) or why
//! the run could not be done ([`RunError`]). Its own module, below the
//! modules that run things (exec, kernel, scenario, vm), which all return
//! them.

use crate::spec::SpecError;
use serde_json::Value;
use sim::run::{SimError, SimResult};

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The specification is wrong.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The simulator refused or failed the run.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The native run failed.
    #[error(transparent)]
    Native(#[from] native::Error),
    /// The kernel run failed (qemu, the boot, the guest's reports).
    #[error(transparent)]
    Kernel(#[from] oracle::OracleError),
}

/// A finished simulated run: the simulator's record plus the workload's
/// parameters as the run used them.
pub struct Simulated {
    /// The simulator's record.
    pub result: SimResult,
    /// The workload's parameters (`params` in `schedlab sim --json`).
    pub params: Value,
}
