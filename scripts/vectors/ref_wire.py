"""Huddle wire encodings (docs/PROTOCOL.md sections 1-6), written from the document alone.

Integers, varints, addresses, the frames of section 3 and the packet layouts of section 2.
Encoders take plain Python values and return bytes; decoders return dicts whose keys are the
document's field names in snake_case, and raise WireError(kind) with the document's error name.
"""

import struct


class WireError(Exception):
    """A decoding failure; `kind` is the WireError case name of PROTOCOL.md section 6."""

    def __init__(self, kind, detail=""):
        super().__init__(f"{kind} {detail}".strip())
        self.kind = kind


# --- Section 1: integers ------------------------------------------------------------------

MAX_VARINT = (1 << 62) - 1


def u8(v): return struct.pack("<B", v)
def u16le(v): return struct.pack("<H", v)
def u16be(v): return struct.pack(">H", v)
def u32le(v): return struct.pack("<I", v)
def u64le(v): return struct.pack("<Q", v)


def varint(v):
    """QUIC varint (RFC 9000 section 16), always the shortest encoding."""
    if v < 0 or v > MAX_VARINT:
        raise WireError("varIntOutOfRange", str(v))
    if v < 1 << 6:
        return struct.pack(">B", v)
    if v < 1 << 14:
        return struct.pack(">H", v | 0x4000)
    if v < 1 << 30:
        return struct.pack(">I", v | 0x8000_0000)
    return struct.pack(">Q", v | 0xC000_0000_0000_0000)


