#!/usr/bin/env python3
"""A soak of real `huddle` processes on loopback (issue 34): chat, attachments and restarts for a long time.

    scripts/soak.py HUDDLE_BINARY [--members 3] [--minutes 60] [--line-interval-ms 20] [--share-every-s 60]
        [--share-mib 4] [--restart-every-s 240] [--warmup-minutes 3] [--rss-growth-mib 16] [--fd-growth 8]
        [--grace-s 5] [--drain-s 60] [--work-dir DIR] [--keep-work-dir]

What it does
- Starts `huddle host` and --members - 1 `huddle join` processes (all `--json`, on 127.0.0.1, each with an identity
  file and a data directory of its own under the work directory, so a restarted member keeps its identity).
- Every member writes a numbered chat line, "NAME SEQ", to its standard input every --line-interval-ms; SEQ counts
  per name across restarts.
- Every --share-every-s one member (round robin over all members, skipping one that is restarting) shares a fresh
  random file of --share-mib MiB with `/share`; its BLAKE2b-512 is computed here.
- Every --restart-every-s one member other than the host (round robin) leaves gracefully (its standard input is
  closed; it must print `left` and exit 0) and joins again, with the same identity file, through a fresh ticket that
  a running member (round robin) prints for `/invite`. A member about to leave first waits (60 s at most) until the
  others have completed the files it shared: it holds the only copy of a file nobody fetched yet, and leaving deletes
  its session's data.
- After --minutes the lines and shares stop; the soak waits up to --drain-s for the last lines and downloads, then
  closes every member's standard input and checks.

The delivery rule (also printed with the results)
- A line S sent (written to S's standard input) at time t and a receiver R: the line is *applicable* to R when R's
  process was a member then (between R's `joined` and the moment R's input was closed for a restart). It is *steady*
  when, in addition, t lies more than --grace-s seconds after the later of S's and R's `joined` and more than
  --grace-s seconds before either of them began to leave (the members that stay to the end never leave before the
  drain). Applicable lines that are not steady are *window* lines.
- Every steady line must reach R exactly once, and a receiver gets each sender's lines in increasing order. A
  missing line is *reported* rather than lost when an `undelivered` report of S about R names it. A report carries
  only a count N; what S reports is what R never acknowledged, a contiguous run of S's lines, so the report is taken
  to name the N lines starting at the first one R had not received when the report was printed (and after those an
  earlier report named), among the lines already written to S that were applicable to R. A steady line neither
  received nor reported is lost: FAIL. Lost lines written while S counted R gone (after S's `participant-left` for
  R, before its next `participant-joined`) are counted apart in the output, but still fail: R never left. Lines a
  report names that arrive after all are counted ("reported but delivered"), not failures.
- Window lines are reported separately: delivered, reported undelivered, or neither (not a failure: the node may be
  mid-join or mid-leave).
- A line received twice by the same receiver name (also across its restarts) is a duplicate: FAIL. A line received
  out of per-sender order by one receiver process: FAIL.

Attachments: every share must print `attachment-shared`; every process that was a member when the file was shared
and stayed to the end must print `attachment-complete` for it with the same BLAKE2b (FAIL otherwise); a mismatched
digest anywhere, or `attachment-failed` on such a process, is a FAIL. Downloads by processes that joined later
(a rejoined member catches up on every attachment) are reported, not required.

Memory and descriptors: every 10 s each running process's VmRSS (/proc/PID/status) and open descriptors (entries of
/proc/PID/fd) are sampled. A process's baseline is its first sample at least --warmup-minutes after its `joined`;
a process that lives past its warm-up (one that has not restarted by then) FAILs if it later grows by more than
--rss-growth-mib MiB or --fd-growth descriptors over that baseline. A restart starts a new process with a new
warm-up. The baseline and maximum after it are printed per process.

Also FAIL: a process exiting on its own, one that does not exit within 30 s of its input closing (it is then
terminated), a non-zero exit after a graceful leave, a join that fails, an `error` or `session-over` event.
Reported, not failures: `participant-left` with reason `unreachable`, `messages-dropped`, `eligibility` false,
`undelivered` reports outside a join/leave window.

Bounds: every wait has a timeout and a watchdog ends the run (killing what it started) at --minutes plus --drain-s
plus 10 minutes. Every process is stopped by its pid: input closed, 30 s, SIGTERM, 10 s, SIGKILL. Pipes are read by one
thread per process; standard error goes to a file per process in the work directory. The work directory (a fresh
temporary one unless --work-dir) keeps events.log (every event but chat lines and progress) and the stderr files;
attachments and data directories are deleted at the end, the rest too on PASS unless --keep-work-dir.

Exit status: 0 on PASS, 1 on FAIL, 2 for a usage error. Standard library only.
"""

import argparse
import array
import bisect
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

INF = float("inf")
SAMPLE_EVERY_S = 10.0
STOP_WAIT_S = 30.0
TERM_WAIT_S = 10.0
JOIN_WAIT_S = 45.0
TICKET_WAIT_S = 20.0
SHARE_WAIT_S = 30.0
PROGRESS_EVERY_S = 60.0
WATCHDOG_SLACK_S = 600.0
HANDOFF_WAIT_S = 60.0
EXAMPLES = 10


def now():
    return time.monotonic()


