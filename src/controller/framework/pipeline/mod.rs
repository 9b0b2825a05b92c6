//! The reconcile pipeline: what a kind implements (`kind`), the driver that runs one
//! reconcile of it (`driver`), the registry every kind joins (`registry`) with what
//! `edgectl plan` asks of it (`plan`), the status it writes (`status`) and what is read
//! of any object (`object`).

pub(crate) mod driver;
pub(crate) mod kind;
pub(crate) mod object;
pub(crate) mod plan;
pub mod registry;
pub mod status;
