//! `edgectl rollout`: a staged rollout of an access-list configuration, read from the
//! cluster of the current kubeconfig context, and its Manual promotion.

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::CommandError;
use super::args::RolloutArgs;
use super::render::{escaped, sparkline};
use crate::controller::kinds::access_list::approval::{self, ApprovalRefused, RolloutView};
use crate::controller::kinds::access_list::resource::{Evidence, Tally};

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

/// The client of the cluster and the namespace of the object.
async fn cluster(args: &RolloutArgs) -> Result<(kube::Client, String), CommandError> {
    let unreachable = |e: String| CommandError::Refused(format!("cannot reach the cluster of the kubeconfig: {e}"));
    let config = config(args).await.map_err(unreachable)?;
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| config.default_namespace.clone());
    let client = kube::Client::try_from(config).map_err(|e| unreachable(e.to_string()))?;
    Ok((client, namespace))
}

/// A refusal as the terminal shows it: what a tenant wrote in status cannot move the
/// cursor or forge a line.
fn refused(refusal: ApprovalRefused) -> CommandError {
    CommandError::Refused(escaped(&refusal.to_string()))
}

/// The object's rollout, as its spec asks and its status says.
pub(crate) async fn status(args: &RolloutArgs) -> Result<RolloutView, CommandError> {
    let (client, namespace) = cluster(args).await?;
    approval::rollout_view(client, &namespace, &args.name)
        .await
        .map_err(refused)
}

/// Approves the evidence shown, if it is the operator's.
pub(crate) async fn promote(args: &RolloutArgs) -> Result<String, CommandError> {
    let (client, namespace) = cluster(args).await?;
    let (shown, evidence) = approval::approve(client, &namespace, &args.name)
        .await
        .map_err(refused)?;
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
    use crate::controller::kinds::access_list::approval::tests::{object, rollout};
    use crate::controller::kinds::access_list::resource::{Evidence, RolloutStage, RolloutStatus};

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
        let shown = render(&approval::view(object(Some(rollout()), Some(status))).expect("a rollout"));
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
}
