#!/usr/bin/env bash
# Builds kind and a kind node image of K8S_VERSION here, with no image registry: every
# piece comes from the Go module proxy or Debian's packages, at the versions pinned in
# hack/k8s/versions.sh. Needs root (debootstrap) and a Docker engine
# (hack/kind/docker.sh up). Cached in $KIND_DIR: kind in bin/ (the one binary for PATH),
# the node's runtime and add-ons in node-bin/ (never on PATH: a host's engine would run
# them), and the node image as a `docker save` archive keyed by the inputs, loaded when
# Docker lacks the image.
#
#   1. binaries: kind; containerd, runc, crictl and the CNI plugins of kind's base
#      image; CoreDNS and local-path-provisioner; the Kubernetes binaries and kubeadm
#      from hack/k8s/build.sh --node.
#   2. the base image: a debootstrap root file system with the packages and files of
#      kind's images/base (from the kind module), the runtime binaries, and two
#      settings these machines need (below), imported with `docker import`.
#   3. the images the node preloads, each imported from a root file system: the
#      control-plane components and etcd (static binaries), kube-proxy (binary on a
#      Debian base with iptables), CoreDNS, pause (hack/kind/pause.c), local-path-
#      provisioner and its helper, and the default CNI's image.
#   4. `kind build node-image --type file` on a release tarball of those: kind installs
#      the binaries and imports the archives into the node's containerd. It pulls every
#      image kubeadm or its manifests name that no archive holds, so kube-proxy.tar
#      carries the other images beside kube-proxy.
#   5. kind's default CNI manifest (kindnetd, whose source is not on the Go module proxy)
#      is replaced by hack/kind/default-cni.yaml (a single-node CNI).
# Prints the node image name.
#
#   hack/kind/build.sh              the node image
#   hack/kind/build.sh --binaries   step 1 only, with no Docker engine (`make test` runs
#                                   it in the background while other steps run)
set -euo pipefail
case "${1:-}" in
  --binaries) binaries_only=true ;;
  "") binaries_only=false ;;
  *) echo "usage: $0 [--binaries]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/k8s/versions.sh
source "$here/../k8s/versions.sh"

log() { printf '[kind-build] %s\n' "$*" >&2; }
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=
bin="$KIND_DIR/node-bin"
mkdir -p "$KIND_DIR/bin" "$bin" "$KIND_DIR/debs"

# go_install DIRECTORY NAME PACKAGE...: builds the packages into DIRECTORY unless NAME is there.
go_install() {
  local directory="$1" name="$2"; shift 2
  [ -x "$directory/$name" ] && return
  log "building $name ..."
  local start=$SECONDS
  GOBIN="$directory" go install -trimpath -ldflags "-s -w" "$@"
  log "built $name in $((SECONDS - start))s"
}

# The source directory of a module version, downloaded when missing.
module_dir() {
  go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}

# 1. The binaries.
node_binaries() {
  go_install "$bin" containerd -tags "no_btrfs no_devmapper no_zfs no_aufs" \
    "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION" \
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
  if [ ! -x "$bin/runc" ]; then
    "$here/../install-packages.sh" libseccomp-dev
    CGO_ENABLED=1 go_install "$bin" runc -tags "seccomp urfave_cli_no_docs" "github.com/opencontainers/runc@$RUNC_VERSION"
  fi
  go_install "$bin" portmap \
    "github.com/containernetworking/plugins/plugins/ipam/host-local@$CNI_PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/main/loopback@$CNI_PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/main/ptp@$CNI_PLUGINS_VERSION" \
    "github.com/containernetworking/plugins/plugins/meta/portmap@$CNI_PLUGINS_VERSION"
  if [ ! -x "$bin/crictl" ]; then
    # cri-tools declares the path sigs.k8s.io/cri-tools, which the proxy does not serve:
    # build it in its own module.
    local source_dir
    source_dir="$(module_dir "github.com/kubernetes-sigs/cri-tools@$CRICTL_VERSION")"
    log "building crictl ..."
    (cd "$source_dir" && GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$bin/crictl" ./cmd/crictl)
  fi
  go_install "$bin" local-path-provisioner "github.com/rancher/local-path-provisioner@$LOCAL_PATH_PROVISIONER_VERSION"
  go_install "$bin" coredns "github.com/coredns/coredns@$COREDNS_VERSION"
  k8s_bin="$("$here/../k8s/build.sh" --node | tail -n1)"
}

go_install "$KIND_DIR/bin" kind "sigs.k8s.io/kind@$KIND_VERSION"
if $binaries_only; then
  node_binaries
  exit 0
fi
key="$(cat "$here/build.sh" "$here/default-cni.yaml" "$here/pause.c" "$here/../k8s/versions.sh" | sha256sum | cut -c1-16)"
archive="$KIND_DIR/node-$K8S_VERSION-$key.tar"
label=io.edge-operator.build

built_key="$(docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$KIND_NODE_IMAGE" 2>/dev/null || true)"
if [ "$built_key" = "$key" ]; then
  echo "$KIND_NODE_IMAGE"
  exit 0
