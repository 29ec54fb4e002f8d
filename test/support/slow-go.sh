#!/usr/bin/env bash
# A stand-in for `go` on PATH, for tests of a first build without its minutes: `go build -o OUT` waits
# $FAKE_GO_BUILD_SECONDS (default 2) and then copies the binary of OUT's name from one of the directories in
# $FAKE_GO_PREBUILT (already built); every other command is the real go ($REAL_GO).
set -euo pipefail
[[ ${1:-} == build ]] || exec "$REAL_GO" "$@"
out=
while (($#)); do
  [[ $1 == -o ]] && out=$2
  shift
done
sleep "${FAKE_GO_BUILD_SECONDS:-2}"
for d in $FAKE_GO_PREBUILT; do
  [[ -x $d/${out##*/} ]] && exec cp "$d/${out##*/}" "$out"
done
echo "no prebuilt ${out##*/} in $FAKE_GO_PREBUILT" >&2
exit 1
