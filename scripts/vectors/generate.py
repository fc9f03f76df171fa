#!/usr/bin/env python3
"""Writes Huddle's test vectors (docs/vectors/*.json) from fixed inputs with the reference code in
this directory, which was written from docs/PROTOCOL.md alone.

    python3 scripts/vectors/generate.py           # (re)write docs/vectors/*.json
    python3 scripts/vectors/generate.py --check   # exit 1 if a committed file differs

Nothing is random: every key, nonce, index and time is fixed below, so two runs give identical bytes.
Needs Python 3.11 and PyNaCl.
"""

import base64
import hashlib
import ipaddress
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import ref_crypto as crypto    # noqa: E402
import ref_journal as journal  # noqa: E402
import ref_relay as relay      # noqa: E402
import ref_session as session  # noqa: E402
import ref_wire as wire        # noqa: E402

OUT = HERE.parent.parent / "docs" / "vectors"
CACOPHONY = HERE.parent.parent.parent / "shared" / "vectors" / "noise-cacophony-subset.json"


def fixed(label, n=32):
    """A fixed input: the first n bytes of SHA-512("huddle vectors: " + label)."""
    return hashlib.sha512(b"huddle vectors: " + label.encode()).digest()[:n]


def jsonable(v):
    """bytes become lowercase hex, tuples lists; dict order is kept."""
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return v


def case(name, description, **fields):
    return {"name": name, "description": description, **fields}


def vector_file(description, cases, **inputs):
    doc = {"description": description, "generator": "scripts/vectors/generate.py (from docs/PROTOCOL.md)"}
    if inputs:
        doc["inputs"] = inputs
    doc["cases"] = cases
    return jsonable(doc)


# --- Fixed inputs shared by several files ---------------------------------------------------

# The handshake reuses the static and ephemeral keys of the cacophony IKpsk2 vector in
# ../shared/vectors/noise-cacophony-subset.json, so the Noise steps can be compared with it.
CACO_INIT_STATIC = bytes.fromhex("e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1")
CACO_INIT_EPHEMERAL = bytes.fromhex("893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a")
CACO_RESP_STATIC = bytes.fromhex("4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893")
CACO_RESP_EPHEMERAL = bytes.fromhex("bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b")
CACO_RESP_STATIC_PUBLIC = bytes.fromhex("31e0303fd6418d2f8c0e78b91f22e8caed0fbe48656dcf4767e4834f701b8f62")
CACOPHONY_IKPSK2 = {
    "init_prologue": "4a6f686e2047616c74",
    "psk": "54686973206973206d7920417573747269616e20706572737065637469766521",
    "payloads": ["4c756477696720766f6e204d69736573", "4d757272617920526f746862617264"],
    "ciphertexts": [
        "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c79442ec9b09893d0f510791784c10cbc959f"
        "25b1766e0def6e301d14fbca1c7790ac829b8b3674f5f649a5f0e98479662cbfbf2b2c47cd4b09fcd266cd29d7cb675f"
        "1808849707847840f6d178ec4d3733aa",
        "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f1448088439a1b3cebf680b2c74217fcb5eba4ff58"
        "a9468cd90c4aca6194f57479b379a7"],
    "handshake_hash": "8310f86394dc0dabb40beb8210031556db4403ab1202db7034c526232147a700",
}


def addr(family, ip_text, port):
    return {"family": family, "ip": ipaddress.ip_address(ip_text).packed, "port": port}


def identity(name, static_private=None):
    """A member: Ed25519 signing seed, X25519 static key, binding signature, address.
    Alice and Bob take the cacophony static keys; Carol derives both keys from one seed with the
    `hdl-iden` context (the Swift `Identity(seed:)`)."""
    if static_private is None:
        seed = fixed(name + " identity seed")
        signing_seed = session.kdf_derive(seed, 1, b"hdl-iden", 32)
        static_private = session.kdf_derive(seed, 2, b"hdl-iden", 32)
    else:
        seed, signing_seed = None, fixed(name + " signing seed")
    signing_key = crypto.ed25519_keypair(signing_seed)[0]
    static_key = crypto.x25519_public(static_private)
    out = {"name": name}
    if seed:
        out["identity_seed"] = seed
    out.update(signing_seed=signing_seed, signing_key=signing_key, static_private=static_private,
               static_key=static_key, binding_signature=session.binding_signature(signing_seed, static_key))
    return out


ALICE = identity("alice", CACO_INIT_STATIC)
BOB = identity("bob", CACO_RESP_STATIC)
CAROL = identity("carol")
ALICE_ADDR = addr(4, "192.0.2.1", 40001)
BOB_ADDR = addr(4, "198.51.100.2", 40002)
CAROL_ADDR = addr(6, "2001:db8::3", 40003)
RELAY_ADDR = addr(4, "203.0.113.9", 3478)

SESSION_ID = fixed("session id", 16)
CHARTER_NONCE = fixed("charter nonce", 16)
ADMISSION_SECRET = fixed("admission secret", 32)
CHARTER_SESSION_ID = session.session_id_from_charter(ALICE["signing_key"], CHARTER_NONCE)
SESSION_SECRET = fixed("session secret")
INVITATION_SECRET = fixed("invitation secret")
INVITATION_EXPIRY = 1_700_086_400
MEMBERS = session.credentials(SESSION_SECRET, b"hdl-sess")
INVITATION = session.credentials(INVITATION_SECRET, b"hdl-invt")


def record(who, epoch, addresses):
    return {"signing_key": who["signing_key"], "static_key": who["static_key"],
            "binding_signature": who["binding_signature"], "epoch": epoch,
            "name": who["name"], "addresses": addresses}


def public(who):
    return {k: who[k] for k in ("name", "signing_key", "static_key")}


# --- varint.json ----------------------------------------------------------------------------

def varint_vectors():
    cases = []
    for v in [0, 37, 63, 64, 300, 16_383, 16_384, 494_878_333, 1_073_741_823, 1_073_741_824,
              151_288_809_941_952_652, (1 << 62) - 1]:
        cases.append(case(f"encode_{v}", "shortest encoding", value=v, encoded=wire.varint(v)))
    # Non-minimal encodings decode (RFC 9000 section 16's own examples among them).
    for hexs in ["4025", "80000025", "c000000000000025", "7bbd", "9d7f3e7d", "c2197c5eff14e88c"]:
        b = bytes.fromhex(hexs)
        cases.append(case(f"decode_{hexs}", "decoders accept any length prefix; re-encoding gives the "
                          "shortest form", encoded=b, value=wire.decode_varint(b),
                          reencoded=wire.varint(wire.decode_varint(b))))
    cases.append(case("encode_out_of_range", "2^62 cannot be encoded", value=1 << 62,
                      error="varIntOutOfRange"))
    cases.append(case("decode_truncated", "a 2-byte prefix with one byte", encoded=b"\x40",
                      error="truncated"))
    ints = [case("u16_le", "fixed-size integers are little-endian (section 1)", value=0x1234,
                 encoded=wire.u16le(0x1234)),
            case("u32_le", "sender / receiver index", value=0x1A2B3C4D, encoded=wire.u32le(0x1A2B3C4D)),
            case("u64_le", "packet number, expiry, manifest size", value=0x0102030405060708,
                 encoded=wire.u64le(0x0102030405060708)),
            case("port_be_in_frame_address", "the one big-endian integer: the port of a section 3.9 "
                 "address", value=40001, encoded=wire.u16be(40001))]
    return vector_file("QUIC varints (section 1) and fixed-size integers", cases + ints)


# --- frames.json ----------------------------------------------------------------------------

ADDR4 = (4, bytes([192, 0, 2, 1]), 40001)
ADDR6 = (6, CAROL_ADDR["ip"], 40003)


def frame_case(name, description, frame):
    b = wire.encode_frame(frame)
    decoded = wire.decode_frames(b)
    assert decoded == [frame], (decoded, frame)
    fields = {k: v for k, v in frame.items()}
    if frame["type"] == "ack":
        fields["acknowledged"] = wire.ack_ranges(frame["largest"], frame["first_range_length"],
                                                 [(g["gap"], g["length"]) for g in frame["ranges"]])
    if frame["type"] in ("observed_address",):
        fields["address"] = addr_fields(frame["address"])
    if frame["type"] == "candidates":
        fields["addresses"] = [addr_fields(a) for a in frame["addresses"]]
    if frame["type"] in ("path_challenge", "path_response"):
        fields["data_u64le"] = int.from_bytes(frame["data"], "little")
    return case(name, description, frame=fields, encoded=b)


def addr_fields(a):
    return {"family": a[0], "ip": a[1], "port": a[2]}


