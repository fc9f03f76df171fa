#!/usr/bin/env python3
"""A soak of real `huddle` processes on loopback (issue 34): chat, attachments and restarts for a long time.

    scripts/soak.py HUDDLE_BINARY [--members 3] [--minutes 60] [--line-interval-ms 20] [--share-every-s 60]
        [--share-mib 4] [--restart-every-s 240] [--freeze-every-s 0] [--freeze-s 42] [--warmup-minutes 3]
        [--rss-growth-mib 16] [--fd-growth 8] [--grace-s 5] [--drain-s 60] [--work-dir DIR] [--keep-work-dir]

What it does
- Starts `huddle host` and --members - 1 `huddle join` processes (all `--json`, on 127.0.0.1, each with an identity
  file and a data directory of its own under the work directory, so a restarted member keeps its identity).
- Every member writes a numbered chat line, "NAME SEQ", to its standard input every --line-interval-ms; SEQ counts
  per name across restarts.
- Every --share-every-s one member (round robin over all members, skipping one that is restarting or frozen) shares
  a fresh random file of --share-mib MiB with `/share`; its BLAKE2b-512 is computed here. 0: no shares.
- Every --restart-every-s one member other than the host (round robin) leaves gracefully (its standard input is
  closed; it must print `left` and exit 0) and joins again, with the same identity file, through a fresh ticket that
  a running member (round robin) prints for `/invite`. A member about to leave first waits (60 s at most) until the
  others have completed the files it shared: it holds the only copy of a file nobody fetched yet, and leaving deletes
  its session's data. A frozen member is neither restarted nor asked for a ticket. 0: no restarts.
- Every --freeze-every-s (0, the default: never) one member (round robin over all members, the host too, skipping
  one that is restarting, already frozen, or sharing or inviting just then) is stopped with SIGSTOP and continued
  with SIGCONT --freeze-s later (42: longer than the 30 s idle timeout, so the others count it unreachable), both by
  its pid, from a thread of its own. Its send loop keeps writing lines while it is frozen: they wait in the pipe
  (about 20 KiB for 42 s, within the 64 KiB a pipe holds) and go out when it resumes, as for a real stalled
  process. Lines are written without blocking: a write that finds the pipe full waits for room in steps of 0.2 s
  and gives up (FAIL, that member's lines stop) after 30 s plus --freeze-s. A frozen process is not sampled for
  memory and descriptors. Freezes start only during the traffic; the drain begins once every frozen member has
  been continued, and the end of the soak (also an interruption) continues every frozen member first.
- After --minutes the lines and shares stop; the soak waits up to --drain-s for the last lines (each received, or
  reported undelivered after it was written) and downloads, then closes every member's standard input and checks.

The delivery rule (also printed with the results)
- A line S sent (written to S's standard input) at time t and a receiver R: the line is *applicable* to R when R's
  process was a member then (between R's `joined` and the moment R's input was closed for a restart). It is *steady*
  when, in addition, t lies more than --grace-s seconds after the later of S's and R's `joined` and more than
  --grace-s seconds before either of them began to leave (the members that stay to the end never leave before the
  drain). Applicable lines that are not steady are *window* lines.
- Every steady line must reach R exactly once, and a receiver gets each sender's lines in increasing order. A missing
  line is *reported* rather than lost when an `undelivered` report of S about R names it. A report carries only a
  count N; what S reports is what R never acknowledged, a contiguous run of S's lines, so the report is taken to name
  the N lines starting at the first one R had not received when the report was printed (and after those an earlier
  report named), among the lines already written to the reporting process of S that were applicable to R and that it
  handled since its latest `participant-joined` for R before the report (a new connection; earlier lines belong to
  earlier reports or none), leaving out lines S handled while it counted R gone (see below: S never sent those). A
  steady line neither received nor reported is lost: FAIL. Lost lines written while S counted R gone (after S's
  `participant-left` for R, before its next `participant-joined`) are counted apart in the output, but still fail: R
  never left (unless a freeze excuses them, below). Lines a report names that arrive after all are counted ("reported
  but delivered"), not failures.
- Window lines are reported separately: delivered, reported undelivered, or neither (not a failure: the node may be
  mid-join or mid-leave).
- Freezes (--freeze-every-s) change none of the above but this: a steady line neither received nor reported is
  *dropped while gone*, counted apart and not a failure, when S's process counted R gone at the time it handled the
  line (after S's `participant-left` for R, before its next `participant-joined`) and a freeze of S or of R lies
  within --grace-s of that gone interval: a frozen member really was unreachable, the API only sends to the current
  participants, and the departure was reported. S handles a line when it is written, or, for a line written while S
  was frozen, at S's SIGCONT (it waited in the pipe); as the backlog and the timers that expired during the freeze are
  handled together then, S's `participant-left` printed within --grace-s after the SIGCONT counts as before such a
  line, and as before a line written less than 1 s after the SIGCONT (behind the backlog); a `participant-left`
  printed less than 0.05 s after a line was written counts as before it too (S reads its input a moment after the
  write, and the logs cannot order the two); those lines are counted apart again. A frozen receiver that gets lines its sender already reported makes them "reported but delivered"
  (counted, not a failure). Silent loss, duplicates and lines out of order still FAIL, and so does a member that stays
  to the end still counting another one gone when the final stop begins (its last `participant-left` about it never
  followed by a `participant-joined`). The results print a timeline per freeze: SIGSTOP and SIGCONT, and the first
  `participant-left` and `participant-joined` (and the `undelivered` reports) about the frozen member at each other
  member and at the frozen member about each other one.
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
plus 10 minutes. Every process is stopped by its pid: input closed, 30 s, SIGTERM, 10 s, SIGKILL. Pipes are read by
one thread per process; standard error goes to a file per process in the work directory. The work directory (a fresh
temporary one unless --work-dir) keeps events.log (every event but chat lines and progress; SIGSTOP and SIGCONT as
soak-sigstop and soak-sigcont), receipts.txt (the SEQ runs each process was given and each receiver got, with times)
and the stderr files; attachments and data directories are deleted at the end, the rest too on PASS unless
--keep-work-dir.

Exit status: 0 on PASS, 1 on FAIL, 2 for a usage error. Standard library only.
"""

