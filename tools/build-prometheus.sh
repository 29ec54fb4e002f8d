#!/usr/bin/env bash
# Builds the pinned Prometheus server (tools/prometheus) into a cache outside the repository, once per
# version. The dev cluster runs it to scrape the operator; the web console queries its HTTP API.
# Prints the path of the prometheus binary.
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc)
#
# Built with remove_all_sd (the service-discovery plugins pull modules the Go proxy does not serve) and
# enable_kubernetes_sd (kept for a Prometheus that discovers pods itself). The first build takes a few minutes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v go >/dev/null 2>&1; then
  [[ -x /usr/local/go/bin/go ]] || { echo "[prometheus] Go is required to build Prometheus: install Go 1.26 or newer" >&2; exit 1; }
  export PATH="$PATH:/usr/local/go/bin"
fi
cache_root=${OSC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/osc}
tags=remove_all_sd,enable_kubernetes_sd

version=$(cd "$here/prometheus" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
# The key covers the module's content and the tags, so that an edit to a pin rebuilds.
key=$( (cat "$here/prometheus/go.mod" "$here/prometheus/go.sum"; echo "$tags") | sha256sum | cut -c1-12)
dest="$cache_root/prometheus/prometheus-$version-$key"

if [[ -x $dest/prometheus ]]; then
  echo "$dest/prometheus"
  exit 0
fi

log() { echo "[prometheus] $*" >&2; }
mkdir -p "$cache_root/prometheus"
exec 9>"$cache_root/prometheus/.lock"
if ! flock -n 9; then
  log "another build of Prometheus is running; waiting for it"
  flock 9
fi
if [[ -x $dest/prometheus ]]; then
  echo "$dest/prometheus"
  exit 0
fi
tmp=$(mktemp -d "$cache_root/prometheus/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
export CGO_ENABLED=0 GOFLAGS=-mod=mod
log "first build of Prometheus $version from its Go module into $dest (a few minutes; later runs reuse it)"
ldflags="-s -w -X github.com/prometheus/common/version.Version=${version#v} -X github.com/prometheus/common/version.Branch=osc"
(cd "$here/prometheus" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/prometheus" github.com/prometheus/prometheus/cmd/prometheus)
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
log "done in $(( $(date +%s) - start ))s; $(du -sh "$dest" | cut -f1) in $dest"
echo "$dest/prometheus"