def frame_vectors():
    F = []
    F.append(frame_case("padding", "a run of zero bytes (here 4)", {"type": "padding", "length": 4}))
    F.append(frame_case("ping", "no body", {"type": "ping"}))
    F.append(frame_case("ack_doc_example", "section 3.3's example: largest 100, delay 25 us, 98...100 and "
                        "89...93", {"type": "ack", "largest": 100, "delay": 25, "first_range_length": 2,
                                    "ranges": [{"gap": 3, "length": 4}]}))
    F.append(frame_case("ack_single", "one packet, number 0", {"type": "ack", "largest": 0, "delay": 0,
                                                              "first_range_length": 0, "ranges": []}))
    F.append(frame_case("ack_three_ranges", "three ranges, a 2-byte delay", {
        "type": "ack", "largest": 1000, "delay": 1500, "first_range_length": 10,
        "ranges": [{"gap": 0, "length": 0}, {"gap": 20, "length": 100}]}))
    F.append(frame_case("message_doc_example", "section 3.4's example: channel 7, sequence 300, "
                        "\"hello\"", {"type": "message", "channel": 7, "sequence": 300, "offset": 0,
                                      "total_length": 5, "data": b"hello"}))
    F.append(frame_case("message_empty", "an empty message: offset 0, total length 0, no data",
                        {"type": "message", "channel": 1, "sequence": 0, "offset": 0, "total_length": 0,
                         "data": b""}))
    F.append(frame_case("message_fragment", "the middle fragment of a 3000-byte message on channel 200",
                        {"type": "message", "channel": 200, "sequence": 5, "offset": 1000,
                         "total_length": 3000, "data": bytes(range(16))}))
    F.append(frame_case("datagram", "an unreliable message on channel 16",
                        {"type": "datagram", "channel": 16, "data": b"\x01\x01\x00ping"}))
    F.append(frame_case("close_no_error", "code 0, empty reason",
                        {"type": "close", "code": 0, "reason": ""}))
    F.append(frame_case("close_protocol_violation", "code 1 with a UTF-8 reason",
                        {"type": "close", "code": 1, "reason": "unknown frame type 0x30 \u2013 bye"}))
    F.append(frame_case("close_unknown_code", "unknown codes are accepted and preserved",
                        {"type": "close", "code": 1000, "reason": "x"}))
    F.append(frame_case("max_data", "2 MiB + 512 KiB", {"type": "max_data", "limit": 2_621_440}))
    F.append(frame_case("data_blocked", "blocked at 2 MiB", {"type": "data_blocked", "limit": 2_097_152}))
    F.append(frame_case("path_challenge", "8 bytes of data (Swift holds them as a UInt64 written "
                        "little-endian: data_u64le)", {"type": "path_challenge", "data": fixed("challenge", 8)}))
    F.append(frame_case("path_response", "echoes the challenge's data",
                        {"type": "path_response", "data": fixed("challenge", 8)}))
    F.append(frame_case("observed_address_v4", "IPv4, port big-endian",
                        {"type": "observed_address", "address": ADDR4}))
    F.append(frame_case("observed_address_v6", "IPv6, port big-endian",
                        {"type": "observed_address", "address": ADDR6}))
    F.append(frame_case("candidates", "two candidates", {"type": "candidates", "addresses": [ADDR4, ADDR6]}))
    F.append(frame_case("candidates_empty", "no candidates", {"type": "candidates", "addresses": []}))

    payload_frames = [{"type": "ack", "largest": 3, "delay": 40, "first_range_length": 3, "ranges": []},
                      {"type": "ping"},
                      {"type": "message", "channel": 1, "sequence": 0, "offset": 0, "total_length": 3,
                       "data": b"abc"},
                      {"type": "padding", "length": 3}]
    payloads = [case("coalesced", "several frames in one payload, padding last", frames=payload_frames,
                     encoded=wire.encode_frames(payload_frames))]
    assert wire.decode_frames(payloads[0]["encoded"]) == payload_frames

    errors = [
        ("unknown_type_0x0c", "0x0c is unassigned", "0c", "unknownFrameType"),
        ("unknown_type_0x10", "membership range, not specified", "10", "unknownFrameType"),
        ("unknown_type_0x30", "above the assigned range", "30", "unknownFrameType"),
        ("ack_too_many_ranges", "range count 32 is checked before any range", "02 40 64 00 20 00",
         "tooManyAckRanges"),
        ("ack_first_range_below_zero", "largest 2, first range length 3", "02 02 00 00 03",
         "invalidAckRange"),
        ("ack_second_range_below_zero", "95...100, then gap 94 reaches below 0", "02 40 64 00 01 05 40 5e 00",
         "invalidAckRange"),
        ("message_channel_256", "channel must be < 256", "03 41 00 00 00 00 00", "valueOutOfRange"),
        ("message_total_too_long", "total length 262,145", "03 01 00 00 80 04 00 01 00", "lengthOutOfRange"),
        ("message_out_of_bounds", "offset 3 + length 3 > total 5", "03 01 00 03 05 03 61 62 63",
         "fragmentOutOfBounds"),
        ("message_truncated_data", "data length 5, 2 bytes left", "03 01 00 00 05 05 61 62", "truncated"),
        ("datagram_too_long", f"length {wire.MAX_DATAGRAM_SIZE + 1} (maxDatagramSize + 1)",
         "04 10" + wire.varint(wire.MAX_DATAGRAM_SIZE + 1).hex(), "lengthOutOfRange"),
        ("close_reason_too_long", "reason length 257", "05 00 41 01", "lengthOutOfRange"),
        ("close_reason_not_utf8", "reason 0xff", "05 00 01 ff", "invalidUTF8"),
        ("address_family_5", "family byte 5", "0a 05 01 02 03 04 00 50", "valueOutOfRange"),
        ("candidates_9", "count 9 > maxCandidates", "0b 09", "lengthOutOfRange"),
    ]
    bad = []
    for name, desc, hexs, kind in errors:
        b = bytes.fromhex(hexs.replace(" ", ""))
        try:
            wire.decode_frames(b)
            raise AssertionError(name)
        except wire.WireError as e:
            assert e.kind == kind, (name, e.kind)
        bad.append(case(name, desc, encoded=b, error=kind))
    return vector_file("Frames of section 3: each type's fields and bytes, a coalesced payload, and payloads "
                       "a decoder must refuse (error = the WireError case)", F + payloads + bad)


# --- handshake.json and packets.json ----------------------------------------------------------

TIMESTAMP = (1_700_000_000, 123_456_789)
INIT_INDEX, RESP_INDEX = 0x1A2B3C4D, 0x5E6F7081


def trace(ss):
    return [{"step": step, "h": h, "ck": ck} for step, h, ck in ss.trace]


def run_handshake(s_i, e_i, s_r, e_r, psk, mac_secret, init_index, resp_index, timestamp, resumption,
                  cookie_=None):
    """Both sides of one handshake; returns every intermediate value."""
    s_i_pub, s_r_pub = crypto.x25519_public(s_i), crypto.x25519_public(s_r)
    payload = crypto.initiation_payload(*timestamp, resumption)
    ss_i, e_pub, enc_static, enc_payload = crypto.write_message1(s_i, e_i, s_r_pub, payload)
    body = wire.u8(1) + wire.RESERVED3 + wire.u32le(init_index) + e_pub + enc_static + enc_payload
    init_mac1_key = crypto.mac1_key(mac_secret, s_r_pub)
    initiation = crypto.add_macs(body, init_mac1_key, cookie_)
    # The responder's view.
    f = wire.parse_initiation(initiation)
    assert crypto.mac(init_mac1_key, initiation[:120]) == f["mac1"]
    ss_r, seen_static, seen_payload = crypto.read_message1(s_r, f["ephemeral"], f["encrypted_static"],
                                                           f["encrypted_payload"])
    assert seen_static == s_i_pub and seen_payload == payload and ss_r.h == ss_i.h
    e_r_pub, enc_nothing = crypto.write_message2(ss_r, e_r, e_pub, s_i_pub, psk)
    resp_mac1_key = crypto.mac1_key(mac_secret, s_i_pub)
    response = crypto.add_macs(wire.u8(2) + wire.RESERVED3 + wire.u32le(resp_index) + wire.u32le(init_index)
                               + e_r_pub + enc_nothing, resp_mac1_key)
    g = wire.parse_response(response)
    assert crypto.read_message2(ss_i, s_i, e_i, g["ephemeral"], psk, g["encrypted_nothing"]) == b""
    assert ss_i.split() == ss_r.split() and ss_i.h == ss_r.h
    k_i2r, k_r2i = ss_i.split()
    return {"payload": payload, "initiator_trace": ss_i.trace, "ss": ss_i, "initiation": initiation,
            "initiation_fields": f, "response": response, "response_fields": g,
            "init_mac1_key": init_mac1_key, "resp_mac1_key": resp_mac1_key,
            "k_i2r": k_i2r, "k_r2i": k_r2i, "e_i_pub": e_pub, "e_r_pub": e_r_pub}


