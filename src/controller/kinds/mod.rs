//! The registry of kinds: one folder per custom resource kind, each holding its
//! resource, its vocabulary, its flags and its whole pipeline, and the one list of
//! them ([`register`]) that the CRDs, the runtime, `edge-operator check`, `edgectl
//! plan` and the tests read.

pub mod access_list;
pub mod app_watch;
pub mod certificate;

#[cfg(test)]
mod driver_tests;

use std::sync::LazyLock;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

pub use self::access_list::resource::AccessListConfig;
pub use self::app_watch::resource::ContainerAppWatch;
pub use self::certificate::resource::PullZoneCertificate;
pub use crate::controller::framework::registry::{Kind, KindSettings};
use crate::controller::framework::registry::{Kinds, Registry, SettingsFlags, SettingsFromFlags};

/// Every kind the operator reconciles, in the order of their CRDs and flags.
pub(crate) fn register(registry: &mut impl Registry) {
    registry.register::<AccessListConfig>();
    registry.register::<PullZoneCertificate>();
    registry.register::<ContainerAppWatch>();
}

static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
    let mut kinds = Kinds::default();
    register(&mut kinds);
    kinds.0
});

impl Kind {
    /// The kinds the operator reconciles.
    pub fn all() -> &'static [Kind] {
        &KINDS
    }

    /// The kind called `name`, if the group has it.
    pub fn of(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|kind| kind.name() == name)
    }
}

/// Every CRD of the operator, in a stable order: the kinds users write, then the
/// records their controllers keep.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let kinds = Kind::all();
    kinds
        .iter()
        .map(|kind| kind.crd())
        .chain(kinds.iter().flat_map(|kind| kind.own_crds()))
        .collect()
}

impl clap::Args for KindSettings {
    fn augment_args(command: clap::Command) -> clap::Command {
        let mut flags = SettingsFlags(command);
        register(&mut flags);
        flags.0
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for KindSettings {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut read = SettingsFromFlags {
            matches,
            settings: KindSettings::default(),
            error: None,
        };
        register(&mut read);
        match read.error {
            Some(error) => Err(error),
            None => Ok(read.settings),
        }
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}