class Reader:
    """A cursor over bytes; every read checks the bytes remaining first (section 1)."""

    def __init__(self, data):
        self.data, self.pos = bytes(data), 0

    @property
    def remaining(self):
        return len(self.data) - self.pos

    def take(self, n):
        if n > self.remaining:
            raise WireError("truncated", f"needed {n}, available {self.remaining}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self): return self.take(1)[0]
    def u16le(self): return struct.unpack("<H", self.take(2))[0]
    def u16be(self): return struct.unpack(">H", self.take(2))[0]
    def u32le(self): return struct.unpack("<I", self.take(4))[0]
    def u64le(self): return struct.unpack("<Q", self.take(8))[0]

    def varint(self):
        first = self.take(1)[0]
        length = 1 << (first >> 6)              # 1, 2, 4 or 8 bytes
        value = first & 0x3F
        for b in self.take(length - 1):         # non-minimal encodings are accepted
            value = (value << 8) | b
        return value

    def end(self):
        if self.remaining:
            raise WireError("trailingBytes", str(self.remaining))


def decode_varint(data):
    r = Reader(data)
    v = r.varint()
    r.end()
    return v


# --- Addresses ----------------------------------------------------------------------------
# Two encodings exist: the frame address of section 3.9 (port BIG-endian) and the address of
# tickets and member records (section 8, port little-endian). An address is (family, ip bytes, port).

IP_LENGTH = {4: 4, 6: 16}


def wire_address(family, ip, port):
    """Section 3.9: family (4 or 6) | IP (network order) | port (u16 BIG-endian)."""
    assert len(ip) == IP_LENGTH[family]
    return u8(family) + ip + u16be(port)


def read_wire_address(r):
    family = r.u8()
    if family not in IP_LENGTH:
        raise WireError("valueOutOfRange", "addressFamily")
    ip = r.take(IP_LENGTH[family])
    return {"family": family, "ip": ip, "port": r.u16be()}


def record_address(family, ip, port):
    """Tickets and member records (section 8): family u8 | IP | port u16 LITTLE-endian."""
    assert len(ip) == IP_LENGTH[family]
    return u8(family) + ip + u16le(port)


def read_record_address(r):
    family = r.u8()
    if family not in IP_LENGTH:
        raise ValueError("address family")
    ip = r.take(IP_LENGTH[family])
    return {"family": family, "ip": ip, "port": r.u16le()}


# --- Section 5: limits --------------------------------------------------------------------

MAX_DATAGRAM_SIZE = 8972
MAX_MESSAGE_SIZE = 262_144
MAX_CHANNELS = 256
MAX_ACK_RANGES = 32
MAX_CLOSE_REASON_LENGTH = 256
MAX_CANDIDATES = 8

# --- Section 3: frames --------------------------------------------------------------------

FRAME_TYPES = {
    0x00: "padding", 0x01: "ping", 0x02: "ack", 0x03: "message", 0x04: "datagram",
    0x05: "close", 0x06: "max_data", 0x07: "data_blocked", 0x08: "path_challenge",
    0x09: "path_response", 0x0A: "observed_address", 0x0B: "candidates",
}
FRAME_CODES = {name: code for code, name in FRAME_TYPES.items()}

CLOSE_CODES = {
    0: "noError", 1: "protocolViolation", 2: "internalError", 3: "idleTimeout",
    4: "handshakeTimeout", 5: "sessionEnded", 6: "left", 7: "flowControlError", 8: "tooLarge",
}


def ack_ranges(largest, first_range_length, gaps):
    """The acknowledged [smallest, largest] ranges an ACK describes (section 3.3)."""
    hi = largest
    lo = hi - first_range_length
    if lo < 0:
        raise WireError("invalidAckRange", "0")
    out = [[lo, hi]]
    for i, (gap, length) in enumerate(gaps, start=1):
        hi = lo - gap - 2
        lo = hi - length
        if hi < 0 or lo < 0:
            raise WireError("invalidAckRange", str(i))
        out.append([lo, hi])
    return out


def encode_frame(f):
    """One frame from a dict {"type": name, ...fields}."""
    t = f["type"]
    out = varint(FRAME_CODES[t])
    if t == "padding":
        return b"\x00" * f["length"]
    if t == "ping":
        return out
    if t == "ack":
        ack_ranges(f["largest"], f["first_range_length"], [(g["gap"], g["length"]) for g in f["ranges"]])
        out += varint(f["largest"]) + varint(f["delay"]) + varint(len(f["ranges"]))
        out += varint(f["first_range_length"])
        for g in f["ranges"]:
            out += varint(g["gap"]) + varint(g["length"])
        return out
    if t == "message":
        assert f["channel"] < MAX_CHANNELS and f["offset"] + len(f["data"]) <= f["total_length"]
        return (out + varint(f["channel"]) + varint(f["sequence"]) + varint(f["offset"])
                + varint(f["total_length"]) + varint(len(f["data"])) + f["data"])
    if t == "datagram":
        return out + varint(f["channel"]) + varint(len(f["data"])) + f["data"]
    if t == "close":
        reason = f["reason"].encode("utf-8")
        return out + varint(f["code"]) + varint(len(reason)) + reason
    if t in ("max_data", "data_blocked"):
        return out + varint(f["limit"])
    if t in ("path_challenge", "path_response"):
        assert len(f["data"]) == 8
        return out + f["data"]
    if t == "observed_address":
        return out + wire_address(*f["address"])
    if t == "candidates":
        assert len(f["addresses"]) <= MAX_CANDIDATES
        return out + varint(len(f["addresses"])) + b"".join(wire_address(*a) for a in f["addresses"])
    raise ValueError(t)


def encode_frames(frames):
    return b"".join(encode_frame(f) for f in frames)


def decode_frames(payload):
    """Every frame of a decrypted payload, in order (padding runs included, as {"type": "padding"})."""
    r, frames = Reader(payload), []
    while r.remaining:
        code = r.varint()
        if code == 0:
            n = 1
            while r.remaining and r.data[r.pos] == 0:
                r.pos, n = r.pos + 1, n + 1
            frames.append({"type": "padding", "length": n})
            continue
        t = FRAME_TYPES.get(code)
        if t is None:
            raise WireError("unknownFrameType", hex(code))
        f = {"type": t}
        if t == "ack":
            f["largest"], f["delay"] = r.varint(), r.varint()
            count = r.varint()
            if count >= MAX_ACK_RANGES:          # checked before any range is read
                raise WireError("tooManyAckRanges", str(count))
            f["first_range_length"] = r.varint()
            f["ranges"] = [{"gap": r.varint(), "length": r.varint()} for _ in range(count)]
            ack_ranges(f["largest"], f["first_range_length"], [(g["gap"], g["length"]) for g in f["ranges"]])
        elif t == "message":
            f["channel"], f["sequence"], f["offset"], f["total_length"] = (
                r.varint(), r.varint(), r.varint(), r.varint())
            n = r.varint()
            if f["channel"] >= MAX_CHANNELS:
                raise WireError("valueOutOfRange", "channel")
            if f["total_length"] > MAX_MESSAGE_SIZE:
                raise WireError("lengthOutOfRange", "messageTotalLength")
            if f["offset"] + n > f["total_length"]:
                raise WireError("fragmentOutOfBounds")
            f["data"] = r.take(n)
        elif t == "datagram":
            f["channel"] = r.varint()
            if f["channel"] >= MAX_CHANNELS:
                raise WireError("valueOutOfRange", "channel")
            n = r.varint()
            if n > MAX_DATAGRAM_SIZE:
                raise WireError("lengthOutOfRange", "datagramLength")
            f["data"] = r.take(n)
        elif t == "close":
            f["code"] = r.varint()
            n = r.varint()
            if n > MAX_CLOSE_REASON_LENGTH:
                raise WireError("lengthOutOfRange", "closeReasonLength")
            try:
                f["reason"] = r.take(n).decode("utf-8")
            except UnicodeDecodeError:
                raise WireError("invalidUTF8") from None
        elif t in ("max_data", "data_blocked"):
            f["limit"] = r.varint()
        elif t in ("path_challenge", "path_response"):
            f["data"] = r.take(8)
        elif t == "observed_address":
            a = read_wire_address(r)
            f["address"] = (a["family"], a["ip"], a["port"])
        elif t == "candidates":
            n = r.varint()
            if n > MAX_CANDIDATES:
                raise WireError("lengthOutOfRange", "candidateCount")
            f["addresses"] = [tuple(read_wire_address(r).values()) for _ in range(n)]
        frames.append(f)
    return frames


# --- Section 2: packet layouts --------------------------------------------------------------

INITIATION, RESPONSE, COOKIE_REPLY, TRANSPORT = 1, 2, 3, 4
HANDSHAKE_REFUSAL = 10
RESERVED3 = b"\x00\x00\x00"


def initiation_bytes(sender_index, ephemeral, encrypted_static, encrypted_payload, mac1, mac2):
    """Section 2.1, 152 bytes."""
    out = (u8(INITIATION) + RESERVED3 + u32le(sender_index) + ephemeral + encrypted_static
           + encrypted_payload + mac1 + mac2)
    assert len(out) == 152
    return out


def parse_initiation(b):
    assert len(b) == 152 and b[0] == INITIATION and b[1:4] == RESERVED3
    return {"sender_index": struct.unpack_from("<I", b, 4)[0], "ephemeral": b[8:40],
            "encrypted_static": b[40:88], "encrypted_payload": b[88:120],
            "mac1": b[120:136], "mac2": b[136:152]}


def response_bytes(sender_index, receiver_index, ephemeral, encrypted_nothing, mac1, mac2):
    """Section 2.2, 92 bytes."""
    out = (u8(RESPONSE) + RESERVED3 + u32le(sender_index) + u32le(receiver_index) + ephemeral
           + encrypted_nothing + mac1 + mac2)
    assert len(out) == 92
    return out


def parse_response(b):
    assert len(b) == 92 and b[0] == RESPONSE and b[1:4] == RESERVED3
    return {"sender_index": struct.unpack_from("<I", b, 4)[0],
            "receiver_index": struct.unpack_from("<I", b, 8)[0], "ephemeral": b[12:44],
            "encrypted_nothing": b[44:60], "mac1": b[60:76], "mac2": b[76:92]}


def refusal_header(receiver_index):
    """Section 2.5: the refusal's first 8 bytes, part of its associated data."""
    return u8(HANDSHAKE_REFUSAL) + RESERVED3 + u32le(receiver_index)


def refusal_bytes(receiver_index, nonce, encrypted_prologue):
    """Section 2.5, 80 bytes."""
    out = refusal_header(receiver_index) + nonce + encrypted_prologue
    assert len(out) == 80
    return out


def parse_refusal(b):
    assert len(b) == 80 and b[0] == HANDSHAKE_REFUSAL and b[1:4] == RESERVED3
    return {"receiver_index": struct.unpack_from("<I", b, 4)[0], "nonce": b[8:32], "encrypted_prologue": b[32:80]}


def refusal_plaintext(prologue):
    """Section 2.5: length (1 byte, 1-31), the prologue, zero padding to 32 bytes."""
    assert 1 <= len(prologue) <= 31
    return u8(len(prologue)) + prologue + bytes(31 - len(prologue))


def refusal_prologue(plaintext):
    """The prologue a refusal's plaintext names, or None when the plaintext is not valid."""
    n = plaintext[0] if len(plaintext) == 32 else 0
    if not 1 <= n <= 31 or any(plaintext[1 + n:]):
        return None
    return plaintext[1:1 + n]


def cookie_reply_bytes(receiver_index, nonce, encrypted_cookie):
    """Section 2.3, 64 bytes."""
    out = u8(COOKIE_REPLY) + RESERVED3 + u32le(receiver_index) + nonce + encrypted_cookie
    assert len(out) == 64
    return out


def transport_header(receiver_index, packet_number, flags=0):
    """Section 2.4: the 16 header bytes, which are also the AEAD associated data."""
    return u8(TRANSPORT) + u8(flags) + b"\x00\x00" + u32le(receiver_index) + u64le(packet_number)


def classify(datagram, max_size=MAX_DATAGRAM_SIZE):
    """Section 2's checks, in order, before any cryptography. Returns the type byte."""
    exact = {1: 152, 2: 92, 3: 64, 5: 68, 6: 52, 7: 39, 10: 80}
    minimum = {4: 32, 8: 68, 9: 68}
    n = len(datagram)
    if n > max_size:
        raise WireError("lengthOutOfRange", "datagram")
    if n == 0:
        raise WireError("truncated", "needed 1, available 0")
    t = datagram[0]
    if t not in exact and t not in minimum:
        raise WireError("unknownPacketType", str(t))
    if t in exact and n < exact[t] or t in minimum and n < minimum[t]:
        raise WireError("truncated")
    if t in exact and n > exact[t]:
        raise WireError("trailingBytes", str(n - exact[t]))
    for offset in ((2, 3) if t == TRANSPORT else (1, 2, 3)):
        if datagram[offset]:
            raise WireError("nonZeroReserved", str(offset))
    return t
