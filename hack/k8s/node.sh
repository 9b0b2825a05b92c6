# The node mode of hack/cluster.sh (sourced by it): a kubelet node with containerd,
# runc, the bridge CNI plugin and kube-proxy beside the control plane, so Pods run.
#
# Needs root. What it changes on the host, and `down` undoes:
#   - a bridge $NODE_BRIDGE with $NODE_IP (the node's and the apiserver's address);
#   - netfilter rules (kube-proxy, CNI masquerade and port maps): the whole ruleset
#     is saved at `up` and restored at `down`;
#   - sysctls the kubelet, kube-proxy and CNI set (kernel.panic, vm.overcommit_memory,
#     net.ipv4.ip_forward, route_localnet, ...): saved and restored;
#   - network namespaces in /run/netns, cgroups named kubepods, /var/log/containers,
#     /var/lib/cni and /run/containerd: removed if they were not there before;
#   - ports 10250 (kubelet, on $NODE_IP), 10248, 10249, 10256 (127.0.0.1): one node
#     per machine.
# Everything else (containerd's and the kubelet's data, pod logs, CNI state) lives in
# the cluster's state directory. Debian packages it installs (containerd, runc,
# containernetworking-plugins, iptables, nftables, conntrack) stay installed, as the
# built binaries stay cached.

NODE_NAME=edge-node
NODE_BRIDGE=edgecni0
NODE_IP="${EDGE_NODE_IP:-10.244.0.1}"
POD_CIDR="${EDGE_NODE_POD_CIDR:-10.244.0.0/24}"
SERVICE_CIDR=10.0.0.0/24
KUBERNETES_SERVICE_IP=10.0.0.1
PAUSE_IMAGE=edge-operator.local/pause:static
NODE_LOCK=/run/edge-operator-node.lock
# Host paths the node may create; removed at `down` when they did not exist at `up`.
NODE_HOST_PATHS=(/var/log/containers /var/log/pods /var/lib/cni /run/containerd /run/netns /var/lib/kubelet /etc/cni)
NODE_SYSCTL_PATTERN='^(kernel\.panic|kernel\.panic_on_oops|kernel\.keys\.|vm\.overcommit_memory|vm\.panic_on_oom|net\.ipv4\.|net\.ipv6\.conf\.(all|default)\.|net\.bridge\.|net\.netfilter\.nf_conntrack_(max|tcp_))'

node_require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    log "error: the node mode needs root (containerd, runc, CNI and kube-proxy change the host's"
    log "network, cgroups and mounts; see hack/k8s/node.sh). Run it as root, or use the"
    log "control plane without a node: hack/cluster.sh up"
    exit 1
  fi
}

