#!/usr/bin/env bash
# Crypto hygiene lints (TEST-MATRIX S1, S4):
# - no libsodium return code is discarded with `_ =` (use Sodium.check or handle the failure);
# - secrets are never compared with `==`: SecureBytes, SymmetricKey and private keys are not Equatable, so the
#   compiler already refuses it; this script checks that none of them gains an Equatable/Hashable conformance.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
hits=$(grep -rnE --include='*.swift' '_ = (crypto_|sodium_|randombytes_)' Sources)
if [ -n "$hits" ]; then
    echo "discarded libsodium return code:"
    echo "$hits"
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
[ $status -eq 0 ] && echo "hygiene: ok (no discarded libsodium results, secrets not Equatable)"
exit $status
