#!/bin/bash
# The runs behind docs/FLOOD.md: 500/s and 5,000/s three times each, then 5,000/s answering cookies (mac2) twice.
# Each run waits (up to 10 min) for /tmp/huddle-build.lock, so it never overlaps builds or timing-sensitive tests,
# and is bounded to 150 s once it holds the lock. A run whose JSON result already exists is skipped.
# Usage: scripts/flood/run-all.sh [RESULTS_DIR]   then   python3 scripts/flood/flood.py --summarize RESULTS_DIR/*.json
cd "$(dirname "$0")/../.." || exit 1
R=${1:-/tmp/flood-results}; mkdir -p "$R"
echo "nproc $(nproc)"; echo "before: $(cat /proc/loadavg)"; date -u
one() {   # NAME ARGS...
  local name=$1; shift
  [ -s "$R/$name.json" ] && { echo "$name: kept"; return; }
  flock -w 600 /tmp/huddle-build.lock timeout 150 python3 scripts/flood/flood.py --huddle .build/release/huddle \
    --duration 10 --sockets 200 --json-out "$R/$name.json" "$@" > "$R/$name.out" 2>&1
  echo "$name rc $? load $(cat /proc/loadavg)"
}
for i in 1 2 3; do
  one "r500-$i" --rate 500
  one "r5000-$i" --rate 5000
done
for i in 1 2; do
  one "r5000mac2-$i" --rate 5000 --answer-cookies --drop-log
done
echo "after: $(cat /proc/loadavg)"; date -u