node_install_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v nft >/dev/null || missing+=(nftables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  [ ${#missing[@]} -eq 0 ] && return
  log "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$state/apt.log" 2>&1 ||
    { apt-get update -qq >>"$state/apt.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >>"$state/apt.log" 2>&1; } ||
    { log "error: apt-get install ${missing[*]} failed:"; tail -n 20 "$state/apt.log" >&2; exit 1; }
}

# Records what `down` must restore, before anything changes.
node_save_host() {
  local host="$state/host" path
  mkdir -p "$host"
  nft list ruleset >"$host/nft.ruleset" 2>/dev/null
  iptables-save >"$host/iptables" 2>/dev/null || true
  ip6tables-save >"$host/ip6tables" 2>/dev/null || true
  if command -v iptables-legacy-save >/dev/null; then
    iptables-legacy-save >"$host/iptables-legacy" 2>/dev/null || true
  fi
  sysctl -a 2>/dev/null | grep -E "$NODE_SYSCTL_PATTERN" >"$host/sysctl" || true
  : >"$host/absent-paths"
  for path in "${NODE_HOST_PATHS[@]}"; do
    [ -e "$path" ] || echo "$path" >>"$host/absent-paths"
  done
  ls /run/netns 2>/dev/null >"$host/netns" || true
  ls -d /sys/fs/cgroup/*/ >"$host/cgroup-controllers" 2>/dev/null || true
}

node_pki() {
  local pki="$state/pki"
  (
    cd "$pki"
    sign() { # name subject extfile
      openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
        -extfile "$3" -out "$1.crt" 2>/dev/null
    }
    printf 'subjectAltName=IP:127.0.0.1,IP:%s,IP:%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' \
      "$NODE_IP" "$KUBERNETES_SERVICE_IP" >serving.ext
    sign apiserver "/CN=kube-apiserver" serving.ext
    sign kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" client.ext
    sign kube-scheduler "/CN=system:kube-scheduler" client.ext
    sign kube-proxy "/CN=system:kube-proxy" client.ext
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" client.ext
  )
}

node_bridge_up() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
  fi
  ip addr replace "$NODE_IP/${POD_CIDR#*/}" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
}

node_write_configs() {
  local pki="$state/pki"
  mkdir -p "$state/cni/net.d" "$state/cni/ipam" "$state/containerd" "$state/kubelet" "$state/pod-logs"
  cat >"$state/containerd/config.toml" <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$state/containerd.sock"
[ttrpc]
  address = "$state/containerd-ttrpc.sock"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$state/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The VM's root lacks CAP_SYS_RESOURCE: a negative oom_score_adj is refused.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$state/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
EOF
  cat >"$state/cni/net.d/10-edge-node.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "edge-node",
  "plugins": [
    {
      "type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {
        "type": "host-local", "dataDir": "$state/cni/ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  cat >"$state/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
# The machine mounts cgroup v1 hierarchies; kubelet 1.35+ refuses them unless told.
failCgroupV1: false
containerRuntimeEndpoint: unix://$state/containerd.sock
podLogsDir: $state/pod-logs
clusterDomain: cluster.local
failSwapOn: false
serializeImagePulls: false
# The images are loaded from archives and cannot be pulled again: never collect them,
# and evict only when the disk is really full.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
EOF
  cat >"$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $state/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
nodePortAddresses: ["$NODE_IP/32"]
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

node_ctr() {
  ctr --address "$state/containerd.sock" --namespace k8s.io "$@"
}

# Imports an OCI or Docker image archive into the machine's node, whatever its cluster
# name.
load_image() {
  local archive="$1" node_state
  [ -f "$archive" ] || { log "error: no image archive at $archive"; exit 1; }
  node_state="$(cat "$NODE_LOCK" 2>/dev/null || true)"
  if [ -z "$node_state" ] || ! [ -S "$node_state/containerd.sock" ]; then
    log "error: no node runs on this machine (hack/cluster.sh up --node)"
    exit 1
  fi
  state="$node_state" node_ctr images import "$archive" >&2
}

wait_for() { # what seconds command...
  local what="$1" seconds="$2" deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -gt "$deadline" ]; then
      log "error: $what did not happen within ${seconds}s"
      return 1
    fi
    sleep 0.3
  done
}

# Everything the node needs before the control plane starts (the apiserver binds the
# node's bridge address).
node_prepare() {
  local holder
  holder="$(cat "$NODE_LOCK" 2>/dev/null || true)"
  if [ -n "$holder" ] && [ "$holder" != "$state" ] && [ -d "$holder/host" ]; then
    log "error: the node of $holder runs on this machine (see $NODE_LOCK); one node per machine."
    log "Stop it first: EDGE_CLUSTER_STATE=$holder hack/cluster.sh down"
    exit 1
  fi
  node_install_packages
  "$here/k8s/build.sh" --node >/dev/null
  "$here/image/build.sh" pause >"$state/pause-image"
  node_save_host
  echo "$state" >"$NODE_LOCK"
  node_pki
  node_bridge_up
  node_write_configs
}

# Starts the node's components once the control plane answers.
node_up() {
  local started=$SECONDS api_port
  api_port=$(cat "$state/api.port")
  write_kubeconfig "$state/kubelet.kubeconfig" kubelet "$api_port"
  write_kubeconfig "$state/kube-scheduler.kubeconfig" kube-scheduler "$api_port"
  write_kubeconfig "$state/kube-proxy.kubeconfig" kube-proxy "$api_port"

  log "starting containerd"
  start containerd containerd --config "$state/containerd/config.toml"
  wait_for "containerd to answer" 30 node_ctr version
  node_ctr images import "$(cat "$state/pause-image")" >/dev/null

  log "starting kube-scheduler, kubelet and kube-proxy (node $NODE_NAME at $NODE_IP)"
  start kube-scheduler "$K8S_BIN_DIR/kube-scheduler" \
    --kubeconfig "$state/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$state/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$state/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false
  start kubelet "$K8S_BIN_DIR/kubelet" --config "$state/kubelet/config.yaml" \
    --kubeconfig "$state/kubelet.kubeconfig" --root-dir "$state/kubelet/root" \
    --cert-dir "$state/kubelet/pki" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
  start kube-proxy "$K8S_BIN_DIR/kube-proxy" --config "$state/kube-proxy.yaml"
  if ! wait_for "node $NODE_NAME to become Ready" 90 \
    "$K8S_BIN_DIR/kubectl" --kubeconfig "$kubeconfig" wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s; then
    tail -n 20 "$state/kubelet.log" >&2
    exit 1
  fi
  # The node-lifecycle controller lifts the not-ready taint shortly after Ready.
  wait_for "the not-ready taint to be lifted" 60 bash -c \
    "! '$K8S_BIN_DIR/kubectl' --kubeconfig '$kubeconfig' get node $NODE_NAME -o jsonpath='{.spec.taints}' | grep -q not-ready"
  log "node $NODE_NAME Ready in $((SECONDS - started))s"
}

# Pod processes still alive in the node's cgroups.
node_pod_pids() {
  cat /sys/fs/cgroup/pids/kubepods/cgroup.procs /sys/fs/cgroup/pids/kubepods/*/cgroup.procs \
    /sys/fs/cgroup/pids/kubepods/*/*/cgroup.procs /sys/fs/cgroup/pids/kubepods/*/*/*/cgroup.procs 2>/dev/null || true
}

# Stops everything the node runs and undoes its host changes. Safe to run twice, and
# after a partial `up`.
node_down() {
  local host="$state/host"
  [ -d "$host" ] || return 0
  # Pods first, through the kubelet, so that CNI tears down their networks.
  if is_running kubelet && is_running kube-apiserver; then
    stop_components kube-controller-manager kube-scheduler
    "$K8S_BIN_DIR/kubectl" --kubeconfig "$kubeconfig" delete pods --all --all-namespaces \
      --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 30))
    while [ -n "$(node_ctr tasks ls -q 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
  fi
  stop_components kubelet kube-proxy
  # Whatever the kubelet left: kill the tasks, then any process in the pods' cgroups.
  if is_running containerd; then
    local task
    for task in $(node_ctr tasks ls -q 2>/dev/null); do
      node_ctr tasks kill -a -s SIGKILL "$task" >/dev/null 2>&1 || true
    done
  fi
  node_pod_pids | xargs -r kill -9 2>/dev/null || true
  stop_components containerd
  pkill -9 -f "containerd-shim-runc-v2 .*-address $state/containerd.sock" 2>/dev/null || true
  # Mounts under the state directory (volumes, rootfs, sandboxes' shm), deepest first.
  local mount
  for mount in $(findmnt -rn -o TARGET | grep -F "$state/" | sort -r); do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
  done
  local netns
  for netns in $(ls /run/netns 2>/dev/null); do
    if ! grep -qx "$netns" "$host/netns" 2>/dev/null; then
      umount "/run/netns/$netns" 2>/dev/null || true
      rm -f "/run/netns/$netns"
    fi
  done
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  local controller
  for controller in /sys/fs/cgroup/*/; do
    [ -d "${controller}kubepods" ] || continue
    find "${controller}kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  # The saved ruleset, or, when nft cannot read back the rules iptables-nft wrote
  # (xt targets), the saved iptables tables.
  nft flush ruleset
  if ! nft -f "$host/nft.ruleset" 2>/dev/null; then
    nft flush ruleset
    iptables-restore <"$host/iptables" 2>/dev/null || log "warning: could not restore the iptables rules saved in $host"
    ip6tables-restore <"$host/ip6tables" 2>/dev/null || true
  fi
  if [ -s "$host/iptables-legacy" ]; then
    iptables-legacy-restore <"$host/iptables-legacy" 2>/dev/null || true
  fi
  local line
  sysctl -a 2>/dev/null | grep -E "$NODE_SYSCTL_PATTERN" >"$host/sysctl.now" || true
  grep -vxF -f "$host/sysctl.now" "$host/sysctl" | while IFS= read -r line; do
    sysctl -qw "${line%% = *}=${line#* = }" 2>/dev/null || true
  done
  local path
  while read -r path; do
    rm -rf "$path"
  done <"$host/absent-paths"
  if [ "$(cat "$NODE_LOCK" 2>/dev/null)" = "$state" ]; then
    rm -f "$NODE_LOCK"
  fi
  rm -rf "$host"
  log "node stopped; host changes undone"
}
