#!/usr/bin/env bash
# A CI step for pull requests of a GitOps repository: show what the operator would do
# with the changed manifests before they merge, like `terraform plan`.
#
#   EDGE_API_URL, EDGE_ACCESS_KEY  the platform (or an edge-sim the job starts, below)
#   MANIFESTS                      folder or kustomization to plan (default: ./platform)
#
# Exit status: 0 nothing would change, 2 something would (the job can label the pull
# request), 1 a manifest is invalid or cannot be resolved (the job fails).
set -uo pipefail

manifests=${MANIFESTS:-./platform}

if [ -z "${EDGE_API_URL:-}" ]; then
  # No platform account in CI: plan against the emulator and its fixtures.
  edge-sim --listen 127.0.0.1:18080 --fixtures "${EDGE_SIM_FIXTURES:-edge-sim-fixtures.yaml}" &
  sim=$!
  trap 'kill $sim' EXIT
  export EDGE_API_URL=http://127.0.0.1:18080 EDGE_ACCESS_KEY=demo-access-key
  for _ in $(seq 50); do curl -fsS "$EDGE_API_URL/_sim/clock" >/dev/null 2>&1 && break; sleep 0.1; done
fi

if [ -f "$manifests/kustomization.yaml" ]; then
  kubectl kustomize "$manifests" | edgectl plan -f - ${SECRETS_FROM:+--secrets-from "$SECRETS_FROM"}
else
  edgectl plan -f "$manifests" ${SECRETS_FROM:+--secrets-from "$SECRETS_FROM"}
fi
status=$?
case $status in
  0) echo "plan: no change" ;;
  2) echo "plan: the operator would change the platform (see above)" ;;
  *) echo "plan: errors (see above)"; status=1 ;;
esac
exit "$status"
