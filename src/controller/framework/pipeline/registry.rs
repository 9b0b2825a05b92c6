//! The registry of kinds: each kind joins with one `registry.register::<K>()` line (in
//! `controller::kinds`), and everything that needs every kind visits them through a
//! `Registry` of its own: the CRDs and examples ([`Kind`]), the flags of
//! `edge-operator run` ([`KindSettings`]), the runtime's controllers, `edgectl plan`.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::ApiResource;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::controller::framework::pipeline::kind::{Reconcilable, RefusedExample};
use crate::controller::framework::pipeline::plan::{ClientSource, PlanFn, PlanRequest, Verdict};
use crate::resources::rewrite_schemas;

/// The words of `K`'s reasons that read back as themselves: what it writes.
fn written_reasons<K: Reconcilable>() -> Vec<&'static str> {
    <K::Reason as strum::VariantNames>::VARIANTS
        .iter()
        .copied()
        .filter(|word| word.parse::<K::Reason>().is_ok_and(|reason| reason.into() == *word))
        .collect()
}

/// What visits every kind of the operator.
pub(crate) trait Registry {
    fn register<K: Reconcilable>(&mut self);
}

/// A kind as everything but its controller sees it.
#[derive(Clone, Copy)]
pub struct Kind {
    name: &'static str,
    crd: fn() -> CustomResourceDefinition,
    own_crds: fn() -> Vec<CustomResourceDefinition>,
    api_resource: fn() -> ApiResource,
    example: &'static str,
    refused_example: fn() -> Option<RefusedExample>,
    reasons: fn() -> Vec<&'static str>,
    plan: PlanFn,
}

impl Kind {
    pub(crate) fn new<K: Reconcilable>() -> Self {
        Self {
            name: K::kind_name(),
            crd: K::crd,
            own_crds: K::own_crds,
            api_resource: || ApiResource::erase::<K>(&()),
            example: K::EXAMPLE,
            refused_example: K::refused_example,
            reasons: written_reasons::<K>,
            plan: plan_manifests::<K>,
        }
    }

    pub fn name(self) -> &'static str {
        self.name
    }

    /// Its CustomResourceDefinition, as `crds/` holds it.
    pub fn crd(self) -> CustomResourceDefinition {
        rewrite_schemas((self.crd)())
    }

    /// The CRDs of the records the kind's controllers keep beside its objects.
    pub fn own_crds(self) -> Vec<CustomResourceDefinition> {
        (self.own_crds)().into_iter().map(rewrite_schemas).collect()
    }

    /// Its API resource, for untyped access.
    pub fn api_resource(self) -> ApiResource {
        (self.api_resource)()
    }

    /// The reasons of its own it writes (in conditions, Events and metric labels)
    /// beside those every kind writes.
    pub fn reasons(self) -> Vec<&'static str> {
        (self.reasons)()
    }

    /// Its example manifest in `examples/`.
    pub fn example(self) -> &'static str {
        self.example
    }

    /// What `edgectl plan` says for each request, in their order.
    pub(crate) fn plan(self, requests: Vec<PlanRequest>, clients: &dyn ClientSource) -> BoxFuture<'_, Vec<Verdict>> {
        (self.plan)(requests, clients)
    }

    /// A manifest its CRD refuses, when its CRD has validation rules to check.
    pub fn refused_example(self) -> Option<RefusedExample> {
        (self.refused_example)()
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Kind {}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Collects every kind as a [`Kind`].
#[derive(Default)]
pub(crate) struct Kinds(pub Vec<Kind>);

impl Registry for Kinds {
    fn register<K: Reconcilable>(&mut self) {
        self.0.push(Kind::new::<K>());
    }
}

/// A kind's settings, whatever their type.
trait AnySettings: Any + Send + Sync + fmt::Debug {
    fn clone_boxed(&self) -> Box<dyn AnySettings>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<S: Any + Send + Sync + fmt::Debug + Clone> AnySettings for S {
    fn clone_boxed(&self) -> Box<dyn AnySettings> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Each kind's flags of `edge-operator run`, by kind: `clap` fills them through the
/// registry (`controller::kinds`).
#[derive(Debug, Default)]
pub struct KindSettings(BTreeMap<&'static str, Box<dyn AnySettings>>);

impl Clone for KindSettings {
    fn clone(&self) -> Self {
        Self(
            self.0
                .iter()
                .map(|(kind, settings)| (*kind, AnySettings::clone_boxed(settings.as_ref())))
                .collect(),
        )
    }
}

impl KindSettings {
    pub(crate) fn insert<K: Reconcilable>(&mut self, settings: K::Settings) {
        self.0.insert(K::kind_name(), Box::new(settings));
    }

    /// The settings of kind `K`; `None` only for a kind that was not registered when
    /// the flags were parsed.
    pub(crate) fn get<K: Reconcilable>(&self) -> Option<&K::Settings> {
        self.0
            .get(K::kind_name())
            .and_then(|settings| AnySettings::as_any(settings.as_ref()).downcast_ref())
    }

    pub(crate) fn get_mut<K: Reconcilable>(&mut self) -> Option<&mut K::Settings> {
        self.0
            .get_mut(K::kind_name())
            .and_then(|settings| AnySettings::as_any_mut(settings.as_mut()).downcast_mut())
    }
}

/// Adds every kind's flags to a command.
pub(crate) struct SettingsFlags(pub clap::Command);

impl Registry for SettingsFlags {
    fn register<K: Reconcilable>(&mut self) {
        self.0 = <K::Settings as clap::Args>::augment_args(std::mem::take(&mut self.0));
    }
}

/// Reads every kind's flags from parsed arguments.
pub(crate) struct SettingsFromFlags<'a> {
    pub matches: &'a clap::ArgMatches,
    pub settings: KindSettings,
    pub error: Option<clap::Error>,
}

impl Registry for SettingsFromFlags<'_> {
    fn register<K: Reconcilable>(&mut self) {
        match <K::Settings as clap::FromArgMatches>::from_arg_matches(self.matches) {
            Ok(settings) => self.settings.insert::<K>(settings),
            Err(error) => {
                self.error.get_or_insert(error);
            }
        }
    }
}

/// Decodes the manifests of kind `K`, finds each one's client and asks the kind
/// ([`Reconcilable::plan`]) for the verdicts of those that decode.
pub(crate) fn plan_manifests<K: Reconcilable>(
    requests: Vec<PlanRequest>,
    clients: &dyn ClientSource,
) -> BoxFuture<'_, Vec<Verdict>> {
    let mut verdicts: Vec<Option<Verdict>> = Vec::with_capacity(requests.len());
    let mut objects = Vec::new();
    for request in requests {
        match serde_json::from_value::<K>(request.manifest) {
            Ok(object) => {
                let client = clients.client_for(&request.namespace, object.secret_ref());
                objects.push((object, client));
                verdicts.push(None);
            }
            Err(error) => verdicts.push(Some(Verdict::Error {
                detail: error.to_string(),
            })),
        }
    }
    async move {
        let mut planned = K::plan(objects).await.into_iter();
        verdicts
            .into_iter()
            .map(|verdict| {
                verdict.or_else(|| planned.next()).unwrap_or(Verdict::Error {
                    detail: "the kind planned fewer objects than it was given".to_string(),
                })
            })
            .collect()
    }
    .boxed()
}
