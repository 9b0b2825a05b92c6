#!/usr/bin/env bash
# A real local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager)
# on 127.0.0.1, built from Go modules by hack/k8s/build.sh. It has no node: Pods run on
# kind (make e2e-kind).
#
#   hack/cluster.sh up                 build what is missing, start, wait until ready, print the env
#   hack/cluster.sh up --no-controller-manager
#                                      the same without kube-controller-manager (make demo):
#                                      deleted namespaces stay Terminating, nothing is
#                                      garbage-collected
#   hack/cluster.sh down               stop the processes this script started, remove state
#   hack/cluster.sh status             show whether the cluster answers
#   hack/cluster.sh env                print `export KUBECONFIG=...` (and PATH for kubectl/helm)
#   hack/cluster.sh restart-apiserver  SIGKILL kube-apiserver and start it again (a fault)
#
# EDGE_CLUSTER_NAME (default "dev", for any command) names the cluster: clusters with
# different names run side by side on free ports. State lives in
# ${TMPDIR:-/tmp}/edge-operator-<name>.
# EDGE_APISERVER_FEATURE_GATES (`up` only, e.g. WatchList=false: no streamed lists, as
# Kubernetes 1.30, 1.31 and 1.33 by default) is passed to kube-apiserver as
# --feature-gates, and kept for restart-apiserver.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/k8s/versions.sh
source "$here/k8s/versions.sh"

name="${EDGE_CLUSTER_NAME:-dev}"
state="${EDGE_CLUSTER_STATE:-${TMPDIR:-/tmp}/edge-operator-${name}}"
kubeconfig="$state/kubeconfig"

