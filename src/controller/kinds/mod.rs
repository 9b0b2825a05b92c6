//! The registry of kinds: one folder per custom resource kind, each holding its
//! resource, its vocabulary, its flags and its whole pipeline, and the one list of
//! them that the CRDs, the runtime, `edge-operator check`, `edgectl plan` and the tests
//! read.

pub mod access_list;
pub mod app_watch;
pub mod certificate;

#[cfg(test)]
mod driver_tests;

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

pub use self::access_list::resource::AccessListConfig;
use self::access_list::{AccessListSettings, ClaimRecords};
use self::app_watch::AppWatchSettings;
pub use self::app_watch::resource::ContainerAppWatch;
use self::certificate::CertificateSettings;
pub use self::certificate::resource::PullZoneCertificate;
use crate::controller::framework::kind::Reconciler;
use crate::controller::framework::runner::Runner;
use crate::controller::framework::shared::Shared;
use crate::crd::rewrite_schemas;

/// The kinds the operator reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    AccessListConfig,
    PullZoneCertificate,
    ContainerAppWatch,
}

impl Kind {
    pub const ALL: [Kind; 3] = [
        Kind::AccessListConfig,
        Kind::PullZoneCertificate,
        Kind::ContainerAppWatch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::AccessListConfig => "AccessListConfig",
            Kind::PullZoneCertificate => "PullZoneCertificate",
            Kind::ContainerAppWatch => "ContainerAppWatch",
        }
    }

    /// The kind called `name`, if the group has it.
    pub fn of(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Its CustomResourceDefinition, as `crds/` holds it.
    pub fn crd(self) -> CustomResourceDefinition {
        rewrite_schemas(match self {
            Kind::AccessListConfig => AccessListConfig::crd(),
            Kind::PullZoneCertificate => PullZoneCertificate::crd(),
            Kind::ContainerAppWatch => ContainerAppWatch::crd(),
        })
    }

    /// Its API resource, for untyped access.
    pub fn api_resource(self) -> kube::core::ApiResource {
        match self {
            Kind::AccessListConfig => kube::core::ApiResource::erase::<AccessListConfig>(&()),
            Kind::PullZoneCertificate => kube::core::ApiResource::erase::<PullZoneCertificate>(&()),
            Kind::ContainerAppWatch => kube::core::ApiResource::erase::<ContainerAppWatch>(&()),
        }
    }

    /// Its example manifest in `examples/`.
    pub fn example(self) -> &'static str {
        match self {
            Kind::AccessListConfig => include_str!("../../../examples/access-list-config.yaml"),
            Kind::PullZoneCertificate => include_str!("../../../examples/pull-zone-certificate.yaml"),
            Kind::ContainerAppWatch => include_str!("../../../examples/container-app-watch.yaml"),
        }
    }
}

/// Each kind's flags of `edge-operator run`.
#[derive(Debug, Clone, clap::Args)]
pub struct KindSettings {
    #[command(flatten)]
    pub access_lists: AccessListSettings,
    #[command(flatten)]
    pub certificates: CertificateSettings,
    #[command(flatten)]
    pub app_watches: AppWatchSettings,
}

/// How many reconciles of one kind run at once: `reconciles` of the kinds that write,
/// `polls` of those that observe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Concurrency {
    pub reconciles: u16,
    pub polls: u16,
}

impl Kind {
    /// Its controller, run by `runner` with its `subscription`. AccessListConfig's reconciler is
    /// `access_lists`, which the runtime shares with the protection of Secrets and the
    /// claim records; its controller first records the owners 0.2.0 decided as claim
    /// records, and waits for the records to be listed.
    pub(crate) fn controller<'a, R: Runner>(
        self,
        runner: &'a R,
        subscription: R::Subscription,
        shared: &Arc<Shared>,
        settings: &KindSettings,
        concurrency: Concurrency,
        access_lists: &Arc<Reconciler<AccessListConfig>>,
    ) -> BoxFuture<'a, ()> {
        match self {
            Kind::AccessListConfig => {
                let reconciler = access_lists.clone();
                let record = settings.access_lists.carry_over_record.clone();
                async move {
                    let shared = &reconciler.shared;
                    let (objects, watch) = (runner.api(), runner.watch_config());
                    let platform = shared.access_keys.platform_url();
                    ClaimRecords::rename_all_respelled(&shared.kube, platform).await;
                    let record = record.as_ref();
                    let carried = ClaimRecords::carry_over(&shared.kube, platform, record, &objects, &watch).await;
                    if carried > 0 {
                        tracing::info!(
                            carried,
                            "recorded the owners of access-list configurations of the previous release"
                        );
                    }
                    reconciler.state.claims.listed().await;
                    runner.run(reconciler, subscription, concurrency.reconciles).await;
                }
                .boxed()
            }
            Kind::PullZoneCertificate => {
                let reconciler = Reconciler::<PullZoneCertificate>::new(shared.clone(), settings.certificates.clone());
                runner
                    .run(Arc::new(reconciler), subscription, concurrency.reconciles)
                    .boxed()
            }
            Kind::ContainerAppWatch => {
                let reconciler = Reconciler::<ContainerAppWatch>::new(shared.clone(), settings.app_watches.clone());
                runner
                    .run(Arc::new(reconciler), subscription, concurrency.polls)
                    .boxed()
            }
        }
    }
}

/// Every CRD of the operator, in a stable order: the kinds users write, then the
/// operator's own records.
pub fn crds() -> Vec<CustomResourceDefinition> {
    Kind::ALL
        .into_iter()
        .map(Kind::crd)
        .chain([rewrite_schemas(access_list::claim_resource::AccessListClaim::crd())])
        .collect()
}
