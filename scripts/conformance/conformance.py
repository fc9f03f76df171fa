#!/usr/bin/env python3
"""Conformance harness: drives a live `huddle host` through the protocol's happy and error paths.

It starts `huddle host --json --listen 127.0.0.1:0 --stay`, reads its ticket and joins the session as an outside
peer built from the independent reference implementation in scripts/vectors (written from docs/PROTOCOL.md), then
sends the node well-formed and malformed input and reports, per case, what was sent, what the document says the
node does, what the node did, and PASS / FAIL / SKIP. Exit status 0 only when every case passed.

    python3 scripts/conformance/conformance.py --huddle .build/release/huddle [--json] [--verbose]

Needs Python 3 with PyNaCl. See scripts/conformance/README.md.
"""

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import textwrap
import time
import traceback

from cases_handshake import HandshakeCases
from cases_membership import MembershipCases
from cases_transport import TransportCases
from peer import ANSWER, CONTROL_CHANNEL, MESSENGER_CHANNEL, SILENCE, Host, Net, Peer, session, wire


class HarnessTimeout(BaseException):
    """The overall time limit: not an Exception, so no case's handler swallows it."""


class Harness(HandshakeCases, TransportCases, MembershipCases):
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.net = Net()
        self.log = (lambda text: print(f"  [{time.monotonic() - self.t0:7.3f}] {text}", file=sys.stderr)) \
            if args.verbose else None
        self.t0 = time.monotonic()
        self.host = None
        self.workdir = tempfile.mkdtemp(prefix="huddle-conformance-")

    # --- Reporting -----------------------------------------------------------------------------

    def row(self, case, sent, expected, observed, ok, skip=None):
        verdict = "SKIP" if skip else ("PASS" if ok else "FAIL")
        self.rows.append({"case": case, "sent": sent, "expected": expected,
                          "observed": (f"skipped: {skip}" if skip else observed), "result": verdict})
        if self.log:
            self.log(f"{verdict} {case}: {observed}")
        return ok

    # --- Set-up --------------------------------------------------------------------------------

    def start(self):
        self.host = Host(self.args.huddle, self.workdir, log=self.log,
                         extra_args=["--log-level", "debug"] if self.args.debug_log else [])
        ticket_event = None
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.host.alive():
            ticket_event = self.host.find(lambda e: e.get("event") == "ticket")
            if ticket_event:
                break
            time.sleep(0.05)
        if not ticket_event:
            raise RuntimeError(f"the node printed no ticket event within 15 s (stderr: "
                               f"{' | '.join(self.host.stderr_lines[-5:])})")
        self.ticket = session.decode_ticket(ticket_event["ticket"])
        member = self.ticket["members"][0]
        self.host_static = member["static_key"]
        self.host_address = (".".join(str(b) for b in member["ip"]), member["port"])
        self.invitation = session.credentials(self.ticket["invitation_secret"], b"hdl-invt")

    def fresh(self, role):
        """A new outside peer with its own keys and socket, holding the ticket's invitation credentials."""
        return Peer(self.net, f"conf-{role}", self.host_static, self.host_address, self.invitation, log=self.log)

    # --- Observation helpers -------------------------------------------------------------------

    def silence(self, peer, since, seconds=SILENCE):
        self.net.idle(seconds)
        return peer.describe_received(since)

    def probe(self, peer, pn=None, receiver_index=None, pad_to=None, send=True):
        """A PING + PATH_CHALLENGE packet: the node acknowledges and echoes it only if it accepted the packet."""
        data = os.urandom(8)
        packet, pn = peer.seal([{"type": "ping"}, {"type": "path_challenge", "data": data}], pn=pn,
                               receiver_index=receiver_index, pad_to=pad_to)
        if send:
            peer.send_raw(packet)
        return packet, pn, data

    def accepted(self, peer, pn, data, wait):
        """(echoed, acked): whether the node echoed the probe's PATH_CHALLENGE and acknowledged its number, waiting
        up to `wait` seconds for both."""
        self.net.wait(lambda: peer.path_response_for(data) and pn in peer.acked, wait)
        return peer.path_response_for(data), pn in peer.acked

    def alive(self, peer):
        """(ok, text): a fresh probe on `peer`'s connection is acknowledged and echoed."""
        _, pn, data = self.probe(peer)
        echoed, acked = self.accepted(peer, pn, data, ANSWER)
        ok = echoed and acked
        return ok, (f"next probe (pn {pn}) acked and echoed" if ok else
                    f"next probe (pn {pn}): acked={acked} echoed={echoed}")

    def host_events_text(self, since):
        events = [e for e in self.host.snapshot()[since:] if e.get("event") not in ("ticket",)]
        return "; ".join(json.dumps(e, sort_keys=True) for e in events) or "no host events"

    @staticmethod
    def describe_close(close):
        if close is None:
            return "no CLOSE"
        name = wire.CLOSE_CODES.get(close["code"], "unknown")
        return f"CLOSE({close['code']} {name}, {close['reason']!r})"

    # --- Case 1: the happy path ----------------------------------------------------------------

    def join(self, peer, label):
        """Handshake, JOIN_REQUEST, WELCOME (§8.2 rule 1), then the joiner's own MEMBER_JOINED (rule 3).
        Returns the WELCOME or None; adds rows when `label` is given."""
        ok, text = peer.handshake(ANSWER)
        if label:
            self.row(f"{label} handshake", "initiation under the ticket's invitation credentials (hdl-invt)",
                     "response (92 B) whose mac1 and Noise message 2 verify; keys split (§7.6, §8.1)", text, ok)
        if not ok:
            return None
        events_before = len(self.host.snapshot())
        started = time.monotonic()
        request = session.encode_control({"type": "join_request", "session_id": self.ticket["session_id"],
                                          "invitation_id": self.invitation["admission_id"],
                                          "record": peer.record(0)})
        pns = peer.send_message(CONTROL_CHANNEL, request)
        acked = self.net.wait(lambda: all(pn in peer.acked for pn in pns), ANSWER)
        if label:
            self.row(f"{label} first transport packet", f"JOIN_REQUEST (channel 1, sequence 0) in pn {pns}",
                     "authenticated and acknowledged (ACK within max_ack_delay, §7.8)",
                     f"ACK covering pn {pns}" if acked else
                     f"no ACK; received: {peer.describe_received(started) or 'nothing'}", bool(acked))
        welcome = self.net.wait(lambda: next((m for m in peer.control_messages() if m["type"] == "welcome"),
                                             None), ANSWER)
        joined_event = self.net.wait(lambda: self.host.find(
            lambda e: e.get("event") == "participant-joined" and e.get("name") == peer.name, events_before), 2.0)
        if welcome:
            me = next((m for m in welcome["roster"] if m["signing_key"] == peer.signing_key), None)
            host_in = any(m["signing_key"] == self.ticket["inviter_signing_key"] for m in welcome["roster"])
            activity = json.loads(welcome["activity"]["payload"]) if welcome["activity"] else None
            problems = []
            if welcome["session_id"] != self.ticket["session_id"]:
                problems.append("wrong session id")
            if not me or me["epoch"] != welcome["clock"] or me["static_key"] != peer.static_public:
                problems.append(f"joiner's record missing or epoch != clock ({me and me['epoch']} vs "
                                f"{welcome['clock']})")
            if not host_in:
                problems.append("the ticket's inviter is not in the roster")
            if not activity or activity.get("identifier") != session.CHAT_ACTIVITY_ID:
                problems.append(f"activity {activity!r} is not {session.CHAT_ACTIVITY_ID}")
            if not joined_event:
                problems.append("no participant-joined event")
            peer.welcome, peer.epoch = welcome, me["epoch"] if me else 0
            peer.session_creds = session.credentials(welcome["session_secret"], b"hdl-sess")
            observed = (f"WELCOME: clock {welcome['clock']}, roster of {len(welcome['roster'])} (joiner epoch "
                        f"{me and me['epoch']}), activity {activity}, {len(welcome['invitations'])} invitation(s)"
                        + (f"; host event participant-joined name={peer.name}" if joined_event else ""))
            if problems:
                observed += "; problems: " + ", ".join(problems)
            # Rule 3: a welcomed member sends its own record to every member it reached with the invitation.
            pns = peer.send_message(CONTROL_CHANNEL, session.encode_control(
                {"type": "member_joined", "record": peer.record(peer.epoch)}))
            peer.member_joined_acked = self.net.wait(lambda: all(pn in peer.acked for pn in pns), ANSWER)
        else:
            problems = ["no WELCOME"]
            observed = (f"no WELCOME within {ANSWER} s; control messages: "
                        f"{[m['type'] for m in peer.control_messages()]}; "
                        f"close: {self.describe_close(peer.close_since(0))}")
        if label:
            self.row(f"{label} WELCOME", "JOIN_REQUEST(session id, invitation id, record epoch 0)",
                     "WELCOME: session id, clock = joiner's epoch, roster with sponsor and joiner, the chat "
                     "activity (§8.2 rule 1, App. A); host prints participant-joined", observed, not problems)
        return welcome if not problems else None

    def case_happy(self):
        a = self.main = self.fresh("main")
        if not self.join(a, "1 happy path:"):
            return False
        since = len(self.host.snapshot())
        text = "hello from the conformance peer"
        pns = a.send_message(MESSENGER_CHANNEL, session.chat_line_envelope(text))
        event = self.net.wait(lambda: self.host.find(
            lambda e: e.get("event") == "message" and e.get("text") == text, since), ANSWER)
        self.row("1 happy path: chat to host", f"chat line envelope (channel 16, {session.CHAT_LINE_TYPE}, "
                 f"{{\"text\"}}) in pn {pns}", "host prints a message event with the text (§8.3, App. A)",
                 json.dumps(event, sort_keys=True) if event else
                 f"no message event; host events: {self.host_events_text(since)}",
                 bool(event and event.get("name") == a.name))
        after = [m["type"] for m in a.control_messages()][1:]
        self.row("1 happy path: after WELCOME", "MEMBER_JOINED(own record, the WELCOME's epoch) to the sponsor: a "
                 "duplicate of what it holds", "ignored (a record held with that epoch, §8.2 rule 2): acknowledged, "
                 "no CLOSE; the sponsor needs to send nothing more (WELCOME carried roster and activity)", f"acked={bool(a.member_joined_acked)}, {self.describe_close(a.close_since(0))}; "
                 f"control messages after WELCOME: {after or 'none'}",
                 bool(a.member_joined_acked) and a.close_since(0) is None)
        started = time.monotonic()
        line = "hello from the host's stdin"
        self.host.type_line(line)
        got = self.net.wait(lambda: line in a.chat_lines(), ANSWER)
        msgs = [(c, s, len(d)) for t, c, s, d in a.messages if t >= started]
        self.row("1 happy path: chat from host", f"host stdin: {line!r}",
                 "a reliable message on channel 16: envelope v1, kind 0, huddle.ChatLine, {\"text\"} (§8.3, App. A)",
                 f"decrypted and parsed: {line!r} (messages (channel, seq, bytes): {msgs})" if got else
                 f"not received; messages since: {msgs}", bool(got))
        return True

    # --- Driver ---------------------------------------------------------------------------------

    def run(self):
        self.start()
        if not self.case_happy():
            for name in ("bad mac1", "replayed initiation", "older timestamp", "violations", "replay window",
                         "corrupted tag", "transport extras", "CLOSE"):
                self.row(name, "-", "-", "", False, skip="the happy path failed: no main member to compare with")
            return
        for case in (self.case_bad_mac1, self.case_replay_initiation, self.case_old_timestamp,
                     self.case_other_revision, self.case_bad_initiations, self.case_violations, self.case_replay_window, self.case_corrupt,
                     self.case_transport_extras, self.case_keepalive, self.case_observed_address,
                     self.case_migration_limit, self.case_close, self.case_removed,
                     self.case_ask_to_join, self.case_main_intact, self.case_host_leaves):
            try:
                case()
            except Exception as error:
                self.row(case.__name__, "-", "-", f"harness error: {error!r} "
                         f"({traceback.format_exc().strip().splitlines()[-2].strip()})", False)
            if not self.host.alive() and case != self.case_host_leaves:
                self.row("node process", "-", "keeps running", f"exited with {self.host.proc.returncode}", False)
                return

    def finish(self):
        if self.host:
            self.host.stop()
        for p in list(self.net.peers):
            p.close_socket()
        shutil.rmtree(self.workdir, ignore_errors=True)


