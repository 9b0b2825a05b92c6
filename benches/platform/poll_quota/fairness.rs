//! Two tenants under one quota: one saturates it with polls, or with access lists read
//! at the poll-interval floor; the other's watch and changes are served on time.

use super::*;

/// Two tenants' namespaces, one operator serving both under a platform quota of
/// `quota`/s, running.
async fn under_quota<A, B>(
    cluster: &Cluster,
    sim: &RunningSim,
    purposes: [&str; 2],
    quota: u32,
) -> anyhow::Result<Tenants<A, B>>
where
    A: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    B: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    let mut tenants = cluster
        .tenants(&sim.base_url(), purposes, &["--platform-rate", &quota.to_string()])
        .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    tenants.operator.ensure_running()?;
    Ok(tenants)
}

/// One tenant's `watches` watches saturate a quota of `quota`/s; another tenant's one
/// watch, in its own namespace, is polled on time all the same: answers (the lone
/// watch's lags, the busy tenant's lags), each sorted.
pub(super) async fn fair_share(
    cluster: &Cluster,
    watches: usize,
    interval: Duration,
    quota: u32,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let sim = spawn(document(watches + 1)).await?;
    let tenants =
        under_quota::<ContainerAppWatch, ContainerAppWatch>(cluster, &sim, ["fair-busy", "fair-lone"], quota).await?;
    let (mut operator, labels) = (tenants.operator, tenants.labels);
    let ((busy, busy_api), (lone, lone_api)) = (tenants.first, tenants.second);
    let interval_text = humantime::format_duration(interval).to_string();
    let labelled = |index: usize| -> anyhow::Result<ContainerAppWatch> {
        let mut watch = watch(index, &interval_text)?;
        watch.metadata.labels = Some(labels.clone());
        Ok(watch)
    };
    let started = chrono::Utc::now().timestamp_millis();
    create_all(&busy_api, (0..watches).map(labelled)).await?;
    lone_api
        .create(&PostParams::default(), &labelled(watches)?)
        .await
        .context("creating the lone watch")?;
    let start_up = start_up(watches, interval, quota);
    tokio::time::sleep(start_up + interval * 3).await;
    operator.ensure_running()?;
    let lags = lags_by_app(&sim, interval, started + start_up.as_millis() as i64);
    let lone_app = format!("app-{watches:04}");
    let mut lone_lags = lags.get(&lone_app).cloned().unwrap_or_default();
    let mut busy_lags: Vec<Duration> = lags
        .into_iter()
        .filter(|(app, _)| *app != lone_app)
        .flat_map(|(_, lags)| lags)
        .collect();
    lone_lags.sort_unstable();
    busy_lags.sort_unstable();
    drop(operator);
    for namespace in [&busy, &lone] {
        cluster.delete_namespace(namespace, Duration::from_secs(120)).await?;
    }
    Ok((lone_lags, busy_lags))
}

/// One tenant's `zones` AccessListConfigs, each on a Shield Zone of its own and read
/// every 5 s, want `zones / 5` requests/s, the whole `quota`; another tenant's access
/// list is changed [`CHANGES`] times and its watch polls every `interval`, in a
/// namespace of its own, one operator serving both: answers (the other tenant's PATCH
/// latencies, its watch's poll lags), each sorted.
pub(super) async fn write_line(
    cluster: &Cluster,
    zones: usize,
    interval: Duration,
    quota: u32,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let sim = spawn(with_busy_zones(document(1), zones)).await?;
    let tenants =
        under_quota::<AccessListConfig, ContainerAppWatch>(cluster, &sim, ["writes-busy", "writes-other"], quota)
            .await?;
    let (mut operator, labels) = (tenants.operator, tenants.labels);
    let ((busy, busy_api), (other, other_api)) = (tenants.first, tenants.second);
    create_busy_access_lists(&busy_api, &labels, zones, true).await?;
    let mut watch = watch(0, &humantime::format_duration(interval).to_string())?;
    watch.metadata.labels = Some(labels.clone());
    other_api
        .create(&PostParams::default(), &watch)
        .await
        .context("creating the other tenant's watch")?;
    // The busy tenant's first writes, then its reads fill the quota.
    tokio::time::sleep(Duration::from_secs_f64(2.0 * zones as f64 / f64::from(quota)) + interval).await;
    let started = chrono::Utc::now().timestamp_millis();
    let mut latencies = time_patches(cluster, &other, json!(labels), &sim).await?;
    // Until the other tenant's watch has been polled three times since the changes
    // began (two lags); a poll still missing at the deadline shows as one lag fewer.
    let deadline = tokio::time::Instant::now() + interval * 4;
    let mut lags = loop {
        let lags = lags_by_app(&sim, interval, started)
            .remove("app-0000")
            .unwrap_or_default();
        if lags.len() >= 2 || tokio::time::Instant::now() >= deadline {
            break lags;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    operator.ensure_running()?;
    latencies.sort_unstable();
    lags.sort_unstable();
    drop(operator);
    for namespace in [&busy, &other] {
        cluster.delete_namespace(namespace, Duration::from_secs(120)).await?;
    }
    cluster.delete_claims(&sim.base_url()).await?;
    Ok((latencies, lags))
}

/// `document` with `zones` Shield Zones more, each with one access list (disabled) of
/// the busy tenant's.
pub(crate) fn with_busy_zones(mut document: SimDocument, zones: usize) -> SimDocument {
    document.shield_zones.extend((0..zones).map(|i| ShieldZone {
        id: BUSY_ZONE + i as i64,
        pull_zone_id: None,
        access_lists: vec![SimAccessList::new(BUSY_CONFIGURATION + i as i64, "busy-list", false, 0)],
        rate_limits: Vec::new(),
        ..ShieldZone::default()
    }));
    document
}

/// The name of the busy tenant's access list `index`.
pub(crate) fn busy_name(index: usize) -> String {
    format!("busy-{index:04}")
}

/// Creates the busy tenant's `zones` AccessListConfigs carrying `labels`, one on each
/// zone of [`with_busy_zones`], read every [`POLL_FLOOR`]; `enabled` as their spec
/// asks (the platform's lists are disabled: `true` makes each write once).
pub(crate) async fn create_busy_access_lists(
    api: &kube::Api<AccessListConfig>,
    labels: &std::collections::BTreeMap<String, String>,
    zones: usize,
    enabled: bool,
) -> anyhow::Result<()> {
    stream::iter(0..zones)
        .map(|i| async move {
            let object: AccessListConfig = serde_json::from_value(json!({
                "apiVersion": "edgeplatform.io/v1alpha1",
                "kind": "AccessListConfig",
                "metadata": {"name": busy_name(i), "labels": labels,
                             "annotations": {"edgeplatform.io/poll-interval": POLL_FLOOR}},
                "spec": {"shieldZoneId": BUSY_ZONE + i as i64,
                         "configurationId": BUSY_CONFIGURATION + i as i64, "enabled": enabled},
            }))?;
            api.create(&PostParams::default(), &object)
                .await
                .context("creating a busy access list")
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await
        .map(drop)
}
