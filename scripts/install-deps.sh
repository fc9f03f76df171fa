#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine with Swift lacks: libsodium-dev (and pkg-config to find it); as root
# also iproute2, nftables and conntrack, which the network-namespace tests need (they are skipped when not root).
# Uses sudo when not root. Idempotent: does nothing when everything is present.
set -euo pipefail
missing=()
dpkg -s libsodium-dev >/dev/null 2>&1 || missing+=(libsodium-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if [ "$(id -u)" -eq 0 ]; then
    PATH="$PATH:/usr/sbin:/sbin"
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    command -v nft >/dev/null 2>&1 || missing+=(nftables)
    command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
fi
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "installing: ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
else
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}"
