//! `edgectl rollout`: an AccessListConfig's staged rollout, read from the cluster of
//! the current kubeconfig context, and its Manual promotion.

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde::Serialize;
use serde_json::json;

use super::CommandError;
use super::args::RolloutArgs;
use super::render::{escaped, sparkline};
use crate::controller::kinds::access_list::resource::{AccessListConfig, Promotion, Rollout, RolloutStatus, Tally};
use crate::crd::ANNOTATION_PROMOTE;

/// What `rollout status` shows: the spec's rollout, where it stands, and Ready.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RolloutView {
    pub name: String,
    pub namespace: String,
    pub rollout: Rollout,
    pub status: RolloutStatus,
    pub ready: Option<String>,
}

async fn objects(args: &RolloutArgs) -> Result<Api<AccessListConfig>, CommandError> {
    let client = kube::Client::try_default()
        .await
        .map_err(|e| CommandError::Refused(format!("cannot reach the cluster of the kubeconfig: {e}")))?;
    Ok(match &args.namespace {
        Some(namespace) => Api::namespaced(client, namespace),
        None => Api::default_namespaced(client),
    })
}

fn refused(args: &RolloutArgs, what: &str, error: kube::Error) -> CommandError {
    CommandError::Refused(format!("cannot {what} AccessListConfig {}: {error}", args.name))
}

/// The object's rollout, as its spec asks and its status says.
pub(crate) async fn status(args: &RolloutArgs) -> Result<RolloutView, CommandError> {
    read(&objects(args).await?, args).await
}

async fn read(api: &Api<AccessListConfig>, args: &RolloutArgs) -> Result<RolloutView, CommandError> {
    let object = api
        .get_opt(&args.name)
        .await
        .map_err(|e| refused(args, "read", e))?
        .ok_or_else(|| CommandError::Refused(format!("no AccessListConfig {} in this namespace", args.name)))?;
    view(object)
}

fn view(object: AccessListConfig) -> Result<RolloutView, CommandError> {
    let name = object.name_any();
    let rollout = object
        .spec
        .rollout
        .clone()
        .ok_or_else(|| CommandError::Refused(format!("{name} has no spec.rollout")))?;
    let status = object.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .map(|c| format!("{:?} {}: {}", c.status, c.reason, c.message));
    let status = status.and_then(|s| s.rollout.clone()).ok_or_else(|| {
        CommandError::Refused(format!(
            "{name} has no rollout in status yet: the operator has not reconciled it"
        ))
    })?;
    Ok(RolloutView {
        namespace: object.namespace().unwrap_or_default(),
        name,
        rollout,
        status,
        ready,
    })
}

/// Approves the evidence shown: the annotation with its digest. Refused unless the
/// rollout is Manual and shows evidence.
pub(crate) async fn promote(args: &RolloutArgs) -> Result<String, CommandError> {
    let api = objects(args).await?;
    let shown = read(&api, args).await?;
    if shown.rollout.promotion != Promotion::Manual {
        return Err(CommandError::Refused(format!(
            "{} is promoted automatically (spec.rollout.promotion Automatic): nothing to approve",
            shown.name
        )));
    }
    let evidence =
        shown.status.evidence.as_ref().ok_or_else(|| {
            CommandError::Refused(format!("{} shows no evidence yet: nothing to approve", shown.name))
        })?;
    let patch = json!({"metadata": {"annotations": {ANNOTATION_PROMOTE: evidence.digest}}});
    api.patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| refused(args, "annotate", e))?;
    Ok(format!(
        "promotion of {} approved for evidence {}: {} matches from {} IPs from {} to {}\n",
        shown.name, evidence.digest, evidence.matches, evidence.distinct_ips, evidence.from, evidence.to
    ))
}

fn tallies(tallies: &[Tally]) -> String {
    if tallies.is_empty() {
        return "-".into();
    }
    let shown: Vec<String> = tallies.iter().map(|t| format!("{} {}", t.value, t.count)).collect();
    shown.join(", ")
}

