"""Sessions (docs/PROTOCOL.md section 8 and Appendix A), from the document alone.

Credential derivation, tickets, member records, control messages (channel 1), messenger
envelopes (channel 16) and the `huddle` CLI's application messages.
"""

import base64
import hashlib
import json
import struct

import ref_crypto as crypto
from ref_wire import Reader, record_address, read_record_address, u8, u16be, u64le, varint

# --- Section 8.1: credentials -----------------------------------------------------------------


def kdf_derive(master_key, subkey_id, context, length):
    """libsodium's crypto_kdf_derive_from_key: keyed BLAKE2b of nothing, the sub-key id (u64 LE,
    zero-padded to 16 bytes) as salt and the 8-byte context (zero-padded to 16) as personalisation."""
    assert len(master_key) == 32 and len(context) == 8
    return hashlib.blake2b(b"", digest_size=length, key=master_key,
                           salt=struct.pack("<Q", subkey_id) + b"\x00" * 8,
                           person=context + b"\x00" * 8).digest()


def credentials(secret, context):
    """{psk, mac_secret, admission_id}: sub-keys 1 and 2 (32 bytes), and the first 8 bytes (LE) of
    the 16-byte sub-key 3. Context b"hdl-sess" for a session secret, b"hdl-invt" for an invitation."""
    sub3 = kdf_derive(secret, 3, context, 16)
    return {"psk": kdf_derive(secret, 1, context, 32),
            "mac_secret": kdf_derive(secret, 2, context, 32),
            "subkey3": sub3,
            "admission_id": struct.unpack("<Q", sub3[:8])[0]}


# --- Section 8.1: tickets ---------------------------------------------------------------------

TICKET_PREFIX = "huddle:"


class TicketError(Exception):
    def __init__(self, kind):
        super().__init__(kind)
        self.kind = kind


def ticket_body(t):
    """The bytes before the checksum. `t` holds the decoded fields (see decode_ticket)."""
    turn = t.get("turn_servers", [])
    several = any(len(m.get("more_addresses", [])) > 0 for m in t["members"])
    version = 3 if turn or several else 2 if t["relays"] else 1
    name = t["inviter_name"].encode("utf-8")
    out = (u8(version) + t["session_id"] + t["invitation_secret"] + u64le(t["expiry"])
           + t["inviter_signing_key"] + u8(len(name)) + name + u8(len(t["members"])))
    for m in t["members"]:
        out += m["static_key"]
        # A member's first address sits in the member's own fields; version 3 adds a count and the others.
        addresses = [m] + m.get("more_addresses", [])
        if version == 3:
            out += u8(len(addresses))
        out += b"".join(record_address(a["family"], a["ip"], a["port"]) for a in addresses)
    if version >= 2:   # version 3 carries the relay count even when it is 0
        out += u8(len(t["relays"])) + b"".join(record_address(r["family"], r["ip"], r["port"])
                                                for r in t["relays"])
    if version == 3:
        out += u8(len(turn))
        for server in turn:
            out += u8({"udp": 0, "tcp": 1}[server["transport"]])
            out += record_address(server["family"], server["ip"], server["port"])
            for text in (server["username"], server["password"]):
                encoded = text.encode("utf-8")
                out += u8(len(encoded)) + encoded
    return out


def ticket_checksum(body):
    return hashlib.blake2b(body, digest_size=32).digest()[:4]


def encode_ticket(t):
    raw = ticket_body(t)
    raw += ticket_checksum(raw)
    return TICKET_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="), raw


def decode_ticket(text):
    """Parse a ticket string; raises TicketError(kind) with section 8.1's error names, in its order.
    Expiry is not checked here (a joiner checks it before any traffic: expired when now >= expiry)."""
    text = text.strip()
    if not text.startswith(TICKET_PREFIX):
        raise TicketError("notATicket")
    b64 = text[len(TICKET_PREFIX):]
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    if any(ch not in alphabet for ch in b64):
        raise TicketError("badEncoding")
    if len(b64) % 4 == 1:                 # one character short of a byte: characters were lost
        raise TicketError("truncated")
    raw = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4))
    if len(raw) <= 5:                     # at least a version byte and the checksum
        raise TicketError("truncated")
    if ticket_checksum(raw[:-4]) != raw[-4:]:
        raise TicketError("checksumMismatch")
    r = TicketReader(raw[:-4])
    version = r.u8()
    if version not in (1, 2, 3):
        raise TicketError("unsupportedVersion")
    t = {"version": version, "session_id": r.take(16), "invitation_secret": r.take(32),
         "expiry": r.u64le(), "inviter_signing_key": r.take(32)}
    n = r.u8()
    if n > 64:
        raise TicketError("invalidName")
    try:
        t["inviter_name"] = r.take(n).decode("utf-8")
    except UnicodeDecodeError:
        raise TicketError("invalidName") from None
    count = r.u8()
    if count < 1:
        raise TicketError("noMembers")
    if count > 8:
        raise TicketError("tooManyMembers")
    t["members"] = []
    for _ in range(count):
        key = r.take(32)
        n = r.u8() if version == 3 else 1
        if not 1 <= n <= 4:
            raise TicketError("invalidAddress")
        addresses = [r.address() for _ in range(n)]
        member = {"static_key": key, **addresses[0]}
        if n > 1:
            member["more_addresses"] = addresses[1:]
        t["members"].append(member)
    t["relays"] = []
    if version >= 2:
        count = r.u8()
        if not (1 if version == 2 else 0) <= count <= 4:
            raise TicketError("invalidAddress")
        t["relays"] = [r.address() for _ in range(count)]
    if version == 3:
        count = r.u8()
        if count > 4:
            raise TicketError("invalidTurnServer")
        t["turn_servers"] = []
        for _ in range(count):
            transport = {0: "udp", 1: "tcp"}.get(r.u8())
            if transport is None:
                raise TicketError("invalidTurnServer")
            server = {"transport": transport, **r.address()}
            for key in ("username", "password"):
                n = r.u8()
                if n > 128:
                    raise TicketError("invalidTurnServer")
                try:
                    server[key] = r.take(n).decode("utf-8")
                except UnicodeDecodeError:
                    raise TicketError("invalidTurnServer") from None
            t["turn_servers"].append(server)
    if r.remaining:
        raise TicketError("trailingBytes")
    return t


