#!/usr/bin/env bash
# Builds the pinned helm (tools/helm) from its Go module into a cache outside the repository, once per
# version. Prints the path of the helm binary.
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc); see tools/lib/cached-build.sh
#
# The first build prints how long it takes (`measured` below).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=helm what="helm"
# Measured from a fresh cache on 2 idle cores.
declare -A measured=([idle]=1.5)
source "$here/lib/cached-build.sh"
require_go

version=$(cd "$here/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v3)
# The key covers the module's content and this script so that an edit to the pin or the flags rebuilds.
key=$(cat "$here/helm/go.mod" "$here/helm/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)
dest="$cache_dir/helm-$version-$key"

complete() { [[ -x $dest/helm ]]; }
reuse_or_lock complete "$dest/helm"
start_build "helm $version" "$dest"
# As helm's own Makefile does: the version, and the Kubernetes version that `helm template` and `helm lint`
# assume (from the client-go it links; without it they assume v1.20 and refuse charts needing newer).
client_go=$(cd "$here/helm" && go list -m -f '{{.Version}}' k8s.io/client-go) # v0.34.x -> Kubernetes 1.34
k8s_major=$(( $(echo "${client_go#v}" | cut -d. -f1) + 1 ))
k8s_minor=$(echo "$client_go" | cut -d. -f2)
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags="$ldflags -X $pkg.k8sVersionMajor=$k8s_major -X $pkg.k8sVersionMinor=$k8s_minor"
done
(cd "$here/helm" && go build -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm)
finish_build "$dest"
# Builds of another pin or of an older version of this script are superseded: drop them.
find "$cache_dir" -mindepth 1 -maxdepth 1 -name 'helm-*' ! -path "$dest" -exec rm -rf {} +
echo "$dest/helm"