def handshake_vectors():
    cases = []
    # 1. The cacophony vector itself, through the same Noise code (prologue and psk of cacophony).
    #    Its values are copied here so the output does not depend on ../shared being present; when it
    #    is, they are compared with it.
    v = CACOPHONY_IKPSK2
    if CACOPHONY.exists():
        shared = next(x for x in json.loads(CACOPHONY.read_text())["vectors"]
                      if x["protocol_name"] == "Noise_IKpsk2_25519_ChaChaPoly_SHA256")
        assert all(shared[k] == v[k] for k in ("init_prologue", "handshake_hash"))
        assert [m["ciphertext"] for m in shared["messages"][:2]] == v["ciphertexts"]
    h = bytes.fromhex
    ss, e, es, ep = crypto.write_message1(CACO_INIT_STATIC, CACO_INIT_EPHEMERAL, CACO_RESP_STATIC_PUBLIC,
                                          h(v["payloads"][0]), h(v["init_prologue"]))
    assert (e + es + ep).hex() == v["ciphertexts"][0]
    rs, si, _ = crypto.read_message1(CACO_RESP_STATIC, e, es, ep, h(v["init_prologue"]))
    er, enc = crypto.write_message2(rs, CACO_RESP_EPHEMERAL, e, si, h(v["psk"]), h(v["payloads"][1]))
    assert (er + enc).hex() == v["ciphertexts"][1] and rs.h.hex() == v["handshake_hash"]
    cases.append(case("cacophony_ikpsk2_sha256", "self-check: this generator's Noise code reproduces "
                      "the cacophony Noise_IKpsk2_25519_ChaChaPoly_SHA256 vector of "
                      "shared/vectors/noise-cacophony-subset.json (its prologue \"John Galt\" and psk)",
                      prologue=h(v["init_prologue"]), psk=h(v["psk"]),
                      initiator_static_private=CACO_INIT_STATIC, initiator_ephemeral_private=CACO_INIT_EPHEMERAL,
                      responder_static_private=CACO_RESP_STATIC, responder_ephemeral_private=CACO_RESP_EPHEMERAL,
                      payload1=h(v["payloads"][0]), message1=e + es + ep,
                      payload2=h(v["payloads"][1]), message2=er + enc, handshake_hash=rs.h))

    # 2. A Huddle handshake between two members (session credentials), full transcript.
    hs = run_handshake(ALICE["static_private"], CACO_INIT_EPHEMERAL, BOB["static_private"],
                       CACO_RESP_EPHEMERAL, MEMBERS["psk"], MEMBERS["mac_secret"], INIT_INDEX, RESP_INDEX,
                       TIMESTAMP, 0)
    # The first transport packet: the initiator's MEMBER_JOINED for itself (section 8.2 rule 2),
    # message sequence 0 on channel 1, packet number 0, to the responder's index.
    first_msg = session.encode_control({"type": "member_joined", "record": record(ALICE, 1, [ALICE_ADDR])})
    first_frames = [{"type": "message", "channel": 1, "sequence": 0, "offset": 0,
                     "total_length": len(first_msg), "data": first_msg}]
    first_plain = wire.encode_frames(first_frames)
    first_packet = crypto.seal_transport(hs["k_i2r"], RESP_INDEX, 0, first_plain)
    assert crypto.open_transport(hs["k_i2r"], first_packet) == first_plain
    reply_frames = [{"type": "ack", "largest": 0, "delay": 0, "first_range_length": 0, "ranges": []},
                    {"type": "ping"}]
    reply_plain = wire.encode_frames(reply_frames)
    reply_packet = crypto.seal_transport(hs["k_r2i"], INIT_INDEX, 0, reply_plain)
    cases.append(case(
        "member_handshake",
        "Alice (initiator) and Bob (responder), both members: psk and mac_secret from the session secret "
        "(kdf.json). h and ck after every Noise step; mac1 keyed for the receiver's static key; mac2 zero "
        "(no cookie). Then each side's first transport packet.",
        protocol_name=crypto.PROTOCOL_NAME.decode(), prologue=crypto.PROLOGUE,
        initiator={"static_private": ALICE["static_private"], "static_key": ALICE["static_key"],
                   "ephemeral_private": CACO_INIT_EPHEMERAL, "ephemeral_key": hs["e_i_pub"],
                   "sender_index": INIT_INDEX},
        responder={"static_private": BOB["static_private"], "static_key": BOB["static_key"],
                   "ephemeral_private": CACO_RESP_EPHEMERAL, "ephemeral_key": hs["e_r_pub"],
                   "sender_index": RESP_INDEX},
        psk=MEMBERS["psk"], mac_secret=MEMBERS["mac_secret"],
        timestamp={"seconds": TIMESTAMP[0], "nanoseconds": TIMESTAMP[1],
                   "tai64n": crypto.tai64n(*TIMESTAMP)},
        resumption_index=0, initiation_payload=hs["payload"],
        noise_steps=trace(hs["ss"]),
        handshake_hash=hs["ss"].h,
        initiation_mac1_key=hs["init_mac1_key"], initiation_fields=hs["initiation_fields"],
        initiation=hs["initiation"],
        response_mac1_key=hs["resp_mac1_key"], response_fields=hs["response_fields"],
        response=hs["response"],
        transport_keys={"initiator_to_responder": hs["k_i2r"], "responder_to_initiator": hs["k_r2i"]},
        first_transport_packet={"direction": "initiator_to_responder", "receiver_index": RESP_INDEX,
                                "packet_number": 0, "flags": 0, "frames": first_frames,
                                "plaintext": first_plain, "header": first_packet[:16],
                                "nonce": b"\x00" * 4 + wire.u64le(0), "packet": first_packet},
        responder_first_packet={"direction": "responder_to_initiator", "receiver_index": INIT_INDEX,
                                "packet_number": 0, "flags": 0, "frames": reply_frames,
                                "plaintext": reply_plain, "packet": reply_packet}))

    # 3. Under load the responder answers with a cookie reply; the initiator resends with mac2.
    cookie_secret = fixed("cookie secret")
    cookie_ = crypto.cookie(cookie_secret, ALICE_ADDR["family"], ALICE_ADDR["ip"], ALICE_ADDR["port"])
    ck_key = crypto.cookie_key(MEMBERS["mac_secret"], BOB["static_key"])
    nonce = fixed("cookie nonce", 24)
    init_mac1 = hs["initiation"][120:136]
    sealed = crypto.seal_cookie(ck_key, nonce, cookie_, init_mac1)
    reply = wire.cookie_reply_bytes(INIT_INDEX, nonce, sealed)
    assert crypto.open_cookie(ck_key, nonce, sealed, init_mac1) == cookie_
    restamped = crypto.add_macs(hs["initiation"][:120], hs["init_mac1_key"], cookie_)
    assert restamped[:136] == hs["initiation"][:136]
    cases.append(case(
        "cookie_reply",
        "Bob, under load, answers member_handshake's initiation with a cookie reply: cookie = "
        "BLAKE2b-128(key = cookie secret, family || IP || port big-endian of Alice's source address), "
        "sealed with XChaCha20-Poly1305 under Bob's cookie key with the initiation's mac1 as associated "
        "data. Alice resends the same initiation with mac2 = BLAKE2b-128(key = cookie, bytes 0..<136).",
        cookie_secret=cookie_secret, source_address=ALICE_ADDR,
        cookie_input=wire.wire_address(ALICE_ADDR["family"], ALICE_ADDR["ip"], ALICE_ADDR["port"]),
        cookie=cookie_, cookie_key=ck_key, nonce=nonce, associated_data=init_mac1,
        cookie_reply_fields={"receiver_index": INIT_INDEX, "nonce": nonce, "encrypted_cookie": sealed},
        cookie_reply=reply, initiation_with_mac2=restamped, mac2=restamped[136:]))

    # 4. A rekey: a new handshake on the established connection, naming Bob's receiver index.
    rk = run_handshake(ALICE["static_private"], fixed("alice rekey ephemeral"), BOB["static_private"],
                       fixed("bob rekey ephemeral"), MEMBERS["psk"], MEMBERS["mac_secret"],
                       0x0BADCAFE, 0x600DF00D, (TIMESTAMP[0] + 120, TIMESTAMP[1]), RESP_INDEX)
    rk_packet = crypto.seal_transport(rk["k_i2r"], 0x600DF00D, 57, wire.encode_frame({"type": "ping"}))
    cases.append(case(
        "rekey_handshake",
        "120 s later Alice rekeys: a new handshake whose payload carries the resumption index (Bob's "
        "receiver index of the current keypair). New ephemerals and indices, same credentials. Packet "
        "numbers continue across keypairs: the first packet under the new keys is number 57 here.",
        initiator_ephemeral_private=fixed("alice rekey ephemeral"),
        responder_ephemeral_private=fixed("bob rekey ephemeral"),
        initiator_sender_index=0x0BADCAFE, responder_sender_index=0x600DF00D,
        timestamp={"seconds": TIMESTAMP[0] + 120, "nanoseconds": TIMESTAMP[1]},
        resumption_index=RESP_INDEX, initiation_payload=rk["payload"], noise_steps=trace(rk["ss"]),
        handshake_hash=rk["ss"].h, initiation=rk["initiation"], response=rk["response"],
        transport_keys={"initiator_to_responder": rk["k_i2r"], "responder_to_initiator": rk["k_r2i"]},
        first_transport_packet={"receiver_index": 0x600DF00D, "packet_number": 57,
                                "frames": [{"type": "ping"}], "packet": rk_packet}))

    # 5. A joiner's handshake under the invitation's credentials (Carol to Bob).
    jn = run_handshake(CAROL["static_private"], fixed("carol ephemeral"), BOB["static_private"],
                       fixed("bob ephemeral for carol"), INVITATION["psk"], INVITATION["mac_secret"],
                       0x00C0FFEE, 0x00FACADE, (TIMESTAMP[0] + 5, 0), 0)
    cases.append(case(
        "joiner_handshake",
        "Carol joins with a ticket and contacts Bob, a member the ticket names: the handshake targets Bob's static "
        "key (inputs.bob, repeated here as responder_static_key); psk and mac_secret come from the invitation secret "
        "(context hdl-invt).",
        initiator_static_private=CAROL["static_private"], initiator_static_key=CAROL["static_key"],
        responder_static_key=BOB["static_key"],
        initiator_ephemeral_private=fixed("carol ephemeral"),
        responder_ephemeral_private=fixed("bob ephemeral for carol"),
        initiator_sender_index=0x00C0FFEE, responder_sender_index=0x00FACADE,
        psk=INVITATION["psk"], mac_secret=INVITATION["mac_secret"],
        timestamp={"seconds": TIMESTAMP[0] + 5, "nanoseconds": 0}, resumption_index=0,
        handshake_hash=jn["ss"].h, initiation=jn["initiation"], response=jn["response"],
        transport_keys={"initiator_to_responder": jn["k_i2r"], "responder_to_initiator": jn["k_r2i"]}))

    # 6. Alice, built for a later revision (prologue huddle/2), dials Bob (huddle/1): her mac1 verifies, her Noise
    #    message does not, and Bob refuses it naming his prologue (section 2.5).
    later, refused_index = b"huddle/2", 0x2B2B2B2B
    ss_later, e_later, es_later, ep_later = crypto.write_message1(
        ALICE["static_private"], fixed("alice huddle/2 ephemeral"), BOB["static_key"],
        crypto.initiation_payload(*TIMESTAMP, 0), later)
    refused_mac1_key = crypto.mac1_key(MEMBERS["mac_secret"], BOB["static_key"])
    refused = crypto.add_macs(wire.u8(1) + wire.RESERVED3 + wire.u32le(refused_index) + e_later + es_later + ep_later,
                              refused_mac1_key)
    f = wire.parse_initiation(refused)
    assert crypto.mac(refused_mac1_key, refused[:120]) == f["mac1"]
    try:
        crypto.read_message1(BOB["static_private"], f["ephemeral"], f["encrypted_static"], f["encrypted_payload"])
        raise AssertionError("a huddle/2 initiation must not read as huddle/1")
    except Exception as error:  # the AEAD of the encrypted static key fails
        assert not isinstance(error, AssertionError)
    plaintext = wire.refusal_plaintext(crypto.PROLOGUE)
    header = wire.refusal_header(refused_index)
    refusal_nonce = fixed("refusal nonce", 24)
    sealed_prologue = crypto.seal_refusal(ck_key, refusal_nonce, plaintext, header, f["mac1"])
    refusal = wire.refusal_bytes(refused_index, refusal_nonce, sealed_prologue)
    opened = crypto.open_refusal(ck_key, refusal_nonce, sealed_prologue, header, f["mac1"])
    assert wire.refusal_prologue(opened) == crypto.PROLOGUE
    cases.append(case(
        "handshake_refused",
        "Alice, built for a later revision (prologue \"huddle/2\"), dials Bob with member credentials. Bob (huddle/1) "
        "verifies mac1 but cannot read her Noise message 1, and answers with HANDSHAKE_REFUSED: the plaintext "
        "(length, prologue, zero padding to 32 bytes) sealed with XChaCha20-Poly1305 under Bob's cookie key, with "
        "the refusal's bytes 0..<8 followed by the initiation's mac1 as associated data. Alice opens it with the same "
        "key and learns Bob speaks huddle/1.",
        initiator_prologue=later, responder_prologue=crypto.PROLOGUE,
        initiator_ephemeral_private=fixed("alice huddle/2 ephemeral"), initiator_sender_index=refused_index,
        timestamp={"seconds": TIMESTAMP[0], "nanoseconds": TIMESTAMP[1]}, resumption_index=0,
        psk=MEMBERS["psk"], mac_secret=MEMBERS["mac_secret"], initiation=refused, cookie_key=ck_key,
        plaintext=plaintext, nonce=refusal_nonce, associated_data=header + f["mac1"],
        refusal_fields={"receiver_index": refused_index, "nonce": refusal_nonce,
                        "encrypted_prologue": sealed_prologue},
        refusal=refusal))

    # 7. TAI64N encodings.
    for secs, nanos in [(0, 0), (1_700_000_000, 123_456_789), (4_102_444_800, 999_999_999)]:
        cases.append(case(f"tai64n_{secs}_{nanos}", "2^62 + seconds (u64 BE) || nanoseconds (u32 BE)",
                          seconds=secs, nanoseconds=nanos, encoded=crypto.tai64n(secs, nanos)))
    inputs = {"alice": public(ALICE), "bob": public(BOB)}
    return (vector_file("Noise IKpsk2 handshakes and refusals (sections 2.1-2.5, 7.1-7.7)", cases, **inputs), hs,
            reply, refusal)


