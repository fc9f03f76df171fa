"""Relays (docs/PROTOCOL.md section 10), from the document alone."""

import ref_crypto as crypto
from ref_wire import IP_LENGTH, u8, u64le, wire_address

REGISTER, CHALLENGE, REGISTERED, SEND, DELIVER = 5, 6, 7, 8, 9
RESERVED3 = b"\x00\x00\x00"
TOKEN_WINDOW = 60   # relayTokenWindow, seconds


def relay_key(own_private, peer_public):
    """K = BLAKE2b-256(key: X25519 shared secret, message: "huddle relay v1")."""
    return crypto.blake2b(b"huddle relay v1", 32, crypto.x25519(own_private, peer_public))


def canonical_address(family, ip, port):
    """family | IP | port big-endian (the frame address of section 3.9)."""
    return wire_address(family, ip, port)


def token(relay_secret, family, ip, port, clock_seconds):
    window = clock_seconds // TOKEN_WINDOW
    return crypto.mac(relay_secret, canonical_address(family, ip, port) + u64le(window))


def register(client_static, token_=b"\x00" * 16, key=None):
    """RELAY_REGISTER: a zero token and MAC first; then the relay's token and a MAC under K."""
    body = u8(REGISTER) + RESERVED3 + client_static + token_
    return body + (crypto.mac(key, body) if key else b"\x00" * 16)


def challenge(relay_static, token_):
    return u8(CHALLENGE) + RESERVED3 + relay_static + token_


def registered(family, ip, port, key):
    """RELAY_REGISTERED: the observed address as in section 3.9, zero-padded to 19 bytes, then a MAC."""
    body = u8(REGISTERED) + RESERVED3 + wire_address(family, ip, port).ljust(1 + 16 + 2, b"\x00")
    return body + crypto.mac(key, body)


def send(destination_static, inner):
    return u8(SEND) + RESERVED3 + destination_static + inner


def deliver(send_packet, source_static):
    """What the relay forwards for a RELAY_SEND: type 9 and the sender's key, the rest unchanged."""
    return u8(DELIVER) + RESERVED3 + source_static + send_packet[36:]
