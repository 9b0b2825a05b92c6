//! `edgectl rollout`: an AccessListConfig's staged rollout, read from the cluster of
//! the current kubeconfig context, and its Manual promotion.

use kube::api::{Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, ResourceExt};
use serde::Serialize;
use serde_json::json;

use super::CommandError;
use super::args::RolloutArgs;
use super::render::{escaped, sparkline};
use crate::controller::kinds::access_list::claim_resource::AccessListClaim;
use crate::controller::kinds::access_list::resource::{
    AccessListConfig, Evidence, Rollout, RolloutStage, RolloutStatus, Tally,
};
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

/// The cluster of `--kubeconfig` and `--context`, as kubectl would find it otherwise.
async fn config(args: &RolloutArgs) -> Result<kube::Config, String> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    match (&args.kubeconfig, &args.context) {
        (Some(path), _) => {
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| format!("{}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| e.to_string())
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options).await.map_err(|e| e.to_string()),
        (None, None) => kube::Config::infer().await.map_err(|e| e.to_string()),
    }
}

async fn objects(args: &RolloutArgs) -> Result<Api<AccessListConfig>, CommandError> {
    let unreachable = |e: String| CommandError::Refused(format!("cannot reach the cluster of the kubeconfig: {e}"));
    let config = config(args).await.map_err(unreachable)?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config).map_err(|e| unreachable(e.to_string()))?;
    Ok(Api::namespaced(client, &namespace))
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
/// rollout awaits approval or is held, and the evidence is the operator's: the one the
/// object's AccessListClaim records for its generation.
pub(crate) async fn promote(args: &RolloutArgs) -> Result<String, CommandError> {
    let api = objects(args).await?;
    let object = api
        .get_opt(&args.name)
        .await
        .map_err(|e| refused(args, "read", e))?
        .ok_or_else(|| CommandError::Refused(format!("no AccessListConfig {} in this namespace", args.name)))?;
    let record = match object.status.as_ref().and_then(|s| s.claim.as_deref()) {
        Some(name) => Api::<AccessListClaim>::all(api.clone().into_client())
            .get_opt(name)
            .await
            .map_err(|e| {
                CommandError::Refused(format!(
                    "cannot verify the evidence of {}: reading AccessListClaim {name} failed ({e}); approvers need `get` on accesslistclaims (the chart's ClusterRole <release>-rollout-approver)",
                    args.name
                ))
            })?,
        None => None,
    };
    let (uid, generation) = (object.uid().unwrap_or_default(), object.metadata.generation);
    let recorded = record
        .filter(|record| record.spec.owner.uid == uid)
        .and_then(|record| record.spec.rollout)
        .filter(|rollout| rollout.observed_generation == generation);
    let shown = view(object)?;
    let evidence = approvable(&shown, recorded.as_ref())?;
    let patch = json!({"metadata": {"annotations": {ANNOTATION_PROMOTE: evidence.digest}}});
    api.patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| refused(args, "annotate", e))?;
    Ok(format!(
        "promotion of {} approved for evidence {}: {} matches from {} IPs from {} to {}\n",
        shown.name,
        escaped(&evidence.digest),
        evidence.matches,
        evidence.distinct_ips,
        escaped(&evidence.from),
        escaped(&evidence.to)
    ))
}

/// The evidence a person may approve: the one status shows, if the rollout awaits
/// approval or is held, and the operator's record holds the same evidence.
fn approvable<'a>(shown: &'a RolloutView, recorded: Option<&RolloutStatus>) -> Result<&'a Evidence, CommandError> {
    let name = &shown.name;
    let Some(recorded) = recorded else {
        return Err(CommandError::Refused(format!(
            "{name}'s evidence cannot be verified: no AccessListClaim of this object records a rollout of its generation; nothing approved"
        )));
    };
    match recorded.stage {
        RolloutStage::Held | RolloutStage::AwaitingApproval => {}
        RolloutStage::Logging => {
            return Err(CommandError::Refused(format!(
                "{name}'s window is still running, its evidence growing: approve once it awaits approval"
            )));
        }
        stage => {
            return Err(CommandError::Refused(format!(
                "{name}'s rollout is {stage:?}: nothing to approve"
            )));
        }
    }
    let evidence = shown
        .status
        .evidence
        .as_ref()
        .filter(|&evidence| recorded.evidence.as_ref() == Some(evidence) && recorded.stage == shown.status.stage);
    evidence.ok_or_else(|| {
        CommandError::Refused(format!(
            "{name}'s status.rollout is not what the operator recorded (evidence {} in status, {} in its record): not written by the operator, or not yet mirrored; nothing approved",
            shown.status.evidence.as_ref().map_or("none".to_string(), |e| escaped(&e.digest)),
            recorded.evidence.as_ref().map_or("none", |e| e.digest.as_str())
        ))
    })
}