def packet_vectors(hs, cookie_reply, refusal):
    cases = [
        case("initiation", "152 bytes, fields at the offsets of section 2.1 (member_handshake)",
             fields=hs["initiation_fields"], encoded=hs["initiation"]),
        case("response", "92 bytes (section 2.2)", fields=hs["response_fields"], encoded=hs["response"]),
        case("cookie_reply", "64 bytes (section 2.3)",
             fields={"receiver_index": INIT_INDEX, "nonce": cookie_reply[8:32],
                     "encrypted_cookie": cookie_reply[32:]}, encoded=cookie_reply),
        case("handshake_refusal", "80 bytes (section 2.5, handshake.json handshake_refused)",
             fields=wire.parse_refusal(refusal), encoded=refusal),
    ]
    for i, (pn, flags, idx) in enumerate([(0, 0, RESP_INDEX), (0x0102030405060708, 0, 0xDEADBEEF), (1, 0xA5, 7)]):
        cases.append(case(f"transport_header_{i}", "16 header bytes: type 4, flags, 2 reserved, "
                          "receiver index (LE), packet number (LE); flag bits are preserved",
                          fields={"flags": flags, "receiver_index": idx, "packet_number": pn},
                          encoded=wire.transport_header(idx, pn, flags)))
    cases.append(case("transport_header_immediate_ack", "flags 0x03: IMMEDIATE_ACK (0x01, acknowledge this packet at "
                      "once) and HONORS_IMMEDIATE_ACK (0x02, the sender acknowledges flagged packets at once), as a "
                      "node sets them on the tail of a burst (sections 2.4, 7.8)",
                      fields={"flags": 0x03, "receiver_index": RESP_INDEX, "packet_number": 2},
                      encoded=wire.transport_header(RESP_INDEX, 2, 0x03)))
    key = hs["k_i2r"]
    empty = crypto.seal_transport(key, RESP_INDEX, 1, b"")
    cases.append(case("transport_empty_plaintext", "a 32-byte packet (header + tag) is valid",
                      key=key, fields={"receiver_index": RESP_INDEX, "packet_number": 1}, plaintext=b"",
                      encoded=empty))
    big = wire.encode_frames([{"type": "ping"}, {"type": "padding", "length": 1167}])
    probe = crypto.seal_transport(key, RESP_INDEX, 2, big)
    assert len(probe) == 1200
    cases.append(case("transport_full_1200", "PING padded to a 1200-byte datagram (1168-byte plaintext)",
                      key=key, fields={"receiver_index": RESP_INDEX, "packet_number": 2},
                      plaintext=big, encoded=probe))
    # Classification (section 2), before any cryptography.
    init = hs["initiation"]
    classify = [
        ("empty", b"", "truncated"),
        ("unknown_type_0", b"\x00" * 40, "unknownPacketType"),
        ("unknown_type_11", b"\x0b" + b"\x00" * 40, "unknownPacketType"),
        ("refusal_short", b"\x0a" + b"\x00" * 40, "truncated"),
        ("initiation_short", init[:151], "truncated"),
        ("initiation_long", init + b"\x00", "trailingBytes"),
        ("initiation_reserved", init[:2] + b"\x01" + init[3:], "nonZeroReserved"),
        ("transport_31", empty[:31], "truncated"),
        ("transport_reserved", empty[:3] + b"\x01" + empty[4:], "nonZeroReserved"),
        ("oversized", b"\x04" + b"\x00" * wire.MAX_DATAGRAM_SIZE, "lengthOutOfRange"),   # limit + 1
        ("relay_send_short", b"\x08" + b"\x00" * 66, "truncated"),
    ]
    for name, b, kind in classify:
        try:
            wire.classify(b)
            raise AssertionError(name)
        except wire.WireError as e:
            assert e.kind == kind, (name, e.kind)
        cases.append(case(f"classify_{name}", "refused by classification", encoded=b, error=kind))
    for name, b in [("initiation", init), ("transport_flags", empty[:1] + b"\xff" + empty[2:])]:
        cases.append(case(f"classify_ok_{name}", "passes classification", encoded=b,
                          packet_type=wire.classify(b)))
    return vector_file("Packet layouts (section 2) and classification", cases)


