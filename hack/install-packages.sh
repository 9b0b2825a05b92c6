#!/usr/bin/env bash
# Installs the Debian packages named that are not installed yet (root), refreshing the
# package lists only when an install fails without them.
#   hack/install-packages.sh PACKAGE...
set -euo pipefail
missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
[ "${#missing[@]}" = 0 ] && exit 0
printf '[packages] installing %s (Debian)\n' "${missing[*]}" >&2
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
install 2>/dev/null || { apt-get update -qq >/dev/null && install; }
