"""Cases 5-7, 9, 14 and the transport cases of 10: protocol violations on a connection (CLOSE to that peer
only) and packets the replay window, AEAD or classification must drop (docs/PROTOCOL.md §2-§7)."""

import os
import socket
import time

from peer import ANSWER, CONTROL_CHANNEL, MESSENGER_CHANNEL, SILENCE, crypto, wire


class TransportCases:
    """Mixed into conformance.Harness, whose helpers (row, fresh, probe, alive, ...) these cases use."""

    # --- Cases 5, 6, 10: protocol violations on a connection -------------------------------------

    def violation(self, case, sent, expected, plaintext, control=None):
        p = self.fresh("violator")
        ok, text = p.handshake(ANSWER)
        if not ok:
            return self.row(case, sent, expected, f"handshake failed: {text}", False)
        control_text, control_ok = "", True
        if control:
            c_sent, c_plain = control
            started = time.monotonic()
            packet, pn = p.seal(c_plain)
            p.send_raw(packet)
            acked = self.net.wait(lambda: pn in p.acked, ANSWER)
            self.net.idle(0.3)
            closed = p.close_since(started)
            control_ok = bool(acked) and closed is None
            control_text = f"{c_sent}: {'acked' if acked else 'not acked'}, {self.describe_close(closed)}; "
        started = time.monotonic()
        events_before = len(self.host.snapshot())
        packet, pn = p.seal(plaintext)
        p.send_raw(packet)
        close = self.net.wait(lambda: p.close_since(started), ANSWER)
        main_ok, main_text = self.alive(self.main)
        main_left = self.host.find(lambda e: e.get("event") == "participant-left"
                                   and e.get("name") == self.main.name, events_before)
        ok = (control_ok and close is not None and close["code"] == 1 and main_ok and not main_left)
        self.row(case, sent, expected, f"{control_text}{self.describe_close(close)}; main member: {main_text}"
                 + ("; main member reported as left!" if main_left else ""), ok)
        p.close_socket()

    def case_violations(self):
        ping = wire.varint(1)
        for code in (0x0C, 0x20):
            self.violation(f"5 unknown frame type 0x{code:02X}", f"PING + frame type 0x{code:02X} in an "
                           "authenticated packet", "CLOSE(1 protocolViolation) to that peer only (§3, §7.10); "
                           "other connections unaffected", ping + wire.varint(code) + b"\x00" * 8)

        def message(seq, total, n=100):
            return wire.encode_frame({"type": "message", "channel": MESSENGER_CHANNEL, "sequence": seq,
                                      "offset": 0, "total_length": total, "data": b"x" * n})
        self.violation("6 oversized message", "MESSAGE total length 262,145 (seq 1), after one of exactly "
                       "262,144 (seq 0, first fragment)",
                       "262,144 accepted; 262,145 is lengthOutOfRange(messageTotalLength): CLOSE(1 "
                       "protocolViolation) (§3.4, §6)", message(1, wire.MAX_MESSAGE_SIZE + 1),
                       control=("total 262,144", message(0, wire.MAX_MESSAGE_SIZE)))
        bad_channel = (wire.varint(3) + wire.varint(256) + wire.varint(0) + wire.varint(0) + wire.varint(1)
                       + wire.varint(1) + b"x")
        self.violation("10 MESSAGE on channel 256", "MESSAGE frame with channel 256",
                       "valueOutOfRange (channel < 256): CLOSE(1 protocolViolation) (§3.4)", bad_channel)

    # --- Cases 7, 9, 10: packets the replay window or AEAD must drop, on the main connection ---------

    def dropped_then_alive(self, case, sent, expected, packet, pn, data, after=None):
        a = self.main
        started = time.monotonic()
        a.send_raw(packet)
        echoed, acked = self.accepted(a, pn, data, SILENCE)
        extra_ok, extra_text = (after() if after else (True, ""))
        ok, alive = self.alive(a)
        if after is None:
            # The node handles datagrams in order: once the later probe is answered, a (slow) answer to this one
            # would have arrived too.
            echoed, acked = a.path_response_for(data), pn in a.acked
        dropped = not echoed and not acked
        self.row(case, sent, expected,
                 ("dropped (no ACK, no PATH_RESPONSE)" if dropped else
                  f"ACCEPTED (acked={acked}, echoed={echoed}); received: {a.describe_received(started)}")
                 + (f"; {extra_text}" if extra_text else "") + f"; {alive}", dropped and ok and extra_ok)

    def case_replay_window(self):
        a = self.main
        # 7a: a byte-identical replay of an accepted packet.
        packet, pn, data = self.probe(a)
        first = self.accepted(a, pn, data, ANSWER)
        count = sum(1 for _, d in a.path_responses if d == data)
        started = time.monotonic()
        a.send_raw(packet)
        self.net.idle(SILENCE)
        ok, alive = self.alive(a)
        again = sum(1 for _, d in a.path_responses if d == data) - count
        self.row("7 replayed transport packet", f"a PING + PATH_CHALLENGE packet (pn {pn}), then the same bytes "
                 "again", "the copy is dropped by the replay window without an answer (§7.3); connection works",
                 f"original: acked={first[1]} echoed={first[0]}; copy: "
                 + ("dropped" if not again else f"ANSWERED again ({a.describe_received(started)})") + f"; {alive}",
                 all(first) and not again and ok)
        # 7b: jump ahead (allowed), then a never-used number far below the window, and one just inside it.
        high = a.next_pn + 10_000
        a.next_pn = high + 1
        _, pn_high, d_high = self.probe(a, pn=high)
        jumped = self.accepted(a, pn_high, d_high, ANSWER)
        inside_pn = high - 100
        packet, _, d_in = self.probe(a, pn=inside_pn, send=False)
        a.send_raw(packet)
        inside = self.accepted(a, inside_pn, d_in, ANSWER)
        far = high - 9_000
        packet, _, d_far = self.probe(a, pn=far, send=False)
        self.dropped_then_alive(
            "7 packet number below the window", f"pn {high} (a jump ahead), pn {inside_pn} (100 below, never "
            f"used), then pn {far} (9,000 below: outside the 8,128-packet window, never used)",
            "jump and in-window packet accepted; the one below the window dropped silently (§7.3)",
            packet, far, d_far,
            after=lambda: (any(jumped) and any(inside),
                           f"jump ahead: acked={jumped[1]} echoed={jumped[0]}; 100 below: acked={inside[1]} "
                           f"echoed={inside[0]}"))
        limit = 1 << 62
        packet, _, data = self.probe(a, pn=limit, send=False)
        self.dropped_then_alive("7 packet number 2^62", f"a valid packet numbered 2^62",
                                "dropped without cryptographic work (limit 2^62, §7.2, §7.3)", packet, limit, data)

    def case_corrupt(self):
        a = self.main
        packet, pn, data = self.probe(a, send=False)
        bad = packet[:-1] + bytes([packet[-1] ^ 0x80])

        def resend_intact():
            a.send_raw(packet)
            echoed, acked = self.accepted(a, pn, data, ANSWER)
            return echoed and acked, f"the intact packet with the same pn afterwards: acked={acked} echoed={echoed}"
        self.dropped_then_alive("9 corrupted tag", f"PING + PATH_CHALLENGE packet (pn {pn}) with one tag bit "
                                "flipped, then the intact packet", "dropped silently without moving the replay "
                                "window (§7.3, §7.11): the intact copy is still accepted", bad, pn, data,
                                after=resend_intact)
        # A header bit is covered too: the header is the associated data (and the packet number the nonce).
        packet, pn, data = self.probe(a, send=False)
        flipped = bytearray(packet)
        flipped[12] ^= 0x01           # the packet number's fifth byte
        self.dropped_then_alive("9 header changed in flight", f"a packet whose packet-number field was altered "
                                "after sealing", "fails AEAD (the header is associated data, §2.4): dropped silently",
                                bytes(flipped), pn ^ (1 << 32), data)

    def case_transport_extras(self):
        a = self.main
        packet, pn, data = self.probe(a, receiver_index=(a.remote_index ^ 0x5A5A5A5A) or 1, send=False)
        self.dropped_then_alive("10 wrong receiver index", "a packet sealed under the right key but sent to an "
                                "index the node never issued", "dropped silently (§7.11)", packet, pn, data)
        # Reserved header bytes (2-3 of type 4) must be zero; sealed with the altered header as associated data so
        # only the classification check can refuse it.
        pn = a.next_pn
        a.next_pn += 1
        data = os.urandom(8)
        header = bytearray(wire.transport_header(a.remote_index, pn))
        header[2] = 1
        plaintext = wire.encode_frames([{"type": "ping"}, {"type": "path_challenge", "data": data}])
        packet = bytes(header) + crypto.chachapoly_seal(a.k_send, pn, bytes(header), plaintext)
        self.dropped_then_alive("10 non-zero reserved byte", "a transport packet with header byte 2 = 1 (validly "
                                "sealed with that header)", "nonZeroReserved: dropped silently (§1, §2)",
                                packet, pn, data)
        packet, pn, data = self.probe(a, pad_to=wire.MAX_DATAGRAM_SIZE + 1, send=False)
        self.dropped_then_alive("10 datagram of 8,973 bytes", "a validly sealed transport packet of 8,973 bytes",
                                "over maxDatagramSize (8,972): dropped silently (§2, §5)", packet, pn, data)
        packet, pn, data = self.probe(a, pad_to=wire.MAX_DATAGRAM_SIZE)
        echoed, acked = self.accepted(a, pn, data, ANSWER)
        self.row("10 datagram of 8,972 bytes", "a validly sealed transport packet of exactly 8,972 bytes",
                 "accepted: a receiver accepts every datagram up to 8,972 (§5, §7.13)",
                 f"acked={acked} echoed={echoed}", echoed and acked)
        started = time.monotonic()
        a.send_raw(bytes([10, 0, 0, 0]) + os.urandom(60))
        self.net.idle(SILENCE)
        replies = [label for t, _, label in a.datagrams if t >= started and label != "transport"]
        ok, alive = self.alive(a)
        self.row("10 unknown packet type", "a 64-byte datagram of type 10", "unknownPacketType: dropped silently "
                 "(§2, §7.11)", f"{', '.join(replies) or 'no reply'} (only the connection's own traffic); {alive}",
                 ok and not replies)
        # An unknown control message type on channel 1 is ignored (§8.2), not a violation.
        started = time.monotonic()
        pns = a.send_message(CONTROL_CHANNEL, bytes([0xEE]) + b"future control message")
        acked = self.net.wait(lambda: all(pn in a.acked for pn in pns), ANSWER)
        self.net.idle(0.3)
        close = a.close_since(started)
        ok, alive = self.alive(a)
        self.row("10 unknown control message", "a control message of type 0xEE on channel 1 (main member)",
                 "ignored (newer peers may add types, §8.2): acknowledged, no CLOSE",
                 f"acked={bool(acked)}, {self.describe_close(close)}; {alive}", bool(acked) and not close and ok)
        # A messenger envelope of a version this node cannot read: acknowledged (it arrived), dropped unread, and the
        # drop reported to the application (the CLI's messages-dropped event), never silent.
        since = len(self.host.snapshot())
        pns = a.send_message(MESSENGER_CHANNEL, bytes([2, 0, 4]) + b"next" + b"{}")
        acked = self.net.wait(lambda: all(pn in a.acked for pn in pns), ANSWER)
        event = self.net.wait(lambda: self.host.find(
            lambda e: e.get("event") == "messages-dropped" and e.get("reason") == "undecodable", since), ANSWER)
        close = a.close_since(started)
        ok, alive = self.alive(a)
        self.row("10 envelope version 2", "a messenger envelope (channel 16) with version byte 2",
                 "acknowledged, dropped unread, reported to the application (messages-dropped, reason undecodable; "
                 "§8.3, Evolution); no CLOSE", f"acked={bool(acked)}, event {event}, {self.describe_close(close)}; "
                 f"{alive}", bool(acked) and bool(event) and event.get("count") == 1 and not close and ok)

    # --- Case 7: keepalives (§7.10) -------------------------------------------------------------

    def case_keepalive(self):
        """A quiet connection: the node, responder of the keys this peer set up, sends a keepalive PING with
        IMMEDIATE_ACK 1.5 s after it last heard from us; acknowledging it buys another 1.5 s."""
        p = self.fresh("quiet")
        ok, text = p.handshake(ANSWER)
        if not ok:
            return self.row("7 keepalive", "-", "-", f"handshake failed: {text}", False)
        ok, alive = self.alive(p)
        self.net.idle(0.3)               # the probe's acknowledgement and anything the join sends settle first
        quiet_from = time.monotonic()
        before = len(p.keepalives)
        self.net.wait(lambda: len(p.keepalives) >= before + 2, 4.5)
        times = p.keepalives[before:before + 2]
        flags = [data[1] for t, data, label in p.datagrams if label == "keepalive" and t >= quiet_from][:2]
        # Our last packet to the node is the acknowledgement of whatever it sent last; measure from our sends.
        gaps = []
        for t in times:
            sent = [s for s in p.sent_times if s < t]
            gaps.append(t - (sent[-1] if sent else quiet_from))
        ok_gaps = len(gaps) == 2 and all(1.4 <= g <= 1.9 for g in gaps)
        ok_flags = len(flags) == 2 and all(f & 0x01 for f in flags)
        self.row("7 keepalive", "a quiet connection (this peer initiated it), every node packet acknowledged",
                 "a PING with IMMEDIATE_ACK 1.5 s after the node last heard from the peer, again 1.5 s after our "
                 "acknowledgement (§7.10)",
                 f"keepalives {len(times)}, {', '.join(f'{g:.2f} s' for g in gaps)} after our last packet, "
                 f"flags {[hex(f) for f in flags]}; before: {alive}", ok and ok_gaps and ok_flags)
        p.close_socket()


    # --- Case 14: routes (§7.12) ----------------------------------------------------------------

    def case_observed_address(self):
        """A connection established on a direct route sends OBSERVED_ADDRESS with the address its packets came from."""
        p = self.fresh("observed")
        ok, text = p.handshake(ANSWER)
        if not ok:
            return self.row("14 observed address", "-", "-", f"handshake failed: {text}", False)
        self.alive(p)
        seen = self.net.wait(lambda: [f["address"] for _, f in p.frames if f["type"] == "observed_address"], ANSWER)
        expected = (4, bytes([127, 0, 0, 1]), p.address[1])
        named = [(family, ".".join(str(b) for b in ip), port) for family, ip, port in (seen or [])]
        self.row("14 observed address", "a handshake straight to the node (a direct route from the start)",
                 f"OBSERVED_ADDRESS naming 127.0.0.1:{p.address[1]}, where this peer's packets come from, in an "
                 "ack-eliciting packet after establishment (§7.12 Address discovery)",
                 f"OBSERVED_ADDRESS frames: {named or 'none'}",
                 bool(seen) and all(tuple(a) == expected for a in seen))
        p.close_socket()

    def case_migration_limit(self):
        """An authenticated packet from a new port moves the connection there; until the node's PATH_CHALLENGE is
        answered it sends there at most 3x the bytes it received from there."""
        p = self.fresh("migrate")
        ok, text = p.handshake(ANSWER)
        if not ok:
            return self.row("14 migration limit", "-", "-", f"handshake failed: {text}", False)
        self.alive(p)
        self.net.idle(0.3)
        old = p.sock
        p.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        p.sock.bind(("127.0.0.1", 0))
        p.sock.setblocking(False)
        moved_at = time.monotonic()
        sent_before = len(p.sent_sizes)
        p.send_frames([{"type": "ping"}], pad_to=200)          # the highest packet number, not a probe: it moves
        self.net.idle(0.9)                                      # challenges at 0, 100, 200, 400 and 800 ms
        arrivals = [(t, len(d)) for t, d, _ in p.datagrams if t >= moved_at]
        sends = list(zip(p.sent_times[sent_before:], p.sent_sizes[sent_before:]))
        # At every arrival, what the node sent to the new port so far is at most 3x what it had received from it.
        over = [(t, sum(n for u, n in arrivals if u <= t), 3 * sum(n for u, n in sends if u <= t))
                for t, _ in arrivals]
        over = [(received, allowed) for _, received, allowed in over if received > allowed]
        challenges = [f for t, f in p.frames if t >= moved_at and f["type"] == "path_challenge"]
        total = sum(n for _, n in arrivals)
        allowed = 3 * sum(n for _, n in sends)
        self.row("14 migration limit", "after establishment, a 200-byte PING packet from a new port, then no answer "
                 "to the node's PATH_CHALLENGE (only acknowledgements)",
                 "the node moves there and challenges it; until validated it sends there at most 3x the bytes of "
                 "authenticated datagrams it received from there (§7.12 Migration, Which bytes the limit counts)",
                 f"{len(arrivals)} datagrams, {total} bytes to the new port against {allowed} allowed; "
                 f"PATH_CHALLENGEs: {len(challenges)}; over the limit at some arrival: {over or 'never'}",
                 bool(challenges) and not over)
        old.close()
        p.close_socket()
