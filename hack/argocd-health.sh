#!/usr/bin/env bash
# Writes examples/gitops/argocd/argocd-cm-patch.yaml: the health check of
# examples/gitops/argocd/health.lua under the argocd-cm key of each kind of crds/ with
# a status (argocd-cm keys name one group and kind each); the operator's own records
# have none, and no health beyond existing. An offline test fails when the two
# drift apart.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/examples/gitops/argocd"
{
  echo "# Argo CD health checks of the edgeplatform.io kinds, for argocd-cm:"
  echo "#   kubectl -n argocd patch configmap argocd-cm --type merge --patch-file argocd-cm-patch.yaml"
  echo "# Generated from health.lua by hack/argocd-health.sh; edit health.lua instead."
  echo "data:"
  for crd in "$root"/crds/*.yaml; do
    grep -q '^    subresources:' "$crd" || continue
    kind="$(sed -n 's/^    kind: //p' "$crd")"
    echo "  resource.customizations.health.edgeplatform.io_${kind}: |"
    sed 's/^/    /' health.lua
  done
} >argocd-cm-patch.yaml
