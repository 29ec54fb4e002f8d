# Sourced by tools/build-*.sh: what every build of a pinned Go module into the cache shares. The caller sets
#   name   its log prefix and cache subfolder (e.g. control-plane)
#   what   how its messages name it (e.g. "the control plane")
#   measured  an associative array: minutes a first build took, [idle] and [busy], either one unmeasured
#             (see start_build)
# and then calls: require_go; [cache hit? print and exit]; wait_for_build_lock; [hit now?]; start_build
# "<what>" "$dest"; its go builds into "$tmp"; finish_build "$dest".
#
#   OSC_CACHE_DIR   cache root (default: $XDG_CACHE_HOME/osc or ~/.cache/osc)

cache_root=${OSC_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/osc}
cache_dir="$cache_root/$name"
# The build's progress also goes to a file, so that a run waiting for it can show it.
progress="$cache_dir/.progress"
mkdir -p "$cache_dir"

log() {
  echo "[$name] $*" >&2
  echo "[$name] $*" >>"$progress" 2>/dev/null || true
}

require_go() {
  command -v go >/dev/null 2>&1 && return
  [[ -x /usr/local/go/bin/go ]] || { echo "[$name] Go is required to build $what: install Go 1.24 or newer" >&2; exit 1; }
  export PATH="$PATH:/usr/local/go/bin"
}

# One build at a time: parallel runs wait for the first build instead of starting their own, showing its
# lines so far and as they come, and a line a minute so that a quiet compile step does not look hung.
#
# Ctrl-C (SIGINT to the whole process group) or SIGTERM stops the wait at once. The lock is awaited by a
# background flock and the `wait` builtin, which a trapped signal interrupts: a foreground flock that missed
# the signal (it can arrive between fork and exec, while the child still has bash's handler) would end
# normally a minute later, bash would take the signal as handled, and the loop would wait forever. The lock
# taken by the background flock is the script's own: flock locks belong to the open file (fd 9), which both
# share.
# The cache entry when it is complete (`$1`, a command, says so), before and after taking the build lock:
# prints `$2`, the path the caller reads, and exits. Otherwise returns holding the lock, for the build.
reuse_or_lock() {
  if $1; then
    echo "$2"
    exit 0
  fi
  wait_for_build_lock
  if $1; then
    echo "$2"
    exit 0
  fi
}

wait_for_build_lock() {
  exec 9>"$cache_dir/.lock"
  flock -n 9 && return
  # Background jobs of a script ignore SIGINT, so the helpers below are stopped by hand on every way out:
  # by the traps (a signal, or an exit under set -e) and after the wait.
  waiting= follower= locker=
  local waited=0
  stop_helpers() { kill $waiting $follower $locker 2>/dev/null || true; }
  trap stop_helpers EXIT
  trap 'stop_helpers; trap - EXIT INT; kill -INT $$' INT
  trap 'stop_helpers; trap - EXIT TERM; kill -TERM $$' TERM
  echo "[$name] another build of $what is running; waiting for it (its progress follows)" >&2
  # Nothing here holds the script's stdout, which its caller reads to the end for the path it prints.
  sleep infinity >/dev/null 2>&1 &
  waiting=$!
  tail --pid="$waiting" -n +1 -F "$progress" 2>/dev/null | sed -u 's/^/[other build] /' >&2 &
  follower=$!
  while :; do
    flock -w 60 9 &
    locker=$!
    wait "$locker" && break
    waited=$((waited + 1))
    echo "[$name] still waiting for the other build (${waited} min)" >&2
  done
  locker=
  stop_helpers
  trap - EXIT INT TERM
  wait 2>/dev/null || true
}

# A scratch directory ($tmp) that becomes the cache entry only once every binary is in it. The one estimate
# of a first build's time is here, from the caller's `measured` (what the last measurement took, in minutes,
# on 2 idle cores and on 2 cores shared with other builds and test runs).
start_build() { # what is built, and where
  : >"$progress"
  log "first build of $1 from Go modules into $2"
  if [[ -n ${measured[idle]:-} ]]; then
    log "this takes about ${measured[idle]} minutes on 2 idle cores${measured[busy]:+, ${measured[busy]} on a busy machine}; later runs reuse it"
  else
    log "this took about ${measured[busy]} minutes on a busy machine (not measured on idle cores); later runs reuse it"
  fi
  tmp=$(mktemp -d "$cache_dir/.build-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  build_started=$(date +%s)
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
}

finish_build() { # destination
  rm -rf "$1"
  mv "$tmp" "$1"
  trap - EXIT
  log "done in $(($(date +%s) - build_started))s; $(du -sh "$1" | cut -f1) in $1"
}
