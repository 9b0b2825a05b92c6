#!/usr/bin/env bash
# The demo: a local control plane (etcd and kube-apiserver; no controller manager, whose
# build is not worth a first run), edge-sim loaded with generated data, the CRDs, the
# operator, and examples/ applied. Leaves everything running; `hack/demo.sh down` (or
# `make down`) stops it all.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
export EDGE_CLUSTER_NAME=demo
state="${TMPDIR:-/tmp}/edge-operator-demo-processes"
namespace=edge-demo
sim_port="${EDGE_DEMO_SIM_PORT:-18080}"
metrics_port="${EDGE_DEMO_METRICS_PORT:-18090}"

log() { printf '\n==> [%3ds] %s\n' "$SECONDS" "$*"; }

# Stops a process started by this script: SIGTERM, then SIGKILL if it is still there
# after 10 s; returns once it is gone (its ports are free again).
stop_process() {
  local pidfile="$state/$1.pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "$1 (pid $pid) ignored SIGTERM for 10 s; killing it" >&2
      kill -9 "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
  fi
  rm -f "$pidfile"
}

down() {
  stop_process edge-operator
  stop_process edge-sim
  hack/cluster.sh down
  rm -rf "$state"
}

wait_for_http() {
  local url=$1 deadline=$((SECONDS + 60))
  until curl -fsS -o /dev/null "$url" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { echo "no answer from $url" >&2; exit 1; }
    sleep 0.3
  done
}

# await_member NAMESPACE OBJECT JSONPATH VALUE: waits up to 60 s until the object's
# member reads VALUE (any value when VALUE is empty).
await_member() {
  local value waited=0
  while true; do
    value="$(kubectl get -n "$1" "$2" -o "jsonpath=$3")"
    if [ -n "$value" ] && { [ -z "$4" ] || [ "$value" = "$4" ]; }; then
      return 0
    fi
    [ $waited -lt 60 ] || { log "$2: $3 did not read ${4:-a value} within 60 s"; exit 1; }
    sleep 1
    waited=$((waited + 1))
  done
}