fi
if [ -f "$archive" ]; then
  log "loading the cached node image $archive"
  docker load -q -i "$archive" >&2
  echo "$KIND_NODE_IMAGE"
  exit 0
fi

node_binaries
kind_source="$(module_dir "sigs.k8s.io/kind@$KIND_VERSION")"

work="$(mktemp -d)"
# The images this build makes on the way (the node image holds them).
intermediate=()
cleanup() {
  [ "${#intermediate[@]}" = 0 ] || docker rmi -f "${intermediate[@]}" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS
mirror="$(sed -n 's/^URIs: \(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
mirror="${mirror:-http://deb.debian.org/debian}"
"$here/../install-packages.sh" debootstrap

debootstrap_into() {
  local dir="$1" packages="$2"
  log "debootstrap $DEBIAN_SUITE ($packages)"
  debootstrap --variant=minbase --cache-dir="$KIND_DIR/debs" --include="$packages" \
    "$DEBIAN_SUITE" "$dir" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/* "$dir"/var/log/* \
    "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
}

# Imports a root file system as an image: import_image NAME CHANGE... -- DIR
import_image() {
  local name="$1"; shift
  local changes=()
  while [ "$1" != -- ]; do changes+=(--change "$1"); shift; done
  tar -C "$2" -c . | docker import "${changes[@]}" - "$name" >/dev/null
  intermediate+=("$name")
}

# 2. The base image.
rootfs="$work/node"
debootstrap_into "$rootfs" systemd,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,bash,ca-certificates,curl,jq,procps
files="$kind_source/images/base/files"
install -m 0755 "$files"/usr/local/bin/* "$rootfs/usr/local/bin/"
mkdir -p "$rootfs/kind/bin" "$rootfs/etc/containerd" "$rootfs/etc/kubernetes/manifests" "$rootfs/opt/cni/bin" \
  "$rootfs/etc/systemd/system/kubelet.service.d"
install -m 0644 "$files"/kind/README.txt "$rootfs/kind/"
install -m 0755 "$files"/kind/bin/* "$rootfs/kind/bin/"
install -m 0644 "$files"/etc/crictl.yaml "$rootfs/etc/"
install -m 0644 "$files"/etc/containerd/* "$rootfs/etc/containerd/"
install -m 0644 "$files"/etc/default/* "$rootfs/etc/default/"
install -m 0644 "$files"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$rootfs/etc/systemd/system/"
install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"
rm -f "$rootfs"/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service \
  "$rootfs"/lib/systemd/system/multi-user.target.wants/* "$rootfs"/etc/systemd/system/*.wants/* \
  "$rootfs"/lib/systemd/system/local-fs.target.wants/* "$rootfs"/lib/systemd/system/sockets.target.wants/*udev* \
  "$rootfs"/lib/systemd/system/sockets.target.wants/*initctl* "$rootfs"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"$rootfs/etc/systemd/journald.conf"
ln -sf /usr/lib/systemd/systemd "$rootfs/sbin/init"
chroot "$rootfs" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
chroot "$rootfs" systemctl mask systemd-binfmt.service >/dev/null 2>&1
install -m 0755 "$bin/containerd" "$bin/ctr" "$bin/containerd-shim-runc-v2" "$bin/crictl" "$rootfs/usr/local/bin/"
install -m 0755 "$bin/runc" "$rootfs/usr/local/sbin/runc"
install -m 0755 "$bin/host-local" "$bin/loopback" "$bin/ptp" "$bin/portmap" "$rootfs/opt/cni/bin/"
"$bin/ctr" oci spec |
  chroot "$rootfs" jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"} | del(.process.rlimits)' \
    >"$rootfs/etc/containerd/cri-base.json"
# These machines' root lacks CAP_SYS_RESOURCE, so runc cannot lower a container's
# oom_score_adj, and their hosts run cgroup v1, which kubelet 1.35+ refuses by default.
sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$rootfs/etc/containerd/config.toml"
grep -q 'restrict_oom_score_adj = true' "$rootfs/etc/containerd/config.toml"
sed -i 's/^KUBELET_EXTRA_ARGS=.*/& --fail-cgroupv1=false/' "$rootfs/etc/default/kubelet"
grep -q -- '--fail-cgroupv1=false' "$rootfs/etc/default/kubelet"
pause_image="$(sed -n 's/^[[:space:]]*sandbox_image = "\(.*\)"/\1/p' "$rootfs/etc/containerd/config.toml")"
base_image="edge-operator.local/kind-base:$key"
# kind's base image also sets STOPSIGNAL SIGRTMIN+3, which `docker import` of Docker
# 20.10 refuses; kind removes nodes with `docker rm -f`, which does not use it.
import_image "$base_image" 'ENV container=docker' \
  'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' -- "$rootfs"
rm -rf "$rootfs"

# 3. The preloaded images.
slim="$work/slim"
debootstrap_into "$slim" iptables,nftables,conntrack
path='ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin'
# Imports a root file system holding one binary (on BASE, a root file system, if given):
#   binary_image NAME DIRECTORY BINARY BASE CHANGE...
binary_image() {
  local name="$1" directory="$2" binary="$3" base="$4"; shift 4
  local rootfs="$work/image-${binary##*/}"
  if [ -n "$base" ]; then cp -a "$base" "$rootfs"; fi
  mkdir -p "$rootfs/$directory"
  install -m 0755 "$binary" "$rootfs/$directory/"
  import_image "$name" "$@" -- "$rootfs"
}
for component in kube-apiserver kube-controller-manager kube-scheduler; do
  binary_image "registry.k8s.io/$component:$K8S_VERSION" usr/local/bin "$k8s_bin/$component" "" "$path"
done
binary_image "registry.k8s.io/kube-proxy:$K8S_VERSION" usr/local/bin "$k8s_bin/kube-proxy" "$slim" "$path"
etcd_tag="$("$k8s_bin/kubeadm" config images list --kubernetes-version "$K8S_VERSION" | grep /etcd:)"
binary_image "$etcd_tag" usr/local/bin "$k8s_bin/etcd" "" "$path"
binary_image "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" . "$bin/coredns" "" 'ENTRYPOINT ["/coredns"]'
gcc -static -Os -o "$work/pause" "$here/pause.c"
strip "$work/pause"
binary_image "$pause_image" . "$work/pause" "" 'ENTRYPOINT ["/pause"]'
provisioner_image="$(sed -n 's/^const storageProvisionerImage = "\(.*\)"$/\1/p' "$kind_source/pkg/build/nodeimage/const_storage.go")"
helper_image="$(sed -n 's/^const storageHelperImage = "\(.*\)"$/\1/p' "$kind_source/pkg/build/nodeimage/const_storage.go")"
binary_image "$provisioner_image" usr/local/bin "$bin/local-path-provisioner" "" "$path"
cni_image="$(sed -n 's/^[[:space:]]*image: \(.*\)$/\1/p' "$here/default-cni.yaml")"
import_image "$cni_image" "$path" -- "$slim"
docker tag "$cni_image" "$helper_image"
intermediate+=("$helper_image")
rm -rf "$slim"

# 4. The release tarball, and kind's build.
release="$work/release/kubernetes"
mkdir -p "$release/server/bin"
echo "$K8S_VERSION" >"$release/version"
cp "$k8s_bin/kubeadm" "$k8s_bin/kubelet" "$k8s_bin/kubectl" "$release/server/bin/"
for component in kube-apiserver kube-controller-manager kube-scheduler; do
  docker save -o "$release/server/bin/$component.tar" "registry.k8s.io/$component:$K8S_VERSION"
done
# kind names what an archive holds from the first image of its manifest.json, or from
# all of its `repositories` file when that comes first: kube-proxy.tar lists every image
# it carries there. kindnetd is only named (by the pause image) so that kind's build
# does not pull it; step 5 removes the name.
kindnetd_image="$(sed -n 's/^const kindnetdImage = "\(.*\)"$/\1/p' "$kind_source/pkg/build/nodeimage/const_cni.go")"
docker tag "$pause_image" "$kindnetd_image"
intermediate+=("$kindnetd_image")
mkdir "$work/carrier"
docker save "registry.k8s.io/kube-proxy:$K8S_VERSION" "$etcd_tag" "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" \
  "$pause_image" "$provisioner_image" "$helper_image" "$cni_image" "$kindnetd_image" | tar -C "$work/carrier" -x
# Docker writes Docker Hub names short (kindest/...); kind compares them in full.
python3 - "$work/carrier/repositories" <<'PYTHON'
import json, sys
path = sys.argv[1]
with open(path) as file:
    repositories = json.load(file)
def qualified(name):
    domain = name.split("/")[0]
    return name if "." in domain or ":" in domain else "docker.io/" + name
with open(path, "w") as file:
    json.dump({qualified(name): tags for name, tags in repositories.items()}, file)
PYTHON
(
  cd "$work/carrier"
  { printf '%s\n' repositories manifest.json
    find . -mindepth 1 -maxdepth 1 ! -name repositories ! -name manifest.json -printf '%P\n'; } >../carrier.list
  tar -cf "$release/server/bin/kube-proxy.tar" -T ../carrier.list
)
rm -rf "$work/carrier"
tar -C "$work/release" -czf "$work/kubernetes-server-linux-amd64.tar.gz" kubernetes
rm -rf "$work/release"
log "kind build node-image"
intermediate+=("$KIND_NODE_IMAGE-kind")
# kind extracts the tarball under TMPDIR and leaves it there: in $work, removed at exit.
if ! TMPDIR="$work" "$KIND_DIR/bin/kind" build node-image --type file --base-image "$base_image" --image "$KIND_NODE_IMAGE-kind" \
  "$work/kubernetes-server-linux-amd64.tar.gz" >&2; then
  log "error: kind build node-image failed; the Docker engine's log ends:"
  "$here/docker.sh" log
  exit 1
fi

# 5. The default CNI, and the kindnetd name off the node's containerd.
container="$(docker run -d --privileged --entrypoint sleep "$KIND_NODE_IMAGE-kind" infinity)"
docker exec "$container" bash -ec "
  nohup containerd >/dev/null 2>&1 &
  for _ in \$(seq 20); do ctr version >/dev/null 2>&1 && break; sleep 0.5; done
  ctr --namespace=k8s.io images rm '$kindnetd_image' >/dev/null
  pkill containerd
  while pgrep containerd >/dev/null; do sleep 0.2; done"
docker cp "$here/default-cni.yaml" "$container:/kind/manifests/default-cni.yaml"
docker commit --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
  --change "LABEL $label=$key" "$container" "$KIND_NODE_IMAGE" >/dev/null
docker rm -f "$container" >/dev/null
rm -f "$KIND_DIR"/node-*.tar
docker save -o "$archive.tmp" "$KIND_NODE_IMAGE"
mv "$archive.tmp" "$archive"
size="$(du -h "$archive" | cut -f1)"
log "built $KIND_NODE_IMAGE in $((SECONDS - start))s ($size)"
echo "$KIND_NODE_IMAGE"
