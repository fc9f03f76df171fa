"""Huddle's handshake and packet protection (docs/PROTOCOL.md section 7), from the document alone.

Noise_IKpsk2_25519_ChaChaPoly_SHA256 with the prologue "huddle/1", the WireGuard-style packet
layout of section 2, mac1/mac2, cookie replies and transport packets.
"""

import hashlib
import hmac
import struct

from nacl import bindings as sodium

import ref_wire as wire

# --- Primitives ---------------------------------------------------------------------------


def blake2b(data, size=32, key=b""):
    """BLAKE2b with a native output length (BLAKE2b-128 = digest size 16, not a truncation)."""
    return hashlib.blake2b(data, digest_size=size, key=key).digest()


def x25519_public(private):
    return sodium.crypto_scalarmult_base(private)


def x25519(private, public):
    return sodium.crypto_scalarmult(private, public)


def chachapoly_seal(key, counter, ad, plaintext):
    """ChaCha20-Poly1305 IETF, nonce = 4 zero bytes || counter (u64 LE), as Noise and section 7.2."""
    nonce = b"\x00" * 4 + struct.pack("<Q", counter)
    return sodium.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, ad, nonce, key)


def chachapoly_open(key, counter, ad, ciphertext):
    nonce = b"\x00" * 4 + struct.pack("<Q", counter)
    return sodium.crypto_aead_chacha20poly1305_ietf_decrypt(ciphertext, ad, nonce, key)


def ed25519_keypair(seed):
    """(public signing key, 64-byte secret key) from a 32-byte seed."""
    return sodium.crypto_sign_seed_keypair(seed)


def ed25519_sign(seed, message):
    _, secret = ed25519_keypair(seed)
    return sodium.crypto_sign(message, secret)[:64]


def ed25519_verify(public, message, signature):
    try:
        sodium.crypto_sign_open(signature + message, public)
        return True
    except Exception:
        return False


# --- Noise (revision 34) --------------------------------------------------------------------

PROTOCOL_NAME = b"Noise_IKpsk2_25519_ChaChaPoly_SHA256"
PROLOGUE = b"huddle/1"


def hkdf(ck, ikm, outputs):
    """Noise's HKDF over HMAC-SHA256: 2 or 3 outputs of 32 bytes."""
    temp = hmac.new(ck, ikm, hashlib.sha256).digest()
    out, prev = [], b""
    for i in range(1, outputs + 1):
        prev = hmac.new(temp, prev + bytes([i]), hashlib.sha256).digest()
        out.append(prev)
    return out


class SymmetricState:
    """Noise's SymmetricState plus a trace of (step, h, ck) after every token, for the vectors."""

    def __init__(self, protocol_name=PROTOCOL_NAME):
        self.h = (protocol_name.ljust(32, b"\x00") if len(protocol_name) <= 32
                  else hashlib.sha256(protocol_name).digest())
        self.ck, self.k, self.n = self.h, None, 0
        self.trace = [("initialize", self.h, self.ck)]

    def mark(self, step):
        self.trace.append((step, self.h, self.ck))

    def mix_hash(self, data):
        self.h = hashlib.sha256(self.h + data).digest()

    def mix_key(self, ikm):
        self.ck, self.k = hkdf(self.ck, ikm, 2)
        self.n = 0

    def mix_key_and_hash(self, ikm):
        self.ck, temp_h, self.k = hkdf(self.ck, ikm, 3)
        self.mix_hash(temp_h)
        self.n = 0

    def encrypt_and_hash(self, plaintext):
        c = plaintext if self.k is None else chachapoly_seal(self.k, self.n, self.h, plaintext)
        self.n += self.k is not None
        self.mix_hash(c)
        return c

    def decrypt_and_hash(self, c):
        p = c if self.k is None else chachapoly_open(self.k, self.n, self.h, c)
        self.n += self.k is not None
        self.mix_hash(c)
        return p

    def split(self):
        """(initiator-to-responder key, responder-to-initiator key)."""
        return tuple(hkdf(self.ck, b"", 2))


def _start(responder_static_public, prologue):
    ss = SymmetricState()
    ss.mix_hash(prologue)
    ss.mark("prologue")
    ss.mix_hash(responder_static_public)           # pre-message "<- s"
    ss.mark("premessage_s")
    return ss


def _token_e(ss, e_public, message):
    ss.mix_hash(e_public)
    ss.mix_key(e_public)                           # psk handshakes also MixKey(e)
    ss.mark(message + ".e")


def write_message1(s_i, e_i, s_r_public, payload, prologue=PROLOGUE):
    """-> e, es, s, ss with `payload`: returns (ss, ephemeral, encrypted static, encrypted payload)."""
    ss = _start(s_r_public, prologue)
    e_pub = x25519_public(e_i)
    _token_e(ss, e_pub, "message1")
    ss.mix_key(x25519(e_i, s_r_public)); ss.mark("message1.es")
    enc_static = ss.encrypt_and_hash(x25519_public(s_i)); ss.mark("message1.s")
    ss.mix_key(x25519(s_i, s_r_public)); ss.mark("message1.ss")
    enc_payload = ss.encrypt_and_hash(payload); ss.mark("message1.payload")
    return ss, e_pub, enc_static, enc_payload