class TicketReader(Reader):
    """Reads ticket fields; running out of bytes is the ticket error `truncated`."""

    def take(self, n):
        if n > self.remaining:
            raise TicketError("truncated")
        return super().take(n)

    def address(self):
        family = self.u8()
        if family not in (4, 6):
            raise TicketError("invalidAddress")
        ip = self.take(4 if family == 4 else 16)
        port = self.u16le()
        if port == 0:
            raise TicketError("invalidAddress")
        return {"family": family, "ip": ip, "port": port}


# --- Section 8.2: member records and control messages -----------------------------------------

BINDING_LABEL = b"huddle identity binding v1"

CONTROL_TYPES = {1: "join_request", 2: "welcome", 3: "member_joined", 4: "member_left",
                 5: "activity", 6: "invitation_opened", 7: "session_ended", 8: "charter",
                 9: "member_removed", 10: "admission_key", 11: "invitations_revoked",
                 12: "ask_invitation_opened", 13: "join_waiting", 14: "join_asked", 15: "join_answered",
                 16: "join_refused"}
SESSION_ID_LABEL = b"huddle session id v1"
CHARTER_LABEL = b"huddle charter v1"
REMOVAL_LABEL = b"huddle member removed v1"


def session_id_from_charter(creator_signing_key, nonce):
    """Section 8.2, CHARTER: the first 16 bytes of BLAKE2b-256(label || creator key || nonce)."""
    return crypto.blake2b(SESSION_ID_LABEL + creator_signing_key + nonce, 32)[:16]


def charter_signature(signing_seed, session_id, policy):
    return crypto.ed25519_sign(signing_seed, CHARTER_LABEL + session_id + u8(policy))


def removal_signature(signing_seed, session_id, author, removed):
    return crypto.ed25519_sign(signing_seed, REMOVAL_LABEL + session_id + author + removed)
CONTROL_CODES = {name: code for code, name in CONTROL_TYPES.items()}


def binding_signature(signing_seed, static_public):
    return crypto.ed25519_sign(signing_seed, BINDING_LABEL + static_public)


def member_record(m):
    """signing key (32) | static key (32) | binding signature (64) | epoch (v) | name (v + UTF-8)
    | address count (u8) + addresses (family u8, 4/16 bytes, port u16 LE)."""
    name = m["name"].encode("utf-8")
    assert len(name) <= 64 and len(m["addresses"]) <= 8
    return (m["signing_key"] + m["static_key"] + m["binding_signature"] + varint(m["epoch"])
            + varint(len(name)) + name + u8(len(m["addresses"]))
            + b"".join(record_address(a["family"], a["ip"], a["port"]) for a in m["addresses"]))


def read_member_record(r):
    m = {"signing_key": r.take(32), "static_key": r.take(32), "binding_signature": r.take(64),
         "epoch": r.varint()}
    n = r.varint()
    assert n <= 64
    m["name"] = r.take(n).decode("utf-8")
    count = r.u8()
    assert count <= 8
    m["addresses"] = [read_record_address(r) for _ in range(count)]
    assert crypto.ed25519_verify(m["signing_key"], BINDING_LABEL + m["static_key"], m["binding_signature"])
    return m


def activity(a):
    """clock (v) | author signing key (32) | payload length (v, <= 65,536) + payload."""
    assert len(a["payload"]) <= 65_536
    return varint(a["clock"]) + a["author"] + varint(len(a["payload"])) + a["payload"]


def read_activity(r):
    a = {"clock": r.varint(), "author": r.take(32)}
    a["payload"] = r.take(r.varint())
    return a


def secret_expiry(i):
    return i["secret"] + u64le(i["expiry"])


