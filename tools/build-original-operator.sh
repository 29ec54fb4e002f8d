#!/usr/bin/env bash
# Builds the original Go operator (github.com/openshift/sandboxed-containers-operator) from a git checkout
# of its source, once per commit, into a cache outside the repository, for the benchmark's side-by-side run
# (`node bench/install.ts --operator original`). Prints the directory holding `manager` (the binary, built
# as its Makefile's `build` target does: CGO off, the aws and azure build tags) and `bundle/` (its OLM
# bundle's manifests, which the benchmark applies as OLM would: the monitor's ServiceAccount, the dashboard
# ConfigMap).
#
#   tools/build-original-operator.sh [SRC]   SRC: the checkout (default $OSC_ORIGINAL_SRC), e.g. made by
#                                             git clone https://github.com/openshift/sandboxed-containers-operator
#   OSC_CAA_SRC     a git clone of github.com/confidential-containers/cloud-api-adaptor (with its tags), for
#                   the operator's cloud-api-adaptor modules (see below)
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc); see tools/lib/cached-build.sh
#
# The Go module proxy does not serve the operator's own module, so its source comes from a checkout: the
# commit checked out (HEAD, which must have no uncommitted changes) is what is built, and names the cache
# entry. Its dependencies come from the Go module proxy, except that the proxy this machine reaches refuses
# github.com/confidential-containers/cloud-api-adaptor/src/cloud-providers@v0.9.0 ("403 Forbidden: This
# module version is not available"). With OSC_CAA_SRC, the operator's cloud-api-adaptor modules are served
# from that clone instead, each from its tag (src/<module>/<version>), through a module proxy on disk
# (tools/original-operator: the zip made by the go command's rules, the repository's LICENSE added where
# the module has none, as the go command does); the go command checks each against the operator's go.sum,
# so a source that is not byte for byte the published version fails the build. osc takes nothing from the
# operator but this binary and the bundle's manifests, which it runs and applies as they are.
#
# Built as its Dockerfile builds it: with Go 1.21 (its builder image is rhel-9-golang-1.21), fetched by the
# go command as the golang.org/toolchain module (GOTOOLCHAIN); a newer Go cannot compile the
# golang.org/x/tools its controller-tools pins ("invalid array length -delta * delta" in
# internal/tokeninternal, go1.26). Its `make build` first generates the API's DeepCopy methods
# (zz_generated.deepcopy.go, not in its repository): so does this, with the controller-gen its go.mod pins.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=original-operator what="the original operator"
# Measured 2026-11-27 beside two chaos runs (GOMAXPROCS=1, nice 19): 6 minutes with the modules already
# downloaded, after about 3 to download them. Not measured on idle cores.
declare -A measured=([busy]=9)
source "$here/lib/cached-build.sh"
require_go

src=${1:-${OSC_ORIGINAL_SRC:-}}
if [[ -z $src || ! -d $src ]]; then
  echo "[$name] no source: pass a git checkout of github.com/openshift/sandboxed-containers-operator (or set OSC_ORIGINAL_SRC)" >&2
  exit 1
fi
commit=$(git -C "$src" rev-parse HEAD)
if ! git -C "$src" diff --quiet HEAD; then
  echo "[$name] $src has uncommitted changes: the cache is keyed by commit, so build a clean checkout" >&2
  exit 1
fi
toolchain=go1.21.13
dest="$cache_dir/$commit-$toolchain"
complete() { [[ -x $dest/manager && -d $dest/bundle ]]; }

reuse_or_lock complete "$dest"
start_build "the original operator at ${commit:0:12}" "$dest"
mkdir -p "$tmp/src"
git -C "$src" archive "$commit" | tar -x -C "$tmp/src"
log "Go $toolchain (the source's go.mod asks for $(sed -n 's/^go //p' "$tmp/src/go.mod"))"
if [[ -n ${OSC_CAA_SRC:-} ]]; then
  caa=github.com/confidential-containers/cloud-api-adaptor
  modproxy="$tmp/modproxy"
  (cd "$here/original-operator" && go build -o "$tmp/modproxy-tool" .)
  # Every cloud-api-adaptor module the operator requires (directly or not), at the version it requires.
  while read -r path version; do
    sub=${path#"$caa/"}
    log "serving $path@$version from $OSC_CAA_SRC (tag $sub/$version)"
    rm -rf "$tmp/mod" && mkdir -p "$tmp/mod"
    git -C "$OSC_CAA_SRC" archive "$sub/$version" "$sub" | tar -x -C "$tmp/mod"
    [[ -e $tmp/mod/$sub/LICENSE ]] || git -C "$OSC_CAA_SRC" show "$sub/$version:LICENSE" >"$tmp/mod/$sub/LICENSE"
    "$tmp/modproxy-tool" "$modproxy" "$path" "$version" "$tmp/mod/$sub"
  done < <(sed -n "s#^[[:space:]]*\($caa/[^ ]*\) \(v[^ ]*\).*#\1 \2#p" "$tmp/src/go.mod")
  rm -rf "$tmp/mod" "$tmp/modproxy-tool"
  export GOPROXY="file://$modproxy,$(go env GOPROXY)"
fi
# As its Makefile's build target: generate, then CGO_ENABLED=0 (set by start_build) and the -tags of
# BUILTIN_CLOUD_PROVIDERS (its manifests, fmt and vet steps change nothing the binary is made of).
export GOTOOLCHAIN=$toolchain
(cd "$tmp/src" && go run sigs.k8s.io/controller-tools/cmd/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./...)
(cd "$tmp/src" && go build -tags=aws,azure -o "$tmp/manager" main.go)
go version "$tmp/manager" | sed 's/^[^ ]* //' >"$tmp/go-version"
cp -r "$tmp/src/bundle/manifests" "$tmp/bundle"
echo "$commit" >"$tmp/commit"
rm -rf "$tmp/src" "${modproxy:-}"
finish_build "$dest"
echo "$dest"
