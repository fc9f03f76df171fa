#!/usr/bin/env bash
# The README's Swift code must compile as written: its ```swift blocks, in order, are Tests/ReadmeSnippets/main.swift
# (the `readme-snippets` target, which depends on `Huddle` alone, so every build compiles them). This script checks
# that the file is exactly those blocks; with --write it regenerates the file from the README instead.
set -euo pipefail
cd "$(dirname "$0")/.."
target=Tests/ReadmeSnippets/main.swift
extracted=$(awk '/^```swift$/ { inside = 1; next } /^```$/ { inside = 0; next } inside { print }' README.md)
if [ -z "$extracted" ]; then
    echo "readme: no \`\`\`swift block found in README.md"
    exit 1
fi
if [ "${1:-}" = "--write" ]; then
    printf '%s\n' "$extracted" >"$target"
    echo "readme: wrote $target"
    exit 0
fi
if ! diff -u "$target" <(printf '%s\n' "$extracted"); then
    echo "readme: $target differs from the README's Swift blocks; run scripts/check-readme.sh --write"
    exit 1
fi
echo "readme: ok (the Swift blocks of README.md are $target, compiled by every build)"
