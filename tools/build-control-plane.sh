#!/usr/bin/env bash
# Builds the pinned control plane from Go modules into a cache outside the repository, once per version:
# etcd and etcdutl (tools/etcd; etcdutl restores snapshots, for the chaos run's etcd restore fault);
# kube-apiserver, kube-scheduler, kube-controller-manager and kubectl (tools/kube); kwok (tools/kwok), which
# plays the nodes' kubelets, with the fixes in tools/kwok/patches applied to its pinned source (each patch
# says why). Prints the directory holding the binaries.
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc); see tools/lib/cached-build.sh
#
# The first build compiles Kubernetes from source; it prints how long that takes (`measured` below).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=control-plane what="the control plane"
# Measured from a fresh cache (2026-11-23 alone on the machine; 2026-11-25 beside seven other builds and test runs).
declare -A measured=([idle]=5 [busy]=17)
source "$here/lib/cached-build.sh"
require_go

version_of() { # module directory, module path -> pinned version
  (cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}
kube_version=$(version_of kube k8s.io/kubernetes)
etcd_version=$(version_of etcd go.etcd.io/etcd/server/v3)
kwok_version=$(version_of kwok sigs.k8s.io/kwok)
# The key covers the wrapper modules' content and kwok's patches, so that an edit to a pin or a patch rebuilds.
key=$(cat "$here"/{kube,etcd,kwok}/go.{mod,sum} "$here"/kwok/patches/*.patch | sha256sum | cut -c1-12)
dest="$cache_dir/k8s-$kube_version-etcd-$etcd_version-kwok-$kwok_version-$key"
binaries=(etcd etcdutl kube-apiserver kube-scheduler kube-controller-manager kubectl kwok)
complete() {
  local b
  for b in "${binaries[@]}"; do [[ -x $dest/$b ]] || return 1; done
}

reuse_or_lock complete "$dest"
start_build "etcd $etcd_version, Kubernetes $kube_version and kwok $kwok_version" "$dest"
ldflags_kube="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$kube_version"
build() { # module dir, package, output name, ldflags
  local t0=$(date +%s)
  log "building $3 ($2) ..."
  (cd "$here/$1" && go build -trimpath -ldflags "$4" -o "$tmp/$3" "$2")
  log "built $3 in $(( $(date +%s) - t0 ))s"
}
build etcd go.etcd.io/etcd/server/v3 etcd "-s -w"
build etcd go.etcd.io/etcd/etcdutl/v3 etcdutl "-s -w"
for cmd in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  build kube "k8s.io/kubernetes/cmd/$cmd" "$cmd" "$ldflags_kube"
done
# kwok from its pinned source with tools/kwok/patches applied: a copy of the module, and a copy of the
# wrapper module that points at it.
kwok_src="$tmp/kwok-src" kwok_mod="$tmp/kwok-mod"
cp -r "$(cd "$here/kwok" && go mod download -json sigs.k8s.io/kwok | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')" "$kwok_src"
chmod -R u+w "$kwok_src"
git init -q "$kwok_src" # a repository of its own, so that git apply takes the patches' paths from its top
for p in "$here"/kwok/patches/*.patch; do
  log "patching kwok: $(basename "$p")"
  git -C "$kwok_src" apply -p1 "$p"
done
mkdir -p "$kwok_mod"
cp "$here"/kwok/{go.mod,go.sum,tools.go} "$kwok_mod/"
(cd "$kwok_mod" && go mod edit -replace "sigs.k8s.io/kwok=$kwok_src")
t0=$(date +%s)
log "building kwok (sigs.k8s.io/kwok/cmd/kwok, patched) ..."
(cd "$kwok_mod" && go build -trimpath -ldflags "-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)
log "built kwok in $(( $(date +%s) - t0 ))s"
rm -rf "$kwok_src" "$kwok_mod"
finish_build "$dest"
echo "$dest"
