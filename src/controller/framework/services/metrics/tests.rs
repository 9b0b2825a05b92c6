use super::*;
use crate::api::ApiFailure;
use crate::controller::framework::pipeline::status::conditions::{NewCondition, merge};
use crate::controller::framework::pipeline::status::kstatus::{decided_ready, settled_with_ready};
use crate::controller::framework::reasons::{ConditionType, NoOwnReason, Reason};

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn the_standard_process_metrics_build_and_leadership_are_exposed() {
    let metrics = Metrics::default();
    metrics.set_leader(true);
    let text = metrics.encode();
    for series in [
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_max_fds",
    ] {
        assert!(sample(&text, series).is_some_and(|v| v > 0.0), "{series}: {text}");
    }
    assert!(sample(&text, "process_cpu_seconds_total").is_some(), "{text}");
    assert_eq!(
        sample(
            &text,
            &format!("edge_operator_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"))
        ),
        Some(1.0)
    );
    assert_eq!(sample(&text, "edge_operator_leader"), Some(1.0));
    metrics.set_leader(false);
    assert_eq!(sample(&metrics.encode(), "edge_operator_leader"), Some(0.0));
}

#[test]
fn reconciles_count_by_result_and_requests_by_latency_and_quota_wait() {
    let metrics = Metrics::default();
    metrics.reconciled::<NoOwnReason>("Widget", Duration::from_millis(2), None);
    metrics.reconciled(
        "Widget",
        Duration::from_millis(2),
        Some(AnyReason::<NoOwnReason>::from(ApiFailure::RateLimited)),
    );
    metrics.record(Operation::UpdateAccessList, "2xx", Duration::from_millis(30));
    metrics.quota_wait(Lane::Poll, true);
    metrics.quota_wait(Lane::Poll, true);
    metrics.quota_wait(Lane::Poll, false);
    let text = metrics.encode();
    for (series, value) in [
        (r#"edge_operator_reconciles_total{kind="Widget",result="success"}"#, 1.0),
        (r#"edge_operator_reconciles_total{kind="Widget",result="error"}"#, 1.0),
        (
            r#"edge_operator_platform_request_duration_seconds_count{operation="update_access_list",status_class="2xx"}"#,
            1.0,
        ),
        (
            r#"edge_operator_platform_request_duration_seconds_bucket{le="0.04",operation="update_access_list",status_class="2xx"}"#,
            1.0,
        ),
        (
            r#"edge_operator_platform_request_duration_seconds_bucket{le="0.02",operation="update_access_list",status_class="2xx"}"#,
            0.0,
        ),
        (r#"edge_operator_platform_quota_waiting{lane="poll"}"#, 1.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series}: {text}");
    }
}

#[test]
fn condition_gauges_follow_the_current_reason_only() {
    let metrics = Metrics::new(true);
    let ready = merge(
        &[],
        &[NewCondition::<NoOwnReason>::new(
            ConditionType::Ready,
            false,
            ApiFailure::Rejected,
            "",
        )],
        None,
        "t",
    );
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "cert", &ready, &[]);
    let issued = merge(
        &ready,
        &[NewCondition::<NoOwnReason>::new(
            ConditionType::Ready,
            true,
            Reason::Reconciled,
            "",
        )],
        None,
        "t2",
    );
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "cert", &issued, &[]);
    metrics.record(Operation::CompleteCertificate, "2xx", Duration::ZERO);
    metrics.reconciled(
        "Widget",
        Duration::from_millis(3),
        Some(AnyReason::<NoOwnReason>::from(ApiFailure::ServerError)),
    );
    let text = metrics.encode();
    assert!(text.contains(r#"reason="Reconciled""#), "{text}");
    assert!(!text.contains(r#"reason="Rejected""#), "{text}");
    assert!(
        text.contains(
            r#"edge_operator_platform_requests_total{operation="complete_certificate",status_class="2xx"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"edge_operator_reconcile_errors_total{kind="Widget",reason="ServerError"} 1"#),
        "{text}"
    );
    metrics.forget("Widget", "ns", "cert");
    assert!(!metrics.encode().contains(r#"name="cert""#));
}

#[test]
fn a_condition_that_went_away_is_no_longer_exposed() {
    let metrics = Metrics::new(true);
    let stalled = settled_with_ready(&[], false, ApiFailure::Unauthorized, "t");
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "cert", &stalled, &[]);
    assert!(metrics.encode().contains(r#"condition="Stalled""#));
    let issued = settled_with_ready(&stalled, true, Reason::Reconciled, "t2");
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "cert", &issued, &[]);
    let text = metrics.encode();
    assert!(!text.contains(r#"condition="Stalled""#), "{text}");
    assert!(text.contains(r#"reason="Reconciled""#), "{text}");
}

#[test]
fn objects_are_counted_by_condition_and_each_object_shows_only_when_asked() {
    let metrics = Metrics::default();
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "a", &decided_ready(true, Reason::Reconciled, 1), &[]);
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "b", &decided_ready(true, Reason::Reconciled, 1), &[]);
    metrics.set_conditions::<NoOwnReason>(
        "Widget",
        "ns",
        "c",
        &decided_ready(false, ApiFailure::Unauthorized, 1),
        &[],
    );
    let ready_true = r#"edge_operator_objects{kind="Widget",condition="Ready",status="True",reason="Reconciled"}"#;
    let ready_false = r#"edge_operator_objects{kind="Widget",condition="Ready",status="False",reason="Unauthorized"}"#;
    let text = metrics.encode();
    assert_eq!(
        (sample(&text, ready_true), sample(&text, ready_false)),
        (Some(2.0), Some(1.0)),
        "{text}"
    );
    assert!(
        !text.contains("edge_operator_condition"),
        "no series per object by default: {text}"
    );
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "c", &decided_ready(true, Reason::Reconciled, 1), &[]);
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "c", &decided_ready(true, Reason::Reconciled, 1), &[]);
    metrics.forget("Widget", "ns", "a");
    let text = metrics.encode();
    assert_eq!(
        (sample(&text, ready_true), sample(&text, ready_false)),
        (Some(2.0), None),
        "{text}"
    );
    // A list that no longer holds c (deleted while the watch was away) forgets it.
    metrics.forget_all_but("Widget", |namespace, name| (namespace, name) == ("ns", "b"));
    let text = metrics.encode();
    assert_eq!(
        (sample(&text, ready_true), sample(&text, ready_false)),
        (Some(1.0), None),
        "{text}"
    );
    metrics.forget("Widget", "ns", "b");
    assert!(
        !metrics.encode().contains("edge_operator_objects{"),
        "a count of zero is not exposed"
    );

    let per_object = Metrics::new(true);
    per_object.set_conditions::<NoOwnReason>("Widget", "ns", "a", &decided_ready(true, Reason::Reconciled, 1), &[]);
    let text = per_object.encode();
    assert!(text.contains(r#"edge_operator_condition{kind="Widget",object_namespace="ns",name="a",condition="Ready",status="True",reason="Reconciled"} 1"#), "{text}");
    assert_eq!(sample(&text, ready_true), Some(1.0));
}

#[test]
fn conditions_outside_the_vocabulary_are_not_counted() {
    let metrics = Metrics::new(true);
    let mut conditions = decided_ready(true, Reason::Reconciled, 1);
    conditions.push(Condition {
        type_: "Forged-d41d8cd9".into(),
        reason: "Reconciled".into(),
        ..conditions[0].clone()
    });
    conditions.push(Condition {
        reason: "ForgedReason-d41d8cd9".into(),
        ..conditions[0].clone()
    });
    metrics.set_conditions::<NoOwnReason>("Widget", "ns", "a", &conditions, &[]);
    let text = metrics.encode();
    assert!(!text.contains("d41d8cd9"), "{text}");
    assert!(text.contains(r#"condition="Ready""#), "{text}");
}