class Proc:
    """One `huddle` process: one run of one member (a restart makes a new Proc with the same name)."""

    def __init__(self, soak, name, number, role, argv):
        self.soak = soak
        self.name = name
        self.number = number
        self.label = f"{name}#{number}"
        self.role = role
        self.stdin_lock = threading.Lock()
        self.stdin_closed = False
        self.tickets = queue.Queue()
        self.shared = queue.Queue()
        self.joined = threading.Event()
        self.joined_t = None
        self.participant = None
        self.leave_t = None  # when the input was closed for a restart
        self.final = False  # stopped at the end of the soak
        self.stopping = False
        self.left_seen = False
        self.exit_code = None
        self.exit_t = None
        self.forced = False
        self.crashed = False
        self.samples = []  # (t, rss_kib, fds)
        self.stderr_path = os.path.join(soak.work, "logs", f"{self.label}.stderr")
        self.stderr_file = open(self.stderr_path, "wb")
        self.start_t = now()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file, start_new_session=True)
        self.pid = self.proc.pid
        self.reader = threading.Thread(target=self.read_loop, name=f"read-{self.label}", daemon=True)
        self.reader.start()
        self.sender = None

    def running(self):
        return self.proc.poll() is None

    def member(self):
        return self.joined_t is not None and not self.stopping and self.running()

    def read_loop(self):
        for raw in self.proc.stdout:
            t = now()
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                self.soak.note(self, t, "non-json", {"line": line[:300]})
                continue
            try:
                self.soak.handle(self, event, t)
            except Exception as error:  # a malformed event must not stop the reader
                self.soak.note(self, t, "handler-error", {"error": repr(error), "line": line[:300]})

    def write(self, text):
        """Writes one line to the process's input; False if the input is closed or broken."""
        with self.stdin_lock:
            if self.stdin_closed:
                return False
            try:
                self.proc.stdin.write(text.encode() + b"\n")
                self.proc.stdin.flush()
                return True
            except (BrokenPipeError, OSError, ValueError):
                return False

    def close_input(self):
        with self.stdin_lock:
            if self.stdin_closed:
                return
            self.stdin_closed = True
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

    def wait_stopped(self):
        """After the input was closed: waits STOP_WAIT_S, then SIGTERM, then SIGKILL (by this process's pid)."""
        try:
            self.exit_code = self.proc.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.forced = True
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.exit_code = self.proc.wait(TERM_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.exit_code = self.proc.wait(TERM_WAIT_S)
        self.exit_t = self.exit_t or now()
        self.reader.join(10)
        self.stderr_file.close()

    def sample(self):
        try:
            with open(f"/proc/{self.pid}/status") as status:
                rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
            fds = len(os.listdir(f"/proc/{self.pid}/fd"))
        except (OSError, StopIteration, ValueError):
            return
        self.samples.append((now(), rss, fds))

    def stderr_tail(self, lines=5):
        try:
            with open(self.stderr_path, "rb") as f:
                return [l.decode("utf-8", "replace").rstrip() for l in f.read().splitlines()[-lines:]]
        except OSError:
            return []


class Soak:
    def __init__(self, args):
        self.args = args
        self.binary = os.path.abspath(args.binary)
        self.grace = args.grace_s
        self.names = [f"n{i}" for i in range(args.members)]
        self.work = args.work_dir or tempfile.mkdtemp(prefix="huddle-soak-")
        for sub in ("ids", "data", "logs", "shares"):
            os.makedirs(os.path.join(self.work, sub), exist_ok=True)
        self.events_log = open(os.path.join(self.work, "events.log"), "w")
        self.lock = threading.Lock()
        self.log_lock = threading.Lock()
        self.procs = []  # every Proc ever started
        self.current = {}  # name -> latest Proc
        self.sent = {name: [] for name in self.names}  # name -> [(t, proc, written)] indexed by SEQ - 1
        self.seq = {name: 0 for name in self.names}
        self.recv = {}  # (receiver name, sender name) -> bytearray of counts indexed by SEQ
        self.recv_by = {}  # the same -> the incarnation number (mod 256) of the first receipt
        self.arrivals = {}  # the same -> (array of first-receipt times, array of SEQs), in arrival order
        self.roster = []  # (t, observer proc, name, "joined" or "left", reason)
        self.last_seq = {}  # (receiver label, sender name) -> last SEQ received
        self.received = 0
        self.duplicates = []  # (receiver label, sender, seq, across a restart)
        self.duplicate_count = 0
        self.out_of_order = []
        self.out_of_order_count = 0
        self.bogus = []
        self.undelivered = []  # (t, sender proc, receiver name, count, reason)
        self.unreachable = []  # (t, observer label, name)
        self.dropped = []
        self.errors = []
        self.session_over = []
        self.ineligible = []
        self.shares = []  # dicts: id, sharer label, t, size, blake2b, path
        self.completes = {}  # (proc label, attachment id) -> (t, blake2b)
        self.failed_attachments = []  # (t, label, id, message)
        self.restarts = []
        self.failures = []  # reasons (strings) found while running
        self.stop_traffic = threading.Event()
        self.finished = threading.Event()
        self.created = now()
        self.t0 = None
        self.t_end = None

    # ---------- logging

    def log_event(self, proc, t, event):
        with self.log_lock:
            stamp = t - self.t0 if self.t0 is not None else t - self.created
            self.events_log.write(f"{stamp:10.3f} {proc.label} {json.dumps(event, sort_keys=True)}\n")

    def note(self, proc, t, kind, fields):
        self.log_event(proc, t, dict(fields, event=kind))
        if kind in ("non-json", "handler-error"):
            self.fail(f"{proc.label}: {kind}: {fields}")

    def say(self, text):
        print(text, flush=True)

    def clock(self, t=None):
        t = now() if t is None else t
        base = self.t0 if self.t0 is not None else self.created
        seconds = t - base
        sign = "-" if seconds < 0 else ""
        seconds = abs(seconds)
        return f"{sign}{int(seconds // 60):02d}:{seconds % 60:06.3f}"

    def fail(self, reason):
        with self.lock:
            self.failures.append(reason)
        self.say(f"[{self.clock()}] FAILURE: {reason}")

    # ---------- events

    def handle(self, proc, event, t):
        kind = event.get("event")
        if kind == "message":
            self.on_message(proc, event, t)
            return
        if kind == "attachment-progress":
            return
        self.log_event(proc, t, event)
        if kind == "ticket":
            proc.tickets.put(event.get("ticket"))
        elif kind == "joined":
            proc.joined_t = t
            proc.participant = event.get("participant")
            proc.joined.set()
        elif kind == "attachment-shared":
            proc.shared.put(event)
        elif kind == "attachment-complete":
            with self.lock:
                self.completes.setdefault((proc.label, event.get("id")), (t, event.get("blake2b")))
        elif kind == "attachment-failed":
            with self.lock:
                self.failed_attachments.append((t, proc.label, event.get("id"), event.get("message")))
        elif kind == "undelivered":
            with self.lock:
                self.undelivered.append((t, proc, event.get("name"), int(event.get("count", 0)), event.get("reason")))
        elif kind in ("participant-left", "participant-joined"):
            with self.lock:
                self.roster.append((t, proc, event.get("name"), kind[len("participant-"):], event.get("reason")))
                if event.get("reason") == "unreachable":
                    self.unreachable.append((t, proc.label, event.get("name")))
        elif kind == "messages-dropped":
            with self.lock:
                self.dropped.append((t, proc.label, event))
        elif kind == "eligibility":
            if not event.get("eligible", True):
                with self.lock:
                    self.ineligible.append((t, proc.label))
        elif kind == "left":
            proc.left_seen = True
        elif kind == "error":
            with self.lock:
                self.errors.append((t, proc.label, event.get("code"), event.get("message")))
            self.say(f"[{self.clock(t)}] {proc.label} error {event.get('code')}: {event.get('message')}")
        elif kind == "session-over":
            with self.lock:
                self.session_over.append((t, proc.label, event.get("reason")))

    def on_message(self, proc, event, t):
        text = event.get("text", "")
        parts = text.split(" ")
        with self.lock:
            if len(parts) != 2 or parts[0] not in self.sent or not parts[1].isdigit() or \
                    event.get("name") != parts[0]:
                self.bogus.append((proc.label, text[:80], event.get("name")))
                return
            sender, seq = parts[0], int(parts[1])
            if seq < 1 or seq > len(self.sent[sender]) or sender == proc.name:
                self.bogus.append((proc.label, text[:80], event.get("name")))
                return
            self.received += 1
            counts = self.recv.get((proc.name, sender))
            if counts is None:
                counts = self.recv[(proc.name, sender)] = bytearray()
                self.recv_by[(proc.name, sender)] = bytearray()
                self.arrivals[(proc.name, sender)] = (array.array("d"), array.array("q"))
            if len(counts) <= seq:
                counts.extend(bytes(max(seq + 1 - len(counts), 4096)))
            firsts = self.recv_by[(proc.name, sender)]
            if len(firsts) < len(counts):
                firsts.extend(bytes(len(counts) - len(firsts)))
            if counts[seq]:
                self.duplicate_count += 1
                if len(self.duplicates) < EXAMPLES:
                    across = firsts[seq] != proc.number % 256
                    self.duplicates.append((proc.label, sender, seq, across, self.clock(t)))
            else:
                firsts[seq] = proc.number % 256
                times, seqs = self.arrivals[(proc.name, sender)]
                times.append(t)
                seqs.append(seq)
                key = (proc.label, sender)
                last = self.last_seq.get(key, 0)
                if seq < last:
                    self.out_of_order_count += 1
                    if len(self.out_of_order) < EXAMPLES:
                        self.out_of_order.append((proc.label, sender, seq, last, self.clock(t)))
                else:
                    self.last_seq[key] = seq
            counts[seq] = min(counts[seq] + 1, 255)

    # ---------- processes

    def node_argv(self, name, role, ticket=None):
        argv = [self.binary, role]
        if ticket:
            argv.append(ticket)
        argv += ["--json", "--name", name, "--identity", os.path.join(self.work, "ids", name),
                 "--listen", "127.0.0.1:0", "--data-dir", os.path.join(self.work, "data", name)]
        return argv

    def start(self, name, role, ticket=None):
        number = sum(1 for p in self.procs if p.name == name)
        proc = Proc(self, name, number, role, self.node_argv(name, role, ticket))
        with self.lock:
            self.procs.append(proc)
            self.current[name] = proc
        return proc

    def wait_joined(self, proc, timeout=JOIN_WAIT_S):
        deadline = now() + timeout
        while now() < deadline:
            if proc.joined.wait(0.2):
                return True
            if not proc.running():
                return False
        return False

    def start_sender(self, proc):
        proc.sender = threading.Thread(target=self.send_loop, args=(proc,), name=f"send-{proc.label}", daemon=True)
        proc.sender.start()

    def send_loop(self, proc):
        interval = self.args.line_interval_ms / 1000.0
        next_t = now()
        while not self.stop_traffic.is_set() and not proc.stdin_closed:
            with self.lock:
                self.seq[proc.name] += 1
                seq = self.seq[proc.name]
                entry = [now(), proc, True]
                self.sent[proc.name].append(entry)
            if not proc.write(f"{proc.name} {seq}"):
                entry[2] = False  # never reached the process: not counted
                break
            next_t += interval
            delay = next_t - now()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1.0:
                next_t = now()  # far behind (a stalled pipe): no burst to catch up

    def stop_proc(self, proc, final):
        proc.stopping = True
        proc.final = final
        if not final:
            proc.leave_t = now()
        proc.close_input()
        if proc.sender:
            proc.sender.join(5)

    def check_stopped(self, proc, why):
        proc.wait_stopped()
        if proc.forced:
            self.fail(f"{proc.label} (pid {proc.pid}) did not exit within {STOP_WAIT_S:.0f} s after its input closed "
                      f"({why}); terminated, exit {proc.exit_code}")
        elif proc.exit_code != 0:
            self.fail(f"{proc.label} (pid {proc.pid}) exited {proc.exit_code} after leaving ({why}); stderr: "
                      f"{proc.stderr_tail(3)}")
        elif not proc.left_seen:
            self.fail(f"{proc.label} (pid {proc.pid}) exited 0 without printing `left` ({why})")

    def watch_exits(self):
        for proc in list(self.procs):
            if not proc.stopping and not proc.crashed and not proc.running():
                proc.crashed = True
                proc.exit_t = now()
                proc.exit_code = proc.proc.returncode
                self.fail(f"{proc.label} (pid {proc.pid}) exited on its own with status {proc.exit_code}; stderr: "
                          f"{proc.stderr_tail(3)}")

    def sample_loop(self):
        while not self.finished.wait(SAMPLE_EVERY_S):
            for proc in list(self.procs):
                if proc.running():
                    proc.sample()

    # ---------- schedule

    def members(self, exclude=None):
        return [p for n, p in sorted(self.current.items()) if n != exclude and p.member()]

    def share(self, count):
        first = count % len(self.names)
        candidates = [self.current[n] for n in self.names[first:] + self.names[:first]]
        sharer = next((p for p in candidates if p.member()), None)
        if sharer is None:
            self.fail(f"share {count + 1}: no member to share from")
            return
        size = int(self.args.share_mib * 1024 * 1024)
        path = os.path.join(self.work, "shares", f"share-{count + 1:04d}.bin")
        data = os.urandom(size)
        digest = hashlib.blake2b(data).hexdigest()
        with open(path, "wb") as f:
            f.write(data)
        del data
        while not sharer.shared.empty():
            sharer.shared.get_nowait()
        t = now()
        if not sharer.write(f"/share {path}"):
            self.fail(f"share {count + 1}: could not write to {sharer.label}")
            return
        try:
            event = sharer.shared.get(timeout=SHARE_WAIT_S)
        except queue.Empty:
            self.fail(f"share {count + 1}: {sharer.label} printed no attachment-shared within {SHARE_WAIT_S:.0f} s")
            return
        if event.get("size") != size:
            self.fail(f"share {count + 1}: attachment-shared says size {event.get('size')}, the file has {size}")
        with self.lock:
            self.shares.append({"id": event.get("id"), "sharer": sharer.label, "t": t, "size": size,
                                "blake2b": digest, "path": path, "number": count + 1})

    def restart(self, count):
        victims = self.names[1:]
        name = victims[count % len(victims)]
        old = self.current[name]
        # A member that leaves takes the only copy of a file it just shared that nobody has fetched yet (its data
        # directory's session files go with it): wait until the others hold what it shared, within a bound.
        deadline = now() + HANDOFF_WAIT_S
        while now() < deadline and old.member() and not self.handed_off(old):
            time.sleep(0.1)
        record = {"name": name, "old": old.label, "t": now()}
        self.stop_proc(old, final=False)
        if old.crashed:  # already reported; only collected here
            old.wait_stopped()
        else:
            self.check_stopped(old, "restart")
        record["exit_s"] = now() - record["t"]
        joined = False
        for attempt in range(3):
            inviters = self.members(exclude=name)
            if not inviters:
                self.fail(f"restart of {name}: no running member to invite it")
                break
            inviter = inviters[(count + attempt) % len(inviters)]
            while not inviter.tickets.empty():
                inviter.tickets.get_nowait()
            t_invite = now()
            if not inviter.write("/invite"):
                continue
            try:
                ticket = inviter.tickets.get(timeout=TICKET_WAIT_S)
            except queue.Empty:
                self.fail(f"restart of {name}: {inviter.label} printed no ticket within {TICKET_WAIT_S:.0f} s")
                continue
            record["invite_s"] = now() - t_invite
            record["inviter"] = inviter.label
            t_join = now()
            proc = self.start(name, "join", ticket)
            if self.wait_joined(proc):
                record["join_s"] = proc.joined_t - t_join
                record["new"] = proc.label
                self.start_sender(proc)
                joined = True
                break
            reason = "exited " + str(proc.proc.poll()) if not proc.running() else f"no joined in {JOIN_WAIT_S:.0f} s"
            self.fail(f"restart of {name}: {proc.label} did not join through {inviter.label}'s ticket ({reason}); "
                      f"stderr: {proc.stderr_tail(3)}")
            self.stop_proc(proc, final=False)
            proc.wait_stopped()
        record["joined"] = joined
        self.restarts.append(record)
        self.say(f"[{self.clock()}] restart {count + 1}: {record['old']} left (exit after {record['exit_s']:.2f} s), "
                 + (f"{record['new']} joined through {record['inviter']}'s ticket in {record['join_s'] * 1000:.0f} ms"
                    if joined else "rejoin FAILED"))

    def handed_off(self, proc):
        """Whether every other member has completed every attachment `proc` shared."""
        with self.lock:
            mine = [share["id"] for share in self.shares if share["sharer"] == proc.label]
            return all((other.label, ident) in self.completes
                       for other in self.current.values() if other is not proc and other.member() for ident in mine)

    def progress(self):
        with self.lock:
            sent = sum(sum(1 for e in entries if e[2]) for entries in self.sent.values())
            received, dups = self.received, self.duplicate_count
            completes = len(self.completes)
        parts = []
        for name in self.names:
            proc = self.current.get(name)
            if proc and proc.samples:
                _, rss, fds = proc.samples[-1]
                parts.append(f"{proc.label} {rss / 1024:.1f} MiB {fds} fd")
        self.say(f"[{self.clock()}] sent {sent} received {received} duplicates {dups} shares {len(self.shares)} "
                 f"completions {completes} restarts {len(self.restarts)}; " + ", ".join(parts))

    def drained(self):
        """Whether every running member has every other running member's last line and every attachment."""
        live = [p for p in self.current.values() if p.member()]
        with self.lock:
            for receiver in live:
                for sender in live:
                    if sender is receiver:
                        continue
                    entries = self.sent[sender.name]
                    last = next((i + 1 for i in range(len(entries) - 1, -1, -1)
                                 if entries[i][2] and entries[i][0] >= receiver.joined_t), None)
                    if last is None:
                        continue
                    counts = self.recv.get((receiver.name, sender.name))
                    if counts is None or len(counts) <= last or not counts[last]:
                        return False
                for share in self.shares:
                    if (receiver.label, share["id"]) not in self.completes:
                        return False
        return True

    # ---------- the run

    def run(self):
        args = self.args
        version = subprocess.run([self.binary, "--version"], capture_output=True, text=True, timeout=30)
        self.version = (version.stdout or version.stderr).strip()
        self.say(f"huddle soak: {self.binary} ({self.version}); work directory {self.work}")
        self.say(f"members {args.members}, {args.minutes:g} min, a line every {args.line_interval_ms:g} ms per member, "
                 f"{args.share_mib:g} MiB shared every {args.share_every_s:g} s, a restart every "
                 f"{args.restart_every_s:g} s, warm-up {args.warmup_minutes:g} min, bounds "
                 f"+{args.rss_growth_mib:g} MiB RSS / +{args.fd_growth} fds, grace {self.grace:g} s")
        watchdog = threading.Timer(args.minutes * 60 + args.drain_s + WATCHDOG_SLACK_S, self.watchdog)
        watchdog.daemon = True
        watchdog.start()
        threading.Thread(target=self.sample_loop, name="sampler", daemon=True).start()

        host = self.start(self.names[0], "host")
        try:
            ticket = host.tickets.get(timeout=TICKET_WAIT_S)
        except queue.Empty:
            self.fail(f"the host printed no ticket within {TICKET_WAIT_S:.0f} s; stderr: {host.stderr_tail(5)}")
            return
        if not self.wait_joined(host):
            self.fail(f"the host printed no joined; stderr: {host.stderr_tail(5)}")
            return
        for name in self.names[1:]:
            proc = self.start(name, "join", ticket)
            if not self.wait_joined(proc):
                self.fail(f"{proc.label} did not join with the host's ticket; stderr: {proc.stderr_tail(5)}")
                return
        self.t0 = now()
        self.say(f"[{self.clock()}] {args.members} members joined; traffic starts")
        for proc in self.members():
            proc.sample()
            self.start_sender(proc)
        self.t_end = self.t0 + args.minutes * 60
        next_share = self.t0 + args.share_every_s if args.share_every_s > 0 else INF
        next_restart = self.t0 + args.restart_every_s if args.restart_every_s > 0 and args.members > 1 else INF
        next_progress = self.t0 + PROGRESS_EVERY_S
        shares = restarts = 0
        while now() < self.t_end:
            time.sleep(0.2)
            self.watch_exits()
            t = now()
            if t >= next_share and t < self.t_end:
                self.share(shares)
                shares += 1
                next_share += args.share_every_s
            if now() >= next_restart and now() < self.t_end:
                self.restart(restarts)
                restarts += 1
                next_restart += args.restart_every_s
            if now() >= next_progress:
                self.progress()
                next_progress += PROGRESS_EVERY_S
        self.stop_traffic.set()
        for proc in self.procs:
            if proc.sender:
                proc.sender.join(5)
        self.traffic_end = now()
        self.say(f"[{self.clock()}] traffic stopped; draining (up to {args.drain_s:g} s)")
        deadline = now() + args.drain_s
        while now() < deadline and not self.drained():
            time.sleep(0.25)
            self.watch_exits()
        self.drain_s = now() - self.traffic_end
        self.drain_complete = self.drained()
        self.say(f"[{self.clock()}] drain {'complete' if self.drain_complete else 'timed out'} after "
                 f"{self.drain_s:.1f} s")

    def watchdog(self):
        self.say(f"[{self.clock()}] FAILURE: watchdog: the soak ran past its bound; killing every process it started")
        for proc in self.procs:
            if proc.running():
                try:
                    proc.proc.kill()
                except OSError:
                    pass
        os._exit(1)

    def stop_all(self):
        """Stops every process this soak started that still runs: input closed, wait, SIGTERM, SIGKILL."""
        live = [p for p in self.procs if p.running() and not p.stopping]
        for proc in live:
            self.stop_proc(proc, final=True)
        for proc in live:
            self.check_stopped(proc, "end of the soak")
        for proc in self.procs:  # anything left (a stop interrupted midway)
            if proc.running():
                proc.close_input()
                proc.wait_stopped()
        self.finished.set()

    # ---------- analysis

    def analyse(self):
        args, grace = self.args, self.grace
        failures = list(self.failures)
        lines = []
        out = lines.append
        intervals = {}
        for proc in self.procs:
            if proc.joined_t is None:
                continue
            end = proc.leave_t if proc.leave_t is not None else (proc.exit_t if proc.crashed else INF)
            intervals.setdefault(proc.name, []).append((proc.joined_t, end, proc))
        for name in intervals:
            intervals[name].sort(key=lambda item: item[0])
        starts = {name: [item[0] for item in items] for name, items in intervals.items()}

        def interval_of(name, t):
            items = intervals.get(name, [])
            index = bisect.bisect_right(starts.get(name, []), t) - 1
            if index >= 0 and t < items[index][1]:
                return index
            return None

        sent_total = {name: sum(1 for e in entries if e[2]) for name, entries in self.sent.items()}

        def applicable(sender, seq, receiver):
            """R's interval index when line SEQ of S was written while both were members, else None."""
            t, proc, written = self.sent[sender][seq - 1]
            if not written or proc.joined_t is None:
                return None
            return interval_of(receiver, t)

        # Which lines the `undelivered` reports name. A report carries only a count N. What a sender reports is
        # what its receiver never acknowledged, one contiguous run of its lines in order: the report is taken to
        # name the N lines from the first one R had not received when the report was printed (after the lines an
        # earlier report named), among the lines already written to S that R was a member for.
        reports = {}
        for t, proc, receiver, count, _ in self.undelivered:
            reports.setdefault((proc.name, receiver), []).append((t, count))
        reported = {}
        unmatched = 0
        for (sender, receiver), items in reports.items():
            if receiver not in intervals or sender not in self.sent:
                unmatched += sum(count for _, count in items)
                continue
            entries = self.sent[sender]
            received_at = array.array("d", bytes(8 * (len(entries) + 2)))
            times, seqs = self.arrivals.get((receiver, sender), ([], []))
            for t, seq in zip(times, seqs):
                if seq < len(received_at) and not received_at[seq]:
                    received_at[seq] = t
            covered = reported.setdefault((sender, receiver), set())
            cursor = 0
            for t_report, count in sorted(items, key=lambda item: item[0]):
                seq = cursor + 1
                while seq <= len(entries) and entries[seq - 1][0] <= t_report and (
                        applicable(sender, seq, receiver) is None or 0 < received_at[seq] <= t_report):
                    seq += 1
                cursor = seq - 1
                named = 0
                while named < count and seq <= len(entries) and entries[seq - 1][0] <= t_report:
                    if applicable(sender, seq, receiver) is not None:
                        covered.add(seq)
                        named += 1
                        cursor = seq
                    seq += 1
                unmatched += count - named

        # Which receivers each sender process had dropped, and when (participant-left until participant-joined).
        dropped_at = {}
        for t, proc, name, kind, _ in sorted(self.roster, key=lambda item: item[0]):
            dropped_at.setdefault((proc, name), []).append((t, kind == "left"))

        def sender_had_dropped(proc, receiver, t):
            changes = dropped_at.get((proc, receiver), [])
            index = bisect.bisect_right([c[0] for c in changes], t)
            return index > 0 and changes[index - 1][1]

        steady = steady_ok = steady_reported = window = window_ok = window_reported = window_neither = absent = 0
        false_reports = 0
        lost = []
        per_pair = {}  # (sender, receiver, interval index) -> counters and missing lines
        for sender, entries in self.sent.items():
            for receiver in self.names:
                if receiver == sender:
                    continue
                counts = self.recv.get((receiver, sender), bytearray())
                covered = reported.get((sender, receiver), set())
                for index, (t, proc, written) in enumerate(entries):
                    if not written:
                        continue
                    seq = index + 1
                    j = interval_of(receiver, t)
                    if j is None or proc.joined_t is None:
                        absent += 1
                        continue
                    r_join, r_end, _ = intervals[receiver][j]
                    s_end = proc.leave_t if proc.leave_t is not None else (proc.exit_t if proc.crashed else INF)
                    low, high = max(r_join, proc.joined_t), min(r_end, s_end)
                    got = seq < len(counts) and counts[seq] > 0
                    named = seq in covered
                    if named and got:
                        false_reports += 1
                    is_steady = low + grace <= t <= high - grace
                    if got:
                        if is_steady:
                            steady += 1
                            steady_ok += 1
                        else:
                            window += 1
                            window_ok += 1
                        if not named:
                            continue
                    pair = per_pair.setdefault((sender, receiver, j), {
                        "window": [], "reported": [], "lost": [], "false": 0, "dropped": 0})
                    if got:
                        pair["false"] += 1
                    elif is_steady:
                        steady += 1
                        if named:
                            steady_reported += 1
                            pair["reported"].append((seq, t))
                        else:
                            lost.append((sender, receiver, seq, t))
                            pair["lost"].append((seq, t))
                            if sender_had_dropped(proc, receiver, t):
                                pair["dropped"] += 1
                    else:
                        window += 1
                        if named:
                            window_reported += 1
                            pair["reported"].append((seq, t))
                        else:
                            window_neither += 1
                            pair["window"].append((seq, t))
        details = []
        for (sender, receiver, j), pair in sorted(per_pair.items()):
            label = intervals[receiver][j][2].label
            events = [(t, count) for t, proc, name, count, _ in self.undelivered
                      if proc.name == sender and name == receiver]
            details.append(
                f"  {sender}->{label}: lost {len(pair['lost'])} {self.runs(pair['lost'])}"
                + (f" ({pair['dropped']} sent while {sender} counted {receiver} gone)" if pair["dropped"] else "")
                + f"; reported undelivered {len(pair['reported'])} {self.runs(pair['reported'])}; window lines "
                f"neither delivered nor reported {len(pair['window'])} {self.runs(pair['window'])}; reported but "
                f"delivered {pair['false']}; {sender}'s undelivered reports about {receiver}: "
                + (", ".join(f"{count} at {self.clock(t)}" for t, count in events[:4])
                   + (", ..." if len(events) > 4 else "") if events else "none"))
        lost.sort(key=lambda item: item[3])
        lost_dropped = sum(pair["dropped"] for pair in per_pair.values())
        report_lines = sum(count for _, _, _, count, _ in self.undelivered)

        duration = (self.traffic_end - self.t0) if self.t0 and hasattr(self, "traffic_end") else 0.0
        out("== huddle soak summary ==")
        out(f"binary: {self.binary} ({getattr(self, 'version', '?')})")
        out(f"duration: {duration / 60:.2f} min of traffic, drain {getattr(self, 'drain_s', 0):.1f} s "
            f"({'complete' if getattr(self, 'drain_complete', False) else 'TIMED OUT'}); members {args.members}; "
            f"a line every {args.line_interval_ms:g} ms per member; {args.share_mib:g} MiB every "
            f"{args.share_every_s:g} s; a restart every {args.restart_every_s:g} s")
        out(f"rule: a line is steady for a receiver when written to its sender while both were members, more than "
            f"{grace:g} s after the later `joined` and more than {grace:g} s before either began to leave; a steady "
            f"line must arrive exactly once and in per-sender order, or be named by an `undelivered` report (a report "
            f"of N names the N lines from the first one the receiver lacked when it was printed); window lines "
            f"(within {grace:g} s of a join or leave of either) are counted apart and never fail; a duplicate always "
            f"fails")
        out(f"lines sent: {sum(sent_total.values())} (" +
            ", ".join(f"{name} {sent_total[name]}" for name in self.names) + f"); received: {self.received}")
        out(f"steady lines: expected {steady}, delivered {steady_ok}, reported undelivered {steady_reported}, "
            f"lost {len(lost)}" + (f" ({lost_dropped} sent while the sender counted the receiver gone)"
                                   if lost_dropped else ""))
        out(f"window lines: {window}, delivered {window_ok}, reported undelivered {window_reported}, "
            f"neither {window_neither}")
        out(f"not applicable (the receiver was not a member when the line was sent): {absent}")
        if details:
            out("per sender and receiver process, where lines were missing or reported (SEQ ranges, written at):")
            lines.extend(details[:40])
            if len(details) > 40:
                out(f"  ... {len(details) - 40} more")
        out(f"duplicates: {self.duplicate_count}; out of per-sender order: {self.out_of_order_count}; "
            f"unrecognised lines: {len(self.bogus)}")
        out(f"undelivered reports: {len(self.undelivered)} events, {report_lines} lines "
            f"(naming {window_reported + steady_reported} missing lines, {false_reports} lines that arrived after all, "
            f"{unmatched} no line)")
        if self.duplicate_count:
            failures.append(f"{self.duplicate_count} duplicated line(s), e.g. " + "; ".join(
                f"{r} got {s} {q} twice{' (across a restart)' if a else ''} at {c}"
                for r, s, q, a, c in self.duplicates[:3]))
        if self.out_of_order_count:
            failures.append(f"{self.out_of_order_count} line(s) out of per-sender order, e.g. " + "; ".join(
                f"{r} got {s} {q} after {last} at {c}" for r, s, q, last, c in self.out_of_order[:3]))
        if self.bogus:
            failures.append(f"{len(self.bogus)} unrecognised message(s), e.g. {self.bogus[:3]}")
        if lost:
            pairs = {}
            for sender, receiver, seq, t in lost:
                pairs.setdefault((sender, receiver), []).append((seq, t))
            detail = "; ".join(
                f"{s}->{r}: {len(items)} (seq {items[0][0]} at {self.clock(items[0][1])} .. seq {items[-1][0]} at "
                f"{self.clock(items[-1][1])})" for (s, r), items in sorted(pairs.items()))
            failures.append(f"{len(lost)} steady line(s) lost: {detail}")

        # Attachments.
        required = completed = 0
        late = late_done = 0
        attachment_problems = []
        for share in self.shares:
            for proc in self.procs:
                done = self.completes.get((proc.label, share["id"]))
                if done and done[1] != share["blake2b"]:
                    attachment_problems.append(
                        f"{proc.label}: share {share['number']} ({share['id']}) completed with blake2b "
                        f"{done[1][:16]}..., the file's is {share['blake2b'][:16]}...")
                throughout = (proc.joined_t is not None and proc.joined_t <= share["t"] and proc.final
                              and not proc.crashed)
                if throughout:
                    required += 1
                    if done:
                        completed += 1
                    else:
                        attachment_problems.append(
                            f"{proc.label}: share {share['number']} ({share['id']}, by {share['sharer']}) never "
                            f"completed")
                elif proc.joined_t is not None and proc.joined_t > share["t"]:
                    late += 1
                    late_done += 1 if done else 0
        for t, label, ident, message in self.failed_attachments:
            attachment_problems.append(f"{label}: attachment-failed {ident} at {self.clock(t)}: {message}")
        out(f"attachments: shared {len(self.shares)} ({args.share_mib:g} MiB each); complete on every member "
            f"throughout: {completed} of {required}; catch-up downloads by later joiners: {late_done} of {late}; "
            f"attachment-failed: {len(self.failed_attachments)}")
        if attachment_problems:
            failures.append(f"{len(attachment_problems)} attachment problem(s): " + "; ".join(attachment_problems[:5]))

        # Restarts.
        joined = [r for r in self.restarts if r.get("joined")]
        join_ms = sorted(r["join_s"] * 1000 for r in joined)
        out(f"restarts: {len(self.restarts)} ({len(joined)} rejoined)" + (
            f"; leave-to-exit max {max(r['exit_s'] for r in self.restarts):.2f} s; rejoin (join to joined) "
            f"median {join_ms[len(join_ms) // 2]:.0f} ms, max {join_ms[-1]:.0f} ms" if joined else ""))

        # Memory and descriptors.
        out(f"memory and descriptors (sampled every {SAMPLE_EVERY_S:g} s; baseline: the first sample "
            f"{args.warmup_minutes:g} min after the process joined; bound +{args.rss_growth_mib:g} MiB, "
            f"+{args.fd_growth} fds):")
        warmup = args.warmup_minutes * 60
        for proc in self.procs:
            samples = proc.samples
            lived = ((proc.exit_t or now()) - proc.start_t) / 60
            head = f"  {proc.label:6} pid {proc.pid:<7} lived {lived:5.1f} min"
            if not samples:
                out(f"{head}  no samples")
                continue
            first_rss, first_fd = samples[0][1], samples[0][2]
            if proc.joined_t is None:
                out(f"{head}  never joined")
                continue
            base_index = next((i for i, s in enumerate(samples) if s[0] >= proc.joined_t + warmup), None)
            peak_rss = max(s[1] for s in samples)
            peak_fd = max(s[2] for s in samples)
            if base_index is None:
                why = "the soak ended" if proc.final else "it left"
                out(f"{head}  not checked ({why} before its warm-up did); first RSS {first_rss / 1024:.1f} MiB "
                    f"{first_fd} fds, max {peak_rss / 1024:.1f} MiB {peak_fd} fds")
                continue
            _, base_rss, base_fd = samples[base_index]
            after = samples[base_index:]
            max_rss = max(s[1] for s in after)
            max_fd = max(s[2] for s in after)
            rss_growth = (max_rss - base_rss) / 1024
            fd_growth = max_fd - base_fd
            ok = rss_growth <= args.rss_growth_mib and fd_growth <= args.fd_growth
            out(f"{head}  start {first_rss / 1024:.1f} MiB {first_fd} fds; at warm-up end "
                f"{base_rss / 1024:.1f} MiB {base_fd} fds; max after {max_rss / 1024:.1f} MiB "
                f"({rss_growth:+.1f}) {max_fd} fds ({fd_growth:+d}); {len(after)} samples  "
                f"{'ok' if ok else 'GROWTH'}")
            if not ok:
                failures.append(f"{proc.label} grew by {rss_growth:.1f} MiB RSS and {fd_growth} fds after its "
                                f"warm-up (bounds {args.rss_growth_mib:g} MiB, {args.fd_growth})")

        # Other events.
        if self.errors:
            failures.append(f"{len(self.errors)} error event(s): " + "; ".join(
                f"{label} {code}: {message} at {self.clock(t)}" for t, label, code, message in self.errors[:5]))
        if self.session_over:
            failures.append(f"session-over on {[label for _, label, _ in self.session_over]}")
        notes = []
        leave_times = sorted(t for p in self.procs for t in (p.leave_t, p.joined_t) if t is not None)

        def near_change(t):
            index = bisect.bisect_left(leave_times, t - grace)
            return index < len(leave_times) and leave_times[index] <= t + grace

        quiet_unreachable = [(t, label, name) for t, label, name in self.unreachable if not near_change(t)]
        if self.unreachable:
            notes.append(f"participant-left unreachable: {len(self.unreachable)} ({len(quiet_unreachable)} away from "
                         f"any join/leave), e.g. " + "; ".join(
                f"{label} says {name} at {self.clock(t)}" for t, label, name in self.unreachable[:5]))
        quiet_reports = [(t, p.label, r, c, why) for t, p, r, c, why in self.undelivered if not near_change(t)]
        if quiet_reports:
            notes.append(f"undelivered reports away from any join/leave: {len(quiet_reports)}, e.g. " + "; ".join(
                f"{label} -> {r} {c} ({why}) at {self.clock(t)}" for t, label, r, c, why in quiet_reports[:5]))
        if self.dropped:
            notes.append(f"messages-dropped: {len(self.dropped)}, e.g. {self.dropped[0][2]}")
        if self.ineligible:
            notes.append(f"eligibility false: {[(label, self.clock(t)) for t, label in self.ineligible[:5]]}")
        if not getattr(self, "drain_complete", True):
            notes.append("the drain timed out (some last lines or downloads had not arrived)")
        for note in notes:
            out(f"note: {note}")
        return lines, failures

    def runs(self, items, limit=3):
        """`items` ((SEQ, sent at) in SEQ order) as consecutive runs: "[12-40 00:10.2..00:10.8, 90 ...]"."""
        runs = []
        for seq, t in items:
            if runs and runs[-1][1] == seq - 1:
                runs[-1][1], runs[-1][3] = seq, t
            else:
                runs.append([seq, seq, t, t])
        text = ", ".join(f"{a}-{b} {self.clock(ta)}..{self.clock(tb)}" if a != b else f"{a} {self.clock(ta)}"
                         for a, b, ta, tb in runs[:limit])
        return f"[{text}{', ...' if len(runs) > limit else ''}]" if runs else "[]"

    def cleanup(self, passed):
        for sub in ("shares", "data"):
            shutil.rmtree(os.path.join(self.work, sub), ignore_errors=True)
        self.events_log.close()
        if passed and not self.args.keep_work_dir:
            shutil.rmtree(self.work, ignore_errors=True)
            return None
        return self.work


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="Soak real huddle processes: continuous chat, periodic attachments, restarts; fails on a lost "
                    "or duplicated line or on memory or descriptor growth after warm-up.")
    parser.add_argument("binary", help="the huddle binary (a release build)")
    parser.add_argument("--members", type=int, default=3, help="processes, the host included (default 3)")
    parser.add_argument("--minutes", type=float, default=60, help="minutes of traffic (default 60)")
    parser.add_argument("--line-interval-ms", type=float, default=20, help="a line per member every N ms (20)")
    parser.add_argument("--share-every-s", type=float, default=60, help="share a file every N s (60; 0: never)")
    parser.add_argument("--share-mib", type=float, default=4, help="size of each shared file in MiB (4)")
    parser.add_argument("--restart-every-s", type=float, default=240, help="restart a member every N s (240; 0: never)")
    parser.add_argument("--warmup-minutes", type=float, default=3, help="warm-up before the baseline (3)")
    parser.add_argument("--rss-growth-mib", type=float, default=16, help="RSS growth bound after warm-up (16 MiB)")
    parser.add_argument("--fd-growth", type=int, default=8, help="descriptor growth bound after warm-up (8)")
    parser.add_argument("--grace-s", type=float, default=5, help="window around a join or leave (5 s)")
    parser.add_argument("--drain-s", type=float, default=60, help="wait at most N s for the last lines (60)")
    parser.add_argument("--work-dir", help="directory for identities, data, logs (default: a fresh temporary one)")
    parser.add_argument("--keep-work-dir", action="store_true", help="keep the work directory after a PASS")
    args = parser.parse_args()
    if args.members < 2:
        parser.error("--members must be at least 2")
    if args.line_interval_ms <= 0 or args.minutes <= 0 or args.share_mib <= 0:
        parser.error("--minutes, --line-interval-ms and --share-mib must be positive")
    if not os.access(args.binary, os.X_OK):
        parser.error(f"{args.binary} is not an executable")
    return args


def main():
    args = parse_arguments()
    soak = Soak(args)

    def terminate(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, terminate)
    interrupted = None
    try:
        soak.run()
    except KeyboardInterrupt as error:
        interrupted = f"interrupted ({error or 'SIGINT'})"
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        soak.stop_traffic.set()
        soak.stop_all()
    if soak.t0 is None:
        soak.t0 = soak.created
    if not hasattr(soak, "traffic_end"):
        soak.traffic_end = now()
    lines, failures = soak.analyse()
    if interrupted:
        failures.insert(0, interrupted)
    for line in lines:
        print(line)
    passed = not failures
    kept = soak.cleanup(passed)
    if kept:
        print(f"work directory kept: {kept} (events.log, logs/)")
    print("PASS" if passed else "FAIL")
    for reason in failures:
        print(f"  - {reason}")
    sys.stdout.flush()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
