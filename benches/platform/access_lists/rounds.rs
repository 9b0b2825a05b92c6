//! Convergences of an operator, side by side with the floor, over rounds.

use super::*;

/// A new namespace for an operator to watch, its objects to be created before the
/// operator starts (or while it runs); timed by [`Convergence::on_waiting_objects`] and
/// [`Convergence::on_objects_as_created`].
pub(super) struct Convergence {
    pub(super) watched: Watched,
    pub(super) resync: String,
}

impl Convergence {
    pub(super) async fn prepare(
        cluster: &Cluster,
        sim: &RunningSim,
        settings: &Settings,
        purpose: &str,
        objects: usize,
    ) -> anyhow::Result<Self> {
        let watched = Watched::new(cluster, purpose, objects).await?;
        let resync = humantime::format_duration(settings.resync).to_string();
        sim.sim.clear_journal();
        if !settings.convergence_delay.is_zero() {
            sim.sim
                .add_fault(edge_operator::sim::Fault {
                    method: Some("PATCH".into()),
                    path_prefix: "/shield/shield-zone/".into(),
                    status: None,
                    count: u32::try_from(objects)?,
                    retry_after: None,
                    delay_ms: Some(u64::try_from(settings.convergence_delay.as_millis())?),
                    body: None,
                })
                .map_err(|_| anyhow::anyhow!("no room for the convergence delay"))?;
        }
        Ok(Self { watched, resync })
    }

    pub(super) fn start_operator(&self, cluster: &Cluster, sim: &RunningSim) -> anyhow::Result<OperatorProcess> {
        cluster.start_operator(
            &sim.base_url(),
            &self.watched.namespace,
            &["--platform-rate", "0", "--concurrency", "32", "--resync", &self.resync],
        )
    }

    /// Starts the operator on the waiting objects; answers it, still running, its
    /// namespace and the time from its start until all are in sync.
    pub(super) async fn on_waiting_objects(
        self,
        cluster: &Cluster,
        sim: &RunningSim,
        objects: usize,
    ) -> anyhow::Result<Converged> {
        let started = Instant::now();
        let operator = self.start_operator(cluster, sim)?;
        self.until_in_sync(operator, sim, objects, started).await
    }

    /// Starts the operator, then creates the objects; answers it, still running, its
    /// namespace and the time from the creates until all are in sync.
    pub(super) async fn on_objects_as_created(
        self,
        cluster: &Cluster,
        sim: &RunningSim,
        objects: usize,
    ) -> anyhow::Result<Converged> {
        let mut operator = self.start_operator(cluster, sim)?;
        tokio::time::sleep(Duration::from_secs(2)).await;
        operator.ensure_running()?;
        let started = Instant::now();
        self.watched.create(objects).await?;
        self.until_in_sync(operator, sim, objects, started).await
    }

    pub(super) async fn until_in_sync(
        self,
        mut operator: OperatorProcess,
        sim: &RunningSim,
        objects: usize,
        started: Instant,
    ) -> anyhow::Result<Converged> {
        let deadline = Duration::from_secs(60) + Duration::from_millis(50 * objects as u64);
        let ready_at = tokio::time::timeout(deadline, self.watched.waiter)
            .await
            .with_context(|| format!("{objects} objects were not in sync within {deadline:?}"))???;
        let journal_at_ready = sim.sim.journal().len();
        let mean_reconcile = operator
            .mean_reconcile(KIND)
            .await
            .context("the operator's metrics answered no reconcile duration")?;
        operator.ensure_running()?;
        Ok(Converged {
            operator,
            namespace: self.watched.namespace,
            time: ready_at.duration_since(started),
            journal_at_ready,
            mean_reconcile,
        })
    }
}

/// A convergence measured, its operator still running.
pub(super) struct Converged {
    pub(super) operator: OperatorProcess,
    pub(super) namespace: String,
    pub(super) time: Duration,
    /// The emulator's journal entries when every object was in sync (it is cleared
    /// before the operator starts).
    pub(super) journal_at_ready: usize,
    /// The operator's mean reconcile duration when every object was in sync.
    pub(super) mean_reconcile: Duration,
}

/// Floors and convergences at one size, measured in pairs.
pub(super) struct Rounds {
    pub(super) objects: usize,
    pub(super) floors: Vec<Duration>,
    pub(super) convergences: Vec<Duration>,
    pub(super) mean_reconciles: Vec<Duration>,
    /// The operator's peak RSS (MB) once all were in sync.
    pub(super) memory: Vec<f64>,
}

impl Rounds {
    pub(super) fn mean(times: &[Duration]) -> Duration {
        times.iter().sum::<Duration>() / times.len().max(1) as u32
    }

    pub(super) fn convergence(&self) -> Duration {
        Self::mean(&self.convergences)
    }

    /// Each round's convergence over the floor measured beside it.
    pub(super) fn ratios(&self) -> Vec<f64> {
        self.convergences
            .iter()
            .zip(&self.floors)
            .map(|(convergence, floor)| convergence.as_secs_f64() / floor.as_secs_f64())
            .collect()
    }

