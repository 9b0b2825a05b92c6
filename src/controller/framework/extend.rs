//! What a kind may build beside its reconcile, each through a hook of
//! [`Reconcilable`](crate::controller::framework::pipeline::kind::Reconcilable): its
//! `edgectl plan` verdict, its own controllers (records or protections kept beside its
//! objects) and its validation probe.

pub(crate) use crate::controller::framework::pipeline::kind::{Reconciler, RefusedExample, Runner};
pub(crate) use crate::controller::framework::pipeline::plan::{MemberChange, Verdict};
