#!/usr/bin/env bash
# Type-checks every step of the DocC tutorial (Sources/Huddle/Huddle.docc/Resources/shared-app-NN.swift) against
# the debug build's Huddle module, so a public API change that breaks the tutorial fails `make lint`. Each step is a
# whole file of the example app at that point, checked on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/module-search-paths.sh

failed=0
steps=(Sources/Huddle/Huddle.docc/Resources/shared-app-[0-9]*.swift)
for step in "${steps[@]}"; do
    if ! swiftc -typecheck -parse-as-library "${module_args[@]}" "$step" 2> >(sed "s|^|  |" >&2); then
        echo "tutorial: $step does not compile against this build" >&2
        failed=1
    fi
done
[ "$failed" = 0 ] && echo "tutorial: ok (${#steps[@]} steps type-check against this build)"
exit "$failed"
