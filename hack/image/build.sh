#!/usr/bin/env bash
# Assembles the product's images as multi-platform OCI archives, without a container
# engine or a registry, into ${EDGE_CACHE_DIR}/images:
#   edge-operator-<version>.oci.tar  ghcr.io/edge-operator/edge-operator:<version>
#   edge-sim-<version>.oci.tar       ghcr.io/edge-operator/edge-sim:<version>
#   edge-operator-<previous version>-<commit>.oci.tar
#                                    ghcr.io/edge-operator/edge-operator:<previous version>
#     (`previous` only: the operator of PREVIOUS_RELEASE_COMMIT, built from git history
#     for the upgrade test, tagged as its chart's default image; kept in the cache, as
#     it never changes)
# Each image is built from scratch: the three binaries, static (musl, linked by zig), a CA
# bundle (Mozilla's, from certifi) and the non-root user 65532; nothing of the build
# host. The product images differ in their entrypoint. An archive holds one image per
# platform of EDGE_IMAGE_PLATFORMS (default linux/amd64,linux/arm64) under one index.
# Load them with `kind load image-archive FILE`; `docker load -i FILE` loads the first
# platform's.
# The binaries are built with cargo profile EDGE_IMAGE_PROFILE: `release` (the default,
# what a release ships) or `dev`, which the test suites on kind use: they test
# behaviour, and the dev build compiles fastest.
#
#   hack/image/build.sh          the operator and edge-sim images
#   hack/image/build.sh previous the operator image of the previous release
# Prints the archives' paths, one per line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
# shellcheck source=hack/image/tools.sh
source hack/image/tools.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"
out="$EDGE_CACHE_DIR/images"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

log() { printf '[image] %s\n' "$*" >&2; }

profile="${EDGE_IMAGE_PROFILE:-release}"
case "$profile" in
  release) profile_dir=release ;;
  dev) profile_dir=debug ;;
  *) echo "EDGE_IMAGE_PROFILE is release or dev, not $profile" >&2; exit 2 ;;
esac

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"

platforms="${EDGE_IMAGE_PLATFORMS:-linux/amd64,linux/arm64}"
release_tools

# Builds binaries ($2...) of the crate in the current folder for every platform, static.
static_binaries() {
  local platform target bin bins=()
  for bin in "$@"; do bins+=(--bin "$bin"); done
  for platform in ${platforms//,/ }; do
    target="$(musl_target "$platform")"
    log "building ${*} for $platform ($target, profile $profile)"
    "$ZIGBUILD" zigbuild --quiet --profile "$profile" --locked --target "$target" "${bins[@]}" >&2
  done
}

# A root file system in $1 for platform $2 holding the binaries $3... (stripped), the
# CA bundle and the non-root user.
rootfs_of() {
  local rootfs="$1" platform="$2" bin binaries
  binaries="$CARGO_TARGET_DIR/$(musl_target "$platform")/$profile_dir"
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/home/nonroot"
  chmod 1777 "$rootfs/tmp"
  for bin in "${@:3}"; do
    strip_binary "$binaries/$bin" "$rootfs/usr/local/bin/$bin"
  done
  install -m 0644 "$CA_BUNDLE" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
}

# One root file system per platform under $1, holding $2...; sets rootfs_args, the
# --rootfs arguments of oci.py.
rootfs_per_platform() {
  local root="$1" platform
  shift
  rootfs_args=()
  for platform in ${platforms//,/ }; do
    rootfs_of "$root/${platform//\//-}" "$platform" "$@"
    rootfs_args+=(--rootfs "$platform=$root/${platform//\//-}")
  done
}

product() {
  static_binaries edge-operator edge-sim edgectl
  rootfs_per_platform "$work/rootfs" edge-operator edge-sim edgectl
  local labels=(--label "org.opencontainers.image.version=$version"
    --label "org.opencontainers.image.source=https://github.com/edge-operator/edge-operator")
  python3 hack/image/oci.py "${rootfs_args[@]}" --name "ghcr.io/edge-operator/edge-operator:$version" \
    --entrypoint /usr/local/bin/edge-operator --cmd run --user 65532:65532 "${labels[@]}" \
    --output "$out/edge-operator-$version.oci.tar" >&2
  python3 hack/image/oci.py "${rootfs_args[@]}" --name "ghcr.io/edge-operator/edge-sim:$version" \
    --entrypoint /usr/local/bin/edge-sim --user 65532:65532 "${labels[@]}" \
    --output "$out/edge-sim-$version.oci.tar" >&2
  echo "$out/edge-operator-$version.oci.tar"
  echo "$out/edge-sim-$version.oci.tar"
}

# The upgrade test's image of the previous release: linux/amd64, the platform of kind's
# node here.
previous() {
  local commit="$PREVIOUS_RELEASE_COMMIT" previous_version
  if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "commit $commit (the previous release) is not in this clone's history; clone without --depth" >&2
    exit 1
  fi
  previous_version="$(git show "$commit:Cargo.toml" | sed -n 's/^version = "\(.*\)"/\1/p' | head -n1)"
  if [[ "$previous_version" == "$version" ]]; then
    echo "the previous release ($commit) has this version, $version: move Cargo.toml's version" >&2
    exit 1
  fi
  local archive="$out/edge-operator-$previous_version-$commit.static.oci.tar"
  if [[ ! -f "$archive" ]]; then
    platforms=linux/amd64
    mkdir -p "$work/source"
    git archive "$commit" | tar -x -C "$work/source"
    # Built once per release, in this version's target directory: the dependencies both
    # lock at one version are compiled once (the profile's settings match), so only the
    # difference is built. Its binary takes this version's place in $profile_dir until the
    # next build links this version's back: build it before this version's images.
    (cd "$work/source" && CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=false static_binaries edge-operator)
    rootfs_per_platform "$work/previous" edge-operator
    python3 hack/image/oci.py "${rootfs_args[@]}" --name "ghcr.io/edge-operator/edge-operator:$previous_version" \
      --entrypoint /usr/local/bin/edge-operator --cmd run --user 65532:65532 \
      --label "org.opencontainers.image.revision=$commit" --output "$archive.part" >&2
    mv "$archive.part" "$archive"
  fi
  echo "$archive"
}

case "${1:-all}" in
  all) product ;;
  previous) previous ;;
  *) echo "usage: $0 [all|previous]" >&2; exit 2 ;;
esac
