#!/usr/bin/env bash
# Assembles the product's images as OCI archives, without a container engine or a
# registry, into ${EDGE_CACHE_DIR}/images:
#   edge-operator-<version>.oci.tar  ghcr.io/edge-operator/edge-operator:<version>
#   edge-sim-<version>.oci.tar       ghcr.io/edge-operator/edge-sim:<version>
#   edge-operator-<previous version>-<commit>.oci.tar
#                                    ghcr.io/edge-operator/edge-operator:<previous version>
#     (`previous` only: the operator of PREVIOUS_RELEASE_COMMIT, built from git history
#     for the upgrade test, tagged as its chart's default image; kept in the cache, as
#     it never changes)
# Both product images hold the three binaries, the shared libraries they load, a CA
# bundle and the non-root user 65532, as the Dockerfile's images do; they differ in
# their entrypoint. Load them with `kind load image-archive FILE` or `docker load -i FILE`.
# The binaries are built with cargo profile EDGE_IMAGE_PROFILE: `release` (the default,
# what a release ships) or `dev`, which the test suites on kind use: they test
# behaviour, and `cargo test` has built those binaries already.
#
#   hack/image/build.sh          the operator and edge-sim images
#   hack/image/build.sh previous the operator image of the previous release
# Prints the archives' paths, one per line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
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

# Copies a binary's shared libraries (and the dynamic loader) into the root file system.
copy_libraries() {
  local binary="$1" rootfs="$2" library
  for library in $(ldd "$binary" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$library")"
    cp -L "$library" "$rootfs$library"
  done
}

# A root file system in $1 holding the binaries of $2 (a profile's target directory),
# their shared libraries, a CA bundle and the non-root user.
rootfs_of() {
  local rootfs="$1" release="$2" bin
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/home/nonroot"
  chmod 1777 "$rootfs/tmp"
  for bin in "${@:3}"; do
    install -s -m 0755 "$release/$bin" "$rootfs/usr/local/bin/$bin"
    copy_libraries "$rootfs/usr/local/bin/$bin" "$rootfs"
  done
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
  chown 65532:65532 "$rootfs/home/nonroot"
}

product() {
  log "building the binaries (profile $profile)"
  cargo build --profile "$profile" --locked --bins >&2
  local rootfs="$work/rootfs"
  rootfs_of "$rootfs" "$CARGO_TARGET_DIR/$profile_dir" edge-operator edge-sim edgectl
  local labels=(--label "org.opencontainers.image.version=$version"
    --label "org.opencontainers.image.source=https://github.com/edge-operator/edge-operator")
  python3 hack/image/oci.py --rootfs "$rootfs" --name "ghcr.io/edge-operator/edge-operator:$version" \
    --entrypoint /usr/local/bin/edge-operator --cmd run --user 65532:65532 "${labels[@]}" \
    --output "$out/edge-operator-$version.oci.tar" >&2
  python3 hack/image/oci.py --rootfs "$rootfs" --name "ghcr.io/edge-operator/edge-sim:$version" \
    --entrypoint /usr/local/bin/edge-sim --user 65532:65532 "${labels[@]}" \
    --output "$out/edge-sim-$version.oci.tar" >&2
  echo "$out/edge-operator-$version.oci.tar"
  echo "$out/edge-sim-$version.oci.tar"
}

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
  local archive="$out/edge-operator-$previous_version-$commit.oci.tar"
  if [[ ! -f "$archive" ]]; then
    log "building the operator of the previous release ($commit, profile $profile)"
    mkdir -p "$work/source"
    git archive "$commit" | tar -x -C "$work/source"
    # Built once per release, in this version's target directory: the dependencies both
    # lock at one version are compiled once (the profile's settings match), so only the
    # difference is built. Its binary takes this version's place in $profile_dir until the
    # next `cargo build` links this version's back: build it before this version's images.
    (cd "$work/source" && CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=false \
      cargo build --profile "$profile" --locked --bin edge-operator >&2)
    rootfs_of "$work/previous" "$CARGO_TARGET_DIR/$profile_dir" edge-operator
    python3 hack/image/oci.py --rootfs "$work/previous" --name "ghcr.io/edge-operator/edge-operator:$previous_version" \
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
