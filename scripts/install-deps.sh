#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine with Swift lacks: libsodium-dev (and pkg-config to find it); as root
# also iproute2, nftables and conntrack, which the network-namespace tests need (they are skipped when not root);
# coturn, the TURN server the TURN client is tested against (CoturnInteropTests, on loopback); as root also
# miniupnpd, the router the port-mapping client is tested against (PortMappingNamespaceTests).
# Uses sudo when not root. Idempotent: does nothing when everything is present.
# Also PyNaCl (from PyPI) for the independent protocol-vector reference in scripts/vectors, when Python is present.
set -euo pipefail
if command -v python3 >/dev/null 2>&1 && ! python3 -c "import nacl" >/dev/null 2>&1; then
    echo "installing: pynacl (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check pynacl >&2 || echo "pynacl not installed" >&2
fi
missing=()
dpkg -s libsodium-dev >/dev/null 2>&1 || missing+=(libsodium-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v turnserver >/dev/null 2>&1 || [ -x /usr/bin/turnserver ] || missing+=(coturn)
if [ "$(id -u)" -eq 0 ]; then
    PATH="$PATH:/usr/sbin:/sbin"
    command -v ip >/dev/null 2>&1 || missing+=(iproute2)
    command -v nft >/dev/null 2>&1 || missing+=(nftables)
    command -v conntrack >/dev/null 2>&1 || missing+=(conntrack)
    # The port-mapping router of the namespace tests (PCP, NAT-PMP), with its nftables backend.
    [ -x /usr/sbin/miniupnpd ] || missing+=(miniupnpd-nftables miniupnpd)
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
