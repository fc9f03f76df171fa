#!/usr/bin/env bash
# Fuzzes every parser of untrusted bytes (TEST-MATRIX FZ1 + FZ3).
#
#   FuzzTesting/run-smoke.sh [SECONDS]      (per target; default 15)
#
# 1. builds every fuzz target with libFuzzer + AddressSanitizer (a failed build fails the run: a stale binary
#    from an earlier build is never used);
# 2. per target, replays every file in FailCases/<target> (must not crash);
# 3. fuzzes it for SECONDS from a temporary copy of Corpus/<target> (the committed corpus is not modified).
# Exits non-zero on any crash; crash inputs are copied into FailCases/<target>/ as fail-<sha1>.bin.
set -euo pipefail

seconds="${1:-15}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scratch="$here/.build-fuzz"
# target name (corpus and fail-case folder) : executable
targets=(wire:WireFuzzer membership:MembershipFuzzer journal:JournalMessageFuzzer manifest:ManifestFuzzer
    envelope:EnvelopeFuzzer activity:ActivityFuzzer ticket:TicketFuzzer identity:IdentityFileFuzzer
    session-state:SessionStateFuzzer nearby:NearbyBeaconFuzzer handshake:HandshakeFuzzer
    handshake-reply:HandshakeReplyFuzzer turn:TurnFuzzer port-mapping:PortMappingFuzzer)

build=(swift build --package-path "$here" --scratch-path "$scratch" -c debug
    --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING)
echo "== building ${#targets[@]} fuzz targets (libFuzzer + ASan)"
mkdir -p "$scratch"
if ! "${build[@]}" >"$scratch/build.log" 2>&1; then
    # SwiftPM's incremental build of this package can miss a source file added to the Huddle package it depends on
    # by path ("cannot find type ... in scope"); one build from an empty scratch directory settles whether the
    # failure is real.
    echo "run-smoke: the incremental build failed; building again from scratch" >&2
    rm -rf "$scratch"
    mkdir -p "$scratch"
    if ! "${build[@]}" >"$scratch/build.log" 2>&1; then
        grep -E "error" "$scratch/build.log" | head -20 >&2
        echo "run-smoke: the fuzz build failed" >&2
        exit 1
    fi
fi
bin="$("${build[@]}" --show-bin-path)"

export SWIFT_BACKTRACE=enable=no
# A single allocation over 1 MB would mean a claimed length was trusted (FZ1).
limits=(-malloc_limit_mb=1 -rss_limit_mb=2048 -timeout=10)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=0

for entry in "${targets[@]}"; do
    name="${entry%%:*}"
    binary="$bin/${entry##*:}"
    failcases="$here/FailCases/$name"
    mkdir -p "$failcases" "$work/$name/corpus" "$work/$name/artifacts"
    mapfile -t cases < <(find "$failcases" -maxdepth 1 -type f ! -name '*.md' | sort)
    if ((${#cases[@]} > 0)); then
        if ! "$binary" "${limits[@]}" "${cases[@]}" >"$work/$name/replay.log" 2>&1; then
            tail -40 "$work/$name/replay.log" >&2
            echo "run-smoke: a FailCases/$name input crashes ${entry##*:}" >&2
            failed=1
            continue
        fi
    fi
    cp "$here/Corpus/$name/"* "$work/$name/corpus/"
    status=0
    "$binary" "${limits[@]}" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$work/$name/artifacts/" "$work/$name/corpus" >"$work/$name/fuzz.log" 2>&1 || status=$?
    # A target that crashes at once prints no statistics: grep finds nothing, which must not end the script
    # (pipefail) before the crash is reported below.
    runs="$(grep -E '^stat::number_of_executed_units' "$work/$name/fuzz.log" | awk '{print $2}')" || true
    rate="$(grep -E '^stat::average_exec_per_sec' "$work/$name/fuzz.log" | awk '{print $2}')" || true
    coverage="$(grep -oE 'cov: [0-9]+' "$work/$name/fuzz.log" | tail -1 | awk '{print $2}')" || true
    echo "$name: ${#cases[@]} fail cases replayed; ${runs:-0} runs in ${seconds}s (${rate:-0}/s), coverage ${coverage:-?} edges"
    for artifact in "$work/$name/artifacts/"*; do
        [[ -f "$artifact" ]] || continue
        saved="fail-$(sha1sum "$artifact" | cut -c1-16).bin"
        cp "$artifact" "$failcases/$saved"
        echo "run-smoke: $(basename "$artifact") saved as FailCases/$name/$saved" >&2
        status=1
    done
    if ((status != 0)); then
        tail -60 "$work/$name/fuzz.log" >&2
        echo "run-smoke: ${entry##*:} crashed (exit $status); replay with:" >&2
        echo "  swift run --package-path FuzzTesting ${entry##*:} FuzzTesting/FailCases/$name" >&2
        failed=1
    fi
done
if ((failed != 0)); then exit 1; fi
echo "run-smoke: no crash in ${#targets[@]} targets x ${seconds}s"
