"""The conformance harness's outside peer and the node under test, built on the reference implementation.

Everything about bytes on the wire comes from scripts/vectors (ref_wire, ref_crypto, ref_session), written from
docs/PROTOCOL.md; this module only adds sockets, timing and the bookkeeping a live peer needs (packet numbers,
ACKs, message reassembly).
"""

import json
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors"))

import ref_crypto as crypto  # noqa: E402
import ref_session as session  # noqa: E402
import ref_wire as wire  # noqa: E402

SILENCE = 0.8              # seconds without an answer that count as "dropped silently"
ANSWER = 3.0               # seconds an answer may take
CONTROL_CHANNEL = 1        # §8.2
MESSENGER_CHANNEL = 16     # §8.3


def now_timestamp(offset_seconds=0):
    """(seconds, nanoseconds) of the wall clock, shifted by `offset_seconds`."""
    t = time.time_ns() + int(offset_seconds * 1e9)
    return t // 1_000_000_000, t % 1_000_000_000


def ack_frame(received):
    """An ACK frame (§3.3) for a set of received packet numbers: at most 32 ranges, newest first."""
    numbers = sorted(received, reverse=True)
    ranges = []
    for n in numbers:
        if ranges and ranges[-1][0] == n + 1:
            ranges[-1][0] = n
        else:
            ranges.append([n, n])
    ranges = ranges[:wire.MAX_ACK_RANGES]
    (lo, hi), rest = ranges[0], ranges[1:]
    gaps, prev_lo = [], lo
    for lo_i, hi_i in rest:
        gaps.append({"gap": prev_lo - hi_i - 2, "length": hi_i - lo_i})
        prev_lo = lo_i
    return {"type": "ack", "largest": hi, "delay": 0, "first_range_length": hi - lo, "ranges": gaps}


def ack_or_ping(peer):
    """An ACK of everything `peer` received, or a PING when it received nothing yet."""
    return ack_frame(peer.received_pns) if peer.received_pns else {"type": "ping"}