# --- kdf.json ---------------------------------------------------------------------------------

def kdf_vectors():
    cases = []
    for name, secret, ctx, creds in [("session", SESSION_SECRET, b"hdl-sess", MEMBERS),
                                     ("invitation", INVITATION_SECRET, b"hdl-invt", INVITATION)]:
        cases.append(case(f"{name}_credentials", f"crypto_kdf_derive_from_key under context "
                          f"\"{ctx.decode()}\": sub-key 1 psk, 2 mac_secret (32 bytes), 3 (16 bytes) whose "
                          "first 8 bytes little-endian are the admission id",
                          secret=secret, context=ctx.decode(), psk=creds["psk"],
                          mac_secret=creds["mac_secret"], subkey3=creds["subkey3"],
                          admission_id=creds["admission_id"]))
    for sub_id, length in [(1, 32), (2, 32), (3, 16), (7, 64)]:
        cases.append(case(f"crypto_kdf_{sub_id}_{length}", "raw crypto_kdf: BLAKE2b(key = master, salt = "
                          "id u64 LE || 8 zero bytes, personal = context || 8 zero bytes, empty message)",
                          master_key=SESSION_SECRET, context="hdl-sess", subkey_id=sub_id, length=length,
                          subkey=session.kdf_derive(SESSION_SECRET, sub_id, b"hdl-sess", length)))
    cases.append(case("identity_from_seed", "a reproducible identity (the Swift Identity(seed:)): context "
                      "\"hdl-iden\", sub-key 1 the Ed25519 signing seed, sub-key 2 the X25519 private key",
                      seed=CAROL["identity_seed"], signing_seed=CAROL["signing_seed"],
                      signing_key=CAROL["signing_key"], static_private=CAROL["static_private"],
                      static_key=CAROL["static_key"], binding_signature=CAROL["binding_signature"]))
    for who in (ALICE, BOB):
        cases.append(case(f"identity_{who['name']}", "Ed25519 seed -> signing key; X25519 private -> "
                          "static key; binding = Ed25519 over \"huddle identity binding v1\" || static key",
                          signing_seed=who["signing_seed"], signing_key=who["signing_key"],
                          static_private=who["static_private"], static_key=who["static_key"],
                          binding_signature=who["binding_signature"]))
    for who, creds, label in [(BOB, MEMBERS, "session"), (ALICE, MEMBERS, "session"),
                              (BOB, INVITATION, "invitation")]:
        cases.append(case(f"mac_keys_to_{who['name']}_{label}", "mac1 key = BLAKE2b-256(key = mac_secret, "
                          "\"huddle mac1 v1\" || S); cookie key = same with \"huddle cookie v1\"; S = the "
                          "static key of the message's receiver (cookie key: of the cookie reply's sender)",
                          mac_secret=creds["mac_secret"], static_key=who["static_key"],
                          mac1_key=crypto.mac1_key(creds["mac_secret"], who["static_key"]),
                          cookie_key=crypto.cookie_key(creds["mac_secret"], who["static_key"])))
    ck = fixed("noise chaining key")
    cases.append(case("noise_hkdf", "Noise HKDF over HMAC-SHA256 (three outputs)", chaining_key=ck,
                      input_key_material=b"huddle", outputs=crypto.hkdf(ck, b"huddle", 3)))
    return vector_file("Key derivations (sections 7.6, 8.1)", cases)


# --- tickets.json -----------------------------------------------------------------------------

def ticket_fields(members, relays=(), name="alice", expiry=INVITATION_EXPIRY, turn=()):
    fields = {"session_id": SESSION_ID, "invitation_secret": INVITATION_SECRET, "expiry": expiry,
              "inviter_signing_key": ALICE["signing_key"], "inviter_name": name,
              "members": [{"static_key": who["static_key"], **a} for who, a in members], "relays": list(relays)}
    if turn:
        fields["turn_servers"] = list(turn)
    return fields


# A TURN server over UDP with time-limited (coturn use-auth-secret style) credentials, and one over TCP on 443.
TURN_UDP = {"transport": "udp", **RELAY_ADDR, "username": "1900000000:alice", "password": "c2VjcmV0IGtleQ=="}
TURN_TCP = {"transport": "tcp", "family": 4, "ip": bytes([198, 51, 100, 7]), "port": 443, "username": "al\u00efce",
            "password": "s3cret"}