def read_message1(s_r, e_pub, enc_static, enc_payload, prologue=PROLOGUE):
    """Responder side of message 1: returns (ss, initiator static key, payload)."""
    ss = _start(x25519_public(s_r), prologue)
    _token_e(ss, e_pub, "message1")
    ss.mix_key(x25519(s_r, e_pub)); ss.mark("message1.es")
    s_i_pub = ss.decrypt_and_hash(enc_static); ss.mark("message1.s")
    ss.mix_key(x25519(s_r, s_i_pub)); ss.mark("message1.ss")
    payload = ss.decrypt_and_hash(enc_payload); ss.mark("message1.payload")
    return ss, s_i_pub, payload


def write_message2(ss, e_r, e_i_pub, s_i_pub, psk, payload=b""):
    """<- e, ee, se, psk with `payload` (empty in Huddle): returns (ephemeral, encrypted payload)."""
    e_pub = x25519_public(e_r)
    _token_e(ss, e_pub, "message2")
    ss.mix_key(x25519(e_r, e_i_pub)); ss.mark("message2.ee")
    ss.mix_key(x25519(e_r, s_i_pub)); ss.mark("message2.se")
    ss.mix_key_and_hash(psk); ss.mark("message2.psk")
    enc = ss.encrypt_and_hash(payload); ss.mark("message2.payload")
    return e_pub, enc


def read_message2(ss, s_i, e_i, e_r_pub, psk, enc):
    _token_e(ss, e_r_pub, "message2")
    ss.mix_key(x25519(e_i, e_r_pub)); ss.mark("message2.ee")
    ss.mix_key(x25519(s_i, e_r_pub)); ss.mark("message2.se")
    ss.mix_key_and_hash(psk); ss.mark("message2.psk")
    payload = ss.decrypt_and_hash(enc); ss.mark("message2.payload")
    return payload


# --- Section 7.6: timestamps, mac1, mac2, cookies ---------------------------------------------

TAI64_LABEL = 1 << 62   # the label is exactly 2^62 (no TAI-UTC offset); see PROTOCOL.md section 7.1


def tai64n(seconds, nanoseconds):
    """12 bytes: TAI64 label + Unix seconds (u64 BIG-endian) || nanoseconds (u32 BIG-endian)."""
    return struct.pack(">QI", TAI64_LABEL + seconds, nanoseconds)


def initiation_payload(seconds, nanoseconds, resumption_index):
    """Message 1's 16-byte payload: TAI64N (12) || resumption index (u32 LE)."""
    return tai64n(seconds, nanoseconds) + wire.u32le(resumption_index)


def mac1_key(mac_secret, static_public):
    return blake2b(b"huddle mac1 v1" + static_public, 32, mac_secret)


def cookie_key(mac_secret, static_public):
    return blake2b(b"huddle cookie v1" + static_public, 32, mac_secret)


def mac(key, data):
    return blake2b(data, 16, key)


def cookie(secret, family, ip, port):
    """The responder's cookie for a source address: BLAKE2b-128(secret, family || ip || port BE)."""
    return mac(secret, wire.wire_address(family, ip, port))


def seal_cookie(cookie_key_, nonce, cookie_, mac1):
    return sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(cookie_, mac1, nonce, cookie_key_)


def open_cookie(cookie_key_, nonce, encrypted_cookie, mac1):
    return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(encrypted_cookie, mac1, nonce, cookie_key_)


def seal_refusal(cookie_key_, nonce, plaintext, header, mac1):
    """Section 2.5: XChaCha20-Poly1305 under the cookie key, associated data = refusal bytes 0..<8 || mac1."""
    return sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, header + mac1, nonce, cookie_key_)


def open_refusal(cookie_key_, nonce, encrypted_prologue, header, mac1):
    return sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(encrypted_prologue, header + mac1, nonce, cookie_key_)


def add_macs(body, mac1_key_, cookie_=None):
    """Append mac1 (over body) and mac2 (over body || mac1, zero without a cookie) to a handshake message."""
    m1 = mac(mac1_key_, body)
    m2 = mac(cookie_, body + m1) if cookie_ else b"\x00" * 16
    return body + m1 + m2


# --- Section 7.2: transport packets ---------------------------------------------------------


def seal_transport(key, receiver_index, packet_number, plaintext, flags=0):
    header = wire.transport_header(receiver_index, packet_number, flags)
    return header + chachapoly_seal(key, packet_number, header, plaintext)


def open_transport(key, packet):
    header = packet[:16]
    packet_number = struct.unpack_from("<Q", header, 8)[0]
    return chachapoly_open(key, packet_number, header, packet[16:])
