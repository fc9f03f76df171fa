#!/usr/bin/env bash
# Fuzz smoke test for HuddleWire (TEST-MATRIX FZ1 + FZ3).
#
#   FuzzTesting/run-smoke.sh [SECONDS]      (default 30)
#
# 1. builds WireFuzzer with libFuzzer + AddressSanitizer;
# 2. replays every file in FailCases/wire (must not crash);
# 3. fuzzes for SECONDS from a temporary copy of Corpus/wire (the committed corpus is not modified).
# Exits non-zero on any crash; crash inputs are copied into FailCases/wire/ as fail-<sha1>.bin.
set -euo pipefail

seconds="${1:-30}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scratch="$here/.build-fuzz"
failcases="$here/FailCases/wire"

build=(swift build --package-path "$here" --scratch-path "$scratch" -c debug
    --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)
echo "== building WireFuzzer (libFuzzer + ASan)"
"${build[@]}" 2>&1 | grep -Ev '^\[[0-9]+/[0-9]+\]|Cannot export local symbol' || true
binary="$("${build[@]}" --show-bin-path)/WireFuzzer"
if [[ ! -x "$binary" ]]; then
    echo "run-smoke: build failed, no $binary" >&2
    exit 1
fi

export SWIFT_BACKTRACE=enable=no
# A single allocation over 1 MB would mean a claimed length was trusted (FZ1).
limits=(-malloc_limit_mb=1 -rss_limit_mb=2048 -timeout=10)

echo "== replaying FailCases"
mapfile -t cases < <(find "$failcases" -maxdepth 1 -type f ! -name '*.md' | sort)
if ((${#cases[@]} > 0)); then
    if ! "$binary" "${limits[@]}" "${cases[@]}" >"$scratch/replay.log" 2>&1; then
        tail -40 "$scratch/replay.log" >&2
        echo "run-smoke: a FailCases input crashes WireFuzzer" >&2
        exit 1
    fi
    echo "replayed ${#cases[@]} FailCases without a crash"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp "$here/Corpus/wire/"* "$work/corpus/"

echo "== fuzzing for ${seconds}s"
status=0
"$binary" "${limits[@]}" -max_total_time="$seconds" -max_len=1500 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/fuzz.log" 2>&1 || status=$?
grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb)' \
    "$work/fuzz.log" || true

found=0
for artifact in "$work/artifacts/"*; do
    [[ -f "$artifact" ]] || continue
    name="fail-$(sha1sum "$artifact" | cut -c1-16).bin"
    cp "$artifact" "$failcases/$name"
    echo "run-smoke: $(basename "$artifact") saved as FailCases/wire/$name" >&2
    found=1
done
if ((status != 0 || found != 0)); then
    tail -60 "$work/fuzz.log" >&2
    echo "run-smoke: WireFuzzer crashed (exit $status); replay with:" >&2
    echo "  swift run --package-path FuzzTesting WireFuzzer FuzzTesting/FailCases/wire" >&2
    exit 1
fi
echo "run-smoke: no crash in ${seconds}s"
