#!/usr/bin/env bash
# Fails when the public API of the Huddle module (what an embedding app compiles against) differs from the committed
# listing in docs/api/Huddle.txt: any addition, removal or change of a public declaration, so none lands unannounced.
# Needs a debug build (`swift build --build-tests`, as `make lint` runs first). To accept an intended change, run
# `make api-baseline` and commit docs/api/Huddle.txt together with a CHANGELOG.md entry.
#
# It also fails when a public throwing declaration has an untyped `throws`. With --update it rewrites the listing
# instead of comparing.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/module-search-paths.sh

dump=$(mktemp)
listing=$(mktemp)
trap 'rm -f "$dump" "$listing"' EXIT
# The digester ships with the toolchain, next to `swift` (which may be on the PATH without it).
digester=$(command -v swift-api-digester || echo "$(dirname "$(readlink -f "$(command -v swift)")")/swift-api-digester")
"$digester" -dump-sdk -module Huddle "${module_args[@]}" -o "$dump" >/dev/null
{
    python3 scripts/api-listing.py "$dump"
    # Re-exported declarations are public API too; the dump names only their modules.
    grep -h '^@_exported import' Sources/Huddle/*.swift | sed 's/^/Reexport /'
} | sort > "$listing"
if [ "$(wc -l < "$listing")" -lt 100 ]; then
    echo "api: the Huddle module could not be read (is there a debug build?)" >&2
    exit 1
fi

# Every public throwing declaration names its error type (`throws(HuddleError)`, mangled with `YK`), so an app's
# `catch` can be exhaustive. Codable's `init(from:)` and `encode(to:)` are the exception: the protocol fixes them.
untyped=$(grep ' throwing \[' "$listing" | grep -v 'YK' | grep -vE 'Constructor init\(from:\)|Func encode\(to:\)' || true)
if [ -n "$untyped" ]; then
    echo "api: a public throwing declaration does not name its error type; declare throws(HuddleError):" >&2
    echo "$untyped" >&2
    exit 1
fi

if [ "${1:-}" = "--update" ]; then
    mkdir -p docs/api
    cp "$listing" docs/api/Huddle.txt
    echo "api: docs/api/Huddle.txt rewritten ($(wc -l < "$listing") declarations)"
    exit 0
fi

if ! diff -u docs/api/Huddle.txt "$listing" > "$dump.diff"; then
    echo "api: the public API of Huddle changed (- committed listing, + this build):" >&2
    grep -E '^[-+][^-+]' "$dump.diff" >&2 || true
    echo "api: if the change is intended, run \`make api-baseline\`, commit docs/api/Huddle.txt and note the change" \
        "in CHANGELOG.md" >&2
    rm -f "$dump.diff"
    exit 1
fi
rm -f "$dump.diff"
echo "api: ok (the public API matches docs/api/Huddle.txt, $(wc -l < "$listing") declarations)"
