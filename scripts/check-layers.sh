#!/usr/bin/env bash
# Enforces the sans-IO rule: HuddleWire, HuddleCrypto, HuddleProtocol and HuddleSession never import NIO, read a clock, open a
# socket or use the system RNG (time comes in as `now:`, randomness from an injected generator). Also enforces the
# import direction between layers. Prints every violation and exits non-zero if there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
sans_io=()
for module in HuddleWire HuddleCrypto HuddleProtocol HuddleSession; do
    [ -d "Sources/$module" ] && sans_io+=("Sources/$module")
done

forbidden=(
    'import +NIO'                              # sockets and event loops live in HuddleTransport
    'import +(Dispatch|FoundationNetworking)'
    '\bDate\(\)'                               # wall clock
    '\b(ContinuousClock|SuspendingClock)\b'
    '\bDispatchTime\b'
    '\b(clock_gettime|gettimeofday|mach_absolute_time)\b'
    '\bProcessInfo\b'
    '\bSystemRandomNumberGenerator\b'          # system RNG
    '\brandombytes_(buf|random|uniform|stir)\b[^_]'
    '\b(arc4random|getrandom|getentropy)\b'
    '/dev/u?random'
    '\.random\((in: [^),]*)?\)'                 # stdlib random without an injected generator
    '(^|[^.[:alnum:]_`])(socket|sendto|recvfrom|sendmsg|recvmsg|bind|connect)\('   # socket system calls
)
for pattern in "${forbidden[@]}"; do
    # Declarations (`func connect(`) and doc references are not calls.
    hits=$(grep -rnE --include='*.swift' "$pattern" "${sans_io[@]}" 2>/dev/null | grep -vE ':[0-9]+:\s*(///|//)|func +(socket|sendto|recvfrom|sendmsg|recvmsg|bind|connect)\(')
    if [ -n "$hits" ]; then
        echo "sans-IO violation (pattern: $pattern):"
        echo "$hits"
        status=1
    fi
done

# The wire codecs and the protocol core need no platform library at all (HuddleCrypto uses it for identity files).
for module in HuddleWire HuddleProtocol HuddleSession; do
    [ -d "Sources/$module" ] || continue
    hits=$(grep -rnE --include='*.swift' '^(@[A-Za-z_]+ +)*import +(Glibc|Musl|Darwin|Foundation|WinSDK)' "Sources/$module")
    if [ -n "$hits" ]; then
        echo "sans-IO violation: $module imports a platform library"
        echo "$hits"
        status=1
    fi
done

# Layer direction: lower layers never import higher ones.
check_imports() {
    local module=$1
    shift
    [ -d "Sources/$module" ] || return 0
    for higher in "$@"; do
        hits=$(grep -rnE --include='*.swift' "^(@[A-Za-z_]+ +)*import +$higher\$" "Sources/$module")
        if [ -n "$hits" ]; then
            echo "layer violation: $module must not import $higher"
            echo "$hits"
            status=1
        fi
    done
}
check_imports HuddleWire HuddleCrypto HuddleProtocol HuddleSession HuddleTransport Huddle HuddleTestKit HuddleServiceLifecycle
check_imports HuddleCrypto HuddleWire HuddleProtocol HuddleSession HuddleTransport Huddle HuddleTestKit HuddleServiceLifecycle
check_imports HuddleProtocol HuddleSession HuddleTransport Huddle HuddleTestKit HuddleServiceLifecycle
check_imports HuddleSession HuddleTransport Huddle HuddleTestKit HuddleServiceLifecycle
check_imports HuddleTransport Huddle HuddleTestKit HuddleServiceLifecycle
check_imports Huddle HuddleTestKit HuddleServiceLifecycle
# The core library stays off the server-framework and exporter packages (they belong to products of their own).
check_imports Huddle ServiceLifecycle Prometheus
check_imports HuddleServiceLifecycle HuddleTestKit

if [ $status -eq 0 ]; then
    echo "layers: ok (${sans_io[*]} are sans-IO; imports point down)"
fi
exit $status
