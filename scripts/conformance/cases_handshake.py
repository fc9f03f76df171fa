"""Cases 2-4 and the initiation cases of 10: what a responder does with initiations it must drop or may repeat
(docs/PROTOCOL.md §2, §7.1, §7.6, §7.11)."""

import time

from peer import ANSWER, crypto


class HandshakeCases:
    """Mixed into conformance.Harness, whose helpers (row, fresh, probe, alive, ...) these cases use."""

    # --- Case 2-4, 10: handshake error paths -----------------------------------------------------

    def case_bad_mac1(self):
        p = self.fresh("badmac1")
        packet, _ = p.make_initiation()
        bad = bytearray(packet)
        bad[120] ^= 0x01
        started = time.monotonic()
        p.send_raw(bytes(bad))
        heard = self.silence(p, started)
        p.send_raw(packet)
        answered = self.net.wait(lambda: p.k_send is not None, ANSWER)
        self.row("2 bad mac1", "initiation with one mac1 bit flipped, then the same initiation intact",
                 "silence: no response, no cookie reply (§7.6, §7.11); the intact one is answered",
                 f"{heard or 'silence'}; intact copy: {'answered' if answered else 'not answered'}",
                 not heard and bool(answered))
        p.close_socket()

    def case_replay_initiation(self):
        p = self.replay_peer = self.fresh("replay")
        packet, index = p.make_initiation()
        p.send_raw(packet)
        self.net.wait(lambda: len(p.responses) >= 1, ANSWER)
        first = p.responses[0][1] if p.responses else None
        p.send_raw(packet)
        self.net.wait(lambda: len(p.responses) >= 2, ANSWER)
        second = p.responses[1][1] if len(p.responses) >= 2 else None
        same = first is not None and second == first
        self.row("3 replayed initiation (unconfirmed)", "an initiation, then the byte-identical initiation again",
                 "the same response bytes again, no second handshake (§7.6 Retries)",
                 ("identical response resent" if same else
                  f"first response: {'yes' if first else 'none'}, second: "
                  f"{'none' if second is None else 'different bytes'}"), same)
        if not first:
            return
        ok, alive = self.alive(p)          # confirms the keypair
        started = time.monotonic()
        p.send_raw(packet)
        heard = self.silence(p, started)
        ok2, alive2 = self.alive(p)
        self.row("3 replayed initiation (confirmed)", "the same initiation once more, after a transport packet "
                 "confirmed the keypair", "dropped silently: its timestamp is not newer (§7.6); connection unaffected",
                 f"{heard or 'silence'}; before: {alive}; after: {alive2}", ok and ok2 and not heard)

    def case_old_timestamp(self):
        p = getattr(self, "replay_peer", None)
        if p is None or p.k_send is None:
            return self.row("4 older timestamp", "-", "-", "", False, skip="case 3 did not establish a connection")
        accepted_ts = min(ts for _, _, _, ts in p.pending_initiations.values())
        results = []
        for label, ts in (("older by 5 s", (accepted_ts[0] - 5, accepted_ts[1])), ("equal", accepted_ts)):
            packet, _ = p.make_initiation(timestamp=ts, resumption=p.remote_index)
            started = time.monotonic()
            p.send_raw(packet)
            results.append((label, self.silence(p, started)))
        time.sleep(0.03)
        before = p.local_index
        packet, index = p.make_initiation(resumption=p.remote_index)
        p.send_raw(packet)
        newer = self.net.wait(lambda: p.local_index == index and p.local_index != before, ANSWER)
        ok, alive = self.alive(p) if newer else (False, "not tried")
        self.row("4 older/equal timestamp", "new initiations (fresh ephemeral, rekey of the live connection) with a "
                 "timestamp 5 s older than / equal to the accepted one, then one with the current time",
                 "older and equal dropped silently (timestamp must be newer, §7.6); the newer one is answered",
                 "; ".join(f"{label}: {heard or 'silence'}" for label, heard in results)
                 + f"; newer: {'answered, ' + alive if newer else 'not answered'}",
                 all(not heard for _, heard in results) and bool(newer) and ok)

    def case_other_revision(self):
        """Case 10: an initiation of another protocol revision is refused, naming the node's own (§2.5, §7.6)."""
        p = self.fresh("revision")
        packet, index = p.make_initiation(prologue=b"huddle/2")
        started = time.monotonic()
        p.send_raw(packet)
        self.net.wait(lambda: p.refusals, ANSWER)
        self.net.idle(0.3)
        refusals = [r for r in p.refusals if r[0] >= started]
        sizes = [len(d) for t, d, _ in p.datagrams if t >= started]
        named = refusals[0][1] if len(refusals) == 1 else None
        ok, _ = p.handshake(ANSWER)
        self.row("10 other protocol revision", "initiation with prologue 'huddle/2' (mac1 valid), then a valid one",
                 "one 80-byte HANDSHAKE_REFUSED that opens under the cookie key with header || mac1 as associated "
                 "data and names 'huddle/1', no state kept (§2.5, §7.6); the valid initiation is answered",
                 f"{p.describe_received(started) or 'silence'} (sizes {sizes}); valid initiation: "
                 f"{'answered' if ok else 'not answered'}",
                 named == crypto.PROLOGUE and sizes[:1] == [80] and ok)
        p.close_socket()

    def case_bad_initiations(self):
        """Case 10: initiations that fail classification, Noise (prologue) or the timestamp format."""
        variants = [
            ("10 truncated initiation", "the first 151 bytes of a valid initiation",
             "dropped by classification (exact length 152, §2): silence",
             lambda p: p.make_initiation()[0][:151]),
            ("10 timestamp nanoseconds >= 10^9", "initiation whose TAI64N nanoseconds are 10^9",
             "dropped (§7.1)", lambda p: p.make_initiation(nanoseconds=1_000_000_000)[0]),
        ]
        for case, sent, expected, build in variants:
            p = self.fresh("badinit")
            started = time.monotonic()
            p.send_raw(build(p))
            heard = self.silence(p, started)
            ok, _ = p.handshake(ANSWER)
            self.row(case, sent + ", then a valid initiation", expected + "; the valid one is answered",
                     f"{heard or 'silence'}; valid initiation: {'answered' if ok else 'not answered'}",
                     not heard and ok)
            p.close_socket()