class Host:
    """The node under test: `huddle host --json --listen 127.0.0.1:0 --stay`, its events and its stdin."""

    def __init__(self, path, workdir, extra_args=(), log=None):
        self.events, self.stderr_lines = [], []
        self._lock = threading.Lock()
        self.log = log
        args = [path, "host", "--json", "--listen", "127.0.0.1:0", "--stay",
                "--identity", os.path.join(workdir, "identity"), "--name", "conformance-host", *extra_args]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=workdir, start_new_session=True)
        self._lines = queue.Queue()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "unparsable", "line": line}
            with self._lock:
                self.events.append(event)
            if self.log:
                self.log(f"host event: {line}")

    def _read_stderr(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            with self._lock:
                self.stderr_lines.append(line)
            if self.log:
                self.log(f"host stderr: {line}")

    def snapshot(self):
        with self._lock:
            return list(self.events)

    def find(self, predicate, since=0):
        """The first event at or after index `since` matching `predicate`, or None."""
        for event in self.snapshot()[since:]:
            if predicate(event):
                return event
        return None

    def type_line(self, text):
        self.proc.stdin.write((text + "\n").encode("utf-8"))
        self.proc.stdin.flush()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, grace=5.0):
        """SIGTERM (the node leaves gracefully), then SIGKILL after `grace` seconds: only our own process."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                os.kill(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=grace)
        return self.proc.returncode


class Net:
    """Every peer's socket, pumped together so the main member keeps acknowledging while another case waits."""

    def __init__(self):
        self.peers = []

    def add(self, peer):
        self.peers.append(peer)
        return peer

    def remove(self, peer):
        if peer in self.peers:
            self.peers.remove(peer)

    def pump(self, timeout):
        socks = {p.sock: p for p in self.peers if p.sock is not None}
        if not socks:
            time.sleep(timeout)
            return
        ready, _, _ = select.select(list(socks), [], [], timeout)
        for s in ready:
            peer = socks[s]
            while True:
                try:
                    data, source = s.recvfrom(65535)
                except BlockingIOError:
                    break
                except OSError:      # e.g. ICMP port unreachable reported on the socket
                    break
                peer.on_datagram(data, source)
        for p in self.peers:
            p.flush_acks()

    def wait(self, predicate, timeout):
        """Pumps until `predicate()` is truthy or `timeout` seconds pass; returns the predicate's last value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                return value
            self.pump(min(left, 0.02))

    def idle(self, seconds):
        self.wait(lambda: False, seconds)


class Peer:
    """A participant written from the reference implementation: one UDP socket, one connection to the host."""

    def __init__(self, net, name, host_static, host_address, creds, log=None):
        self.net, self.name, self.log = net, name, log
        self.static = os.urandom(32)
        self.static_public = crypto.x25519_public(self.static)
        self.signing_seed = os.urandom(32)
        self.signing_key, _ = crypto.ed25519_keypair(self.signing_seed)
        self.host_static, self.host_address = host_static, host_address
        self.creds = creds                    # {psk, mac_secret, admission_id}: the invitation's, from the ticket
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()
        self.datagrams = []                   # every datagram received: (time, bytes, classification)
        self.reset_connection()
        net.add(self)

    # --- Connection state ------------------------------------------------------------------

    def reset_connection(self):
        self.local_index = self.remote_index = None
        self.receive_keys = {}                # local index -> receive key
        self.k_send = self.k_recv = None
        self.next_pn = 0
        self.received_pns, self.ack_pending = set(), False
        self.acked = set()                    # our packet numbers the host acknowledged
        self.frames = []                      # every frame received: (time, frame dict)
        self.closes = []                      # CLOSE frames received
        self.path_responses = []              # PATH_RESPONSE data received
        self.fragments = {}                   # (channel, sequence) -> {total, parts}
        self.messages = []                    # complete messages: (time, channel, sequence, bytes)
        self.send_sequence = {}               # channel -> next sequence
        self.pending_initiations = {}         # sender index -> (symmetric state, ephemeral private)
        self.responses = []                   # (time, bytes) of every handshake response
        self.cookie_replies = []
        self.refusals = []                    # (time, prologue named or None, outcome) of every HANDSHAKE_REFUSED
        self.initiation_mac1 = {}             # sender index -> the mac1 our initiation carried (a refusal's binding)
        self.initiations_received = []       # (time, bytes): the host dialling us
        self.undecryptable = []
        self.keepalives = []                  # when each keepalive PING (§7.10) arrived
        self.sent_times = []                  # when each datagram was sent
        self.sent_sizes = []                  # and its length

    def close_socket(self):
        self.net.remove(self)
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def send_raw(self, data, address=None):
        self.sent_times.append(time.monotonic())
        self.sent_sizes.append(len(data))
        self.sock.sendto(data, address or self.host_address)

    # --- Handshake (§7.6) ------------------------------------------------------------------

    def make_initiation(self, timestamp=None, resumption=0, prologue=crypto.PROLOGUE, creds=None,
                        nanoseconds=None):
        """A fresh initiation (new ephemeral key and sender index); returns (bytes, sender index)."""
        creds = creds or self.creds
        seconds, nanos = timestamp or now_timestamp()
        if nanoseconds is not None:
            nanos = nanoseconds
        payload = crypto.tai64n(seconds, nanos) + wire.u32le(resumption)
        index = struct.unpack("<I", os.urandom(4))[0] or 1
        e = os.urandom(32)
        ss, e_pub, enc_static, enc_payload = crypto.write_message1(self.static, e, self.host_static, payload,
                                                                    prologue)
        body = wire.u8(wire.INITIATION) + wire.RESERVED3 + wire.u32le(index) + e_pub + enc_static + enc_payload
        packet = crypto.add_macs(body, crypto.mac1_key(creds["mac_secret"], self.host_static))
        self.pending_initiations[index] = (ss, e, creds, (seconds, nanos))
        self.initiation_mac1[index] = packet[120:136]
        return packet, index

    def _on_refusal(self, now, data):
        """§2.5: opens a HANDSHAKE_REFUSED under the host's cookie key for the credentials our initiation used."""
        f = wire.parse_refusal(data)
        pending = self.pending_initiations.get(f["receiver_index"])
        if pending is None:
            self.refusals.append((now, None, "for an unknown index"))
            return "refusal for an unknown index"
        key = crypto.cookie_key(pending[2]["mac_secret"], self.host_static)
        try:
            plaintext = crypto.open_refusal(key, f["nonce"], f["encrypted_prologue"],
                                            wire.refusal_header(f["receiver_index"]),
                                            self.initiation_mac1[f["receiver_index"]])
        except Exception:
            self.refusals.append((now, None, "does not open"))
            return "refusal that does not open under the cookie key"
        prologue = wire.refusal_prologue(plaintext)
        self.refusals.append((now, prologue, "opened"))
        return f"refusal naming {prologue!r}" if prologue else "refusal with a malformed plaintext"

    def _on_response(self, data):
        f = wire.parse_response(data)
        pending = self.pending_initiations.get(f["receiver_index"])
        if pending is None:
            return "response for an unknown index"
        ss, e, creds, _ = pending
        expected_mac1 = crypto.mac(crypto.mac1_key(creds["mac_secret"], self.static_public), data[:60])
        if expected_mac1 != f["mac1"]:
            return "response with a bad mac1"
        ss_copy = crypto.SymmetricState()
        ss_copy.h, ss_copy.ck, ss_copy.k, ss_copy.n = ss.h, ss.ck, ss.k, ss.n
        try:
            crypto.read_message2(ss_copy, self.static, e, f["ephemeral"], creds["psk"], f["encrypted_nothing"])
        except Exception:
            return "response that does not authenticate (Noise message 2)"
        k_i2r, k_r2i = ss_copy.split()
        if self.k_recv is not None and self.local_index != f["receiver_index"]:
            self.receive_keys[self.local_index] = self.k_recv      # the previous keypair still receives (§7.7)
        self.local_index, self.remote_index = f["receiver_index"], f["sender_index"]
        self.k_send, self.k_recv = k_i2r, k_r2i
        self.receive_keys[self.local_index] = k_r2i
        return "response authenticated, keys split"

    def handshake(self, timeout=3.0):
        """Initiation -> response; returns (ok, description)."""
        packet, index = self.make_initiation()
        self.send_raw(packet)
        got = self.net.wait(lambda: self.local_index == index and self.k_send is not None, timeout)
        return bool(got), (f"response authenticated, keys split (host index {self.remote_index})" if got
                           else self.describe_received(since=0) or "no response")

    # --- Transport (§7.2, §3) ---------------------------------------------------------------

    def seal(self, frames, pn=None, receiver_index=None, flags=0, key=None, pad_to=None):
        """A transport packet holding `frames` (dicts or raw bytes); uses and advances the packet number."""
        if pn is None:
            pn = self.next_pn
            self.next_pn += 1
        plaintext = frames if isinstance(frames, bytes) else wire.encode_frames(frames)
        if pad_to is not None:
            plaintext += b"\x00" * (pad_to - 32 - len(plaintext))
        return crypto.seal_transport(key or self.k_send, self.remote_index if receiver_index is None
                                     else receiver_index, pn, plaintext, flags), pn

    def send_frames(self, frames, **kwargs):
        packet, pn = self.seal(frames, **kwargs)
        self.send_raw(packet)
        return packet, pn

    def message_frames(self, channel, data):
        """MESSAGE fragments (§3.4) for one reliable message on `channel`, each within a 1200-byte packet."""
        sequence = self.send_sequence.get(channel, 0)
        self.send_sequence[channel] = sequence + 1
        frames, offset, step = [], 0, 1000
        while True:
            chunk = data[offset:offset + step]
            frames.append({"type": "message", "channel": channel, "sequence": sequence, "offset": offset,
                           "total_length": len(data), "data": chunk})
            offset += len(chunk)
            if offset >= len(data):
                return frames, sequence

    def send_message(self, channel, data):
        """Sends one reliable message; returns the packet numbers used."""
        frames, _ = self.message_frames(channel, data)
        return [self.send_frames([f])[1] for f in frames]

    def on_datagram(self, data, source):
        now = time.monotonic()
        try:
            kind = wire.classify(data)
        except wire.WireError as error:
            self.datagrams.append((now, data, f"unclassifiable ({error.kind})"))
            return
        label = {1: "initiation", 2: "response", 3: "cookie reply", 4: "transport",
                 wire.HANDSHAKE_REFUSAL: "handshake refusal"}.get(kind, f"type {kind}")
        self.datagrams.append((now, data, label))
        if kind == wire.RESPONSE:
            self.responses.append((now, data))
            outcome = self._on_response(data)
            self.datagrams[-1] = (now, data, f"response: {outcome}")
        elif kind == wire.COOKIE_REPLY:
            self.cookie_replies.append((now, data))
        elif kind == wire.HANDSHAKE_REFUSAL:
            self.datagrams[-1] = (now, data, self._on_refusal(now, data))
        elif kind == wire.INITIATION:
            self.initiations_received.append((now, data))
        elif kind == wire.TRANSPORT:
            self._on_transport(now, data)

    def _on_transport(self, now, data):
        receiver = struct.unpack_from("<I", data, 4)[0]
        pn = struct.unpack_from("<Q", data, 8)[0]
        key = self.receive_keys.get(receiver)
        if key is None:
            self.undecryptable.append((now, data))
            return
        try:
            plaintext = crypto.open_transport(key, data)
        except Exception:
            self.undecryptable.append((now, data))
            return
        try:
            frames = wire.decode_frames(plaintext)
        except wire.WireError as error:
            self.frames.append((now, {"type": "undecodable", "error": error.kind}))
            return
        self.received_pns.add(pn)
        types = {f["type"] for f in frames}
        if "ping" in types and types <= {"ping", "ack", "padding"} and self.datagrams and self.datagrams[-1][1] is data:
            # A keepalive (§7.10: a PING after a second of silence) answers nothing: silence checks ignore it.
            self.datagrams[-1] = (now, data, "keepalive")
            self.keepalives.append(now)
        for f in frames:
            self.frames.append((now, f))
            t = f["type"]
            if t not in ("ack", "padding", "close"):
                self.ack_pending = True
            if t == "ack":
                for lo, hi in wire.ack_ranges(f["largest"], f["first_range_length"],
                                              [(g["gap"], g["length"]) for g in f["ranges"]]):
                    if hi - lo < 100_000:
                        self.acked.update(range(lo, hi + 1))
                    else:   # only the numbers we used matter
                        self.acked.update(n for n in range(self.next_pn) if lo <= n <= hi)
            elif t == "close":
                self.closes.append((now, f))
            elif t == "path_response":
                self.path_responses.append((now, f["data"]))
            elif t == "message":
                self._on_fragment(now, f)

    def _on_fragment(self, now, f):
        key = (f["channel"], f["sequence"])
        if key in [(c, s) for _, c, s, _ in self.messages]:
            return
        entry = self.fragments.setdefault(key, {"total": f["total_length"], "parts": {}})
        entry["parts"][f["offset"]] = f["data"]
        buf, offset = b"", 0
        while offset in entry["parts"] and offset < entry["total"]:
            part = entry["parts"][offset]
            if not part:
                break
            buf += part
            offset += len(part)
        if offset >= entry["total"]:
            del self.fragments[key]
            self.messages.append((now, f["channel"], f["sequence"], buf[:entry["total"]]))

    def flush_acks(self):
        """Acknowledges what arrived (an ACK-only packet, not ack-eliciting), as §7.8 asks of a receiver."""
        if self.ack_pending and self.k_send is not None and self.sock is not None and not self.closes:
            self.ack_pending = False
            self.send_frames([ack_frame(self.received_pns)])

    # --- Observation helpers -----------------------------------------------------------------

    def control_messages(self, since=0.0):
        out = []
        for t, channel, _, data in self.messages:
            if channel == CONTROL_CHANNEL and t >= since:
                try:
                    out.append(session.decode_control(data))
                except Exception as error:        # unknown types are ignored by receivers (§8.2)
                    out.append({"type": f"undecodable control ({error!r})"})
        return out

    def chat_lines(self, since=0.0):
        out = []
        for t, channel, _, data in self.messages:
            if channel == MESSENGER_CHANNEL and t >= since:
                env = session.read_envelope(data)
                if env["kind"] == session.KIND_CODABLE and env["type_name"] == session.CHAT_LINE_TYPE:
                    out.append(json.loads(env["payload"]).get("text"))
        return out

    def close_since(self, since):
        for t, f in self.closes:
            if t >= since:
                return f
        return None

    def path_response_for(self, data):
        return any(d == data for _, d in self.path_responses)

    def describe_received(self, since):
        """A short classification of what arrived since `since` (monotonic seconds)."""
        kinds = {}
        for t, _, label in self.datagrams:
            if t >= since and label != "keepalive":
                kinds[label] = kinds.get(label, 0) + 1
        return ", ".join(f"{n}x {k}" for k, n in kinds.items())

    def frames_since(self, since, kinds=None):
        return [f for t, f in self.frames if t >= since and (kinds is None or f["type"] in kinds)]

    # --- Membership (§8.2) -------------------------------------------------------------------

    def record(self, epoch=0):
        return {"signing_key": self.signing_key, "static_key": self.static_public,
                "binding_signature": session.binding_signature(self.signing_seed, self.static_public),
                "epoch": epoch, "name": self.name, "addresses": []}
