#!/usr/bin/env bash
# Builds the pinned Prometheus server (tools/prometheus) into a cache outside the repository, once per
# version. The dev cluster runs it to scrape the operator; the web console queries its HTTP API.
# Prints the path of the prometheus binary.
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc); see tools/lib/cached-build.sh
#
# Built with remove_all_sd (the service-discovery plugins pull modules the Go proxy does not serve) and
# enable_kubernetes_sd (kept for a Prometheus that discovers pods itself). The first build prints how long it takes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=prometheus what="Prometheus"
# Measured from a fresh cache (2026-11-23 alone on the machine; 2026-11-25 beside seven other builds and test runs).
declare -A measured=([idle]=2 [busy]=7)
source "$here/lib/cached-build.sh"
require_go
tags=remove_all_sd,enable_kubernetes_sd

version=$(cd "$here/prometheus" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)
# The key covers the module's content and the tags, so that an edit to a pin rebuilds.
key=$( (cat "$here/prometheus/go.mod" "$here/prometheus/go.sum"; echo "$tags") | sha256sum | cut -c1-12)
dest="$cache_dir/prometheus-$version-$key"

complete() { [[ -x $dest/prometheus ]]; }
reuse_or_lock complete "$dest/prometheus"
start_build "Prometheus $version" "$dest"
ldflags="-s -w -X github.com/prometheus/common/version.Version=${version#v} -X github.com/prometheus/common/version.Branch=osc"
(cd "$here/prometheus" && go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/prometheus" github.com/prometheus/prometheus/cmd/prometheus)
finish_build "$dest"
echo "$dest/prometheus"
