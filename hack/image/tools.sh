# shellcheck shell=bash disable=SC2034  # sourced: its readers use the variables
# Sourced by hack/image/build.sh and hack/release.sh: installs, once per version into
# $EDGE_CACHE_DIR/tools, what building the release's static binaries, images and SBOMs
# needs (the versions are hack/k8s/versions.sh's), and sets:
#   ZIGBUILD        cargo-zigbuild (crates.io), linking with zig (PyPI's ziglang)
#   CYCLONEDX       cargo-cyclonedx (crates.io)
#   RELEASE_PYTHON  a Python with hack/image/requirements.txt: zig, certifi (the CA
#                   bundle) and cyclonedx-python-lib (the CycloneDX schemas)
#   CA_BUNDLE       Mozilla's CA bundle as certifi ships it
#   CERTIFI_VERSION, ZIGLANG_VERSION  their versions, for the SBOMs
#   RUST_SYSROOT, RUST_HOST  the toolchain's, for strip_binary
# and adds rustup's musl targets of every platform.
release_tools() {
  local tools="$EDGE_CACHE_DIR/tools"
  local zigbuild_root="$tools/cargo-zigbuild-$CARGO_ZIGBUILD_VERSION"
  local cyclonedx_root="$tools/cargo-cyclonedx-$CARGO_CYCLONEDX_VERSION"
  local requirements="hack/image/requirements.txt" venv digest
  digest="$(sha256sum "$requirements")"
  venv="$tools/release-python-${digest:0:16}"
  if [ ! -x "$zigbuild_root/bin/cargo-zigbuild" ]; then
    printf '[tools] installing cargo-zigbuild %s (crates.io)\n' "$CARGO_ZIGBUILD_VERSION" >&2
    cargo install --quiet --locked "cargo-zigbuild@$CARGO_ZIGBUILD_VERSION" --root "$zigbuild_root" >&2
  fi
  if [ ! -x "$cyclonedx_root/bin/cargo-cyclonedx" ]; then
    printf '[tools] installing cargo-cyclonedx %s (crates.io)\n' "$CARGO_CYCLONEDX_VERSION" >&2
    cargo install --quiet --locked "cargo-cyclonedx@$CARGO_CYCLONEDX_VERSION" --root "$cyclonedx_root" >&2
  fi
  if [ ! -f "$venv/ready" ]; then
    printf '[tools] installing %s (PyPI)\n' "$requirements" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: --no-deps \
      --requirement "$requirements" >&2
    touch "$venv/ready"
  fi
  local installed
  installed="$(rustup target list --installed)"
  local triple
  for triple in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    grep -qx "$triple" <<<"$installed" || rustup target add "$triple" >&2
  done
  ZIGBUILD="$zigbuild_root/bin/cargo-zigbuild"
  CYCLONEDX="$cyclonedx_root/bin/cargo-cyclonedx"
  RELEASE_PYTHON="$venv/bin/python"
  CA_BUNDLE="$("$RELEASE_PYTHON" -c 'import certifi; print(certifi.where())')"
  CERTIFI_VERSION="$(sed -n 's/^certifi==//p' "$requirements")"
  ZIGLANG_VERSION="$(sed -n 's/^ziglang==//p' "$requirements")"
  RUST_SYSROOT="$(rustc --print sysroot)"
  RUST_HOST="$(rustc --print host-tuple)"
  # cargo-zigbuild runs zig as `$RELEASE_PYTHON -m ziglang`.
  export CARGO_ZIGBUILD_PYTHON_PATH="$RELEASE_PYTHON"
}

# strip_binary SOURCE DESTINATION: the binary without symbols, by the toolchain's
# rust-objcopy, which reads every platform's (it loads the toolchain's LLVM, in
# RUST_SYSROOT, which release_tools sets).
strip_binary() {
  LD_LIBRARY_PATH="$RUST_SYSROOT/lib" "$RUST_SYSROOT/lib/rustlib/$RUST_HOST/bin/rust-objcopy" --strip-all "$1" "$2"
  chmod 0755 "$2"
}

# The Rust target of a platform: a static musl build.
musl_target() {
  case "$1" in
    linux/amd64) echo x86_64-unknown-linux-musl ;;
    linux/arm64) echo aarch64-unknown-linux-musl ;;
    *) echo "no build for platform $1 (linux/amd64 and linux/arm64 are)" >&2; return 2 ;;
  esac
}
