#!/usr/bin/env bash
# Crypto hygiene lints (TEST-MATRIX S1, S4):
# - no libsodium return code is discarded with `_ =` or by a bare call statement (use Sodium.check or handle it);
# - secrets are never compared with `==`: SecureBytes, SymmetricKey and private keys are not Equatable, so the
#   compiler already refuses it; this script checks that none of them gains an Equatable/Hashable conformance;
# - MACs, tags, cookies, tokens, checksums, digests, hashes and Merkle roots are plain byte arrays, so the compiler
#   allows `==` on them: scripts/authenticator-equality.awk flags it in the library sources (ConstantTime.equals
#   compares them; a public value is marked `// hygiene: public value` on its line).
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
hits=$(grep -rnE --include='*.swift' '_ = (crypto_|sodium_|randombytes_)' Sources)
if [ -n "$hits" ]; then
    echo "discarded libsodium return code:"
    echo "$hits"
    status=1
fi
# A bare call statement drops the return code as surely as `_ =`, and Swift does not warn about it for C functions.
hits=$(find Sources -name '*.swift' -print0 | xargs -0 awk -f scripts/bare-sodium-calls.awk)
if [ -n "$hits" ]; then
    echo "libsodium call whose return code is ignored (a statement of its own):"
    echo "$hits"
    status=1
fi
# The check itself must catch one: a planted bare call.
planted=$(printf 'func f() {\n    crypto_scalarmult_base(a, b)\n}\n' | awk -f scripts/bare-sodium-calls.awk)
if [ -z "$planted" ]; then
    echo "the bare-call check missed a planted bare crypto_scalarmult_base call"
    status=1
fi
hits=$(grep -rnE --include='*.swift' \
    '(struct|class|extension) +(SecureBytes|SymmetricKey|X25519PrivateKey|Ed25519PrivateKey|Identity)\b[^{]*\b(Equatable|Hashable|Comparable)' \
    Sources)
if [ -n "$hits" ]; then
    echo "secret type made comparable with ==:"
    echo "$hits"
    status=1
fi
library=(Sources/Huddle Sources/HuddleCrypto Sources/HuddleProtocol Sources/HuddleWire Sources/HuddleTransport)
hits=$(find "${library[@]}" -name '*.swift' -print0 | xargs -0 awk -f scripts/authenticator-equality.awk)
if [ -n "$hits" ]; then
    echo "== or != on an authenticator (use ConstantTime.equals, or mark a public value):"
    echo "$hits"
    status=1
fi
planted=$(printf 'guard received == cookie else { return }\nif tag.count == tagLength {}\n' | awk -f scripts/authenticator-equality.awk)
if [ "$(echo "$planted" | grep -c cookie)" != 1 ] || echo "$planted" | grep -q tagLength; then
    echo "the authenticator-equality check misjudged its planted lines: $planted"
    status=1
fi
[ $status -eq 0 ] && echo "hygiene: ok (no discarded or ignored libsodium results, secrets not Equatable, authenticators not compared with ==)"
exit $status