def raw_ticket(raw_body):
    raw = raw_body + session.ticket_checksum(raw_body)
    return session.TICKET_PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def ticket_vectors():
    cases = []
    valid = [
        ("v1_one_member", "version 1 (no relays), one IPv4 member",
         ticket_fields([(ALICE, ALICE_ADDR)])),
        ("v1_two_members_ipv6", "two members, one IPv6; a UTF-8 name",
         ticket_fields([(ALICE, ALICE_ADDR), (CAROL, CAROL_ADDR)], name="Al\u00efce \U0001F3A7")),
        ("v2_relays", "version 2: the ticket names a relay",
         ticket_fields([(ALICE, ALICE_ADDR), (BOB, BOB_ADDR)], relays=[RELAY_ADDR])),
        ("v1_empty_name", "an empty inviter name", ticket_fields([(BOB, BOB_ADDR)], name="")),
        ("v3_turn", "version 3: TURN servers over UDP and TCP with their credentials, no relays",
         ticket_fields([(ALICE, ALICE_ADDR)], turn=[TURN_UDP, TURN_TCP])),
        ("v3_turn_and_relay", "version 3 with a relay as well",
         ticket_fields([(ALICE, ALICE_ADDR)], relays=[RELAY_ADDR], turn=[TURN_TCP])),
        ("v3_member_addresses", "version 3: a member at a LAN, a public and an IPv6 address; no relays, no TURN",
         ticket_fields([({**ALICE}, {**ALICE_ADDR, "more_addresses": [RELAY_ADDR, CAROL_ADDR]}), (BOB, BOB_ADDR)])),
    ]
    for name, desc, t in valid:
        text, raw = session.encode_ticket(t)
        back = session.decode_ticket(text)
        several = any(m.get("more_addresses") for m in t["members"])
        version = 3 if t.get("turn_servers") or several else 2 if t["relays"] else 1
        if version == 3:
            t = {**t, "turn_servers": t.get("turn_servers", [])}
        assert back == {"version": version, **t}, name
        cases.append(case(name, desc, fields={"version": back["version"], **t}, bytes=raw,
                          checksum=raw[-4:], ticket=text))
    # Expiry: parsing does not check it; joining refuses when now >= expiry.
    cases[0]["expired_at_or_after"] = INVITATION_EXPIRY

    base = session.ticket_body(ticket_fields([(ALICE, ALICE_ADDR)]))
    good = raw_ticket(base)
    name_at = 1 + 16 + 32 + 8 + 32            # offset of the name length
    members_at = name_at + 1 + len(b"alice")   # offset of the member count
    addr_at = members_at + 1 + 32              # offset of the first member's family
    # The same one-member ticket as version 3: an address count before the member's address, then an empty relay
    # list (the TURN list follows in the cases below).
    v3 = b"\x03" + base[1:addr_at] + b"\x01" + base[addr_at:]
    bad = [
        ("not_a_ticket", "no huddle: prefix", good[len("huddle:"):], "notATicket"),
        ("bad_encoding", "a character outside base64url", good[:20] + "+" + good[21:], "badEncoding"),
        ("bad_encoding_padding", "padding is not part of the format", good + "=", "badEncoding"),
        ("truncated_length", "a length of 1 modulo 4 after the prefix (characters lost)",
         good[:len(good) - ((len(good) - 7) % 4) - 3], "truncated"),
        ("truncated_short", "5 bytes or fewer after decoding", raw_ticket(b"\x01"), "truncated"),
        ("truncated_body", "valid checksum but the body ends inside the session id",
         raw_ticket(b"\x01" + SESSION_ID[:10]), "truncated"),
        ("checksum_mismatch", "one body byte changed", None, "checksumMismatch"),
        ("unsupported_version", "version 4", raw_ticket(b"\x04" + base[1:]), "unsupportedVersion"),
        ("invalid_name_length", "name length 65",
         raw_ticket(base[:name_at] + b"\x41" + b"a" * 65 + base[members_at:]), "invalidName"),
        ("invalid_name_utf8", "name bytes are not UTF-8",
         raw_ticket(base[:name_at] + b"\x05\xff\xfe\xfd\xfc\xfb" + base[members_at:]), "invalidName"),
        ("no_members", "member count 0", raw_ticket(base[:members_at] + b"\x00"), "noMembers"),
        ("too_many_members", "member count 9", raw_ticket(base[:members_at] + b"\x09" + base[members_at + 1:]),
         "tooManyMembers"),
        ("invalid_address_family", "family 5",
         raw_ticket(base[:addr_at] + b"\x05" + base[addr_at + 1:]), "invalidAddress"),
        ("invalid_address_port_zero", "port 0", raw_ticket(base[:-2] + b"\x00\x00"), "invalidAddress"),
        ("invalid_relay_count", "version 2 with relay count 0",
         raw_ticket(b"\x02" + base[1:] + b"\x00"), "invalidAddress"),
        ("trailing_bytes", "a byte after the last member", raw_ticket(base + b"\x00"), "trailingBytes"),
        ("invalid_turn_count", "version 3, no relays, TURN server count 5",
         raw_ticket(v3 + b"\x00\x05"), "invalidTurnServer"),
        ("invalid_turn_transport", "version 3, a TURN server with transport 2",
         raw_ticket(v3 + b"\x00\x01\x02" + session.record_address(4, bytes([10, 0, 0, 1]), 3478)
                    + b"\x01a\x01b"), "invalidTurnServer"),
        ("invalid_turn_credential_length", "version 3, a TURN username of 129 bytes",
         raw_ticket(v3 + b"\x00\x01\x00" + session.record_address(4, bytes([10, 0, 0, 1]), 3478)
                    + b"\x81" + b"u" * 129 + b"\x01b"), "invalidTurnServer"),
        ("invalid_member_address_count", "version 3, a member with address count 0",
         raw_ticket(b"\x03" + base[1:addr_at] + b"\x00"), "invalidAddress"),
    ]
    for name, desc, text, kind in bad:
        if text is None:   # flip a byte of the session id inside the base64 text, keep the checksum
            raw = bytearray(base + session.ticket_checksum(base))
            raw[5] ^= 1
            text = "huddle:" + base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
        try:
            session.decode_ticket(text)
            raise AssertionError(name)
        except session.TicketError as e:
            assert e.kind == kind, (name, e.kind)
        cases.append(case(name, desc, ticket=text, error=kind))
    cases.append(case("whitespace_trimmed", "leading and trailing whitespace is ignored",
                      ticket="  " + good + "\n", fields=session.decode_ticket(good)))
    return vector_file("Tickets (section 8.1): valid ones with their fields, bytes (before base64url, "
                       "checksum included) and text; then one ticket per error kind", cases)


# --- control.json -----------------------------------------------------------------------------

def control_vectors():
    chat = session.chat_activity_payload("huddle chat")
    act = {"clock": 2, "author": ALICE["signing_key"], "payload": chat}
    alice1 = record(ALICE, 1, [ALICE_ADDR])
    bob3 = record(BOB, 3, [BOB_ADDR, addr(6, "2001:db8::2", 40002)])
    carol = record(CAROL, 0, [])
    msgs = [
        ("record_alice", "member record: founder, epoch 1, one IPv4 address", None, alice1),
        ("record_bob_two_addresses", "epoch 3, IPv4 and IPv6 addresses", None, bob3),
        ("record_carol_no_address", "a joiner's record in its JOIN_REQUEST: epoch 0, no address", None, carol),
        ("join_request", "Carol to her sponsor Bob (invitation id from kdf.json)",
         {"type": "join_request", "session_id": SESSION_ID, "invitation_id": INVITATION["admission_id"],
          "record": carol}, None),
        ("welcome", "Bob welcomes Carol: clock 4, roster of three (Carol at epoch 4, her observed address "
         "first), the chat activity, one open invitation",
         {"type": "welcome", "session_id": SESSION_ID, "session_secret": SESSION_SECRET, "clock": 4,
          "roster": [alice1, bob3, record(CAROL, 4, [CAROL_ADDR])], "activity": act,
          "invitations": [{"secret": INVITATION_SECRET, "expiry": INVITATION_EXPIRY}]}, None),
        ("welcome_minimal", "no activity (flag 0), no invitations",
         {"type": "welcome", "session_id": SESSION_ID, "session_secret": SESSION_SECRET, "clock": 3,
          "roster": [alice1, bob3], "activity": None, "invitations": []}, None),
        ("member_joined", "Bob announces Carol", {"type": "member_joined",
                                                  "record": record(CAROL, 4, [CAROL_ADDR])}, None),
        ("member_left", "Carol leaves, naming her epoch",
         {"type": "member_left", "signing_key": CAROL["signing_key"], "epoch": 4}, None),
        ("activity", "Alice's chat activity at clock 2", {"type": "activity", "activity": act}, None),
        ("activity_empty_payload", "an activity with an empty payload",
         {"type": "activity", "activity": {"clock": 300, "author": BOB["signing_key"], "payload": b""}}, None),
        ("invitation_opened", "Alice opened an invitation",
         {"type": "invitation_opened", "secret": INVITATION_SECRET, "expiry": INVITATION_EXPIRY}, None),
        ("session_ended", "Alice ends the session",
         {"type": "session_ended", "signing_key": ALICE["signing_key"]}, None),
        ("charter", "Alice's charter for the session charter_session_id (derived from her key and the nonce): "
         "policy 0, only the creator removes; signed over \"huddle charter v1\" || session id || policy",
         {"type": "charter", "creator": ALICE["signing_key"], "nonce": CHARTER_NONCE, "policy": 0,
          "signature": session.charter_signature(ALICE["signing_seed"], CHARTER_SESSION_ID, 0)}, None),
        ("member_removed", "Alice removes Carol from charter_session_id; signed over "
         "\"huddle member removed v1\" || session id || author key || removed key",
         {"type": "member_removed", "author": ALICE["signing_key"], "removed": CAROL["signing_key"],
          "signature": session.removal_signature(ALICE["signing_seed"], CHARTER_SESSION_ID, ALICE["signing_key"],
                                                 CAROL["signing_key"])}, None),
        ("admission_key", "Bob's admission key for epoch 1 (after Carol's removal)",
         {"type": "admission_key", "epoch": 1, "author": BOB["signing_key"], "secret": ADMISSION_SECRET}, None),
        ("invitations_revoked", "the invitation of kdf.json revoked, with one more id",
         {"type": "invitations_revoked", "invitation_ids": [INVITATION["admission_id"], 0x0102030405060708]},
         None),
        ("ask_invitation_opened",
         "Alice opened an ask-to-join invitation: the body of INVITATION_OPENED under type 12",
         {"type": "ask_invitation_opened", "secret": INVITATION_SECRET, "expiry": INVITATION_EXPIRY}, None),
        ("join_waiting", "Bob tells Carol her request waits for a member's answer", {"type": "join_waiting"}, None),
        ("join_asked", "Bob tells the members that Carol asks to join (her record as her request named it)",
         {"type": "join_asked", "record": carol}, None),
        ("join_answered", "Alice admits Carol", {"type": "join_answered", "joiner": CAROL["signing_key"],
                                                 "admitted": 1}, None),
        ("join_answered_denied", "Alice denies Carol", {"type": "join_answered", "joiner": CAROL["signing_key"],
                                                        "admitted": 0}, None),
        ("join_refused", "Bob turns Carol away: reason 1, denied", {"type": "join_refused", "reason": 1}, None),
    ]
    cases = []
    for name, desc, msg, rec in msgs:
        if rec is not None:
            b = session.member_record(rec)
            r = wire.Reader(b)
            assert session.read_member_record(r) == rec and not r.remaining
            cases.append(case(name, desc + "; the binding signature verifies", record=rec, encoded=b))
        else:
            b = session.encode_control(msg)
            assert session.decode_control(b) == msg, name
            cases.append(case(name, desc, channel=1, message=msg, encoded=b))
    cases.append(case("unknown_type", "type 200 is not defined: ignored, not a violation", channel=1,
                      encoded=b"\xc8\x01\x02", ignored=True))
    inputs = {"alice": public(ALICE), "bob": public(BOB), "carol": public(CAROL), "session_id": SESSION_ID,
              "charter_session_id": CHARTER_SESSION_ID}
    return vector_file("Member records and control messages (section 8.2, channel 1)", cases, **inputs)


