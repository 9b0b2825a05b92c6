#!/usr/bin/env bash
# Installs the Debian packages named that are not installed yet (root), refreshing the
# package lists only when an install fails without them.
#   hack/install-packages.sh PACKAGE...
#   hack/install-packages.sh --download DIR PACKAGE=VERSION...   the .deb files into DIR, unpacked by the caller
# Runs one at a time (`make test` builds in the background while it installs): apt
# refuses a second apt running at once.
set -euo pipefail
exec 9>"${TMPDIR:-/tmp}/edge-operator-apt.lock"
flock -w 900 9 || { echo "[packages] another install held the lock for 15 minutes" >&2; exit 1; }

# Runs an apt command; when it fails, refreshes the package lists once and runs it again.
with_fresh_lists() { "$@" 2>/dev/null || { apt-get update -qq >/dev/null && "$@"; }; }

if [ "${1:-}" = --download ]; then
  dir="$2"; shift 2
  cd "$dir"
  with_fresh_lists apt-get download -qq -o APT::Sandbox::User=root "$@"
  exit 0
fi

missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
[ "${#missing[@]}" = 0 ] && exit 0
printf '[packages] installing %s (Debian)\n' "${missing[*]}" >&2
DEBIAN_FRONTEND=noninteractive with_fresh_lists apt-get install -y -qq "${missing[@]}" >/dev/null
