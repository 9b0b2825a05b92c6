#!/usr/bin/env bash
# `make release`: everything a release publishes, built from a clean tree, into one
# folder (dist/<version>, or --out DIR):
#   edge-operator-<version>.oci.tar   the operator image (hack/image/build.sh)
#   edge-sim-<version>.oci.tar        the emulator image
#   <image archive>.cdx.json          an SBOM per image (CycloneDX 1.5: the crates of its
#                                     binaries from cargo-cyclonedx, and the Debian
#                                     packages of the shared libraries and CA bundle)
#   edge-operator-<version>.tgz       the chart (helm package; version = app version)
#   edgectl-<version>-linux-<arch>    the CLI and the emulator for each platform
#   edge-sim-<version>-linux-<arch>
#   SHA256SUMS                        `sha256sum -c SHA256SUMS` in the folder checks all
#
#   hack/release.sh [--out DIR] [--platforms linux/amd64,linux/arm64] [--profile release|dev]
#   hack/release.sh --tools   only installs the tool it needs (cargo-cyclonedx, crates.io)
# linux/arm64 is cross-compiled with Debian's gcc-aarch64-linux-gnu and rustup's target.
# `--profile dev` (the node suite's test of this script) builds from a tree that may be
# dirty, with the dev binaries `cargo test` built; a release is `--profile release`.
# Prints the folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"

log() { printf '[release] %s\n' "$*" >&2; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
out="dist/$version"
platforms="linux/amd64,linux/arm64"
profile=release
cyclonedx_root="$EDGE_CACHE_DIR/tools/cargo-cyclonedx-$CARGO_CYCLONEDX_VERSION"
install_cyclonedx() {
  [ -x "$cyclonedx_root/bin/cargo-cyclonedx" ] && return
  log "installing cargo-cyclonedx $CARGO_CYCLONEDX_VERSION (crates.io)"
  cargo install --quiet --locked "cargo-cyclonedx@$CARGO_CYCLONEDX_VERSION" --root "$cyclonedx_root" >&2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --platforms) platforms="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --tools) install_cyclonedx; exit 0 ;;
    *) echo "usage: $0 [--out DIR] [--platforms linux/amd64,linux/arm64] [--profile release|dev] | --tools" >&2; exit 2 ;;
  esac
done
case "$profile" in
  release) profile_dir=release ;;
  dev) profile_dir=debug ;;
  *) echo "--profile is release or dev, not $profile" >&2; exit 2 ;;
esac

chart_version="$(sed -n 's/^version: \(.*\)$/\1/p' charts/edge-operator/Chart.yaml)"
app_version="$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' charts/edge-operator/Chart.yaml)"
if [ "$chart_version" != "$version" ] || [ "$app_version" != "$version" ]; then
  echo "Chart.yaml has version $chart_version and appVersion $app_version; Cargo.toml has $version: make them equal" >&2
  exit 1
fi
changes="$(git status --porcelain)"
if [ "$profile" = release ] && [ -n "$changes" ]; then
  echo "a release is built from a clean tree; git status shows changes:" >&2
  git status --short >&2
  exit 1
fi

tools="$(hack/k8s/build.sh --tools | tail -n1)"
rm -rf "$out"
mkdir -p "$out"

log "images (profile $profile)"
built="$(EDGE_IMAGE_PROFILE="$profile" hack/image/build.sh)"
mapfile -t images <<<"$built"
for image in "${images[@]}"; do
  cp "$image" "$out/"
done

log "SBOMs"
install_cyclonedx
# cargo-cyclonedx writes beside Cargo.toml; the file is moved out at once.
crates_sbom="edge-operator.crates.cdx.json"
work="$(mktemp -d)"
trap 'rm -f "$crates_sbom"; rm -rf "$work"' EXIT
"$cyclonedx_root/bin/cargo-cyclonedx" cyclonedx --format json --spec-version 1.5 \
  --target x86_64-unknown-linux-gnu --override-filename "${crates_sbom%.json}" >&2
mv "$crates_sbom" "$work/"
commit_time="$(git log -1 --format=%cI)"
for image in "${images[@]}"; do
  python3 hack/image/sbom.py --crates "$work/$crates_sbom" --image "$image" --timestamp "$commit_time" \
    --output "$out/$(basename "$image").cdx.json" >&2
done

log "chart"
"$tools/helm" package charts/edge-operator --version "$version" --app-version "$version" -d "$out" >&2

for platform in ${platforms//,/ }; do
  arch="${platform#linux/}"
  case "$arch" in
    amd64) binaries="$CARGO_TARGET_DIR/$profile_dir" ;;
    arm64)
      log "binaries for linux/arm64 (cross-compiled)"
      hack/install-packages.sh gcc-aarch64-linux-gnu libc6-dev-arm64-cross
      rustup target add aarch64-unknown-linux-gnu >&2
      CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
        CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
        cargo build --profile "$profile" --locked --target aarch64-unknown-linux-gnu --bin edgectl --bin edge-sim >&2
      binaries="$CARGO_TARGET_DIR/aarch64-unknown-linux-gnu/$profile_dir"
      ;;
    *) echo "no build for platform $platform (linux/amd64 and linux/arm64 are)" >&2; exit 2 ;;
  esac
  strip="strip"
  [ "$arch" = arm64 ] && strip="aarch64-linux-gnu-strip"
  for binary in edgectl edge-sim; do
    install -m 0755 --strip --strip-program="$strip" "$binaries/$binary" "$out/$binary-$version-linux-$arch"
  done
done

files="$(cd "$out" && find . -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort)"
mapfile -t files <<<"$files"
sums="$(cd "$out" && sha256sum -- "${files[@]}")"
printf '%s\n' "$sums" >"$out/SHA256SUMS"
size="$(du -sh "$out" | cut -f1)"
log "${#files[@]} files and SHA256SUMS, $size, in $out"
echo "$out"
