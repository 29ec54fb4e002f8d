#!/usr/bin/env bash
# Builds the pinned control plane from Go modules into a cache outside the repository, once per version:
# etcd (tools/etcd); kube-apiserver, kube-scheduler, kube-controller-manager and kubectl (tools/kube); kwok
# (tools/kwok), which plays the nodes' kubelets. Prints the directory holding the binaries.
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc)
#
# The first build compiles Kubernetes from source: on 2 cores expect ten minutes or more.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v go >/dev/null 2>&1; then
  [[ -x /usr/local/go/bin/go ]] || { echo "[control-plane] Go is required to build etcd and kube-apiserver: install Go 1.24 or newer" >&2; exit 1; }
  export PATH="$PATH:/usr/local/go/bin"
fi
cache_root=${OSC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/osc}

version_of() { # module directory, module path -> pinned version
  (cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}
kube_version=$(version_of kube k8s.io/kubernetes)
etcd_version=$(version_of etcd go.etcd.io/etcd/server/v3)
kwok_version=$(version_of kwok sigs.k8s.io/kwok)
# The key covers the wrapper modules' content so that an edit to a pin rebuilds.
key=$(cat "$here"/{kube,etcd,kwok}/go.{mod,sum} | sha256sum | cut -c1-12)
dest="$cache_root/control-plane/k8s-$kube_version-etcd-$etcd_version-kwok-$kwok_version-$key"
binaries=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl kwok)
complete() {
  local b
  for b in "${binaries[@]}"; do [[ -x $dest/$b ]] || return 1; done
}

if complete; then
  echo "$dest"
  exit 0
fi

log() { echo "[control-plane] $*" >&2; }
mkdir -p "$cache_root/control-plane"
# One build at a time: parallel test runs wait for the first build instead of starting their own.
exec 9>"$cache_root/control-plane/.lock"
if ! flock -n 9; then
  log "another build of the control plane is running; waiting for it"
  flock 9
fi
if complete; then
  echo "$dest"
  exit 0
fi
tmp=$(mktemp -d "$cache_root/control-plane/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
export CGO_ENABLED=0 GOFLAGS=-mod=mod
ldflags_kube="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
build() { # module dir, package, output name, ldflags
  local t0=$(date +%s)
  log "building $3 ($2) ..."
  (cd "$here/$1" && go build -trimpath -ldflags "$4" -o "$tmp/$3" "$2")
  log "built $3 in $(( $(date +%s) - t0 ))s"
}
log "first build of etcd $etcd_version, Kubernetes $kube_version and kwok $kwok_version from Go modules into $dest"
log "this compiles Kubernetes from source and takes a while (about 15-25 minutes on 2 cores); later runs reuse it"
build etcd go.etcd.io/etcd/server/v3 etcd "-s -w"
for cmd in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  build kube "k8s.io/kubernetes/cmd/$cmd" "$cmd" "$ldflags_kube"
done
build kwok sigs.k8s.io/kwok/cmd/kwok kwok "-s -w"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
log "done in $(( $(date +%s) - start ))s; $(du -sh "$dest" | cut -f1) in $dest"
echo "$dest"
