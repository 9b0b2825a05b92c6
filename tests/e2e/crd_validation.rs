//! The apiserver rejects invalid manifests of the three kinds at admission, with a
//! message naming the problem (structural schema and CEL rules of the committed CRDs).

use crate::support::cluster::{TestNamespace, cluster};

fn manifest(kind: &str, namespace: &str, spec: &str) -> String {
    format!(
        "apiVersion: edgeplatform.io/v1alpha1\nkind: {kind}\nmetadata:\n  name: subject\n  namespace: {namespace}\nspec:\n{spec}"
    )
}

const ALC: &str = "AccessListConfig";
const PZC: &str = "PullZoneCertificate";
const CAW: &str = "ContainerAppWatch";

/// (kind, spec, a fragment the rejection message must contain)
const INVALID: &[(&str, &str, &str)] = &[
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  action: Block\n  rollout: {action: Block, maxMatches: 1}\n",
        "with spec.rollout, the action is spec.rollout.action",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: false\n  rollout: {action: Block, maxMatches: 1}\n",
        "spec.rollout needs spec.enabled",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  managementPolicy: Observe\n  rollout: {action: Block, maxMatches: 1}\n",
        "spec.rollout needs managementPolicy Manage",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  rollout: {action: Block}\n",
        "promotion Automatic needs maxMatches",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  rollout: {action: Log, promotion: Manual}\n",
        "spec.rollout.action",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  rollout: {action: Block, window: 30s, maxMatches: 1}\n",
        "window must be from 1m to 24h",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  rollout: {action: Block, window: 25h, maxMatches: 1}\n",
        "window must be from 1m to 24h",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  rollout: {action: Block, maxMatches: -1}\n",
        "spec.rollout.maxMatches",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  enabled: true\n",
        "exactly one of spec.configurationId and spec.listName",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  listName: x\n  enabled: true\n",
        "exactly one of spec.configurationId and spec.listName",
    ),
    (ALC, "  configurationId: 5\n  enabled: true\n", "shieldZoneId"),
    (ALC, "  shieldZoneId: 1\n  configurationId: 5\n", "enabled"),
    (
        ALC,
        "  shieldZoneId: 0\n  configurationId: 5\n  enabled: true\n",
        "shieldZoneId",
    ),
    (
        ALC,
        "  shieldZoneId: -4\n  configurationId: 5\n  enabled: true\n",
        "shieldZoneId",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: -5\n  enabled: true\n",
        "configurationId",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  listName: \"\"\n  enabled: true\n",
        "listName",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  action: Deny\n",
        "action",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  managementPolicy: Sometimes\n",
        "managementPolicy",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  deletionPolicy: Delete\n",
        "deletionPolicy",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: yes-please\n",
        "enabled",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  accessKeySecretRef:\n    name: s\n",
        "key",
    ),
    (
        ALC,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  accessKeySecretRef:\n    name: \"\"\n    key: k\n",
        "name",
    ),
    (
        ALC,
        "  shieldZoneId: \"one\"\n  configurationId: 5\n  enabled: true\n",
        "shieldZoneId",
    ),
    (PZC, "  renewEvery: 720h\n", "hostname"),
    (PZC, "  hostname: \"\"\n", "hostname"),
    (PZC, "  hostname: Shop.Example.com\n", "hostname"),
    (PZC, "  hostname: \"shop example.com\"\n", "hostname"),
    (PZC, "  hostname: localhost\n", "hostname"),
    (PZC, "  hostname: shop.example.com\n  renewEvery: 10m\n", "at least 1h"),
    (PZC, "  hostname: shop.example.com\n  renewEvery: soon\n", "renewEvery"),
    (CAW, "  interval: 60s\n", "appId"),
    (CAW, "  appId: \"\"\n", "appId"),
    (CAW, "  appId: \"..\"\n", "spec.appId"),
    (CAW, "  appId: a/b\n", "spec.appId"),
    (CAW, "  appId: \"a?b\"\n", "spec.appId"),
    (CAW, "  appId: \"a#b\"\n", "spec.appId"),
    (
        CAW,
        "  appId: a\n  accessKeySecretRef:\n    name: ../other\n    key: accessKey\n",
        "spec.accessKeySecretRef.name",
    ),
    (
        CAW,
        "  appId: a\n  accessKeySecretRef:\n    name: key\n    key: a/b\n",
        "spec.accessKeySecretRef.key",
    ),
    (CAW, "  appId: a\n  interval: 5s\n", "interval must be at least 10s"),
    (CAW, "  appId: a\n  interval: often\n", "interval"),
    (
        CAW,
        "  appId: a\n  securityEvents:\n    window: 1h\n",
        "spec.securityEvents needs spec.shieldZoneId",
    ),
    (
        CAW,
        "  appId: a\n  rateLimits:\n    enabled: true\n",
        "spec.rateLimits needs spec.shieldZoneId",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    window: 73h\n",
        "window must be positive and at most 72h",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    window: 0s\n",
        "window must be positive and at most 72h",
    ),
    (
        CAW,
        "  appId: a\n  cdn:\n    window: 100h\n",
        "window must be positive and at most 72h",
    ),
    (CAW, "  appId: a\n  cdn:\n    pullZoneId: -1\n", "pullZoneId"),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    groupBy: [ip, colour]\n",
        "groupBy",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    groupBy: [ip, ip]\n",
        "groupBy dimensions must not repeat",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    filters:\n    - {field: url, op: cidr, value: [10.0.0.0/8]}\n",
        "op cidr applies to field ip only",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    filters:\n    - {field: ip, op: eq, value: []}\n",
        "value",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    filters:\n    - {field: ip, op: near, value: [x]}\n",
        "op",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    top: 0\n",
        "top",
    ),
    (
        CAW,
        "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    warnThreshold: -1\n",
        "warnThreshold",
    ),
    (CAW, "  appId: a\n  shieldZoneId: -2\n", "shieldZoneId"),
];