/// The status as a table of its members.
pub(crate) fn render(view: &RolloutView) -> String {
    let rollout = &view.rollout;
    let status = &view.status;
    let gate = [
        rollout.max_matches.map(|n| format!("maxMatches {n}")),
        rollout.max_distinct_ips.map(|n| format!("maxDistinctIps {n}")),
        rollout.rollback_above.map(|n| format!("rollbackAbove {n}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    let mut rows = vec![
        (
            "Rollout",
            format!("{}/{}: Log, then {:?}", view.namespace, view.name, rollout.action),
        ),
        ("Stage", format!("{:?}", status.stage)),
        (
            "Window",
            format!(
                "{} from {}",
                rollout.window,
                status.window_start.as_deref().unwrap_or("(once the list logs)")
            ),
        ),
        (
            "Promotion",
            format!(
                "{:?}{}",
                rollout.promotion,
                if gate.is_empty() {
                    String::new()
                } else {
                    format!(" ({gate})")
                }
            ),
        ),
    ];
    if let Some(evidence) = &status.evidence {
        rows.extend([
            (
                "Evidence",
                format!("{} to {}, digest {}", evidence.from, evidence.to, evidence.digest),
            ),
            (
                "Matches",
                format!("{} from {} IPs", evidence.matches, evidence.distinct_ips),
            ),
            ("Over time", sparkline(&evidence.sparkline)),
            ("Top IPs", tallies(&evidence.top_ips)),
            ("Top countries", tallies(&evidence.top_countries)),
            ("Top ASNs", tallies(&evidence.top_asns)),
            ("Top URLs", tallies(&evidence.top_urls)),
        ]);
    }
    if let Some(at) = &status.promoted_at {
        rows.push(("Promoted", at.clone()));
    }
    if let Some(blocked) = status.blocked {
        rows.push(("Since", format!("{blocked} blocked within the last window")));
    }
    if let Some(at) = &status.rolled_back_at {
        rows.push(("Rolled back", at.clone()));
    }
    if let Some(ready) = &view.ready {
        rows.push(("Ready", ready.clone()));
    }
    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or_default();
    rows.iter()
        .map(|(label, value)| format!("{label:<width$}  {}\n", escaped(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::kinds::access_list::resource::{
        AccessListConfigSpec, AccessListConfigStatus, Evidence, RolloutAction, RolloutStage,
    };

    fn object(rollout: Option<Rollout>, status: Option<RolloutStatus>) -> AccessListConfig {
        let mut object = AccessListConfig::new(
            "staged",
            AccessListConfigSpec {
                shield_zone_id: 1001,
                configuration_id: Some(9101),
                list_name: None,
                enabled: true,
                action: None,
                management_policy: Default::default(),
                deletion_policy: Default::default(),
                access_key_secret_ref: None,
                rollout,
            },
        );
        object.metadata.namespace = Some("shop".into());
        object.status = Some(AccessListConfigStatus {
            rollout: status,
            ..AccessListConfigStatus::default()
        });
        object
    }

    fn rollout() -> Rollout {
        Rollout {
            action: RolloutAction::Block,
            window: "1h".into(),
            promotion: Promotion::Manual,
            max_matches: Some(10),
            max_distinct_ips: None,
            rollback_above: None,
            filters: Vec::new(),
        }
    }

    #[test]
    fn the_status_table_shows_the_evidence_an_approval_names() {
        let status = RolloutStatus {
            stage: RolloutStage::AwaitingApproval,
            window_start: Some("2026-11-28T10:00:00Z".into()),
            evidence: Some(Evidence {
                from: "2026-11-28T10:00:00Z".into(),
                to: "2026-11-28T11:00:00Z".into(),
                matches: 7,
                distinct_ips: 2,
                top_ips: vec![
                    Tally {
                        value: "192.0.2.1".into(),
                        count: 4,
                    },
                    Tally {
                        value: "192.0.2.2".into(),
                        count: 3,
                    },
                ],
                sparkline: vec![0, 3, 4],
                digest: "3fa2c9e1b0".into(),
                ..Evidence::default()
            }),
            ..RolloutStatus::default()
        };
        let shown = render(&view(object(Some(rollout()), Some(status))).expect("a rollout"));
        for expected in [
            "Stage          AwaitingApproval",
            "Promotion      Manual (maxMatches 10)",
            "digest 3fa2c9e1b0",
            "Matches        7 from 2 IPs",
            "Over time       ▆█",
            "Top IPs        192.0.2.1 4, 192.0.2.2 3",
            "Top countries  -",
        ] {
            assert!(shown.contains(expected), "{expected:?} in\n{shown}");
        }
    }

    #[test]
    fn an_object_without_a_rollout_or_not_reconciled_yet_is_refused_saying_so() {
        let Err(CommandError::Refused(message)) = view(object(None, None)) else {
            panic!("accepted an object without spec.rollout");
        };
        assert_eq!(message, "staged has no spec.rollout");
        let Err(CommandError::Refused(message)) = view(object(Some(rollout()), None)) else {
            panic!("accepted an object without a rollout in status");
        };
        assert!(message.contains("not reconciled"), "{message}");
    }
}