def print_table(rows, out=sys.stdout):
    widths = {"case": 26, "sent": 36, "expected": 40, "observed": 52, "result": 6}
    heads = {"case": "case", "sent": "sent", "expected": "spec says", "observed": "node did", "result": "result"}

    def line(cells):
        wrapped = {k: textwrap.wrap(str(cells[k]), widths[k]) or [""] for k in widths}
        height = max(len(v) for v in wrapped.values())
        for i in range(height):
            out.write(" | ".join((wrapped[k][i] if i < len(wrapped[k]) else "").ljust(widths[k])
                                 for k in widths).rstrip() + "\n")
    rule = "-+-".join("-" * widths[k] for k in widths) + "\n"
    line(heads)
    out.write(rule)
    for r in rows:
        line(r)
        out.write(rule)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--huddle", default=".build/release/huddle", help="the node's executable")
    parser.add_argument("--json", action="store_true", help="one JSON object per case instead of the table")
    parser.add_argument("--verbose", action="store_true", help="log every step and host event on stderr")
    parser.add_argument("--debug-log", action="store_true", help="start the node with --log-level debug")
    parser.add_argument("--timeout", type=float, default=240, help="overall time limit in seconds")
    args = parser.parse_args()
    # The node runs in a scratch directory: a relative path must not depend on it.
    args.huddle = os.path.abspath(args.huddle)
    if not os.access(args.huddle, os.X_OK):
        print(f"conformance: {args.huddle} is not an executable (build it first)", file=sys.stderr)
        return 2
    harness = Harness(args)

    def on_alarm(signum, frame):
        raise HarnessTimeout(f"overall time limit of {args.timeout:.0f} s reached")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(args.timeout))
    failure = None
    try:
        harness.run()
    except (Exception, HarnessTimeout) as error:
        failure = f"{error!r}"
        harness.row("harness", "-", "-", f"aborted: {failure}", False)
    finally:
        signal.alarm(0)
        harness.finish()
    rows = harness.rows
    if args.json:
        for r in rows:
            print(json.dumps(r, sort_keys=True, ensure_ascii=False))
    else:
        print_table(rows)
        counts = {v: sum(1 for r in rows if r["result"] == v) for v in ("PASS", "FAIL", "SKIP")}
        print(f"conformance: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
              f"({len(rows)} cases, {args.huddle})")
    return 0 if rows and all(r["result"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