up() {
  local started=$SECONDS
  mkdir -p "$state"
  # One build after the other: on 2 cores, both at once took longer than in turn.
  log "building edge-operator, edge-sim and edgectl (profile demo)"
  # The default allocator: jemalloc's C build is not worth it for a demo.
  cargo build --profile demo --locked --bins --no-default-features
  log "building the control plane: etcd, kube-apiserver; kubectl fetched (log: $state/k8s-build.log)"
  if ! hack/k8s/build.sh --no-controller-manager >"$state/k8s-build.log" 2>&1; then
    cat "$state/k8s-build.log" >&2
    echo "building the control plane failed (above)" >&2
    exit 1
  fi
  local bin="$CARGO_TARGET_DIR/demo"

  log "local Kubernetes control plane"
  local cluster_env
  cluster_env="$(hack/cluster.sh up --no-controller-manager)"
  eval "$cluster_env"

  log "edge-sim on 127.0.0.1:$sim_port with generated events and CDN logs"
  stop_process edge-sim
  nohup "$bin/edge-sim" --listen "127.0.0.1:$sim_port" --fixtures examples/edge-sim-fixtures.yaml \
    --generate-events 200000 --generate-logs 20000 --seed 7 >"$state/edge-sim.log" 2>&1 &
  echo $! >"$state/edge-sim.pid"
  wait_for_http "http://127.0.0.1:$sim_port/_sim/clock"

  log "CRDs and namespace $namespace"
  kubectl apply --server-side -f crds/ >/dev/null
  kubectl wait --for=condition=Established -f crds/ --timeout=60s >/dev/null
  kubectl create namespace "$namespace" --dry-run=client -o yaml | kubectl apply -f - >/dev/null

  log "edge-operator"
  stop_process edge-operator
  printf 'demo-access-key' >"$state/access-key"
  nohup "$bin/edge-operator" run --api-url "http://127.0.0.1:$sim_port" \
    --access-key-file "$state/access-key" --default-key-namespaces "$namespace" \
    --secret-namespaces "$namespace" --metrics-addr "127.0.0.1:$metrics_port" \
    >"$state/edge-operator.log" 2>&1 &
  echo $! >"$state/edge-operator.pid"
  wait_for_http "http://127.0.0.1:$metrics_port/readyz"

  log "applying examples/"
  kubectl apply -n "$namespace" -k examples/ >/dev/null
  kubectl wait -n "$namespace" --for=condition=Ready accesslistconfig --all --timeout=60s >/dev/null
  kubectl wait -n "$namespace" --for=condition=Ready pullzonecertificate --all --timeout=60s >/dev/null
  kubectl wait -n "$namespace" --for=condition=Ready containerappwatch --all --timeout=120s >/dev/null

  log "a staged rollout (examples/access-list-rollout.yaml): the list logs, traffic it matches is its evidence"
  kubectl apply -n "$namespace" -f examples/access-list-rollout.yaml >/dev/null
  local rollout="accesslistconfig/tor-exit-nodes" now
  await_member "$namespace" "$rollout" '{.status.rollout.windowStart}' ""
  curl -fsS -X POST "http://127.0.0.1:$sim_port/_sim/shield-zones/1001/access-list-traffic" \
    -H 'Content-Type: application/json' -d '[
      {"listId": 12, "ip": "185.220.101.4", "country": "DE", "asn": "24940", "url": "/login", "count": 60},
      {"listId": 12, "ip": "185.220.101.9", "country": "DE", "asn": "24940", "url": "/wp-login.php", "count": 35},
      {"listId": 12, "ip": "199.249.230.77", "country": "US", "asn": "16509", "url": "/search", "count": 25}]' >/dev/null
  now="$(date +%s)"
  kubectl annotate -n "$namespace" "$rollout" --overwrite "edgeplatform.io/reconcile-requested-at=$now" >/dev/null
  await_member "$namespace" "$rollout" '{.status.rollout.evidence.matches}' 120

  log "kubectl get edgeplatform -n $namespace"
  kubectl get edgeplatform -n "$namespace"
  log "highlights"
  kubectl get containerappwatch shop-frontend -n "$namespace" \
    -o jsonpath='{range .status.conditions[*]}{.type}: {.reason} - {.message}{"\n"}{end}'
  kubectl get accesslistconfig block-known-bad-actors -n "$namespace" \
    -o jsonpath='access list: {.status.atProvider.name} enabled={.status.atProvider.isEnabled} action={.status.atProvider.action}{"\n"}'
  kubectl get pullzonecertificate shop-example-com -n "$namespace" \
    -o jsonpath='certificate: {.spec.hostname} issued at {.status.issuedTime}{"\n"}'
  KUBECONFIG="$KUBECONFIG" "$bin/edgectl" rollout status tor-exit-nodes -n "$namespace"

  cat <<EOF

Ready in $((SECONDS - started))s. Explore:
  export KUBECONFIG=$KUBECONFIG PATH=$K8S_BIN_DIR:\$PATH
  kubectl get edgeplatform -n $namespace
  kubectl describe containerappwatch shop-frontend -n $namespace
  $bin/edgectl rollout status tor-exit-nodes -n $namespace
  export EDGE_API_URL=http://127.0.0.1:$sim_port EDGE_ACCESS_KEY=demo-access-key
  $bin/edgectl events search --zone 1001 --since 24h --group-by ruleId,ip --buckets 40 --page-size 10
  $bin/edgectl logs --pull-zone 501 --since 1h --status 5xx
  curl -s http://127.0.0.1:$metrics_port/metrics | grep edge_operator_
Logs: $state/edge-operator.log, $state/edge-sim.log
Stop everything: make down
EOF
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 [up|down]" >&2; exit 2 ;;
esac
