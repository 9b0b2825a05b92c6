//! A staged rollout as a person sees it (`edgectl rollout status`), and its approval by
//! hand (`edgectl rollout promote`): the evidence shown is approved only when it is the
//! one the operator recorded in the object's claim.

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde::Serialize;
use serde_json::json;

use super::claim_resource::AccessListClaim;
use super::resource::{AccessListConfig, Evidence, Rollout, RolloutStage, RolloutStatus};
use crate::resources::ANNOTATION_PROMOTE;

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

/// Why a rollout cannot be shown or approved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApprovalRefused {
    #[error("no AccessListConfig {0} in this namespace")]
    NotFound(String),
    #[error("cannot {what} AccessListConfig {name}: {source}")]
    Kubernetes {
        what: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("{0} has no spec.rollout")]
    NoRollout(String),
    #[error("{0} has no rollout in status yet: the operator has not reconciled it")]
    NotReconciled(String),
    #[error(
        "cannot verify the evidence of {name}: reading AccessListClaim {claim} failed ({source}); approvers need `get` on accesslistclaims (the chart's ClusterRole <release>-rollout-approver)"
    )]
    ClaimUnreadable {
        name: String,
        claim: String,
        source: kube::Error,
    },
    #[error(
        "{0}'s evidence cannot be verified: no AccessListClaim of this object records a rollout of its generation; nothing approved"
    )]
    Unverifiable(String),
    #[error("{0}'s window is still running, its evidence growing: approve once it awaits approval")]
    WindowRunning(String),
    #[error("{name}'s rollout is {stage:?}: nothing to approve")]
    NothingToApprove { name: String, stage: RolloutStage },
    #[error(
        "{name}'s status.rollout is not what the operator recorded (evidence {shown} in status, {recorded} in its record): not written by the operator, or not yet mirrored; nothing approved"
    )]
    NotRecorded {
        name: String,
        shown: String,
        recorded: String,
    },
}

async fn get(api: &Api<AccessListConfig>, name: &str) -> Result<AccessListConfig, ApprovalRefused> {
    api.get_opt(name)
        .await
        .map_err(|source| ApprovalRefused::Kubernetes {
            what: "read",
            name: name.to_string(),
            source,
        })?
        .ok_or_else(|| ApprovalRefused::NotFound(name.to_string()))
}

/// The rollout of object `name` in `namespace`, as its spec asks and its status says.
pub(crate) async fn rollout_view(
    client: kube::Client,
    namespace: &str,
    name: &str,
) -> Result<RolloutView, ApprovalRefused> {
    view(get(&Api::namespaced(client, namespace), name).await?)
}

pub(crate) fn view(object: AccessListConfig) -> Result<RolloutView, ApprovalRefused> {
    let name = object.name_any();
    let rollout = object
        .spec
        .rollout
        .clone()
        .ok_or_else(|| ApprovalRefused::NoRollout(name.clone()))?;
    let status = object.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .map(|c| format!("{:?} {}: {}", c.status, c.reason, c.message));
    let status = status
        .and_then(|s| s.rollout.clone())
        .ok_or_else(|| ApprovalRefused::NotReconciled(name.clone()))?;
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
/// object's AccessListClaim records for its generation. Answers what was approved.
pub(crate) async fn approve(
    client: kube::Client,
    namespace: &str,
    name: &str,
) -> Result<(RolloutView, Evidence), ApprovalRefused> {
    let api: Api<AccessListConfig> = Api::namespaced(client.clone(), namespace);
    let object = get(&api, name).await?;
    let record = match object.status.as_ref().and_then(|s| s.claim.as_deref()) {
        Some(claim) => Api::<AccessListClaim>::all(client)
            .get_opt(claim)
            .await
            .map_err(|source| ApprovalRefused::ClaimUnreadable {
                name: name.to_string(),
                claim: claim.to_string(),
                source,
            })?,
        None => None,
    };
    let (uid, generation) = (object.uid().unwrap_or_default(), object.metadata.generation);
    let recorded = record
        .filter(|record| record.spec.owner.uid == uid)
        .and_then(|record| record.spec.rollout)
        .filter(|rollout| rollout.observed_generation == generation);
    let shown = view(object)?;
    let evidence = approvable(&shown, recorded.as_ref())?.clone();
    let patch = json!({"metadata": {"annotations": {ANNOTATION_PROMOTE: evidence.digest}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| ApprovalRefused::Kubernetes {
            what: "annotate",
            name: name.to_string(),
            source,
        })?;
    Ok((shown, evidence))
}

/// The evidence a person may approve: the one status shows, if the rollout awaits
/// approval or is held, and the operator's record holds the same evidence.
fn approvable<'a>(shown: &'a RolloutView, recorded: Option<&RolloutStatus>) -> Result<&'a Evidence, ApprovalRefused> {
    let name = shown.name.clone();
    let Some(recorded) = recorded else {
        return Err(ApprovalRefused::Unverifiable(name));
    };
    match recorded.stage {
        RolloutStage::Held | RolloutStage::AwaitingApproval => {}
        RolloutStage::Logging => return Err(ApprovalRefused::WindowRunning(name)),
        stage => return Err(ApprovalRefused::NothingToApprove { name, stage }),
    }
    let evidence = shown
        .status
        .evidence
        .as_ref()
        .filter(|&evidence| recorded.evidence.as_ref() == Some(evidence) && recorded.stage == shown.status.stage);
    evidence.ok_or_else(|| ApprovalRefused::NotRecorded {
        name,
        shown: shown
            .status
            .evidence
            .as_ref()
            .map_or("none".to_string(), |e| e.digest.clone()),
        recorded: recorded
            .evidence
            .as_ref()
            .map_or("none".to_string(), |e| e.digest.clone()),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::controller::kinds::access_list::resource::{
        AccessListConfigSpec, AccessListConfigStatus, Promotion, RolloutAction,
    };

    pub(crate) fn object(rollout: Option<Rollout>, status: Option<RolloutStatus>) -> AccessListConfig {
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

    pub(crate) fn rollout() -> Rollout {
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

    fn refusal(result: Result<&Evidence, ApprovalRefused>) -> String {
        match result {
            Err(refused) => refused.to_string(),
            Ok(evidence) => panic!("approved: {evidence:?}"),
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
        let message = view(object(None, None)).err().map(|e| e.to_string());
        assert_eq!(message.as_deref(), Some("staged has no spec.rollout"));
        let message = view(object(Some(rollout()), None))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains("not reconciled"), "{message}");
    }
}