# --- envelopes.json and cli.json --------------------------------------------------------------

def envelope_vectors():
    cases = []
    for name, desc, kind, tname, payload in [
        ("codable_chat_line", "kind 0 (JSON), a short type name", 0, "huddle.ChatLine",
         session.app_json({"text": "hi"})),
        ("raw_bytes", "kind 1, empty type name", 1, "", bytes([0, 1, 2, 0xFF])),
        ("raw_empty", "kind 1, no payload", 1, "", b""),
        ("type_name_127", "the longest one-byte length", 0, "T" * 127, b"{}"),
        ("type_name_128", "the shortest two-byte length: 0x80 0x80", 0, "T" * 128, b"{}"),
        ("type_name_256", "the longest type name: 0x81 0x00", 0, "M" * 256, b"[]"),
        ("utf8_type_name", "a non-ASCII type name", 0, "App.Caf\u00e9Order", session.app_json({"n": 1})),
    ]:
        b = session.envelope(kind, tname, payload)
        assert session.read_envelope(b) == {"version": 1, "kind": kind, "type_name": tname, "payload": payload}
        cases.append(case(name, desc, channel=16, fields={"version": 1, "kind": kind, "type_name": tname,
                                                         "payload": payload}, encoded=b))
    return vector_file("Messenger envelopes (section 8.3, channel 16)", cases)


def cli_vectors():
    chat = session.chat_activity_payload("huddle chat")
    line = session.chat_line_envelope("hello, huddle")
    meta = session.attachment_metadata("notes.txt")
    act = {"clock": 2, "author": ALICE["signing_key"], "payload": chat}
    cases = [
        case("activity_payload", "the activity `huddle host` sets (default topic)",
             json={"identifier": "org.huddle.chat", "activity": {"topic": "huddle chat"}}, encoded=chat),
        case("activity_message", "that payload in an ACTIVITY control message (section 8.2)",
             channel=1, activity=act, encoded=session.encode_control({"type": "activity", "activity": act})),
        case("chat_line", "a chat line: envelope kind 0, type name huddle.ChatLine",
             channel=16, type_name=session.CHAT_LINE_TYPE, json={"text": "hello, huddle"}, encoded=line),
        case("chat_line_frame", "the chat line as message 0 of channel 16 in a MESSAGE frame",
             encoded=wire.encode_frame({"type": "message", "channel": 16, "sequence": 0, "offset": 0,
                                        "total_length": len(line), "data": line})),
        case("attachment_metadata", "a shared file's manifest metadata", json={"name": "notes.txt"},
             encoded=meta),
    ]
    return vector_file("The huddle CLI's application messages (Appendix A). JSON bytes are compact UTF-8; "
                       "receivers parse the JSON, so only the keys and values are normative", cases)


# --- journal.json -----------------------------------------------------------------------------