import argparse
import array
import bisect
import hashlib
import json
import os
import queue
import select
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
WRITE_WAIT_S = 30.0  # plus --freeze-s: how long a line may wait for room in a process's input pipe
RESUME_ORDER_S = 1.0  # a line written this soon after a frozen sender's SIGCONT is handled behind its backlog
READ_LATENCY_S = 0.05  # a line written this soon before S's participant-left for R may be read after it
RESUME_WAIT_S = 10.0  # plus --freeze-s: how long the end of the traffic waits for frozen members to be continued
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
        self.closing = False  # set before close_input takes the lock: a write waiting on a full pipe gives up
        self.write_timed_out = False
        self.frozen = False  # stopped with SIGSTOP by the freezer, not yet continued
        self.freezes = []  # [stop t, continue t or None]
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
        # Lines go out with non-blocking writes of the raw descriptor (each far below PIPE_BUF, so whole or not at
        # all): a writer facing a full pipe (a frozen or stalled process) waits in bounded steps, see write().
        self.stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self.stdin_fd, False)
        self.reader = threading.Thread(target=self.read_loop, name=f"read-{self.label}", daemon=True)
        self.reader.start()
        self.sender = None

    def running(self):
        return self.proc.poll() is None

    def member(self):
        return self.joined_t is not None and not self.stopping and self.running()

    def read_loop(self):
        last = 0.0
        for raw in self.proc.stdout:
            # Strictly increasing per process, so the order of its events survives lines read in one chunk.
            t = last = max(now(), last + 1e-6)
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
        """Writes one line to the process's input; False if the input is closed or broken, or stayed full for
        WRITE_WAIT_S plus --freeze-s (then `write_timed_out`). A full pipe (the process frozen or stalled) is waited
        on in steps of 0.2 s, so closing the input interrupts the wait."""
        data = text.encode() + b"\n"
        with self.stdin_lock:
            if self.stdin_closed:
                return False
            deadline = now() + WRITE_WAIT_S + self.soak.args.freeze_s
            while data:
                if self.closing:
                    return False
                try:
                    written = os.write(self.stdin_fd, data)
                    data = data[written:]
                    continue
                except BlockingIOError:
                    pass
                except (BrokenPipeError, OSError, ValueError):
                    return False
                if now() >= deadline:
                    self.write_timed_out = True
                    return False
                try:
                    select.select([], [self.stdin_fd], [], 0.2)
                except (OSError, ValueError):
                    return False
            return True

    def close_input(self):
        self.closing = True
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
        self.progress_seen = {}  # (proc label, attachment id) -> (t, the last attachment-progress event)
        self.failed_attachments = []  # (t, label, id, message)
        self.restarts = []
        self.freezes = []  # dicts: number, proc, stop_t, resume_t
        self.freeze_skips = []  # (t, why) of freeze slots that found no member to freeze
        self.busy = set()  # names a share or a restart is working with (sharer, leaver, inviter): never frozen
        self.freeze_lock = threading.Lock()  # serialises SIGSTOP and SIGCONT between the freezer and stop_all
        self.freeze_closed = False  # set by stop_all: no more SIGSTOP
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
            with self.lock:
                self.progress_seen[(proc.label, event.get("id"))] = (t, event)
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
            written_at = now()
            if not proc.write(f"{proc.name} {seq}"):
                entry[2] = False  # never reached the process: not counted
                if proc.write_timed_out:
                    self.fail(f"{proc.label} (pid {proc.pid}): its input pipe stayed full for "
                              f"{WRITE_WAIT_S + self.args.freeze_s:.0f} s (line {seq}); its sender stopped")
                break
            if now() - written_at > 0.5:
                entry[0] = now()  # it waited for room in the pipe: written when the write completed
            next_t += interval
            delay = next_t - now()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1.0:
                next_t = now()  # far behind (a stalled pipe): no burst to catch up

    def stop_proc(self, proc, final):
        proc.stopping = True
        proc.final = final
        if not final and proc.leave_t is None:  # the first time only (a failed rejoin leaves it current)
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
                if proc.running() and not proc.frozen:  # a frozen process is not sampled
                    proc.sample()

    # ---------- schedule

    def members(self, exclude=None):
        return [p for n, p in sorted(self.current.items()) if n != exclude and p.member()]

    def share(self, count):
        first = count % len(self.names)
        with self.lock:
            candidates = [self.current[n] for n in self.names[first:] + self.names[:first]]
            sharer = next((p for p in candidates if p.member() and not p.frozen), None)
            if sharer is not None:
                self.busy.add(sharer.name)
        if sharer is None:
            if any(p.frozen for p in self.current.values()):
                self.say(f"[{self.clock()}] share {count + 1} skipped: every running member is frozen or busy")
            else:
                self.fail(f"share {count + 1}: no member to share from")
            return
        try:
            self.share_from(sharer, count)
        finally:
            with self.lock:
                self.busy.discard(sharer.name)

    def share_from(self, sharer, count):
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
        with self.lock:
            # The member to restart and the first one to ask for a ticket are chosen together, neither frozen, and
            # kept from freezing (busy) until the restart is over.
            order = victims[count % len(victims):] + victims[:count % len(victims)]
            name = inviter = None
            for candidate in order:
                if self.current[candidate].frozen:
                    continue
                inviters = [p for p in self.members(exclude=candidate) if not p.frozen and p.name not in self.busy]
                if inviters:
                    name, inviter = candidate, inviters[count % len(inviters)]
                    self.busy.update((name, inviter.name))
                    break
        if name is None:
            self.say(f"[{self.clock()}] restart {count + 1} skipped: no member to restart with another one to invite "
                     f"it, neither frozen")
            return
        try:
            self.restart_member(count, name, inviter)
        finally:
            with self.lock:
                self.busy.discard(name)
                self.busy.discard(inviter.name)

    def restart_member(self, count, name, first_inviter):
        old = self.current[name]
        # A member that leaves takes the only copy of a file it just shared that nobody has fetched yet (its data
        # directory's session files go with it): wait until the others hold what it shared, within a bound.
        deadline = now() + HANDOFF_WAIT_S
        while now() < deadline and old.member() and not self.handed_off(old):
            time.sleep(0.1)
        record = {"name": name, "old": old.label, "t": now()}
        if old.stopping:  # it left before (a rejoin that failed): only the rejoin is tried again
            pass
        else:
            self.stop_proc(old, final=False)
            if old.crashed:  # already reported; only collected here
                old.wait_stopped()
            else:
                self.check_stopped(old, "restart")
        record["exit_s"] = now() - record["t"]
        joined = False
        for attempt in range(3):
            with self.lock:
                if attempt == 0 and first_inviter.member():
                    inviter = first_inviter  # reserved with the restart
                else:
                    inviters = [p for p in self.members(exclude=name) if not p.frozen]
                    inviter = inviters[(count + attempt) % len(inviters)] if inviters else None
                if inviter is not None and inviter is not first_inviter:
                    self.busy.add(inviter.name)
            if inviter is None:
                self.fail(f"restart of {name}: no running member that is not frozen to invite it")
                break
            try:
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
            finally:
                if inviter is not first_inviter:
                    with self.lock:
                        self.busy.discard(inviter.name)
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

    def freeze(self, count):
        """Stops one member with SIGSTOP (round robin over every name, the host's too), skipping one that is
        frozen, not a running member (restarting) or busy with a share or a restart."""
        first = count % len(self.names)
        with self.lock:
            victim = None
            for name in self.names[first:] + self.names[:first]:
                proc = self.current.get(name)
                if proc is not None and proc.member() and not proc.frozen and name not in self.busy:
                    victim = proc
                    break
            if victim is not None:
                victim.frozen = True
        if victim is None:
            self.freeze_skips.append((now(), "no member to freeze"))
            self.say(f"[{self.clock()}] freeze {count + 1} skipped: no running member that is not frozen or busy")
            return
        with self.freeze_lock:
            if self.freeze_closed:
                victim.frozen = False
                return
            t = now()
            victim.proc.send_signal(signal.SIGSTOP)  # by its pid; Popen does not signal a process it has reaped
            victim.freezes.append([t, None])
            record = {"number": len(self.freezes) + 1, "proc": victim, "stop_t": t, "resume_t": None}
            with self.lock:
                self.freezes.append(record)
        self.log_event(victim, t, {"event": "soak-sigstop"})
        self.say(f"[{self.clock(t)}] freeze {record['number']}: {victim.label} (pid {victim.pid}) stopped with "
                 f"SIGSTOP for {self.args.freeze_s:g} s")

    def resume(self, record):
        """SIGCONT for a frozen member (by its pid), once."""
        with self.freeze_lock:
            if record["resume_t"] is not None:
                return
            proc = record["proc"]
            t = now()
            proc.proc.send_signal(signal.SIGCONT)
            record["resume_t"] = t
            proc.freezes[-1][1] = t
            proc.frozen = False
        self.log_event(proc, t, {"event": "soak-sigcont"})
        self.say(f"[{self.clock(t)}] freeze {record['number']}: {proc.label} (pid {proc.pid}) continued with "
                 f"SIGCONT after {t - record['stop_t']:.1f} s")

    def pending_freezes(self):
        with self.lock:
            return [record for record in self.freezes if record["resume_t"] is None]

    def freeze_loop(self):
        """The freezer thread: a freeze every --freeze-every-s while the traffic runs, each continued --freeze-s
        later (also after the traffic stopped). Separate from the main loop, whose shares and restarts block."""
        every, length = self.args.freeze_every_s, self.args.freeze_s
        next_freeze = self.t0 + every
        count = 0
        while True:
            for record in self.pending_freezes():
                if now() >= record["stop_t"] + length:
                    self.resume(record)
            if self.stop_traffic.is_set() or self.freeze_closed:
                if not self.pending_freezes():
                    return
            elif now() >= next_freeze:
                if now() < self.t_end:
                    self.freeze(count)
                count += 1
                next_freeze += every
            time.sleep(0.05)

    def resume_all(self):
        """No more freezes; every frozen member is continued now (the end of the soak, an interruption)."""
        with self.freeze_lock:
            self.freeze_closed = True
        for record in self.pending_freezes():
            self.resume(record)

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
        frozen = [p.label for p in self.current.values() if p.frozen]
        self.say(f"[{self.clock()}] sent {sent} received {received} duplicates {dups} shares {len(self.shares)} "
                 f"completions {completes} restarts {len(self.restarts)} freezes {len(self.freezes)}"
                 + (f" (frozen now: {', '.join(frozen)})" if frozen else "") + "; " + ", ".join(parts))

    def drained(self):
        """Whether every running member has every other running member's last line and every attachment (never
        while a member is frozen)."""
        live = [p for p in self.current.values() if p.member()]
        if any(p.frozen for p in live):
            return False
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
                        written = entries[last - 1][0]
                        if not any(p is sender and n == receiver.name and t > written
                                   for t, p, n, _, _ in self.undelivered):
                            return False  # neither arrived nor reported undelivered since
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
                 f"{args.restart_every_s:g} s, "
                 + (f"a member frozen (SIGSTOP) for {args.freeze_s:g} s every {args.freeze_every_s:g} s, "
                    if args.freeze_every_s > 0 else "") + f"warm-up {args.warmup_minutes:g} min, bounds "
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
        if args.freeze_every_s > 0:
            threading.Thread(target=self.freeze_loop, name="freezer", daemon=True).start()
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
        if self.pending_freezes():
            # A member frozen near the end: its backlog and the others' lines to it go out once it is continued.
            self.say(f"[{self.clock()}] traffic stopped; waiting for the frozen member(s) to be continued")
            bound = now() + args.freeze_s + RESUME_WAIT_S
            while self.pending_freezes() and now() < bound:
                time.sleep(0.1)
                self.watch_exits()
            if self.pending_freezes():
                self.fail("frozen member(s) not continued in time by the freezer; continuing them now")
                self.resume_all()
        self.say(f"[{self.clock()}] traffic stopped; draining (up to {args.drain_s:g} s)")
        deadline = now() + args.drain_s
        while now() < deadline and not self.drained():
            time.sleep(0.25)
            self.watch_exits()
        self.drain_s = now() - self.traffic_end  # from the end of the traffic: includes a wait for a frozen member
        self.drain_complete = self.drained()
        self.say(f"[{self.clock()}] drain {'complete' if self.drain_complete else 'timed out'} after "
                 f"{self.drain_s:.1f} s")

    def watchdog(self):
        self.say(f"[{self.clock()}] FAILURE: watchdog: the soak ran past its bound; killing every process it started")
        for proc in self.procs:
            if proc.running():
                try:
                    proc.proc.kill()  # SIGKILL ends a stopped process too
                except OSError:
                    pass
        os._exit(1)

    def stop_all(self):
        """Stops every process this soak started that still runs: frozen ones continued, input closed, wait,
        SIGTERM, SIGKILL."""
        self.resume_all()
        self.final_stop_t = now()
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

        # Which receivers each sender process had dropped, and when (participant-left until participant-joined).
        dropped_at = {}
        for t, proc, name, kind, _ in sorted(self.roster, key=lambda item: item[0]):
            dropped_at.setdefault((proc, name), []).append((t, kind == "left"))

        def sender_had_dropped(proc, receiver, t):
            changes = dropped_at.get((proc, receiver), [])
            index = bisect.bisect_right([c[0] for c in changes], t)
            return index > 0 and changes[index - 1][1]

        # Freezes (SIGSTOP to SIGCONT) per name, and when a sender process handled a line: a line written while
        # its sender was frozen waited in the pipe until the SIGCONT.
        frozen_spans = {}
        for proc in self.procs:
            for stop_t, resume_t in proc.freezes:
                frozen_spans.setdefault(proc.name, []).append((stop_t, resume_t if resume_t is not None else INF))

        def handled_at(proc, t):
            """(when S's process could read line written at t, and the SIGCONT of S when the line was handled with
            the backlog of a freeze: written while S was frozen, then handled at the SIGCONT, or written less than
            RESUME_ORDER_S after it, behind the backlog; else None)."""
            for stop_t, resume_t in proc.freezes:
                if resume_t is None:
                    if stop_t <= t:
                        return INF, INF
                elif stop_t <= t < resume_t:
                    return resume_t, resume_t
                elif resume_t <= t < resume_t + RESUME_ORDER_S:
                    return t, resume_t
            return t, None

        # Which lines the `undelivered` reports name. A report carries only a count N. What a sender reports is
        # what its receiver never acknowledged, one contiguous run of its lines in order: the report is taken to
        # name the N lines from the first one R had not received when the report was printed (after the lines an
        # earlier report named), among the lines already written to the reporting process that R was a member for,
        # that it handled since its latest participant-joined for R and not while it counted R gone (those were
        # never sent to R).
        reports = {}
        for t, proc, receiver, count, _ in self.undelivered:
            reports.setdefault((proc.name, receiver), []).append((t, count, proc))
        reported = {}
        unmatched = 0
        for (sender, receiver), items in reports.items():
            if receiver not in intervals or sender not in self.sent:
                unmatched += sum(item[1] for item in items)
                continue
            entries = self.sent[sender]
            received_at = array.array("d", bytes(8 * (len(entries) + 2)))
            times, seqs = self.arrivals.get((receiver, sender), ([], []))
            for t, seq in zip(times, seqs):
                if seq < len(received_at) and not received_at[seq]:
                    received_at[seq] = t
            covered = reported.setdefault((sender, receiver), set())

            def nameable(seq, reporter, since):
                t, proc, _ = entries[seq - 1]
                if proc is not reporter or applicable(sender, seq, receiver) is None:
                    return False
                t_handled = handled_at(proc, t)[0]
                return t_handled >= since and not sender_had_dropped(proc, receiver, t_handled)

            cursor = 0
            for t_report, count, reporter in sorted(items, key=lambda item: item[0]):
                # What a report names went out since the reporter last counted R joined (a participant-joined
                # starts a new connection; lines before it belong to earlier reports or none).
                joins = [t for t, is_left in dropped_at.get((reporter, receiver), []) if not is_left and t < t_report]
                since = joins[-1] if joins else 0.0
                seq = cursor + 1
                while seq <= len(entries) and entries[seq - 1][0] <= t_report and (
                        not nameable(seq, reporter, since) or 0 < received_at[seq] <= t_report):
                    seq += 1
                cursor = seq - 1
                named = 0
                while named < count and seq <= len(entries) and entries[seq - 1][0] <= t_report:
                    if nameable(seq, reporter, since):
                        covered.add(seq)
                        named += 1
                        cursor = seq
                    seq += 1
                unmatched += count - named

        def gone_while_frozen(proc, sender, receiver, t):
            """For a line neither delivered nor reported: None, or whether it was excused only through the tolerance
            for lines that waited in a frozen sender's pipe (see the docstring). Excused: S's process counted R gone
            when it handled the line (after its participant-left for R, before its next participant-joined) and a
            freeze of S or R lies within --grace-s of that gone interval."""
            if not frozen_spans:
                return None
            t_handled, resumed = handled_at(proc, t)
            changes = dropped_at.get((proc, receiver), [])
            index = bisect.bisect_right([c[0] for c in changes], t_handled)
            tolerance = False
            if index > 0 and changes[index - 1][1]:
                first = index - 1
                while first > 0 and changes[first - 1][1]:
                    first -= 1
            elif resumed is not None and index < len(changes) and changes[index][1] and \
                    changes[index][0] <= resumed + grace:
                # The backlog of a frozen sender and the timers that expired during its freeze are handled together
                # at the SIGCONT: which came first is not observable here.
                first, tolerance = index, True
            elif index < len(changes) and changes[index][1] and changes[index][0] <= t_handled + READ_LATENCY_S:
                # Written in the same few milliseconds as S's participant-left for R was printed: S's process reads
                # its input a little after the write, so it may have read the line after it counted R gone (then
                # it sent the line to the others only). The logs cannot order the two.
                first, tolerance = index, True
            else:
                return None
            gone_from = changes[first][0]
            gone_until = next((c[0] for c in changes[first:] if not c[1]), INF)
            for name in (sender, receiver):
                for stop_t, resume_t in frozen_spans.get(name, []):
                    if stop_t - grace <= gone_until and gone_from <= resume_t + grace:
                        return tolerance
            return None

        steady = steady_ok = steady_reported = window = window_ok = window_reported = window_neither = absent = 0
        false_reports = steady_gone = steady_gone_pipe = 0
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
                        "window": [], "reported": [], "lost": [], "gone": [], "false": 0, "dropped": 0})
                    if got:
                        pair["false"] += 1
                    elif is_steady:
                        steady += 1
                        excuse = None if named else gone_while_frozen(proc, sender, receiver, t)
                        if named:
                            steady_reported += 1
                            pair["reported"].append((seq, t))
                        elif excuse is not None:
                            steady_gone += 1
                            steady_gone_pipe += 1 if excuse else 0
                            pair["gone"].append((seq, t))
                        else:
                            lost.append((sender, receiver, seq, t))
                            pair["lost"].append((seq, t))
                            if sender_had_dropped(proc, receiver, handled_at(proc, t)[0]):
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
                + (f"; dropped while gone around a freeze {len(pair['gone'])} {self.runs(pair['gone'])}"
                   if pair["gone"] else "")
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
            f"{args.share_every_s:g} s; a restart every {args.restart_every_s:g} s"
            + (f"; a member frozen for {args.freeze_s:g} s every {args.freeze_every_s:g} s"
               if args.freeze_every_s > 0 else ""))
        out(f"rule: a line is steady for a receiver when written to its sender while both were members, more than "
            f"{grace:g} s after the later `joined` and more than {grace:g} s before either began to leave; a steady "
            f"line must arrive exactly once and in per-sender order, or be named by an `undelivered` report (a report "
            f"of N names the N lines from the first one the receiver lacked when it was printed, among those the "
            f"reporting process handled since it last counted the receiver joined); window lines "
            f"(within {grace:g} s of a join or leave of either) are counted apart and never fail; a duplicate always "
            f"fails" + (f"; freezes: a steady line neither delivered nor reported is not lost when its sender's "
                        f"process counted the receiver gone when it handled the line (when written; for a line "
                        f"written while the sender was frozen, or less than {RESUME_ORDER_S:g} s after its SIGCONT: "
                        f"a participant-left within {grace:g} s after the SIGCONT counts as before it, and one "
                        f"printed less than {READ_LATENCY_S:g} s after any line) and a freeze "
                        f"of either lies within {grace:g} s of that gone interval (dropped while gone); a named line "
                        f"that arrives is reported but delivered; neither fails" if args.freeze_every_s > 0 else ""))
        out(f"lines sent: {sum(sent_total.values())} (" +
            ", ".join(f"{name} {sent_total[name]}" for name in self.names) + f"); received: {self.received}")
        out(f"steady lines: expected {steady}, delivered {steady_ok}, reported undelivered {steady_reported}, "
            f"dropped while gone around a freeze {steady_gone}"
            + (f" ({steady_gone_pipe} of them only through a tolerance: handled with a frozen sender's backlog, its "
               f"participant-left printed after the line was written but within {grace:g} s after the SIGCONT, or "
               f"less than {READ_LATENCY_S:g} s after the line)"
               if steady_gone_pipe else "")
            + f", lost {len(lost)}" + (f" ({lost_dropped} sent while the sender counted the receiver gone)"
                                       if lost_dropped else ""))
        out(f"window lines: {window}, delivered {window_ok}, reported undelivered {window_reported}, "
            f"neither {window_neither}")
        out(f"reported but delivered (named by an `undelivered` report, received after all; steady and window): "
            f"{false_reports}")
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
                        seen = self.progress_seen.get((proc.label, share["id"]))
                        progress = {k: v for k, v in seen[1].items() if k not in ("event", "id")} if seen else None
                        attachment_problems.append(
                            f"{proc.label}: share {share['number']} ({share['id']}, by {share['sharer']}) never "
                            f"completed (last attachment-progress: "
                            + (f"{progress} at {self.clock(seen[0])})" if seen else "none)"))
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

        # Freezes: a timeline each.
        if args.freeze_every_s > 0:
            out(f"freezes: {len(self.freezes)} (SIGSTOP every {args.freeze_every_s:g} s, SIGCONT {args.freeze_s:g} s "
                f"later)" + (f"; {len(self.freeze_skips)} slot(s) skipped" if self.freeze_skips else "")
                + "; first participant-left / participant-joined about the frozen member at each other member, and "
                  "at the frozen member about each other (+ seconds from the SIGSTOP):")
            lines.extend(self.freeze_timelines())

        # At the end (before the final stop), every member that stayed should count every other one present again.
        end_of_run = getattr(self, "final_stop_t", INF)
        for proc in self.procs:
            if not proc.final or proc.crashed or proc.joined_t is None:
                continue
            for other in self.procs:
                if other.name == proc.name or not other.final or other.crashed or other.joined_t is None:
                    continue
                changes = sorted((t, kind) for t, observer, name, kind, _ in self.roster
                                 if observer is proc and name == other.name and t < end_of_run)
                if changes and changes[-1][1] == "left":
                    failures.append(f"at the end {proc.label} still counted {other.label} gone (participant-left at "
                                    f"{self.clock(changes[-1][0])}, no participant-joined after it)")

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

    def freeze_timelines(self):
        lines = []

        def first(observer, name, kind, after, before):
            return next(((t, reason) for t, o, n, k, reason in sorted(self.roster, key=lambda item: item[0])
                         if o is observer and n == name and k == kind and after <= t < before), None)

        def describe(observer, name, stop_t, until):
            left = first(observer, name, "left", stop_t, until)
            joined = first(observer, name, "joined", left[0] if left else stop_t, until)
            reports = [(t, count) for t, p, n, count, _ in self.undelivered
                       if p is observer and n == name and stop_t <= t < until]
            text = (f"participant-left {self.clock(left[0])} (+{left[0] - stop_t:.1f} s, {left[1]})" if left
                    else "no participant-left")
            text += (f", participant-joined {self.clock(joined[0])} (+{joined[0] - stop_t:.1f} s)" if joined
                     else ", no participant-joined")
            if reports:
                text += "; undelivered reports: " + ", ".join(
                    f"{count} at {self.clock(t)} (+{t - stop_t:.1f} s)" for t, count in reports[:4]) + (
                    ", ..." if len(reports) > 4 else "")
            return text

        for record in self.freezes:
            frozen, stop_t, resume_t = record["proc"], record["stop_t"], record["resume_t"]
            later = [r["stop_t"] for r in self.freezes if r["proc"].name == frozen.name and r["stop_t"] > stop_t]
            until = min(later + [getattr(self, "final_stop_t", INF)])  # up to its next freeze or the final stop
            lines.append(f"  freeze {record['number']}: {frozen.label} (pid {frozen.pid}) SIGSTOP at "
                         f"{self.clock(stop_t)}, SIGCONT at "
                         + (f"{self.clock(resume_t)} (+{resume_t - stop_t:.1f} s)" if resume_t else "never"))
            others = [p for p in self.procs if p.name != frozen.name and p.joined_t is not None
                      and p.joined_t <= (resume_t or INF) and (p.exit_t or INF) >= stop_t]
            for other in others:
                lines.append(f"    {other.label} about {frozen.name}: {describe(other, frozen.name, stop_t, until)}")
            for name in sorted({other.name for other in others}):
                lines.append(f"    {frozen.label} about {name}: {describe(frozen, name, stop_t, until)}")
        return lines

    def write_receipts(self):
        """receipts.txt in the work directory: per receiver process and sender, the runs of consecutive SEQs in
        arrival order with their arrival times, and per sender process the SEQs it was given; for a failure's
        analysis."""
        path = os.path.join(self.work, "receipts.txt")
        with open(path, "w") as f:
            f.write("# lines written: sender process, SEQ range, written at (soak clock)\n")
            for name in self.names:
                run = None
                for index, (t, proc, written) in enumerate(self.sent[name]):
                    seq = index + 1
                    if run and run[0] is proc and run[2] == seq - 1 and written:
                        run[2], run[4] = seq, t
                        continue
                    if run:
                        f.write(f"{run[0].label} {run[1]}-{run[2]} {self.clock(run[3])}..{self.clock(run[4])}\n")
                    run = [proc, seq, seq, t, t] if written else None
                if run:
                    f.write(f"{run[0].label} {run[1]}-{run[2]} {self.clock(run[3])}..{self.clock(run[4])}\n")
            f.write("# first receipts: receiver process <- sender, SEQ run in arrival order, arrival times\n")
            for (receiver, sender), (times, seqs) in sorted(self.arrivals.items()):
                firsts = self.recv_by[(receiver, sender)]
                run = None
                for t, seq in zip(times, seqs):
                    number = firsts[seq] if seq < len(firsts) else 0
                    if run and run[0] == number and run[2] == seq - 1:
                        run[2], run[4] = seq, t
                        continue
                    if run:
                        f.write(f"{receiver}#{run[0]} <- {sender} {run[1]}-{run[2]} "
                                f"{self.clock(run[3])}..{self.clock(run[4])}\n")
                    run = [number, seq, seq, t, t]
                if run:
                    f.write(f"{receiver}#{run[0]} <- {sender} {run[1]}-{run[2]} "
                            f"{self.clock(run[3])}..{self.clock(run[4])}\n")
        return path

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
    parser.add_argument("--freeze-every-s", type=float, default=0,
                        help="stop a member with SIGSTOP every N s (0: never, the default)")
    parser.add_argument("--freeze-s", type=float, default=42, help="continue a frozen member after D s (42)")
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
    if args.freeze_every_s < 0 or args.freeze_s <= 0:
        parser.error("--freeze-every-s must not be negative and --freeze-s must be positive")
    if args.restart_every_s < 0 or args.share_every_s < 0:
        parser.error("--restart-every-s and --share-every-s must not be negative (0: never)")
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
    try:
        soak.write_receipts()
    except OSError as error:
        print(f"could not write receipts.txt: {error}")
    if interrupted:
        failures.insert(0, interrupted)
    for line in lines:
        print(line)
    passed = not failures
    kept = soak.cleanup(passed)
    if kept:
        print(f"work directory kept: {kept} (events.log, receipts.txt, logs/)")
    print("PASS" if passed else "FAIL")
    for reason in failures:
        print(f"  - {reason}")
    sys.stdout.flush()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
