//! What a kind imports from the framework, six names: the trait it implements
//! ([`Reconcilable`]), the context one reconcile sees ([`Context`]: the services through
//! its methods, the time through `cx.now`), what a reconcile returns ([`Outcome`]: its
//! status, the conditions it decided ([`NewCondition`]), its Events ([`Notice`])) and
//! what it fails with ([`Failure`]). Beside these a kind may build what
//! `framework::extend` offers, and writes its reasons with `framework::reasons`.

pub(crate) use crate::controller::framework::pipeline::kind::{Context, Failure, Notice, Outcome, Reconcilable};
pub(crate) use crate::controller::framework::pipeline::status::conditions::NewCondition;
