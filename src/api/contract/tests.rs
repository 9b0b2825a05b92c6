use super::*;

/// The names of the published components of `document`.
fn component_names(document: Document) -> impl Iterator<Item = &'static str> {
    document.components().keys().map(String::as_str)
}

fn validator(document: Document, name: &str) -> BodyValidator {
    match BodyValidator::new(document, name, Required::Enforced) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn every_operation_with_a_published_answer_is_checked_against_it() {
    let checked: Vec<&str> = Operation::ALL
        .into_iter()
        .filter(|&operation| answer_schema(operation).is_some())
        .map(Operation::as_str)
        .collect();
    assert_eq!(
        checked,
        [
            "search_events",
            "list_access_lists",
            "update_access_list",
            "list_rate_limits",
            "get_app"
        ]
    );
    for operation in Operation::ALL {
        if let Some((document, name)) = answer_schema(operation) {
            BodyValidator::new(document, name, Required::AlwaysSent).unwrap_or_else(|e| panic!("{name}: {e}"));
            let refused = check_answer(operation, b"{\"unexpected\": true}");
            assert!(refused.is_err(), "{name}: an answer missing what it always sends");
        }
    }
}

#[test]
fn every_component_compiles() {
    for document in [Document::Shield, Document::MagicContainers] {
        let names: Vec<_> = component_names(document).collect();
        assert!(names.len() > 10, "{}", document.file_name());
        for name in names {
            validator(document, name);
        }
    }
}

#[test]
fn nullable_and_integer_formats_are_enforced() {
    let item = validator(Document::Shield, "AccessListDetails");
    let good = json!({
        "listId": 1, "configurationId": 2, "name": null, "isEnabled": true, "type": 0,
        "action": 2, "category": 8192, "requiredPlan": 3, "entryCount": 0,
        "updateFrequency": null, "lastUpdated": "2026-11-20T11:00:00Z"
    });
    assert_eq!(item.violations(&good), Vec::<String>::new());
    let mut bad = good.clone();
    bad["category"] = json!("threat-intel");
    bad["requiredPlan"] = json!(4);
    let violations = item.violations(&bad);
    assert!(violations.iter().any(|v| v.starts_with("/category")), "{violations:?}");
    assert!(
        violations.iter().any(|v| v.starts_with("/requiredPlan")),
        "{violations:?}"
    );
    assert!(
        violations
            .iter()
            .all(|v| v.starts_with("/category") || v.starts_with("/requiredPlan"))
    );
    let counts = validator(Document::Shield, "AccessListsDetailsResponse");
    assert!(counts.violations(&json!({"customEntryCount": 2_147_483_648_i64})).len() == 1);
    assert!(
        counts
            .violations(&json!({"customEntryCount": null, "managedLists": null}))
            .is_empty()
    );
}

#[test]
fn wire_spellings_are_lower_camel_case() {
    for (published, wire) in [
        ("Active", "active"),
        ("IfNotPresent", "ifNotPresent"),
        ("CDN", "cdn"),
        ("PublicIp", "publicIp"),
        ("Tcp", "tcp"),
        ("IMUsed", "imUsed"),
        ("OK", "ok"),
        ("", ""),
    ] {
        assert_eq!(wire_spelling(published), wire, "{published}");
    }
    assert_eq!(wire_value("EndpointType", "PUBLICIP").as_deref(), Some("publicIp"));
    assert_eq!(
        wire_value("ImagePullPolicy", "ifnotpresent").as_deref(),
        Some("ifNotPresent")
    );
    assert_eq!(wire_value("Protocol", "Quic"), None);
}

#[test]
fn answers_in_the_platform_form_carry_the_wire_enums_only() {
    let strict = |name: &str| {
        BodyValidator::new(Document::MagicContainers, name, Required::AlwaysSent).unwrap_or_else(|e| panic!("{e}"))
    };
    let published = validator(Document::MagicContainers, "ImagePullPolicy");
    let answered = strict("ImagePullPolicy");
    for (value, accepted, in_wire_form) in [
        ("IfNotPresent", true, false),
        ("ifNotPresent", true, true),
        ("ifnotpresent", false, false),
    ] {
        assert_eq!(published.violations(&json!(value)).is_empty(), accepted, "{value}");
        assert_eq!(answered.violations(&json!(value)).is_empty(), in_wire_form, "{value}");
    }
    let endpoint = |kind: &str, mapping: Value| {
        json!({"id": "e", "displayName": "d", "publicHost": "h", "type": kind, "isSslEnabled": true,
                   "pullZoneId": "1", "portMappings": [mapping]})
    };
    let container_port_only = json!({"containerPort": 8080, "protocols": ["tcp"]});
    let both_ports = json!({"containerPort": 8080, "exposedPort": 443, "protocols": ["tcp"]});
    let endpoints = strict("ContainerEndpoint");
    assert!(
        endpoints
            .violations(&endpoint("cdn", container_port_only.clone()))
            .is_empty()
    );
    assert!(!endpoints.violations(&endpoint("cdn", both_ports.clone())).is_empty());
    assert!(endpoints.violations(&endpoint("anycast", both_ports)).is_empty());
    assert!(
        !endpoints
            .violations(&endpoint("anycast", container_port_only))
            .is_empty()
    );
    let probes = strict("ContainerProbes");
    assert!(
        probes
            .violations(&json!({"startup": null, "readiness": null, "liveness": null}))
            .is_empty()
    );
    assert!(!probes.violations(&json!({})).is_empty());
    let timings = json!({"initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 7,
                             "failureThreshold": 3, "successThreshold": 1});
    assert!(strict("ContainerProbe").violations(&timings).is_empty());
    let mut zero = timings.clone();
    zero["failureThreshold"] = json!(0);
    assert!(!strict("ContainerProbe").violations(&zero).is_empty());
    assert!(
        validator(Document::MagicContainers, "ContainerProbe")
            .violations(&json!({}))
            .is_empty()
    );
}

#[test]
fn overlays_widen_and_only_widen() {
    let app = validator(Document::MagicContainers, "ApplicationStatus");
    assert!(app.violations(&json!("Active")).is_empty());
    assert!(app.violations(&json!("active")).is_empty());
    assert!(!app.violations(&json!("ACTIVE")).is_empty());
    let patch = validator(Document::Shield, "UpdateAccessListConfigurationResponse");
    assert!(
        patch
            .violations(&json!({"data": null, "error": {"statusCode": 400, "success": false}}))
            .is_empty()
    );
    assert!(
        patch
            .violations(&json!({"data": {"isEnabled": true, "action": 9}}))
            .len()
            == 1
    );
    let rules = validator(Document::Shield, "GetCustomWafRulesResponse");
    let rate_limit = json!({"data": [{"id": 1, "ruleConfiguration": {"actionType": 1, "timeframe": 60}}]});
    assert!(rules.violations(&rate_limit).is_empty());
    let waf = json!({"data": [{"id": 1, "ruleConfiguration": {"actionType": 5}}]});
    assert!(rules.violations(&waf).is_empty());
    let neither = json!({"data": [{"id": 1, "ruleConfiguration": {"actionType": 5, "timeframe": 60}}]});
    assert!(!rules.violations(&neither).is_empty());
}

#[test]
fn relaxed_schemas_accept_missing_required_members_only() {
    let relaxed = BodyValidator::new(Document::Shield, "AccessListDetails", Required::Relaxed);
    let relaxed = relaxed.unwrap_or_else(|e| panic!("{e}"));
    assert!(relaxed.violations(&json!({"configurationId": 5})).is_empty());
    assert!(!relaxed.violations(&json!({"configurationId": "5"})).is_empty());
}
