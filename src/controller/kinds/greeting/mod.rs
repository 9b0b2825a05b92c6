//! Greeting: the smallest kind, for the tests. It joins with one registry line and
//! nothing else outside this folder; the driver gives it everything every kind has
//! (pause, the status contract, Events, metrics). Its reconcile reads the access lists
//! of a Shield Zone and says how many its key sees.

// KubeSchema re-declares the spec privately.
#![allow(unreachable_pub)]

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::controller::framework::prelude::{Context, Failure, NewCondition, Notice, Outcome, Reconcilable};
use crate::resources::{Condition, SecretKeyRef};

/// Greets the platform.
#[derive(CustomResource, Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "edgeplatform.io",
    version = "v1alpha1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct GreetingSpec {
    /// What to say.
    pub message: String,
    /// The Shield Zone whose access lists are counted.
    pub shield_zone_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_secret_ref: Option<SecretKeyRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

crate::resources::edge_object!(Greeting => GreetingStatus);

#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantNames)]
pub(crate) enum GreetingReason {
    Greeted,
}

/// No flags.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct GreetingSettings {}

impl Reconcilable for Greeting {
    const EXAMPLE: &'static str = "apiVersion: edgeplatform.io/v1alpha1\nkind: Greeting\nmetadata:\n  name: hello\nspec:\n  message: hello\n  shieldZoneId: 1001\n";

    type Reason = GreetingReason;
    type Settings = GreetingSettings;
    type State = ();

    async fn reconcile(
        &self,
        cx: &mut Context<'_, Self>,
    ) -> Result<Outcome<GreetingStatus, GreetingReason>, Failure<Self>> {
        let zone = self.spec.shield_zone_id;
        let lists = cx.client().await?.access_lists(zone).await?;
        let count = lists.managed_lists.len() + lists.custom_lists.len();
        let message = format!(
            "{}: the key sees {count} access lists of Shield Zone {zone}",
            self.spec.message
        );
        let ready = NewCondition::ready(true, GreetingReason::Greeted, message.clone());
        Ok(Outcome::new(GreetingStatus::default())
            .with_conditions([ready])
            .with_events([Notice::normal(GreetingReason::Greeted, message)]))
    }
}
