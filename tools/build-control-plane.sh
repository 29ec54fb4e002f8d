#!/usr/bin/env bash
# Builds the pinned etcd, kube-apiserver and kubectl from Go modules (tools/etcd, tools/kube) into a
# cache outside the repository, once per version. Prints the directory holding the binaries.
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
# The key covers the wrapper modules' content so that an edit to a pin rebuilds.
key=$(cat "$here/kube/go.mod" "$here/kube/go.sum" "$here/etcd/go.mod" "$here/etcd/go.sum" | sha256sum | cut -c1-12)
dest="$cache_root/control-plane/k8s-$kube_version-etcd-$etcd_version-$key"

if [[ -x $dest/kube-apiserver && -x $dest/kubectl && -x $dest/etcd ]]; then
  echo "$dest"
  exit 0
fi

mkdir -p "$cache_root/control-plane"
# The build's progress also goes to a file, so that a run waiting for it can show it.
progress="$cache_root/control-plane/.progress"
log() { echo "[control-plane] $*" >&2; echo "[control-plane] $*" >>"$progress" 2>/dev/null || true; }
# One build at a time: parallel test runs wait for the first build instead of starting their own.
exec 9>"$cache_root/control-plane/.lock"
if ! flock -n 9; then
  echo "[control-plane] another build of the control plane is running; waiting for it (its progress follows)" >&2
  # Its lines so far and as they come, and a line a minute so that a quiet compile step does not look hung.
  sleep infinity &
  waiting=$!
  tail --pid="$waiting" -n +1 -F "$progress" 2>/dev/null | sed -u 's/^/[other build] /' >&2 &
  waited=0
  while ! flock -w 60 9; do
    waited=$((waited + 1))
    echo "[control-plane] still waiting for the other build (${waited} min)" >&2
  done
  kill "$waiting" 2>/dev/null || true
  wait 2>/dev/null || true
fi
if [[ -x $dest/kube-apiserver && -x $dest/kubectl && -x $dest/etcd ]]; then
  echo "$dest"
  exit 0
fi
: >"$progress"
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
log "first build of etcd $etcd_version and Kubernetes $kube_version from Go modules into $dest"
log "this compiles Kubernetes from source and takes a while (about 10-20 minutes on 2 cores); later runs reuse it"
build etcd go.etcd.io/etcd/server/v3 etcd "-s -w"
build kube k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$ldflags_kube"
build kube k8s.io/kubernetes/cmd/kubectl kubectl "$ldflags_kube"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
log "done in $(( $(date +%s) - start ))s; $(du -sh "$dest" | cut -f1) in $dest"
echo "$dest"