fn tallies(tallies: &[Tally]) -> String {
    if tallies.is_empty() {
        return "-".into();
    }
    let shown: Vec<String> = tallies.iter().map(|t| format!("{} {}", t.value, t.count)).collect();
    shown.join(", ")
}

/// One row of the table: its label and value.
type Row = (&'static str, String);

/// The status as a table of its members.
pub(crate) fn render(view: &RolloutView) -> String {
    let mut rows = spec_rows(view);
    if let Some(evidence) = &view.status.evidence {
        rows.extend(evidence_rows(evidence));
    }
    rows.extend(outcome_rows(view));
    let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or_default();
    rows.iter()
        .map(|(label, value)| format!("{label:<width$}  {}\n", escaped(value)))
        .collect()
}

/// What the spec asks and where the rollout stands: action, stage, window, promotion
/// and its gate.
fn spec_rows(view: &RolloutView) -> Vec<Row> {
    let rollout = &view.rollout;
    let status = &view.status;
    let gate = [
        rollout.max_matches.map(|n| format!("maxMatches {n}")),
        rollout.max_distinct_ips.map(|n| format!("maxDistinctIps {n}")),
        rollout
            .rollback_above_sources
            .map(|n| format!("rollbackAboveSources {n}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    vec![
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
    ]
}

/// What the window's evidence shows.
fn evidence_rows(evidence: &Evidence) -> [Row; 7] {
    [
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
    ]
}

/// What became of the rollout, where it got that far: promotion, probation, rollback,
/// and the object's Ready.
fn outcome_rows(view: &RolloutView) -> Vec<Row> {
    let status = &view.status;
    let mut rows = Vec::new();
    if let Some(at) = &status.promoted_at {
        rows.push(("Promoted", at.clone()));
    }
    if let Some(ends) = &status.probation_ends {
        let blocked = status.blocked.unwrap_or_default();
        let sources = status.blocked_sources.unwrap_or_default();
        rows.push((
            "Probation",
            format!(
                "until {ends}: {blocked} {} from {sources} sources",
                view.rollout.action.past_tense()
            ),
        ));
    }
    if let Some(at) = &status.rolled_back_at {
        rows.push(("Rolled back", at.clone()));
    }
    if let Some(ready) = &view.ready {
        rows.push(("Ready", ready.clone()));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::kinds::access_list::resource::{
        AccessListConfigSpec, AccessListConfigStatus, Promotion, RolloutAction,
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
            rollback_above_sources: None,
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

    fn awaiting(digest: &str) -> RolloutStatus {
        RolloutStatus {
            stage: RolloutStage::AwaitingApproval,
            evidence: Some(Evidence {
                matches: 7,
                digest: digest.into(),
                ..Evidence::default()
            }),
            ..RolloutStatus::default()
        }
    }

    fn refusal(result: Result<&Evidence, CommandError>) -> String {
        match result {
            Err(CommandError::Refused(message)) => message,
            other => panic!("approved: {other:?}"),
        }
    }

    #[test]
    fn only_the_evidence_the_operator_recorded_is_approved() {
        let recorded = awaiting("00112233445566778899aabbccddeeff");
        let honest = view(object(Some(rollout()), Some(recorded.clone()))).expect("a rollout");
        let approved = approvable(&honest, Some(&recorded)).expect("approved");
        assert_eq!(approved.digest, "00112233445566778899aabbccddeeff");

        let mut forged_status = recorded.clone();
        if let Some(evidence) = forged_status.evidence.as_mut() {
            evidence.matches = 0;
        }
        let forged = view(object(Some(rollout()), Some(forged_status))).expect("a rollout");
        let message = refusal(approvable(&forged, Some(&recorded)));
        assert!(message.contains("not what the operator recorded"), "{message}");
        let message = refusal(approvable(&honest, None));
        assert!(message.contains("cannot be verified"), "{message}");
        let promoted = RolloutStatus {
            stage: RolloutStage::Promoted,
            ..recorded.clone()
        };
        let shown = view(object(Some(rollout()), Some(promoted.clone()))).expect("a rollout");
        assert!(refusal(approvable(&shown, Some(&promoted))).contains("Promoted"));
    }

    #[test]
    fn a_held_rollout_is_approved_by_hand_whatever_its_promotion_and_a_running_window_is_not() {
        let automatic = Rollout {
            promotion: Promotion::Automatic,
            ..rollout()
        };
        let held = RolloutStatus {
            stage: RolloutStage::Held,
            ..awaiting("ffeeddccbbaa99887766554433221100")
        };
        let shown = view(object(Some(automatic.clone()), Some(held.clone()))).expect("a rollout");
        assert!(approvable(&shown, Some(&held)).is_ok());
        let logging = RolloutStatus {
            stage: RolloutStage::Logging,
            ..awaiting("ffeeddccbbaa99887766554433221100")
        };
        let shown = view(object(Some(automatic), Some(logging.clone()))).expect("a rollout");
        assert!(refusal(approvable(&shown, Some(&logging))).contains("still running"));
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
