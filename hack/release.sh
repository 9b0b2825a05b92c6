#!/usr/bin/env bash
# `make release`: everything a release publishes, built from a clean tree, into one
# folder (dist/<version>, or --out DIR):
#   edge-operator-<version>.oci.tar   the operator image, one per platform under one index
#                                     (hack/image/build.sh: from scratch, static binaries)
#   edge-sim-<version>.oci.tar        the emulator image
#   <image archive>.cdx.json          an SBOM per image (CycloneDX 1.5, validated against
#                                     its schema): the crates of each binary of each
#                                     platform (cargo-cyclonedx) and the CA bundle
#   edge-operator-<version>.tgz       the chart (helm package; version = app version), its
#                                     default images pinned by the digests of these
#   edge-operator-<version>-linux-<arch>
#   edgectl-<version>-linux-<arch>    the three binaries for each platform, static (musl):
#   edge-sim-<version>-linux-<arch>   they run on any Linux of that architecture
#   SHA256SUMS                        `sha256sum -c SHA256SUMS` in the folder checks all
#
#   hack/release.sh [--out DIR] [--platforms linux/amd64,linux/arm64] [--profile release|dev]
#                   [--add FILE]...
#   hack/release.sh --tools   only installs the tools it needs (hack/image/tools.sh)
# --add puts a file built elsewhere into the folder and its SHA256SUMS (the workflow's
# macOS edgectl). `--profile dev` (the kind suites' test of this script) builds from a
# tree that may be dirty, with the fastest build; a release is `--profile release`.
# Prints the folder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=hack/k8s/versions.sh
source hack/k8s/versions.sh
# shellcheck source=hack/image/tools.sh
source hack/image/tools.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$EDGE_CACHE_DIR/target}"

log() { printf '[release] %s\n' "$*" >&2; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
out="dist/$version"
platforms="linux/amd64,linux/arm64"
profile=release
added=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --platforms) platforms="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --add) added+=("$(realpath "$2")"); shift 2 ;;
    --tools) release_tools; exit 0 ;;
    *) echo "usage: $0 [--out DIR] [--platforms linux/amd64,linux/arm64] [--profile release|dev] [--add FILE]... | --tools" >&2; exit 2 ;;
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

tools="$(hack/k8s/build.sh --helm | tail -n1)"
release_tools
rm -rf "$out"
mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

log "images for $platforms (profile $profile)"
built="$(EDGE_IMAGE_PROFILE="$profile" EDGE_IMAGE_PLATFORMS="$platforms" hack/image/build.sh)"
mapfile -t images <<<"$built"
for image in "${images[@]}"; do
  cp "$image" "$out/"
done

log "SBOMs"
mkdir -p "$work/crates"
for platform in ${platforms//,/ }; do
  # One SBOM per binary, <binary>_bin_<target>.cdx.json, written beside Cargo.toml and
  # moved out at once.
  target="$(musl_target "$platform")"
  "$CYCLONEDX" cyclonedx --quiet --format json --spec-version 1.5 --describe binaries --no-build-deps \
    --target "$target" --target-in-filename >&2
  mv ./*_bin_"$target".cdx.json "$work/crates/"
done
commit_time="$(git log -1 --format=%cI)"
rustc_version="$(rustc --version | cut -d' ' -f2)"
for image in "${images[@]}"; do
  "$RELEASE_PYTHON" hack/image/sbom.py --crates "$work/crates" --image "$image" --timestamp "$commit_time" \
    --ca-bundle "certifi==$CERTIFI_VERSION" --rustc "$rustc_version" --zig "$ZIGLANG_VERSION" --output "$out/$(basename "$image").cdx.json" >&2
done

log "chart, its default images pinned by digest"
# The digest of an image is its index's, which `skopeo copy --all --preserve-digests`
# keeps in any registry.
operator_reference="$(python3 hack/image/oci.py --reference "$out/edge-operator-$version.oci.tar")"
sim_reference="$(python3 hack/image/oci.py --reference "$out/edge-sim-$version.oci.tar")"
operator_digest="${operator_reference#* }"
sim_digest="${sim_reference#* }"
cp -r charts/edge-operator "$work/chart"
python3 - "$work/chart/values.yaml" "$operator_digest" "$sim_digest" <<'PIN'
import re, sys
path, operator, sim = sys.argv[1:]
text = open(path).read()
# image.digest (indented 2) and emulator.image.digest (indented 4), each once.
for indent, digest in (("  ", operator), ("    ", sim)):
    text, count = re.subn(rf'^{indent}digest: ""$', f'{indent}digest: "{digest}"', text, count=1, flags=re.M)
    if count != 1:
        sys.exit(f"values.yaml has no line '{indent}digest: \"\"' to pin")
open(path, "w").write(text)
PIN
"$tools/helm" package "$work/chart" --version "$version" --app-version "$version" -d "$out" >&2

log "binaries"
for platform in ${platforms//,/ }; do
  binaries="$CARGO_TARGET_DIR/$(musl_target "$platform")/$profile_dir"
  for binary in edge-operator edgectl edge-sim; do
    strip_binary "$binaries/$binary" "$out/$binary-$version-${platform//\//-}"
  done
done
for file in "${added[@]}"; do
  cp "$file" "$out/"
done

files="$(cd "$out" && find . -maxdepth 1 -type f -printf '%f\n' | LC_ALL=C sort)"
mapfile -t files <<<"$files"
sums="$(cd "$out" && sha256sum -- "${files[@]}")"
printf '%s\n' "$sums" >"$out/SHA256SUMS"
size="$(du -sh "$out" | cut -f1)"
log "${#files[@]} files and SHA256SUMS, $size, in $out"
echo "$out"