log() { printf '[cluster:%s] %s\n' "$name" "$*" >&2; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# The pid a component was started with, or nothing.
pid_of() {
  cat "$state/$1.pid" 2>/dev/null || true
}

is_running() {
  local pid
  pid="$(pid_of "$1")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

start() {
  local component="$1"; shift
  nohup "$@" >"$state/$component.log" 2>&1 &
  echo $! >"$state/$component.pid"
}

generate_pki() {
  local pki="$state/pki"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=edge-operator-local-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    sign() { # name subject [extfile]
      openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
        ${3:+-extfile "$3"} -out "$1.crt" 2>/dev/null
    }
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >serving.ext
    sign apiserver "/CN=kube-apiserver" serving.ext
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    sign admin "/O=system:masters/CN=admin" client.ext
    sign controller-manager "/O=system:masters/CN=system:kube-controller-manager" client.ext
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

write_kubeconfig() { # file user port
  local pki="$state/pki"
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: https://127.0.0.1:$3
    certificate-authority: $pki/ca.crt
users:
- name: $2
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: $name
  context:
    cluster: $name
    user: $2
current-context: $name
EOF
}

print_env() {
  echo "export KUBECONFIG=$kubeconfig"
  echo "export PATH=$K8S_BIN_DIR:\$PATH"
}

# Starts kube-apiserver on the ports recorded in the state directory.
start_apiserver() {
  local pki="$state/pki" etcd_port api_port feature_gates
  etcd_port=$(cat "$state/etcd.port"); api_port=$(cat "$state/api.port")
  feature_gates=""
  if [ -f "$state/feature-gates" ]; then feature_gates=$(cat "$state/feature-gates"); fi
  log "starting kube-apiserver on https://127.0.0.1:$api_port"
  start kube-apiserver "$K8S_BIN_DIR/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-cluster-ip-range 10.0.0.0/24 \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --authorization-mode RBAC --service-account-issuer "https://127.0.0.1:$api_port" \
    --disable-admission-plugins ServiceAccount \
    --audit-log-path "$state/audit.log" --audit-policy-file "$here/k8s/audit-policy.yaml" \
    --audit-log-maxsize 200 \
    --feature-gates "$feature_gates"
}

wait_ready() {
  local deadline=$((SECONDS + 120))
  until "$K8S_BIN_DIR/kubectl" --kubeconfig "$kubeconfig" get --raw /readyz >/dev/null 2>&1; do
    if ! is_running kube-apiserver || ! is_running etcd || [ $SECONDS -gt $deadline ]; then
      log "the apiserver did not become ready; last log lines:"
      tail -n 20 "$state/kube-apiserver.log" >&2 || true
      tail -n 5 "$state/etcd.log" >&2 || true
      exit 1
    fi
    sleep 0.5
  done
}

# Kills kube-apiserver (SIGKILL, as a crash would) and starts it again on the same
# port and data: a fault for the e2e suite.
restart_apiserver() {
  is_running kube-apiserver || { log "not running"; exit 1; }
  local pid; pid=$(cat "$state/kube-apiserver.pid")
  kill -9 "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  log "kube-apiserver killed"
  start_apiserver
  wait_ready
  log "kube-apiserver ready again"
}

up() {
  local started=$SECONDS
  case "$*" in
    --no-controller-manager | "") ;;
    *) log "unknown argument $* (use --no-controller-manager)"; exit 2 ;;
  esac
  # The same flag tells the build to leave kube-controller-manager out.
  "$here/k8s/build.sh" "$@" >/dev/null
  if is_running kube-apiserver; then
    log "already running"
    print_env
    return
  fi
  rm -rf "$state"
  mkdir -p "$state/etcd"
  generate_pki
  local etcd_port peer_port api_port
  etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
  echo "$api_port" >"$state/api.port"
  echo "${EDGE_APISERVER_FEATURE_GATES:-}" >"$state/feature-gates"

  log "starting etcd on 127.0.0.1:$etcd_port"
  start etcd "$K8S_BIN_DIR/etcd" --name "$name" --data-dir "$state/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "$name=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn

  echo "$etcd_port" >"$state/etcd.port"
  start_apiserver

  write_kubeconfig "$kubeconfig" admin "$api_port"
  write_kubeconfig "$state/controller-manager.kubeconfig" controller-manager "$api_port"

  wait_ready

  if [ "$*" = --no-controller-manager ]; then
    log "ready in $((SECONDS - started))s (no kube-controller-manager)"
    print_env
    return
  fi
  log "starting kube-controller-manager (namespace and garbage-collector controllers)"
  start kube-controller-manager "$K8S_BIN_DIR/kube-controller-manager" \
    --kubeconfig "$state/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$state/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$state/controller-manager.kubeconfig" \
    --service-account-private-key-file "$state/pki/sa.key" --root-ca-file "$state/pki/ca.crt" \
    --controllers namespace-controller,garbage-collector-controller \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false

  log "ready in $((SECONDS - started))s"
  print_env
}

# SIGTERM to each component started by this script, then SIGKILL to any still there
# after 5 s; returns once they are gone.
stop_components() {
  local component pid
  for component in "$@"; do
    pid="$(pid_of "$component")"
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  done
  for component in "$@"; do
    pid="$(pid_of "$component")"
    [ -n "$pid" ] || continue
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    rm -f "$state/$component.pid"
  done
}

down() {
  stop_components kube-controller-manager kube-apiserver etcd
  rm -rf "$state"
  log "stopped"
}

status() {
  local component pid ok=0
  for component in etcd kube-apiserver kube-controller-manager; do
    if [ "$component" = kube-controller-manager ] && [ ! -f "$state/$component.pid" ]; then
      log "kube-controller-manager not started (up --no-controller-manager)"
    elif is_running "$component"; then
      pid="$(pid_of "$component")"
      log "$component running (pid $pid)"
    else
      log "$component not running"; ok=1
    fi
  done
  if [ $ok -eq 0 ]; then
    local readyz
    readyz="$("$K8S_BIN_DIR/kubectl" --kubeconfig "$kubeconfig" get --raw /readyz 2>&1)" || true
    log "readyz: $readyz"
  fi
  return $ok
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  status) status ;;
  env) print_env ;;
  restart-apiserver) restart_apiserver ;;
  *) echo "usage: $0 up|down|status|env|restart-apiserver" >&2; exit 2 ;;
esac