    /// The median of the rounds' ratios, with every measurement.
    pub(super) fn report(&self, report: &mut Report) {
        let objects = self.objects;
        // The mean of `times` and each of them, in `unit`s of `1 / per_second` s.
        let figures = |times: &[Duration], per_second: f64, unit: &str| {
            let each: Vec<String> = times
                .iter()
                .map(|t| format!("{:.2}", t.as_secs_f64() * per_second))
                .collect();
            let mean = Self::mean(times).as_secs_f64() * per_second;
            format!("{mean:.2} {unit} ({})", each.join(" / "))
        };
        let ratios = self.ratios();
        let ratio = crate::median(&ratios);
        let target = if objects < SMALL_BELOW {
            SMALL_RATIO_TARGET
        } else {
            RATIO_TARGET
        };
        report.info(
            SUITE,
            &format!(
                "{objects} objects: floor: zone reads + PATCHes + status writes on waiting objects, bare client (each)"
            ),
            figures(&self.floors, 1.0, "s"),
        );
        report.info(
            SUITE,
            &format!("{objects} objects: convergence: operator start -> all Ready (each)"),
            figures(&self.convergences, 1.0, "s"),
        );
        report.info(
            SUITE,
            &format!("{objects} objects: convergence: mean reconcile duration, 32 in flight (each)"),
            figures(&self.mean_reconciles, 1000.0, "ms"),
        );
        let memory: Vec<String> = self.memory.iter().map(|mb| format!("{mb:.1}")).collect();
        report.info(
            SUITE,
            &format!("{objects} objects: convergence: operator peak RSS, started on them all waiting (each)"),
            format!("{} MB", memory.join(" / ")),
        );
        check_memory(
            report,
            &format!("operator peak RSS, started on {objects} waiting objects (highest round)"),
            objects,
            self.memory.iter().copied().fold(0.0, f64::max),
        );
        let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        report.check_at_scale(
            SUITE,
            &format!("{objects} objects: convergence / floor beside it, median of {ROUNDS} rounds"),
            format!("{ratio:.2} ({})", each.join(" / ")),
            &format!("<= {target}"),
            ratio <= target,
        );
    }
}

/// One round: two namespaces of `objects` objects each created at once, then a floor on
/// one and a convergence on the other (a new operator started on its waiting objects)
/// timed from the same instant against the same apiserver. With every object waiting,
/// each side's pace is that of its own work; whatever slows the machine slows both.
/// Answers the convergence and the floor; the floor's namespace is deleted.
pub(super) async fn side_by_side(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    round: usize,
    objects: usize,
) -> anyhow::Result<(Converged, Duration)> {
    let floor_sim = spawn(document(objects)).await?;
    let floor = BareClient::prepare(cluster, &floor_sim, &format!("floor-{round}"), objects).await?;
    sim.sim.replace(document(objects));
    let convergence =
        Convergence::prepare(cluster, sim, settings, &format!("converge-{round}-{objects}"), objects).await?;
    tokio::try_join!(floor.watched.create(objects), convergence.watched.create(objects))?;
    cluster.settle_etcd().await?;
    let ((floor_namespace, floor), converged) = tokio::try_join!(
        floor.run(objects),
        convergence.on_waiting_objects(cluster, sim, objects)
    )?;
    cluster
        .delete_namespace(&floor_namespace, deletion_time(objects))
        .await?;
    cluster.delete_claims(&floor_sim.base_url()).await?;
    Ok((converged, floor))
}

/// Convergence of `objects` against the floor at that size, over [`ROUNDS`] rounds
/// after a warm-up, each round a floor and a convergence side by side (a new operator,
/// new namespaces), its namespaces deleted before the next, so that every round starts
/// with the same objects in the apiserver (it slows as it fills). The median of the
/// rounds' ratios sets aside a round the apiserver's noise spoiled.
pub(super) async fn against_floor(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    objects: usize,
) -> anyhow::Result<Rounds> {
    warm_up(cluster, objects).await?;
    let mut rounds = Rounds {
        objects,
        floors: Vec::new(),
        convergences: Vec::new(),
        mean_reconciles: Vec::new(),
        memory: Vec::new(),
    };
    for round in 1..=ROUNDS {
        let (converged, floor) = side_by_side(cluster, sim, settings, round, objects).await?;
        rounds.floors.push(floor);
        rounds.convergences.push(converged.time);
        rounds.mean_reconciles.push(converged.mean_reconcile);
        rounds.memory.push(converged.operator.peak_rss_mb()?);
        drop(converged.operator);
        cluster
            .delete_namespace(&converged.namespace, deletion_time(objects))
            .await?;
        cluster.delete_claims(&sim.base_url()).await?;
    }
    Ok(rounds)
}

/// A new operator converging `objects` created while it runs: the platform calls,
/// status writes and memory of the objects users apply.
pub(super) async fn converge_as_created(
    cluster: &Cluster,
    sim: &RunningSim,
    settings: &Settings,
    objects: usize,
) -> anyhow::Result<Converged> {
    sim.sim.replace(document(objects));
    let convergence = Convergence::prepare(cluster, sim, settings, &format!("as-created-{objects}"), objects).await?;
    cluster.settle_etcd().await?;
    convergence.on_objects_as_created(cluster, sim, objects).await
}
