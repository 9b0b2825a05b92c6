#!/usr/bin/env bash
# A Docker engine for kind, started only when none answers.
#   eval "$(hack/kind/docker.sh up)"   start dockerd (root), print DOCKER_HOST
#   hack/kind/docker.sh down           stop the dockerd `up` started, undo its host changes
#   hack/kind/docker.sh log            the end of that dockerd's log (on standard error)
# dockerd changes the host: it enables IPv4 forwarding, adds iptables chains and rules
# (and sets the FORWARD policy to DROP), and creates bridges (docker0, one per Docker
# network). `up` records the rulesets, the sysctl and the links; `down` restores them
# after dockerd stopped. Images and layers stay in $EDGE_CACHE_DIR/docker for the next run.
# Containers run through hack/kind/runc-bounded, so that privileged ones (kind's nodes)
# start on hosts whose capability bounding set is not full.
# dockerd and the containerd it starts run with the system's PATH only: containerd looks
# its shim up on PATH, and a newer one found first (hack/kind/build.sh builds containerd
# 2.x's for the node image) answers in a protocol containerd 1.6 cannot read ("failed to
# start shim: start failed: dial unix \x00\b\x03\x12Yunix:///run/containerd/s/...").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/k8s/versions.sh
source "$here/../k8s/versions.sh"

state="${EDGE_DOCKER_STATE:-/tmp/edge-operator-docker}"
engine_path=/usr/sbin:/usr/bin:/sbin:/bin
socket="unix://$state/docker.sock"
log() { printf '[docker] %s\n' "$*" >&2; }

up() {
  if [ -f "$state/dockerd.pid" ] && docker -H "$socket" info >/dev/null 2>&1; then
    echo "export DOCKER_HOST=$socket"
    return
  fi
  if [ -z "${EDGE_DOCKER_OWN:-}" ] && docker info >/dev/null 2>&1; then
    local context
    context="$(docker context show 2>/dev/null || echo default)"
    log "using the Docker engine that already answers ($context)"
    return
  fi
  if [ "$EUID" != 0 ]; then
    log "error: no Docker engine answers, and starting one needs root"
    exit 1
  fi
  command -v dockerd >/dev/null || "$here/../install-packages.sh" docker.io
  mkdir -p "$state" "$EDGE_CACHE_DIR/docker"
  iptables-save >"$state/iptables"
  ip6tables-save >"$state/ip6tables"
  sysctl -n net.ipv4.ip_forward >"$state/ip_forward"
  ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort >"$state/links"
  log "starting dockerd (data root $EDGE_CACHE_DIR/docker)"
  setsid env PATH="$engine_path" dockerd --host "$socket" --data-root "$EDGE_CACHE_DIR/docker" \
    --add-runtime "bounded=$here/runc-bounded" --default-runtime bounded \
    --exec-root "$state/exec" --pidfile "$state/dockerd.pid" >"$state/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 60); do
    if docker -H "$socket" info >/dev/null 2>&1; then
      echo "export DOCKER_HOST=$socket"
      return
    fi
    sleep 1
  done
  log "error: dockerd did not answer within 60 s; its log:"
  tail -n 20 "$state/dockerd.log" >&2
  down
  exit 1
}

restore_rules() {
  local command="$1" saved="$state/$1" table chain
  [ -f "$saved" ] || return 0
  for table in filter nat mangle raw; do
    grep -q "^\*$table$" "$saved" && continue
    "$command" -t "$table" -F 2>/dev/null || continue
    "$command" -t "$table" -X
    for chain in $("$command" -t "$table" -S | sed -n 's/^-P \([A-Z]*\) .*/\1/p'); do
      "$command" -t "$table" -P "$chain" ACCEPT
    done
  done
  "$command-restore" <"$saved"
}

down() {
  [ -d "$state" ] || return 0
  if [ -f "$state/dockerd.pid" ]; then
    pid="$(cat "$state/dockerd.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 30); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # Links dockerd made (bridges, and veths of containers it did not stop).
  ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | sort |
    comm -13 "$state/links" - | while read -r link; do ip link delete "$link" 2>/dev/null || true; done
  # iptables-restore replaces only the tables its input names: empty the others.
  restore_rules iptables
  restore_rules ip6tables
  if [ -f "$state/ip_forward" ]; then
    local ip_forward
    ip_forward="$(cat "$state/ip_forward")"
    sysctl -qw "net.ipv4.ip_forward=$ip_forward"
  fi
  rm -rf "$state"
}

log_tail() {
  if [ -f "$state/dockerd.log" ]; then
    tail -n 30 "$state/dockerd.log" >&2
  else
    log "no log: this script did not start the Docker engine in use"
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  log) log_tail ;;
  *) echo "usage: $0 up|down|log" >&2; exit 2 ;;
esac