def encode_control(msg):
    t = msg["type"]
    out = u8(CONTROL_CODES[t])
    if t == "join_request":
        return out + msg["session_id"] + u64le(msg["invitation_id"]) + member_record(msg["record"])
    if t == "welcome":
        out += msg["session_id"] + msg["session_secret"] + varint(msg["clock"])
        out += varint(len(msg["roster"])) + b"".join(member_record(m) for m in msg["roster"])
        out += u8(0) if msg["activity"] is None else u8(1) + activity(msg["activity"])
        return out + u8(len(msg["invitations"])) + b"".join(secret_expiry(i) for i in msg["invitations"])
    if t == "member_joined":
        return out + member_record(msg["record"])
    if t == "member_left":
        return out + msg["signing_key"] + varint(msg["epoch"])
    if t == "activity":
        return out + activity(msg["activity"])
    if t == "invitation_opened":
        return out + secret_expiry(msg)
    if t == "session_ended":
        return out + msg["signing_key"]
    if t == "charter":
        return out + msg["creator"] + msg["nonce"] + u8(msg["policy"]) + msg["signature"]
    if t == "member_removed":
        return out + msg["author"] + msg["removed"] + msg["signature"]
    if t == "admission_key":
        return out + varint(msg["epoch"]) + msg["author"] + msg["secret"]
    if t == "invitations_revoked":
        return out + varint(len(msg["invitation_ids"])) + b"".join(u64le(i) for i in msg["invitation_ids"])
    if t == "ask_invitation_opened":
        return out + secret_expiry(msg)
    if t == "join_waiting":
        return out
    if t == "join_asked":
        return out + member_record(msg["record"])
    if t == "join_answered":
        return out + msg["joiner"] + u8(msg["admitted"])
    if t == "join_refused":
        return out + u8(msg["reason"])
    raise ValueError(t)


def decode_control(data):
    r = Reader(data)
    t = CONTROL_TYPES[r.u8()]
    msg = {"type": t}
    if t == "join_request":
        msg.update(session_id=r.take(16), invitation_id=r.u64le(), record=read_member_record(r))
    elif t == "welcome":
        msg.update(session_id=r.take(16), session_secret=r.take(32), clock=r.varint())
        msg["roster"] = [read_member_record(r) for _ in range(r.varint())]
        msg["activity"] = read_activity(r) if r.u8() else None
        msg["invitations"] = [{"secret": r.take(32), "expiry": r.u64le()} for _ in range(r.u8())]
    elif t == "member_joined":
        msg["record"] = read_member_record(r)
    elif t == "member_left":
        msg.update(signing_key=r.take(32), epoch=r.varint())
    elif t == "activity":
        msg["activity"] = read_activity(r)
    elif t == "invitation_opened":
        msg.update(secret=r.take(32), expiry=r.u64le())
    elif t == "session_ended":
        msg["signing_key"] = r.take(32)
    elif t == "charter":
        msg.update(creator=r.take(32), nonce=r.take(16), policy=r.u8(), signature=r.take(64))
    elif t == "member_removed":
        msg.update(author=r.take(32), removed=r.take(32), signature=r.take(64))
    elif t == "admission_key":
        msg.update(epoch=r.varint(), author=r.take(32), secret=r.take(32))
    elif t == "invitations_revoked":
        msg["invitation_ids"] = [r.u64le() for _ in range(r.varint())]
    elif t == "ask_invitation_opened":
        msg.update(secret=r.take(32), expiry=r.u64le())
    elif t == "join_asked":
        msg["record"] = read_member_record(r)
    elif t == "join_answered":
        msg.update(joiner=r.take(32), admitted=r.u8())
        if msg["admitted"] > 1:
            raise ValueError("join answer must be 0 or 1")
    elif t == "join_refused":
        msg["reason"] = r.u8()
    r.end()
    return msg


# --- Section 8.3: messenger envelopes ----------------------------------------------------------

KIND_CODABLE, KIND_RAW = 0, 1


def envelope(kind, type_name, payload):
    """version (1) | kind | type-name length (1 byte < 128, else 2 bytes BE | 0x8000) | name | payload."""
    name = type_name.encode("utf-8")
    assert len(name) <= 256 and (kind == KIND_CODABLE or not name)
    length = u8(len(name)) if len(name) < 128 else u16be(0x8000 | len(name))
    return u8(1) + u8(kind) + length + name + payload


def read_envelope(data):
    r = Reader(data)
    version, kind = r.u8(), r.u8()
    n = r.u8()
    if n & 0x80:
        n = ((n & 0x7F) << 8) | r.u8()
    return {"version": version, "kind": kind, "type_name": r.take(n).decode("utf-8"),
            "payload": r.take(r.remaining)}


# --- Appendix A: the CLI's application layer ---------------------------------------------------


def app_json(value):
    """Compact UTF-8 JSON, keys in the order given (receivers parse the JSON; only the keys matter)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


CHAT_ACTIVITY_ID = "org.huddle.chat"
CHAT_LINE_TYPE = "huddle.ChatLine"


def chat_activity_payload(topic):
    return app_json({"identifier": CHAT_ACTIVITY_ID, "activity": {"topic": topic}})


def chat_line_envelope(text):
    return envelope(KIND_CODABLE, CHAT_LINE_TYPE, app_json({"text": text}))


def attachment_metadata(name):
    return app_json({"name": name})
