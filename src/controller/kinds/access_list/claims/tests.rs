use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::super::fixtures::spec;
use super::super::vocabulary::AccessListReason;
use super::carry_over::PreviousOwners;
use super::*;
use crate::api::ApiFailure;
use crate::controller::framework::pipeline::status::conditions::{NewCondition, merge};
use crate::controller::framework::reasons::{AnyReason, ConditionType, Reason};
use crate::controller::kinds::access_list::resource::{
    AccessListConfigStatus, AccessListObservation, ManagementPolicy, RestorePoint,
};

const PLATFORM: &str = "https://api.example.com";

fn object(name: &str, namespace: &str, created: &str) -> AccessListConfig {
    let mut object = AccessListConfig::new(name, spec(true, None));
    object.metadata.namespace = Some(namespace.into());
    object.metadata.uid = Some(format!("uid-{name}"));
    object.metadata.creation_timestamp = Some(Time(created.parse().expect("time")));
    object
}

#[tokio::test]
async fn a_restore_point_is_written_only_on_the_version_read() {
    let mut record = new_record(PLATFORM, &object("a", "team", "2026-11-20T10:00:00Z"), 9101, "now");
    record.metadata.resource_version = Some("7".into());
    let (sent, written) = std::sync::mpsc::channel();
    let kube = crate::controller::framework::mock_apiserver::client(move |request, body| {
        let _ = sent.send((request.method.to_string(), request.uri.path().to_string(), body.clone()));
        (
            409,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409}),
        )
    });
    let values = RecordedValues {
        is_enabled: true,
        action: 1,
    };
    let changed_meanwhile = ClaimRecords::default()
        .record_restore_point(&kube, &Claim::from(record), values)
        .await;
    assert!(
        matches!(changed_meanwhile, Err(Failure::<AccessListConfig>::Stale)),
        "{changed_meanwhile:?}"
    );
    let (method, path, body) = written.recv().expect("one request");
    assert_eq!(
        (method.as_str(), path.as_str()),
        (
            "PATCH",
            "/apis/edgeplatform.io/v1alpha1/accesslistclaims/1-9101-137b9e5e4e"
        )
    );
    assert_eq!(body["metadata"]["resourceVersion"], "7");
    assert_eq!(body["spec"], json!({"restorePoint": {"isEnabled": true, "action": 1}}));
}

#[test]
fn the_cache_keeps_one_claim_per_configuration_and_a_relisting_replaces_it() {
    let record = |name: &str, configuration: i64, version: &str| {
        let mut record = new_record(
            PLATFORM,
            &object(name, "team", "2026-11-20T10:00:00Z"),
            configuration,
            "now",
        );
        record.metadata.resource_version = Some(version.into());
        record
    };
    let mut index = Index::default();
    index.follow(watcher::Event::Apply(record("a", 9101, "1")));
    index.follow(watcher::Event::Apply(record("b", 9102, "2")));
    index.follow(watcher::Event::Apply(record("a", 9101, "3")));
    assert_eq!(index.current.len(), 2);
    assert_eq!(index.current[&(1, 9101)].resource_version.as_deref(), Some("3"));
    index.follow(watcher::Event::Delete(record("b", 9102, "2")));
    assert!(!index.current.contains_key(&(1, 9102)));
    index.follow(watcher::Event::Init);
    index.follow(watcher::Event::InitApply(record("c", 9103, "4")));
    assert_eq!(index.current.len(), 1, "the claims in use until the listing is done");
    index.follow(watcher::Event::InitDone);
    let listed: Vec<_> = index.current.values().map(|claim| claim.owner.name.as_str()).collect();
    assert_eq!(listed, ["c"], "what was deleted while the watch was down is forgotten");
}

