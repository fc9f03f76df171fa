#!/usr/bin/env bash
# Runs the churn-schedule scenario over a seed range FIRST-LAST in two halves at once (one per core) and fails if
# either half fails. huddle-sim prints the failing seed, its options (the schedule drawn among them) and the replay
# command. Usage: scripts/churn-schedule.sh path/to/huddle-sim FIRST-LAST
set -euo pipefail
sim=$1
first=${2%-*}
last=${2#*-}
middle=$(((first + last) / 2))
"$sim" --scenario churn-schedule --seeds "$first-$middle" &
low=$!
"$sim" --scenario churn-schedule --seeds "$((middle + 1))-$last" &
high=$!
status=0
wait $low || status=1
wait $high || status=1
exit $status
