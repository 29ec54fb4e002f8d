#!/usr/bin/env bash
# Makes the base image the image tests build the operator on, where no image registry is reachable: a
# minimal Debian (mmdebstrap, from Debian's packages) with the project's Node 24 (the npm `node` package in
# node_modules) and npm in /usr/local, as the official node images lay them out. Writes a tarball for
# `docker import` into a cache outside the repository, once per content. Prints the tarball's path.
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc)
#
# Needs root (mmdebstrap), mmdebstrap and npm; the first run takes a few minutes.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cache_root=${OSC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/osc}
suite=bookworm
npm_version=11.6.2
node_bin="$root/node_modules/node/bin/node"
log() { echo "[base-image] $*" >&2; }
[[ -x $node_bin ]] || { log "no Node 24 in node_modules: run npm install first"; exit 1; }
command -v mmdebstrap >/dev/null || { log "mmdebstrap is required: apt-get install -y mmdebstrap"; exit 1; }
node_version=$("$node_bin" --version)
# The machine's own certificate authorities (/usr/local/share/ca-certificates, e.g. a proxy's) are trusted
# in the image too, so that npm inside an image build reaches the registry the way it does here.
local_cas=(/usr/local/share/ca-certificates/*.crt)
[[ -e ${local_cas[0]} ]] || local_cas=()
key=$( { cat "${BASH_SOURCE[0]}" "${local_cas[@]}"; echo "$node_version"; } | sha256sum | cut -c1-12)
dest="$cache_root/images/node-$node_version-$suite-$key.tar"
if [[ -s $dest ]]; then
  echo "$dest"
  exit 0
fi
mkdir -p "$cache_root/images"
exec 9>"$cache_root/images/.lock"
if ! flock -n 9; then
  log "another build of the base image is running; waiting for it"
  flock 9
fi
if [[ -s $dest ]]; then
  echo "$dest"
  exit 0
fi
tmp=$(mktemp -d "$cache_root/images/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
log "making a Debian $suite base with Node $node_version and npm $npm_version into $dest (a few minutes, once)"
(cd "$tmp" && npm pack --silent "npm@$npm_version" >/dev/null)
cp "$node_bin" "$tmp/node"
# Node needs libstdc++; ca-certificates for HTTPS from inside the image; no documentation or locales.
mmdebstrap --variant=minbase --include=libstdc++6,ca-certificates \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook="install -m 0755 '$tmp/node' \"\$1/usr/local/bin/node\"" \
  --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$tmp/npm-$npm_version.tgz' --strip-components=1 -C \"\$1/usr/local/lib/node_modules/npm\"" \
  --customize-hook="ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\" && ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
  --customize-hook="if [ -n '${local_cas[*]}' ]; then cp ${local_cas[*]} \"\$1/usr/local/share/ca-certificates/\" && chroot \"\$1\" update-ca-certificates >/dev/null 2>&1; fi" \
  --customize-hook="rm -rf \"\$1/var/lib/apt/lists\"/* \"\$1/var/cache/apt\"/*" \
  --quiet "$suite" "$tmp/base.tar" >&2
mv "$tmp/base.tar" "$dest"
# Bases made by an older version of this script or for another Node are superseded: drop them.
find "$cache_root/images" -maxdepth 1 -name 'node-*.tar' ! -path "$dest" -delete
log "done in $(( $(date +%s) - start ))s; $(du -sh "$dest" | cut -f1) in $dest"
echo "$dest"