/// The object as 0.2.0 left it after writing `configuration`, Synced as `synced`.
fn written_by_0_2(mut object: AccessListConfig, configuration: i64, synced: bool) -> AccessListConfig {
    let reason: AnyReason<AccessListReason> = if synced {
        Reason::Reconciled.into()
    } else {
        ApiFailure::Unauthorized.into()
    };
    let decided = [NewCondition::new(ConditionType::Synced, synced, reason, "")];
    object.status = Some(AccessListConfigStatus {
        conditions: merge(&[], &decided, Some(1), "2026-11-20T10:00:00Z"),
        at_provider: Some(AccessListObservation {
            configuration_id: configuration,
            ..AccessListObservation::default()
        }),
        restore_point: Some(RestorePoint {
            shield_zone_id: Some(1),
            configuration_id: configuration,
            is_enabled: false,
            action: 2,
        }),
        ..AccessListConfigStatus::default()
    });
    object
}

#[test]
fn a_record_is_mine_free_or_held_by_its_owner_uid_alone() {
    let me = object("me", "team", "2026-11-20T10:00:00Z");
    let record = new_record(PLATFORM, &me, 9101, "2026-11-20T10:00:05Z");
    assert_eq!(record.name_any(), "1-9101-137b9e5e4e");
    assert_ne!(
        claim_name("https://staging.example.com", 1, 9101),
        record.name_any(),
        "another platform's zone 1 is another zone"
    );
    assert_eq!(claim_name(&format!("{PLATFORM}/"), 1, 9101), record.name_any());
    assert_eq!(record.spec.proof.read_at.as_deref(), Some("2026-11-20T10:00:05Z"));
    let mine = Claim::from(record);
    assert!(mine.confirmed);
    assert_eq!(standing(None, "uid-me"), Standing::Free);
    assert_eq!(standing(Some(&mine), "uid-me"), Standing::Mine);
    assert_eq!(
        standing(Some(&mine), "uid-new"),
        Standing::Held(&mine.owner),
        "a new object of the same name is another owner"
    );
    assert_eq!(describe(&mine.owner, "team"), "AccessListConfig \"me\"");
    assert_eq!(
        describe(&mine.owner, "other-team"),
        "an AccessListConfig of another namespace"
    );
}

#[test]
fn the_owners_0_2_decided_are_carried_over_oldest_first_with_their_restore_points() {
    let owner = written_by_0_2(object("owner", "a", "2026-11-20T09:00:00Z"), 9101, true);
    let later = written_by_0_2(object("later", "b", "2026-11-20T10:00:00Z"), 9101, true);
    let refused = written_by_0_2(object("refused", "a", "2026-11-20T08:00:00Z"), 9102, false);
    let mut paused = written_by_0_2(object("paused", "a", "2026-11-20T08:00:00Z"), 9103, true);
    paused
        .annotations_mut()
        .insert(crate::resources::ANNOTATION_PAUSED.into(), "true".into());
    let mut observer = written_by_0_2(object("observer", "a", "2026-11-20T08:00:00Z"), 9104, true);
    observer.spec.management_policy = ManagementPolicy::Observe;
    let mut elsewhere = written_by_0_2(object("elsewhere", "a", "2026-11-20T08:00:00Z"), 9105, true);
    if let Some(point) = elsewhere.status.as_mut().and_then(|s| s.restore_point.as_mut()) {
        point.shield_zone_id = Some(2);
    }
    let considered = [later, refused, paused, observer, owner, elsewhere];
    let mut owners = PreviousOwners::default();
    considered.iter().for_each(|object| owners.consider(PLATFORM, object));
    let mut in_reverse = PreviousOwners::default();
    considered
        .iter()
        .rev()
        .for_each(|object| in_reverse.consider(PLATFORM, object));
    assert_eq!(owners.chosen.len(), 2, "one record per configuration, no object kept");
    let records = owners.records();
    let chosen = |records: &[AccessListClaim]| -> Vec<_> { records.iter().map(|r| r.spec.clone()).collect() };
    assert_eq!(
        chosen(&records),
        chosen(&in_reverse.records()),
        "pages in any order choose the same owners"
    );
    let owners: Vec<_> = records
        .iter()
        .map(|r| (r.spec.configuration_id, r.spec.owner.name.as_str()))
        .collect();
    assert_eq!(owners, [(9105, "elsewhere"), (9101, "owner")]);
    assert_eq!(
        records[1].spec.proof.read_at, None,
        "confirmed by the owner's first read"
    );
    assert_eq!(
        records[1].spec.restore_point,
        Some(RecordedValues {
            is_enabled: false,
            action: 2
        })
    );
    assert_eq!(
        records[0].spec.restore_point, None,
        "a point of another zone is not kept"
    );
}