#[test]
fn invalid_manifests_are_rejected_at_admission_with_a_clear_message() {
    let cluster = cluster();
    let namespace = TestNamespace::create("invalid");
    assert!(INVALID.len() >= 30);
    let mut failures = Vec::new();
    let long = |length: usize| "q".repeat(length);
    let too_long = [
        (
            CAW,
            format!(
                "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    query: {}\n",
                long(1025)
            ),
            "spec.securityEvents.query".to_string(),
        ),
        (
            CAW,
            format!(
                "  appId: a\n  shieldZoneId: 1\n  securityEvents:\n    filters:\n      - field: ip\n        op: eq\n        value: [{}]\n",
                long(257)
            ),
            "spec.securityEvents.filters[0].value[0]".to_string(),
        ),
        (CAW, format!("  appId: {}\n", long(129)), "spec.appId".to_string()),
    ];
    let every = INVALID
        .iter()
        .map(|(kind, spec, expected)| (*kind, spec.to_string(), expected.to_string()))
        .chain(too_long);
    for (kind, spec, expected) in every {
        let spec = spec.as_str();
        let expected = expected.as_str();
        let yaml = manifest(kind, &namespace.name, spec);
        let (accepted, _, stderr) = cluster.kubectl(&["apply", "-f", "-"], Some(&yaml));
        if accepted {
            failures.push(format!("{kind} accepted:\n{spec}"));
            let _ = cluster.kubectl(&["delete", "-f", "-"], Some(&yaml));
        } else if !stderr.contains(expected) {
            failures.push(format!("{kind} rejected without `{expected}`:\n{spec}{stderr}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn unknown_fields_are_rejected_by_strict_field_validation() {
    let cluster = cluster();
    let namespace = TestNamespace::create("unknown");
    let yaml = manifest(
        ALC,
        &namespace.name,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n  colour: red\n",
    );
    let (accepted, _, stderr) = cluster.kubectl(&["apply", "--validate=strict", "-f", "-"], Some(&yaml));
    assert!(!accepted);
    assert!(stderr.contains("colour"), "{stderr}");
}

#[test]
fn the_target_of_an_access_list_config_cannot_change_but_the_rest_can() {
    let cluster = cluster();
    let namespace = TestNamespace::create("immutable");
    let apply = |spec: &str| cluster.kubectl(&["apply", "-f", "-"], Some(&manifest(ALC, &namespace.name, spec)));
    let (created, _, stderr) = apply("  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n");
    assert!(created, "{stderr}");
    for retarget in [
        "  shieldZoneId: 2\n  configurationId: 5\n  enabled: true\n",
        "  shieldZoneId: 1\n  configurationId: 6\n  enabled: true\n",
        "  shieldZoneId: 1\n  listName: Tor exit nodes\n  enabled: true\n",
    ] {
        let (accepted, _, stderr) = apply(retarget);
        assert!(!accepted, "{retarget}");
        assert!(
            stderr.contains("immutable") && stderr.contains("delete this object and create a new one"),
            "{stderr}"
        );
    }
    let (changed, _, stderr) =
        apply("  shieldZoneId: 1\n  configurationId: 5\n  enabled: false\n  deletionPolicy: Restore\n");
    assert!(changed, "enablement and policies stay editable: {stderr}");
}

#[test]
fn a_status_larger_than_the_operator_writes_is_refused() {
    let cluster = cluster();
    let namespace = TestNamespace::create("status-bounds");
    let yaml = manifest(
        ALC,
        &namespace.name,
        "  shieldZoneId: 1\n  configurationId: 5\n  enabled: true\n",
    );
    let (created, _, stderr) = cluster.kubectl(&["apply", "-f", "-"], Some(&yaml));
    assert!(created, "{stderr}");
    let condition = |message: &str| {
        serde_json::json!({"type": "Ready", "status": "True", "reason": "Forged", "message": message,
                           "lastTransitionTime": "2026-11-20T10:00:00Z"})
    };
    let write_status = |status: serde_json::Value| {
        let patch = serde_json::json!({ "status": status }).to_string();
        let args = [
            "patch",
            ALC,
            "subject",
            "-n",
            &namespace.name,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ];
        cluster.kubectl(&args, None)
    };
    let (accepted, _, stderr) = write_status(serde_json::json!({"conditions": [condition("fits")]}));
    assert!(accepted, "a status the operator could write: {stderr}");
    let many: Vec<_> = (0..17)
        .map(|i| {
            serde_json::json!({"type": format!("T{i}"), "status": "True", "reason": "R",
                                    "lastTransitionTime": "2026-11-20T10:00:00Z"})
        })
        .collect();
    for (member, status) in [
        (
            "status.conditions[0].message",
            serde_json::json!({"conditions": [condition(&"q".repeat(2049))]}),
        ),
        ("status.conditions", serde_json::json!({"conditions": many})),
        (
            "status.atProvider.name",
            serde_json::json!({"atProvider": {"configurationId": 5, "listId": 1,
            "name": "q".repeat(2049), "isEnabled": true, "action": "Block", "type": "IP", "managed": false}}),
        ),
        (
            // A number past the operator's i32 would fail its watch of the kind.
            "status.restorePoint.action",
            serde_json::json!({"restorePoint": {"configurationId": 5, "isEnabled": true, "action": 2_147_483_648_i64}}),
        ),
    ] {
        let (accepted, _, stderr) = write_status(status);
        assert!(!accepted && stderr.contains(member), "{member}: {stderr}");
    }
}

#[test]
fn valid_manifests_are_accepted_with_defaults() {
    let cluster = cluster();
    let namespace = TestNamespace::create("valid");
    for (kind, spec) in [
        (
            ALC,
            "  shieldZoneId: 1\n  listName: Tor exit nodes\n  enabled: true\n  action: Challenge\n",
        ),
        (PZC, "  hostname: shop.example.com\n  renewEvery: 720h\n"),
        (
            CAW,
            "  appId: app-shop\n  shieldZoneId: 1001\n  rateLimits: {enabled: true}\n  securityEvents:\n    window: 72h\n    groupBy: [ruleId, ip]\n    filters:\n    - {field: ip, op: cidr, value: [10.0.0.0/8]}\n  cdn: {}\n",
        ),
    ] {
        let yaml = manifest(kind, &namespace.name, spec);
        let (accepted, _, stderr) = cluster.kubectl(&["apply", "-f", "-"], Some(&yaml));
        assert!(accepted, "{kind}: {stderr}");
    }
    let (_, out, _) = cluster.kubectl(
        &[
            "get",
            "caw",
            "subject",
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.spec.interval} {.spec.cdn.window} {.spec.securityEvents.top}",
        ],
        None,
    );
    assert_eq!(out, "60s 1h 5");
    let (_, out, _) = cluster.kubectl(
        &[
            "get",
            "alc",
            "subject",
            "-n",
            &namespace.name,
            "-o",
            "jsonpath={.spec.managementPolicy} {.spec.deletionPolicy}",
        ],
        None,
    );
    assert_eq!(out, "Manage Orphan");
}

#[test]
fn the_examples_are_accepted_by_the_apiserver() {
    let cluster = cluster();
    let namespace = TestNamespace::create("examples");
    let examples = crate::support::cluster::repo_root().join("examples");
    for name in [
        "access-list-config.yaml",
        "access-list-rollout.yaml",
        "pull-zone-certificate.yaml",
        "container-app-watch.yaml",
    ] {
        let path = examples.join(name).display().to_string();
        let (ok, _, stderr) = cluster.kubectl(
            &[
                "apply",
                "--dry-run=server",
                "--validate=strict",
                "-n",
                &namespace.name,
                "-f",
                &path,
            ],
            None,
        );
        assert!(ok, "{name}: {stderr}");
    }
}
