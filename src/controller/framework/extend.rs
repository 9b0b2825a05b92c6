//! What a kind may build beside its reconcile, each through a hook of
//! [`Reconcilable`](crate::controller::framework::pipeline::kind::Reconcilable): its
//! `edgectl plan` verdict, its own controllers (records or protections kept beside its
//! objects) and its validation probe, and the platform reads its reconciles share.

pub(crate) use crate::controller::framework::pipeline::kind::{
    Reconciler, RefusedExample, Runner, SecretChanges, SecretMeta,
};
pub(crate) use crate::controller::framework::pipeline::plan::{MemberChange, Verdict};
pub(crate) use crate::controller::framework::services::shared_reads::SharedReads;
