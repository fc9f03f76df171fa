"""Cases 8, 11, 12 and 13: members that leave or close, the node dialling an unreachable member again, the node
itself leaving, a removed member trying to come back, and asking to join (docs/PROTOCOL.md §7.10, §8.2)."""

import json
import signal
import time

from peer import ANSWER, CONTROL_CHANNEL, SILENCE, ack_or_ping, crypto, session, wire


class MembershipCases:
    """Mixed into conformance.Harness, whose helpers (row, fresh, probe, alive, ...) these cases use."""

    # --- Case 8: a member closes -------------------------------------------------------------------

    def closing_member(self, case, role, member_left, code, expected_reason, expected):
        """A member joins, then (optionally MEMBER_LEFT and) ACK + CLOSE(code); the host must print
        participant-left with `expected_reason`. Returns (peer, time of the CLOSE) or (None, None)."""
        p = self.fresh(role)
        if not self.join(p, None):
            self.row(case, "-", "-", "", False, skip=f"the joiner {p.name} could not join")
            return None, None
        since = len(self.host.snapshot())
        sent = "a joined member: "
        if member_left:
            pns = p.send_message(CONTROL_CHANNEL, session.encode_control(
                {"type": "member_left", "signing_key": p.signing_key, "epoch": p.epoch}))
            self.net.wait(lambda: all(pn in p.acked for pn in pns), 2.0)   # §8.2 rule 4: wait for the ACK
            sent += "MEMBER_LEFT(its key, epoch) on channel 1, acknowledged, then "
        else:
            self.net.idle(0.3)
        p.send_frames([ack_or_ping(p), {"type": "close", "code": code, "reason": "conformance"}])
        closed_at = time.monotonic()
        p.closes.append((closed_at, {"type": "close", "code": code, "reason": "sent"}))    # stop acknowledging
        sent += f"ACK + CLOSE({code} {wire.CLOSE_CODES[code]})" + ("" if member_left else ", no MEMBER_LEFT")
        event = self.net.wait(lambda: self.host.find(
            lambda e: e.get("event") == "participant-left" and e.get("name") == p.name, since), ANSWER)
        self.row(case, sent, expected, json.dumps(event, sort_keys=True) if event else
                 f"no participant-left; host events: {self.host_events_text(since)}",
                 bool(event and event.get("reason") == expected_reason))
        return p, closed_at

    def case_close(self):
        b, _ = self.closing_member("8 MEMBER_LEFT + CLOSE", "leaver", True, 6, "left",
                                   "host prints participant-left with reason \"left\" (§8.2 rule 4)")
        if b:
            # The leaver keeps the session credentials; the admission moved to a new key at its departure (the host
            # draws it at once, or 250 ms later when the main member sorts first and does not draw).
            self.net.idle(0.6)
            b.reset_connection()
            tried = time.monotonic()
            packet, _ = b.make_initiation(creds=b.session_creds)
            b.send_raw(packet)
            self.net.idle(SILENCE)
            answered = [t for t, _ in b.responses if t >= tried] + [t for t, _ in b.cookie_replies if t >= tried]
            self.row("8 leaver: the session credentials it kept", "a valid initiation under the session "
                     "credentials (hdl-sess) the leaver held when it left",
                     "no answer, as to a stranger: its key is no longer authorised and the session admission "
                     "moved to a new key at its departure (§8.2 rules 4, 10)",
                     f"{len(answered)} answer(s); received since: {b.describe_received(tried) or 'nothing'}",
                     not answered)
            b.close_socket()
        d, _ = self.closing_member("8 CLOSE(6 left) alone", "left-code", False, 6, "unreachable",
                                   "no MEMBER_LEFT, so not a departure: participant-left with reason "
                                   "\"unreachable\" (§8.2 rules 3-4; the close code does not matter)")
        if d:
            d.close_socket()
        c, closed_at = self.closing_member("8 CLOSE(0) without MEMBER_LEFT", "closer", False, 0, "unreachable",
                                           "the member becomes inactive: participant-left with reason "
                                           "\"unreachable\" (§8.2 rule 3)")
        if not c:
            return
        # The node dials the unreachable member again, with the session's credentials.
        dialled = self.net.wait(lambda: c.initiations_received, 4.0)
        if not dialled:
            self.row("8 redial of an unreachable member", "(nothing: the closed member's socket listens)",
                     "an initiation to its address about 1 s later (§8.2 rule 2)", "no initiation within 4 s", False)
        else:
            at, init = dialled[0]
            f = wire.parse_initiation(init)
            # The first redial goes under the session admission's current key (§8.2 rule 10): the session secret's
            # credentials at epoch 0, the newest ADMISSION_KEY's after a rotation (case 8's leaver moved it).
            keys = [m for m in c.control_messages(0) if m["type"] == "admission_key"]
            creds = (session.credentials(max(keys, key=lambda m: (m["epoch"], m["author"]))["secret"], b"hdl-sess")
                     if keys else c.session_creds)
            mac_ok = crypto.mac(crypto.mac1_key(creds["mac_secret"], c.static_public), init[:120]) == f["mac1"]
            try:
                _, static, payload = crypto.read_message1(c.static, f["ephemeral"], f["encrypted_static"],
                                                          f["encrypted_payload"])
                resumption = int.from_bytes(payload[12:16], "little")
                noise = f"Noise message 1 opens: static key is the host's = {static == self.host_static}, " \
                        f"resumption index {resumption}"
                noise_ok = static == self.host_static and resumption == 0
            except Exception as error:
                noise, noise_ok = f"Noise message 1 fails ({error!r})", False
            self.row("8 redial of an unreachable member", "(nothing: the closed member's socket listens)",
                     "an initiation to its address about 1 s later, mac1 under the session admission's current "
                     "credentials (hdl-sess of the newest ADMISSION_KEY, else of the session secret), resumption "
                     "index 0 (§8.2 rules 2 and 10, §7.6, §8.1)",
                     f"initiation after {at - closed_at:.2f} s; mac1 under the admission's credentials "
                     f"(epoch {max((m['epoch'] for m in keys), default=0)}): {mac_ok}; {noise}",
                     mac_ok and noise_ok)
        c.close_socket()

    # --- Case 12: a removed member tries to come back ------------------------------------------------

    def case_removed(self):
        """The host removes a member (/remove); it is told with a signed MEMBER_REMOVED, and then none of the ways
        back in it holds gets an answer: not the ticket it joined with (closed by the removal), not the session
        credentials it kept (its key is no longer authorised, and the session admission moved) (§8.2 rules 8-10)."""
        p = self.fresh("removed")
        if not self.join(p, None):
            self.row("12 removal", "-", "-", "", False, skip=f"the joiner {p.name} could not join")
            return
        since = len(self.host.snapshot())
        started = time.monotonic()
        self.host.type_line(f"/remove {p.name}")
        removal = self.net.wait(lambda: next(
            (m for m in p.control_messages(started) if m["type"] == "member_removed"), None), ANSWER)
        event = self.net.wait(lambda: self.host.find(
            lambda e: e.get("event") == "participant-removed" and e.get("name") == p.name, since), ANSWER)
        problems = []
        if not removal:
            problems.append("no MEMBER_REMOVED")
        else:
            author = self.ticket["inviter_signing_key"]
            signed = session.REMOVAL_LABEL + self.ticket["session_id"] + removal["author"] + removal["removed"]
            if removal["removed"] != p.signing_key or removal["author"] != author:
                problems.append("it names another member or author")
            if not crypto.ed25519_verify(removal["author"], signed, removal["signature"]):
                problems.append("its signature does not verify")
        if not event:
            problems.append(f"no participant-removed; host events: {self.host_events_text(since)}")
        self.row("12 removal", f"host stdin: /remove {p.name}",
                 "MEMBER_REMOVED naming the member, by the host (the creator), signed over \"huddle member removed "
                 "v1\" || session id || author || removed (§8.2 rule 9); host prints participant-removed",
                 "MEMBER_REMOVED received, signature verifies" if not problems else "; ".join(problems),
                 not problems)
        # The removed member closes its connection, as an honest one does, then tries its ways back in.
        p.send_frames([ack_or_ping(p), {"type": "close", "code": 0, "reason": "removed"}])
        self.net.idle(0.5)
        for label, creds in (("the ticket it joined with", self.invitation),
                             ("the session credentials (hdl-sess) it kept", p.session_creds)):
            p.reset_connection()
            tried = time.monotonic()
            packet, _ = p.make_initiation(creds=creds)
            p.send_raw(packet)
            self.net.idle(SILENCE)
            answered = [t for t, _ in p.responses if t >= tried] + [t for t, _ in p.cookie_replies if t >= tried]
            self.row(f"12 removed member: {label}", f"a valid initiation under {label}",
                     "no answer, as to a stranger: the invitation closed with the removal; the member's key is no "
                     "longer authorised and the session admission moved to a new key (§8.2 rules 9-10)",
                     f"{len(answered)} answer(s); received since: {p.describe_received(tried) or 'nothing'}",
                     not answered)
        # A ticket made after the removal: its handshake is answered (anyone holding it gets that far), but the
        # removed identity's JOIN_REQUEST is refused with a CLOSE and nothing of the session.
        later = self.new_ticket("/invite")
        if not later:
            self.row("12 removed member: a ticket made later", "-", "-", "", False, skip="the host printed no ticket")
            p.close_socket()
            return
        p.creds = session.credentials(later["invitation_secret"], b"hdl-invt")
        p.reset_connection()
        ok, text = p.handshake(ANSWER)
        tried = time.monotonic()
        if ok:
            p.send_message(CONTROL_CHANNEL, session.encode_control(
                {"type": "join_request", "session_id": self.ticket["session_id"],
                 "invitation_id": p.creds["admission_id"], "record": p.record(0)}))
        close = self.net.wait(lambda: p.close_since(tried), ANSWER) if ok else None
        got = [m["type"] for m in p.control_messages(tried)]
        self.row("12 removed member: a ticket made later", "handshake under a ticket the host made after the "
                 "removal, then JOIN_REQUEST with the removed identity's record",
                 "handshake answered; the request closed with CLOSE(1 protocolViolation), no WELCOME or other "
                 "control message (§8.2 rule 9)",
                 f"handshake: {text}; {self.describe_close(close)}; control messages: {got or 'none'}",
                 ok and close is not None and close["code"] == 1 and not got)
        p.close_socket()

    def new_ticket(self, command):
        """Types `command` (/invite, /invite ask, ...) at the host and returns the ticket it prints, decoded."""
        count = sum(1 for e in self.host.snapshot() if e.get("event") == "ticket")
        self.host.type_line(command)
        event = self.net.wait(lambda: ([e for e in self.host.snapshot() if e.get("event") == "ticket"][count:]
                                       or [None])[0], ANSWER)
        return session.decode_ticket(event["ticket"]) if event else None

    # --- Case 13: ask to join ------------------------------------------------------------------

    def case_ask_to_join(self):
        """An ask-to-join ticket (/invite ask): the joiner is told it waits and the host prints join-request; a
        denial refuses it with JOIN_REFUSED(1); an admission welcomes the next one (§8.2 rule 14)."""
        ticket = self.new_ticket("/invite ask")
        if not ticket:
            self.row("13 ask to join", "-", "-", "", False, skip="the host printed no ticket")
            return
        creds = session.credentials(ticket["invitation_secret"], b"hdl-invt")
        for role, answer in (("denied", "/deny"), ("admitted", "/admit")):
            p = self.fresh(f"ask-{role}")
            p.creds = creds
            ok, text = p.handshake(ANSWER)
            since = len(self.host.snapshot())
            started = time.monotonic()
            if ok:
                p.send_message(CONTROL_CHANNEL, session.encode_control(
                    {"type": "join_request", "session_id": self.ticket["session_id"],
                     "invitation_id": creds["admission_id"], "record": p.record(0)}))
            waiting = self.net.wait(lambda: next(
                (m for m in p.control_messages(started) if m["type"] == "join_waiting"), None), ANSWER)
            asked = self.net.wait(lambda: self.host.find(
                lambda e: e.get("event") == "join-request" and e.get("name") == p.name, since), ANSWER)
            early = [m["type"] for m in p.control_messages(started) if m["type"] != "join_waiting"]
            self.row(f"13 ask to join ({role}): waiting", "handshake and JOIN_REQUEST under an ask-to-join ticket",
                     "JOIN_WAITING and nothing else yet; host prints join-request with the joiner's name (§8.2 rule 14)",
                     f"handshake: {text}; JOIN_WAITING: {'yes' if waiting else 'no'}; other control messages: "
                     f"{early or 'none'}; join-request event: {'yes' if asked else 'no'}",
                     ok and bool(waiting) and bool(asked) and not early)
            answered_at = time.monotonic()
            self.host.type_line(f"{answer} {p.name}")
            if role == "denied":
                refused = self.net.wait(lambda: next(
                    (m for m in p.control_messages(answered_at) if m["type"] == "join_refused"), None), ANSWER)
                self.row("13 ask to join (denied): refused", f"host stdin: {answer} {p.name}",
                         "JOIN_REFUSED with reason 1 (denied), no WELCOME (§8.2 rule 14)",
                         f"control messages: {[m['type'] for m in p.control_messages(answered_at)] or 'none'}",
                         bool(refused) and refused["reason"] == 1 and not any(
                             m["type"] == "welcome" for m in p.control_messages(answered_at)))
            else:
                welcome = self.net.wait(lambda: next(
                    (m for m in p.control_messages(answered_at) if m["type"] == "welcome"), None), ANSWER)
                listed = welcome and any(i["secret"] == ticket["invitation_secret"] for i in welcome["invitations"])
                announced = any(m["type"] == "ask_invitation_opened" and m["secret"] == ticket["invitation_secret"]
                                for m in p.control_messages(answered_at))
                self.row("13 ask to join (admitted): welcomed", f"host stdin: {answer} {p.name}",
                         "WELCOME whose invitations leave the ask-to-join one out; ASK_INVITATION_OPENED for it "
                         "after the WELCOME (§8.2 rule 14)",
                         f"WELCOME: {'yes' if welcome else 'no'}; ask-to-join invitation listed in it: "
                         f"{bool(listed)}; ASK_INVITATION_OPENED: {announced}",
                         bool(welcome) and not listed and announced)
                # Leave cleanly, as a member does, so the main member's roster stays as the later cases expect.
                if welcome:
                    me = next((m for m in welcome["roster"] if m["signing_key"] == p.signing_key), None)
                    pns = p.send_message(CONTROL_CHANNEL, session.encode_control(
                        {"type": "member_left", "signing_key": p.signing_key, "epoch": me["epoch"] if me else 0}))
                    self.net.wait(lambda: all(pn in p.acked for pn in pns), 2.0)
                    p.send_frames([ack_or_ping(p), {"type": "close", "code": 0, "reason": "conformance"}])
            p.close_socket()

    def case_host_leaves(self):
        a = self.main
        started = time.monotonic()
        self.host.proc.send_signal(signal.SIGTERM)
        left = self.net.wait(lambda: any(m["type"] == "member_left" for m in a.control_messages(started)), 5.0)
        close = self.net.wait(lambda: a.close_since(started), 5.0)
        msgs = [m["type"] for m in a.control_messages(started)]
        ok = bool(left) and close is not None
        if left:
            m = next(m for m in a.control_messages(started) if m["type"] == "member_left")
            ok = ok and m["signing_key"] == self.ticket["inviter_signing_key"]
        self.row("11 node leaves (SIGTERM)", "SIGTERM to the node (the CLI leaves gracefully)",
                 "MEMBER_LEFT(its key, epoch) to the member, then CLOSE (the document names 0 noError; any code "
                 "passes: receivers go by MEMBER_LEFT) (§8.2 rule 4, §7.10)",
                 f"control messages: {msgs}; {self.describe_close(close)}", ok)

    def case_main_intact(self):
        left = self.host.find(lambda e: e.get("event") == "participant-left" and e.get("name") == self.main.name)
        ok, alive = self.alive(self.main)
        self.row("10 main connection intact", "(after every case above)", "the main member was never dropped "
                 "by the error cases (they affect only their own connection)",
                 f"{alive}; participant-left for the main member: {'yes' if left else 'no'}", ok and not left)