#[test]
fn a_record_made_anew_for_an_object_whose_status_shows_a_restore_point_says_that_point_was_lost() {
    let fresh = object("fresh", "team", "2026-11-20T10:00:00Z");
    assert!(!new_record(PLATFORM, &fresh, 9101, "now").spec.restore_point_lost);
    let mut restored_before = fresh.clone();
    restored_before.status = Some(AccessListConfigStatus {
        restore_point: Some(RestorePoint {
            shield_zone_id: Some(1),
            configuration_id: 9101,
            is_enabled: false,
            action: 2,
        }),
        ..AccessListConfigStatus::default()
    });
    let record = new_record(PLATFORM, &restored_before, 9101, "now");
    assert!(
        record.spec.restore_point_lost,
        "its record, and the values it held, are gone"
    );
    assert_eq!(record.spec.restore_point, None, "a status never gives the values");
    assert!(
        !new_record(PLATFORM, &restored_before, 9102, "now")
            .spec
            .restore_point_lost,
        "another configuration lost nothing"
    );
}

#[tokio::test]
async fn records_named_by_a_url_as_spelled_are_renamed_to_its_normalised_form_once() {
    let spelled = "HTTPS://API.Example.com:443/";
    let legacy_tag = crate::resources::short_digest(spelled.trim_end_matches('/').as_bytes());
    let old_name = format!("1-9101-{legacy_tag}");
    let mut old = new_record(spelled, &object("a", "team", "2026-11-20T10:00:00Z"), 9101, "now");
    old.metadata.name = Some(old_name.clone());
    let listed = std::sync::Arc::new(std::sync::Mutex::new(vec![old]));
    let (sent, calls) = std::sync::mpsc::channel();
    let kube = crate::controller::framework::mock_apiserver::client({
        let listed = listed.clone();
        move |request, body| {
            let query = request.uri.query().unwrap_or_default().to_string();
            let _ = sent.send((
                request.method.to_string(),
                request.uri.path().to_string(),
                query.clone(),
                body.clone(),
            ));
            let mut listed = listed.lock().unwrap_or_else(|e| e.into_inner());
            match request.method.as_str() {
                "GET" => (
                    200,
                    json!({"apiVersion": "edgeplatform.io/v1alpha1", "kind": "AccessListClaimList",
                           "metadata": {}, "items": *listed}),
                ),
                "DELETE" => {
                    listed.clear();
                    (200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}))
                }
                _ => (201, body),
            }
        }
    });
    let renamed = ClaimRecords::rename_respelled(&kube, spelled).await.expect("renamed");
    assert_eq!(renamed, 1);
    let calls: Vec<_> = calls.try_iter().collect();
    let (_, _, query, _) = &calls[0];
    assert!(
        query.contains(&legacy_tag),
        "lists the records of the old spelling: {query}"
    );
    let (method, _, _, created) = &calls[1];
    assert_eq!(method, "POST");
    assert_eq!(
        created["metadata"]["name"],
        claim_name("https://api.example.com", 1, 9101)
    );
    assert_eq!(
        created["metadata"]["labels"][PLATFORM_LABEL],
        platform_tag("https://api.example.com")
    );
    assert_eq!(created["spec"]["owner"]["uid"], "uid-a", "the record moves whole");
    let (method, path, _, _) = &calls[2];
    assert_eq!((method.as_str(), path.ends_with(&old_name)), ("DELETE", true));
    assert_eq!(
        ClaimRecords::rename_respelled(&kube, "https://api.example.com")
            .await
            .expect("nothing"),
        0,
        "a canonical URL keeps its records' names"
    );
}
