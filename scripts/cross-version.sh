#!/usr/bin/env bash
# Mixed-version sessions (issue 40): builds the release `huddle` of an earlier commit in a worktree under
# .build/cross-version/ (kept, so a second run reuses it), builds this tree's, and runs CrossVersionProcessTests
# between the two: each hosts while the other joins, chat both ways, an attachment each way.
#
#   scripts/cross-version.sh [REF]     (make cross-version [CROSS_VERSION_REF=REF])
#
# REF defaults to BASELINE below: the last commit before a change to what travels on the wire (the transport flags
# IMMEDIATE_ACK and HONORS_IMMEDIATE_ACK, 5f4b489). Move it forward when a release is tagged.
set -euo pipefail
cd "$(dirname "$0")/.."

BASELINE=740d579
ref="${1:-$BASELINE}"
sha="$(git rev-parse --short=12 "$ref^{commit}")"
tree=".build/cross-version/$sha"
old="$tree/.build/release/huddle"

if [ ! -x "$old" ]; then
    echo "cross-version: building huddle at $sha in $tree (a few minutes, once)"
    rm -rf "$tree"
    git worktree prune
    git worktree add --detach --force "$tree" "$sha" >/dev/null
    (cd "$tree" && swift build -c release --product huddle)
fi
swift build -c release --product huddle
new="$(swift build -c release --show-bin-path)/huddle"
echo "cross-version: $("$old" --version 2>/dev/null || echo "huddle at $sha") against $("$new" --version)"
# The test runner is the debug build (its bundle needs no release rebuild); the nodes are the two release binaries.
HUDDLE_EXECUTABLE="$new" HUDDLE_OLD_EXECUTABLE="$old" swift test --filter CrossVersionProcessTests
