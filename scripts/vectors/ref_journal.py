"""The journal (docs/PROTOCOL.md section 9), from the document alone: chunking, the Merkle tree
(RFC 6962 shape over BLAKE2b-256), manifests and journal messages."""

import hashlib

import ref_crypto as crypto
from ref_wire import Reader, u8, u32le, u64le, varint

CHUNK_SIZE = 65_536
MAX_ATTACHMENT_SIZE = 104_857_600
MAX_METADATA = 16_384
MAX_INDEX = 1_600
MANIFEST_LABEL = b"huddle attachment manifest v1"


def H(data):
    return hashlib.blake2b(data, digest_size=32).digest()


def chunks(content):
    return [content[i:i + CHUNK_SIZE] for i in range(0, len(content), CHUNK_SIZE)]


def chunk_count(size):
    return -(-size // CHUNK_SIZE)


def leaf(chunk):
    return H(b"\x00" + chunk)


def split_point(n):
    """The largest power of two smaller than n (n > 1)."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(leaves):
    """RFC 6962 Merkle tree hash with leaf hashes already computed; MTH([]) = H("")."""
    if not leaves:
        return H(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = split_point(len(leaves))
    return H(b"\x01" + mth(leaves[:k]) + mth(leaves[k:]))


def inclusion_proof(leaves, m):
    """RFC 6962 section 2.1.1 audit path PATH(m, leaves): sibling hashes, bottom-up."""
    if len(leaves) <= 1:
        return []
    k = split_point(len(leaves))
    if m < k:
        return inclusion_proof(leaves[:k], m) + [mth(leaves[k:])]
    return inclusion_proof(leaves[k:], m - k) + [mth(leaves[:k])]


def verify_inclusion(leaf_hash, m, n, path, root):
    """Recompute the root from a leaf and its audit path (RFC 9162 section 2.1.3.2)."""
    fn, sn, r = m, n - 1, leaf_hash
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = H(b"\x01" + p + r)
            while not fn & 1 and fn:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = H(b"\x01" + r + p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def test_content(size):
    """Section 9.1's test content: byte i = (i * 31 + (i >> 16) * 7) mod 256.

    Chunk k is the 65,536-byte pattern (j * 31) mod 256 with 7k added to every byte, so it is built
    from one table per chunk instead of byte by byte (the 1,600-chunk case is 100 MiB)."""
    base = bytes((j * 31) % 256 for j in range(CHUNK_SIZE))
    out = bytearray()
    for k in range(chunk_count(size)):
        shift = bytes((b + 7 * k) % 256 for b in range(256))
        out += base.translate(shift)
    return bytes(out[:size])


# --- Section 9.2: manifests -----------------------------------------------------------------


def manifest_fields(m):
    """Every field before the signature, as encoded (integers little-endian)."""
    return (m["id"] + u64le(m["size"]) + u32le(m["chunk_size"]) + u32le(m["chunk_count"])
            + m["root"] + m["author"] + u32le(len(m["metadata"])) + m["metadata"])


def manifest_signature(author_seed, m):
    return crypto.ed25519_sign(author_seed, MANIFEST_LABEL + manifest_fields(m))


def manifest(m):
    return manifest_fields(m) + m["signature"]


def read_manifest(r):
    m = {"id": r.take(16), "size": r.u64le(), "chunk_size": r.u32le(), "chunk_count": r.u32le(),
         "root": r.take(32), "author": r.take(32)}
    m["metadata"] = r.take(r.u32le())
    m["signature"] = r.take(64)
    return m


def check_manifest(m):
    """Section 9.2's receiver checks in order; returns the first failing check's name or None."""
    if m["size"] > MAX_ATTACHMENT_SIZE:
        return "size"
    if m["chunk_size"] != CHUNK_SIZE:
        return "chunk_size"
    if m["chunk_count"] != chunk_count(m["size"]):
        return "chunk_count"
    if m["size"] == 0 and m["root"] != mth([]):
        return "root"
    if len(m["metadata"]) > MAX_METADATA:
        return "metadata_length"
    if not crypto.ed25519_verify(m["author"], MANIFEST_LABEL + manifest_fields(m), m["signature"]):
        return "signature"
    return None


# --- Section 9.3: messages ------------------------------------------------------------------

JOURNAL_TYPES = {1: "announce", 2: "have", 3: "leaves_request", 4: "leaves", 5: "chunk_request",
                 6: "chunk", 7: "chunk_missing", 8: "remove"}
JOURNAL_CODES = {name: code for code, name in JOURNAL_TYPES.items()}
JOURNAL_CHANNEL, CHUNK_CHANNEL = 2, 200


def encode_journal(msg):
    t = msg["type"]
    out = u8(JOURNAL_CODES[t])
    if t == "announce":
        return out + manifest(msg["manifest"])
    out += msg["id"]
    if t == "have":
        return out + varint(len(msg["ranges"])) + b"".join(
            varint(g["start"]) + varint(g["length"]) for g in msg["ranges"])
    if t == "leaves_request":
        return out + varint(msg["first"]) + varint(msg["count"])
    if t == "leaves":
        assert len(msg["leaves"]) == msg["count"]
        return out + varint(msg["first"]) + varint(msg["count"]) + b"".join(msg["leaves"])
    if t in ("chunk_request", "chunk_missing"):
        return out + varint(msg["index"])
    if t == "chunk":
        return out + varint(msg["index"]) + varint(len(msg["data"])) + msg["data"]
    if t == "remove":
        return out
    raise ValueError(t)


def decode_journal(data):
    r = Reader(data)
    t = JOURNAL_TYPES[r.u8()]
    msg = {"type": t}
    if t == "announce":
        msg["manifest"] = read_manifest(r)
    else:
        msg["id"] = r.take(16)
    if t == "have":
        msg["ranges"] = [{"start": r.varint(), "length": r.varint()} for _ in range(r.varint())]
    elif t in ("leaves_request", "leaves"):
        msg["first"], msg["count"] = r.varint(), r.varint()
        if t == "leaves":
            msg["leaves"] = [r.take(32) for _ in range(msg["count"])]
    elif t in ("chunk_request", "chunk_missing"):
        msg["index"] = r.varint()
    elif t == "chunk":
        msg["index"] = r.varint()
        msg["data"] = r.take(r.varint())
    r.end()
    return msg