def journal_vectors():
    J = journal
    cases = []
    for data, desc in [(b"", "empty chunk (never sent; shows the 0x00 prefix)"), (b"hello", "5 bytes"),
                       (J.test_content(65_536), "a full chunk of the test content")]:
        cases.append(case(f"leaf_{len(data)}", "leaf = BLAKE2b-256(0x00 || chunk): " + desc,
                          chunk=data if len(data) <= 64 else None, chunk_length=len(data),
                          leaf=J.leaf(data)))
    cases.append(case("node", "node = BLAKE2b-256(0x01 || left || right)", left=J.leaf(b"a"),
                      right=J.leaf(b"b"), node=J.H(b"\x01" + J.leaf(b"a") + J.leaf(b"b"))))
    # Roots of section 9.1's table (content byte i = (i * 31 + (i >> 16) * 7) mod 256).
    doc_table = {0: "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8",
                 1: "9ee6dfb61a2fb903df487c401663825643bb825d41695e63df8af6162ab145a6",
                 65_535: "2de441119e6ed292c5b15b7796582cf5bf31ec526c02a85abcfea187feb195b9",
                 65_536: "7fc5055485bb7f732e93bbdec96aedbb370158aa02f3eda8cec5bfd3a07abe28",
                 65_537: "2d28bc6c71d3f10c42b3740c2a2526d5260cff3225b998927b67630c66653e6e",
                 196_613: "f1e5dd897d27f1af1c47b9360d26fd48d2971106ec2866ababb79efead21261d",
                 458_752: "2c49a5d9aa2825e1732baa8dd7bbda408231531b3b93092928a55c105f127ab4"}
    sizes = [0, 1, 65_535, 65_536, 65_537, 131_072, 131_073, 196_613, 262_145, 327_680, 393_216, 458_752,
             524_288, J.MAX_ATTACHMENT_SIZE]
    trees = {}
    for size in sizes:
        content = J.test_content(size)
        leaves = [J.leaf(c) for c in J.chunks(content)]
        root = J.mth(leaves)
        if size in doc_table:
            assert root.hex() == doc_table[size], size   # section 9.1's table, cross-checked
        trees[len(leaves)] = leaves
        cases.append(case(f"root_size_{size}", f"{len(leaves)} leaves; content byte i = (i * 31 + "
                          f"(i >> 16) * 7) mod 256" + ("; in section 9.1's table" if size in doc_table else ""),
                          size=size, chunk_count=len(leaves), last_chunk_length=len(content) - 65_536 * (len(leaves) - 1)
                          if leaves else 0, leaves=leaves if len(leaves) <= 8 else None,
                          leaf_list_blake2b=J.H(b"".join(leaves)) if len(leaves) > 8 else None, root=root))
    # Inclusion proofs (RFC 6962 audit paths). The protocol sends whole leaf lists, never proofs; these
    # are informative, for implementations that check single chunks against the root.
    for n in [1, 2, 3, 4, 5, 6, 7, 8]:
        for m in range(n):
            path = J.inclusion_proof(trees[n], m)
            assert J.verify_inclusion(trees[n][m], m, n, path, J.mth(trees[n]))
            cases.append(case(f"inclusion_{m}_of_{n}", "RFC 6962 section 2.1.1 audit path, bottom-up "
                              "(informative)", leaf_index=m, tree_size=n, leaf=trees[n][m], path=path,
                              root=J.mth(trees[n])))

    # Manifests.
    content = J.test_content(196_613)
    leaves = [J.leaf(c) for c in J.chunks(content)]
    author_seed = ALICE["signing_seed"]
    m = {"id": fixed("attachment id", 16), "size": 196_613, "chunk_size": 65_536, "chunk_count": 4,
         "root": J.mth(leaves), "author": ALICE["signing_key"], "metadata": session.attachment_metadata("notes.txt")}
    m["signature"] = J.manifest_signature(author_seed, m)
    empty = {"id": fixed("empty attachment id", 16), "size": 0, "chunk_size": 65_536, "chunk_count": 0,
             "root": J.mth([]), "author": BOB["signing_key"], "metadata": b""}
    empty["signature"] = J.manifest_signature(BOB["signing_seed"], empty)
    for name, desc, man in [("manifest", "the 196,613-byte test content, 4 chunks, metadata "
                             "{\"name\":\"notes.txt\"}, signed by Alice", m),
                            ("manifest_empty", "an empty attachment: root = MTH([]), no metadata", empty)]:
        assert J.check_manifest(man) is None
        cases.append(case(name, desc, manifest=man, signed_message=J.MANIFEST_LABEL + J.manifest_fields(man),
                          encoded=J.manifest(man)))
    for check, change in [("size", {"size": J.MAX_ATTACHMENT_SIZE + 1, "chunk_count": 1601}),
                          ("chunk_size", {"chunk_size": 65_535}), ("chunk_count", {"chunk_count": 3}),
                          ("root", {"id": empty["id"], "size": 0, "chunk_count": 0}),
                          ("metadata_length", {"metadata": b" " * 16_385}), ("signature", {"metadata": b"{}"})]:
        bad = {**m, **change}
        if check not in ("signature",):
            bad["signature"] = J.manifest_signature(author_seed, bad)
        assert J.check_manifest(bad) == check, check
        fields = J.manifest_fields(bad)
        if check == "metadata_length":
            # Refused before the metadata is read: the bytes up to the length field are enough.
            cases.append(case("manifest_invalid_metadata_length", "metadata length 16,385: refused before "
                              "the metadata is read (encoded stops after the length field)",
                              manifest={**bad, "metadata": None, "metadata_length": 16_385,
                                        "signature": None},
                              encoded=fields[:16 + 8 + 4 + 4 + 32 + 32 + 4], error=check))
            continue
        cases.append(case(f"manifest_invalid_{check}", "refused by the receiver's check of " + check +
                          " (a protocol violation); checks run in section 9.2's order",
                          manifest=bad, encoded=fields + bad["signature"], error=check))

    # Every message.
    aid = m["id"]
    msgs = [
        ("announce", {"type": "announce", "manifest": m}),
        ("have_all", {"type": "have", "id": aid, "ranges": [{"start": 0, "length": 4}]}),
        ("have_two_ranges", {"type": "have", "id": aid, "ranges": [{"start": 0, "length": 1},
                                                                   {"start": 2, "length": 2}]}),
        ("have_none", {"type": "have", "id": aid, "ranges": []}),
        ("leaves_request", {"type": "leaves_request", "id": aid, "first": 0, "count": 4}),
        ("leaves", {"type": "leaves", "id": aid, "first": 0, "count": 4, "leaves": leaves}),
        ("leaves_request_second_piece", {"type": "leaves_request", "id": aid, "first": 512, "count": 512}),
        ("chunk_request", {"type": "chunk_request", "id": aid, "index": 3}),
        ("chunk", {"type": "chunk", "id": aid, "index": 3, "data": J.chunks(content)[3]}),
        ("chunk_missing", {"type": "chunk_missing", "id": aid, "index": 1599}),
        ("remove", {"type": "remove", "id": aid}),
    ]
    for name, msg in msgs:
        b = J.encode_journal(msg)
        assert J.decode_journal(b) == msg, name
        cases.append(case(name, f"{msg['type'].upper()} (type {J.JOURNAL_CODES[msg['type']]})",
                          channel=J.CHUNK_CHANNEL if msg["type"] == "chunk" else J.JOURNAL_CHANNEL,
                          message=msg, encoded=b))
    big = {"type": "chunk", "id": aid, "index": 0, "data": J.chunks(content)[0]}
    cases.append(case("chunk_full_length", "a full 65,536-byte chunk: the encoding's first 24 bytes and "
                      "its BLAKE2b-256 (the data is chunk 0 of the test content)", channel=200,
                      message={**big, "data": None}, data_length=65_536,
                      encoded_prefix=J.encode_journal(big)[:24], encoded_length=len(J.encode_journal(big)),
                      encoded_blake2b=J.H(J.encode_journal(big))))
    cases.append(case("unknown_type", "type 9: ignored", channel=2, encoded=b"\x09" + aid, ignored=True))
    cases = [{k: v for k, v in c.items() if v is not None} for c in cases]
    return vector_file("Journal (section 9): leaves, Merkle roots, inclusion proofs, manifests and every "
                       "journal message", cases, author=public(ALICE))


# --- relay.json -------------------------------------------------------------------------------

def relay_vectors():
    relay_private = fixed("relay static private")
    relay_public = crypto.x25519_public(relay_private)
    C, c = ALICE["static_key"], ALICE["static_private"]
    k = relay.relay_key(c, relay_public)
    assert k == relay.relay_key(relay_private, C)
    secret = fixed("relay token secret")
    clock = 1_000_000   # the relay's clock in seconds: window 16,666
    tok = relay.token(secret, ALICE_ADDR["family"], ALICE_ADDR["ip"], ALICE_ADDR["port"], clock)
    inner = bytes.fromhex(HANDSHAKE["initiation"].hex())
    send = relay.send(BOB["static_key"], inner)
    cases = [
        case("relay_key", "K = BLAKE2b-256(key = X25519(c, R) = X25519(r, C), \"huddle relay v1\")",
             client_static_private=c, client_static_key=C, relay_static_private=relay_private,
             relay_static_key=relay_public, shared_secret=crypto.x25519(c, relay_public), key=k),
        case("token", "BLAKE2b-128(key = relay secret, canonical(address) || window u64 LE), window = "
             "clock / 60 s", relay_secret=secret, address=ALICE_ADDR, clock_seconds=clock,
             window=clock // 60, input=relay.canonical_address(ALICE_ADDR["family"], ALICE_ADDR["ip"],
                                                               ALICE_ADDR["port"]) + wire.u64le(clock // 60),
             token=tok),
        case("register_initial", "RELAY_REGISTER with zero token and MAC", client_static_key=C,
             encoded=relay.register(C)),
        case("challenge", "RELAY_CHALLENGE: the relay's key and a token for the sender's address",
             relay_static_key=relay_public, token=tok, encoded=relay.challenge(relay_public, tok)),
        case("register", "RELAY_REGISTER with the token and MAC = BLAKE2b-128(K, bytes 0..<52)",
             client_static_key=C, token=tok, key=k, encoded=relay.register(C, tok, k)),
        case("registered_v4", "RELAY_REGISTERED: the observed IPv4 address (section 3.9 encoding, port "
             "big-endian) zero-padded to 19 bytes, MAC over bytes 0..<23", address=ALICE_ADDR, key=k,
             encoded=relay.registered(ALICE_ADDR["family"], ALICE_ADDR["ip"], ALICE_ADDR["port"], k)),
        case("registered_v6", "an IPv6 observed address fills the 19 bytes", address=CAROL_ADDR, key=k,
             encoded=relay.registered(CAROL_ADDR["family"], CAROL_ADDR["ip"], CAROL_ADDR["port"], k)),
        case("send", "RELAY_SEND wrapping member_handshake's initiation to Bob (36 + 152 bytes)",
             destination_static_key=BOB["static_key"], inner_packet=inner, encoded=send),
        case("deliver", "what the relay forwards: type 9 and the sender's key, the inner packet unchanged",
             source_static_key=C, inner_packet=inner, encoded=relay.deliver(send, C)),
    ]
    for cs in cases:
        if "encoded" in cs:
            wire.classify(cs["encoded"])
    return vector_file("Relay protocol (section 10)", cases)


# --- main -------------------------------------------------------------------------------------

HANDSHAKE = {}


def build():
    handshake, hs, cookie_reply, refusal = handshake_vectors()
    HANDSHAKE.update(hs)
    files = {
        "varint.json": varint_vectors(),
        "frames.json": frame_vectors(),
        "packets.json": packet_vectors(hs, cookie_reply, refusal),
        "handshake.json": handshake,
        "kdf.json": kdf_vectors(),
        "tickets.json": ticket_vectors(),
        "control.json": control_vectors(),
        "envelopes.json": envelope_vectors(),
        "journal.json": journal_vectors(),
        "relay.json": relay_vectors(),
        "cli.json": cli_vectors(),
    }
    return {name: json.dumps(doc, indent=1, ensure_ascii=False) + "\n" for name, doc in files.items()}


def main():
    check = "--check" in sys.argv[1:]
    files = build()
    stale = []
    for name, text in files.items():
        path = OUT / name
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if check:
        if stale:
            print("docs/vectors is out of date: " + ", ".join(stale)
                  + " (run python3 scripts/vectors/generate.py)", file=sys.stderr)
            return 1
        print(f"docs/vectors: {len(files)} files up to date")
    else:
        for name, text in files.items():
            print(f"{name}: {len(json.loads(text)['cases'])} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
