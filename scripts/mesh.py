#!/usr/bin/env python3
"""N `huddle` processes on loopback join one session one after another and must form the full mesh (issue 34).

Usage:
    scripts/mesh.py HUDDLE_BINARY --members N --runs R [--timeout 60] [--json-out FILE]
                    [--run-dir /tmp/mesh-run] [--extra-args "--log-level debug"] [--keep-logs]
                    [--pause-member I [--pause-seconds 40] [--pause-when joined|connected]]

Each run:
  1. starts `huddle host --json` (node p0) and reads its ticket;
  2. starts N-1 `huddle join TICKET --json` processes (p1 ... pN-1) one after another, every one with the host's
     ticket, the next once the previous printed `joined` (join time: process start to `joined`);
  3. waits (up to --settle seconds) until every node's roster names all N-1 others, since a chat line goes only to
     the participants its sender knows when it sends it;
  4. writes each node's name (p0, p1, ...) to its standard input as a chat line and waits up to --timeout seconds
     until every node has printed a `message` event for every other node's line;
  5. asks every node for `/peers` (informational: how many participants it holds a connection to), samples each
     process's VmRSS and RssAnon from /proc/PID/status, then closes every standard input (the node leaves and
     exits 0), waits up to 10 s, then sends SIGTERM, then SIGKILL, by pid.
A run PASSES when every node heard every other node's line and no node printed `undelivered` or
`participant-left`; otherwise it FAILS and prints which nodes missed which lines and every such event with its node.

Every node runs with its own identity file (RUN_DIR/run-K/ids/pI), `--listen 127.0.0.1:0` and `--name pI`, plus
--extra-args (e.g. "--log-level debug"). Standard output and error of node I go to RUN_DIR/run-K/pI.out / pI.err
and every event with its time since the run began to RUN_DIR/run-K/timeline.txt; the directory is removed after
a passing run unless --keep-logs is given, and kept after a failing one.

--pause-member I (a diagnosis, not part of the pass/fail test above) stops node I with SIGSTOP and resumes it with
SIGCONT --pause-seconds later: a member starved past the 30 s idle timeout, which everyone declares unreachable and
which loses every connection at once. --pause-when joined (the default) pauses it as soon as it has printed `joined`
(the joins go on meanwhile); --pause-when connected pauses it once every node's /peers counts all N-1 others (the
full mesh of connections, after the last join). The run then waits 3 s and up to --settle seconds more for complete
rosters; `participant-left` events are expected (listed, not failures); it passes when the mesh heals: every line
reaches every node, nothing undelivered. The time to the full mesh then includes the pause.

Prints per run PASS/FAIL, join p50/p99/max in ms and the time from the last `joined` to the full mesh; at the end
"N members: P of R runs formed the full mesh; join p50 X ms, max Y ms". Exit status 0 only if every run passed,
1 otherwise, 2 on a usage error. Python 3 standard library only.
"""
import argparse
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

STOP_GRACE = 10.0  # seconds between closing standard input and SIGTERM
TERM_GRACE = 5.0  # seconds between SIGTERM and SIGKILL


def percentile(values, fraction):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-fraction * len(ordered) // 1))))
    return ordered[rank - 1]


def ms(seconds):
    return f"{seconds * 1000:.0f}"


class Node:
    """One `huddle` process: its pipes are read by two threads that put (time, node, stream, line) on a queue."""

    def __init__(self, index, argv, directory, events):
        self.index = index
        self.name = f"p{index}"
        self.argv = argv
        self.out_path = os.path.join(directory, f"{self.name}.out")
        self.err_path = os.path.join(directory, f"{self.name}.err")
        self.events = events
        self.participant = None  # own participant id, from `joined`
        self.roster = {}  # participant id -> name, of the others
        self.heard = set()  # names whose line this node printed
        self.joined_at = None
        self.ticket = None
        self.peers_count = None
        self.paused = False
        self.rss_kib = None
        self.anon_kib = None  # RssAnon: anonymous memory (heap, stacks), without mapped library pages
        self.exit_status = None
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.pid = self.process.pid
        self.threads = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self.out_path, "out"), daemon=True),
            threading.Thread(target=self._pump, args=(self.process.stderr, self.err_path, "err"), daemon=True),
        ]
        for thread in self.threads:
            thread.start()

    def _pump(self, pipe, path, stream):
        with open(path, "wb") as log:
            for raw in iter(pipe.readline, b""):
                log.write(raw)
                log.flush()
                self.events.put((time.monotonic(), self, stream, raw.decode("utf-8", "replace").rstrip("\n")))
        pipe.close()
        self.events.put((time.monotonic(), self, stream + "-eof", None))

    def write(self, line):
        """Writes one line to standard input; False when the process no longer reads it."""
        try:
            self.process.stdin.write((line + "\n").encode())
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def close_stdin(self):
        try:
            self.process.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def signal(self, number):
        if self.process.poll() is None:
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass

    def pause(self):
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        if self.paused:
            self.signal(signal.SIGCONT)
            self.paused = False

    def sample_rss(self):
        try:
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        self.rss_kib = int(line.split()[1])
                    elif line.startswith("RssAnon:"):
                        self.anon_kib = int(line.split()[1])
        except OSError:
            self.rss_kib = None


class Run:
    def __init__(self, options, number):
        self.options = options
        self.number = number
        self.directory = os.path.join(options.run_dir, f"run-{number}")
        shutil.rmtree(self.directory, ignore_errors=True)
        os.makedirs(os.path.join(self.directory, "ids"))
        self.events = queue.Queue()
        self.start = time.monotonic()
        self.nodes = []
        self.problems = []  # lines explaining a failure
        self.bad_events = []  # (node, event) for participant-left / undelivered
        self.notes = []  # informational lines (messages-dropped, errors, exits)
        self.timeline = open(os.path.join(self.directory, "timeline.txt"), "w")
        self.last_joined = None
        self.mesh_at = None
        self.roster_at = None
        self.stopping = False  # once set, departures are the run's own doing and no longer count
        self.paused_node = None
        self.resume_at = None  # when the paused node is due to resume (monotonic)
        self.resumed_at = None
        self.expected_left = []  # participant-left events during a --pause-member run

    # --- events -----------------------------------------------------------------------------------------------

    def pump(self, until, condition=lambda: False):
        """Handles events until `condition()` holds or the monotonic time `until` passes. Returns condition()."""
        while not condition():
            self.resume_if_due()
            remaining = until - time.monotonic()
            if remaining <= 0:
                return condition()
            try:
                item = self.events.get(timeout=min(remaining, 0.1 if self.resume_at else 0.5))
            except queue.Empty:
                continue
            self.handle(*item)
        return True

    def handle(self, at, node, stream, line):
        offset = at - self.start
        if line is None:
            self.timeline.write(f"{offset:9.3f} {node.name} [{stream}]\n")
            return
        self.timeline.write(f"{offset:9.3f} {node.name} {stream}: {line}\n")
        if stream != "out":
            return
        try:
            event = json.loads(line)
        except ValueError:
            self.notes.append(f"{node.name}: not JSON on stdout: {line[:200]}")
            return
        kind = event.get("event")
        if kind == "ticket" and node.ticket is None:
            node.ticket = event.get("ticket")
        elif kind == "joined":
            if node.joined_at is None:
                node.joined_at = at
            node.participant = event.get("participant")
            for other in event.get("participants", []):
                node.roster[other["participant"]] = other.get("name")
        elif kind == "participant-joined":
            node.roster[event.get("participant")] = event.get("name")
        elif kind == "participant-left":
            node.roster.pop(event.get("participant"), None)
            if self.paused_node is not None and not self.stopping:
                self.expected_left.append((offset, node, event))
            elif not self.stopping:
                self.bad_events.append((offset, node, event))
        elif kind == "undelivered":
            if not self.stopping:
                self.bad_events.append((offset, node, event))
        elif kind == "message":
            node.heard.add(event.get("text"))
        elif kind == "peers":
            node.peers_count = event.get("count")
        elif kind in ("messages-dropped", "error", "session-over"):
            self.notes.append(f"{node.name} at {offset:.3f} s: {line}")

    def resume_if_due(self):
        if self.resume_at is not None and time.monotonic() >= self.resume_at:
            self.resume_at = None
            self.paused_node.resume()
            self.resumed_at = time.monotonic()
            self.timeline.write(f"{self.resumed_at - self.start:9.3f} -- SIGCONT {self.paused_node.name}\n")

    # --- phases -----------------------------------------------------------------------------------------------

    def node_argv(self, index, ticket):
        binary = self.options.binary
        common = [
            "--json", "--name", f"p{index}", "--identity", os.path.join(self.directory, "ids", f"p{index}"),
            "--listen", "127.0.0.1:0",
        ] + self.options.extra
        if ticket is None:
            return [binary, "host"] + common
        return [binary, "join", ticket] + common

    def start_node(self, index, ticket):
        node = Node(index, self.node_argv(index, ticket), self.directory, self.events)
        self.nodes.append(node)
        return node

    def exited(self, node):
        return node.process.poll() is not None

    def pause(self, node):
        node.pause()
        self.paused_node = node
        self.paused_at = time.monotonic()
        self.resume_at = self.paused_at + self.options.pause_seconds
        self.timeline.write(f"{self.paused_at - self.start:9.3f} -- SIGSTOP {node.name}\n")

    def await_connections(self, deadline):
        """Asks every node for /peers once a second until each counts all the others (or `deadline` passes)."""
        everyone = self.options.members - 1
        while time.monotonic() < deadline:
            for node in self.nodes:
                node.peers_count = None
                node.write("/peers")
            self.pump(time.monotonic() + 1.0, lambda: all(n.peers_count is not None for n in self.nodes))
            if all(n.peers_count == everyone for n in self.nodes):
                return True
        self.notes.append("connections incomplete before the pause: " + " ".join(
            f"{n.name}:{n.peers_count}" for n in self.nodes if n.peers_count != everyone))
        return False

    def execute(self):
        options = self.options
        members = options.members
        host = self.start_node(0, None)
        if not self.pump(time.monotonic() + options.timeout, lambda: host.ticket is not None or self.exited(host)):
            self.problems.append(f"p0 (host) printed no ticket within {options.timeout:g} s")
            return False
        if host.ticket is None:
            self.problems.append(f"p0 (host) exited with status {host.process.poll()} before printing a ticket")
            return False
        if not self.pump(time.monotonic() + options.timeout, lambda: host.joined_at is not None):
            self.problems.append("p0 (host) printed no `joined`")
            return False
        self.joins = []
        for index in range(1, members):
            node = self.start_node(index, host.ticket)
            self.pump(time.monotonic() + options.timeout, lambda: node.joined_at is not None or self.exited(node))
            if node.joined_at is None:
                # Drain what it printed before exiting, then give up on this run.
                self.pump(time.monotonic() + 1.0)
                status = node.process.poll()
                self.problems.append(
                    f"{node.name} did not join within {options.timeout:g} s"
                    + (f" (exited with status {status})" if status is not None else ""))
                return False
            self.joins.append(node.joined_at - node.started)
            if index == options.pause_member and options.pause_when == "joined":
                self.pause(node)
        self.last_joined = time.monotonic()
        if options.pause_member is not None and options.pause_when == "connected":
            self.await_connections(self.last_joined + options.settle)
            self.pause(self.nodes[options.pause_member])
        if self.resume_at is not None:
            self.pump(self.resume_at + 1.0, lambda: self.resumed_at is not None)
        if self.resumed_at is not None:
            self.pump(self.resumed_at + 3.0)

        # Rosters: every node must know every other before its line can reach them.
        everyone = members - 1
        def rosters_complete():
            return all(len(node.roster) >= everyone for node in self.nodes)
        if self.pump(max(self.last_joined, self.resumed_at or 0) + options.settle, rosters_complete):
            self.roster_at = time.monotonic()
        else:
            short = [f"{n.name} knows {len(n.roster)}" for n in self.nodes if len(n.roster) < everyone]
            self.notes.append(
                f"rosters incomplete {options.settle:g} s after the last join (or the resume), sending anyway: "
                + ", ".join(short))

        for node in self.nodes:
            if not node.write(node.name):
                self.notes.append(f"{node.name}: could not write its line (standard input closed)")
        self.sent_at = time.monotonic()
        names = {node.name for node in self.nodes}
        def mesh_complete():
            return all(node.heard >= names - {node.name} for node in self.nodes)
        if self.pump(self.sent_at + options.timeout, mesh_complete):
            self.mesh_at = time.monotonic()
        # Let late bad events (an `undelivered` just after the last line arrived) surface briefly, then ask /peers.
        for node in self.nodes:
            node.peers_count = None
            node.write("/peers")
        self.pump(time.monotonic() + 5.0, lambda: all(n.peers_count is not None or self.exited(n) for n in self.nodes))
        return True

    def stop(self):
        """Closes every standard input, waits up to STOP_GRACE s, then SIGTERM, then SIGKILL (by pid)."""
        if self.paused_node is not None:
            self.resume_at = None
            self.paused_node.resume()
        for node in self.nodes:
            node.sample_rss()
        # Whatever arrived before the stop still counts.
        while True:
            try:
                self.handle(*self.events.get_nowait())
            except queue.Empty:
                break
        self.stopping = True
        self.timeline.write(f"{time.monotonic() - self.start:9.3f} -- stopping: closing every standard input\n")
        for node in self.nodes:
            node.close_stdin()
        deadline = time.monotonic() + STOP_GRACE
        self.pump(deadline, lambda: all(self.exited(n) for n in self.nodes))
        terminated = [n for n in self.nodes if not self.exited(n)]
        for node in terminated:
            node.signal(signal.SIGTERM)
        self.pump(time.monotonic() + TERM_GRACE, lambda: all(self.exited(n) for n in self.nodes))
        killed = [n for n in self.nodes if not self.exited(n)]
        for node in killed:
            node.signal(signal.SIGKILL)
        for node in self.nodes:
            try:
                node.exit_status = node.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                node.exit_status = None
        for node in self.nodes:
            for thread in node.threads:
                thread.join(timeout=2)
        # Drain what the readers queued while stopping.
        while True:
            try:
                self.handle(*self.events.get_nowait())
            except queue.Empty:
                break
        if terminated:
            self.notes.append("needed SIGTERM: " + " ".join(n.name for n in terminated))
        if killed:
            self.notes.append("needed SIGKILL: " + " ".join(n.name for n in killed))
        odd = [f"{n.name}={n.exit_status}" for n in self.nodes if n.exit_status not in (0,)]
        if odd and not terminated:
            self.notes.append("exit statuses other than 0: " + " ".join(odd))
        self.timeline.close()


def run_once(options, number):
    run = Run(options, number)
    completed = False
    try:
        completed = run.execute()
    finally:
        run.stop()
    names = {node.name for node in run.nodes}
    missing = {}
    for node in run.nodes:
        lacking = sorted(names - {node.name} - node.heard, key=lambda name: int(name[1:]))
        if lacking:
            missing[node.name] = lacking
    unstarted = [f"p{i}" for i in range(len(run.nodes), options.members)]
    passed = completed and not missing and not unstarted and not run.bad_events and not run.problems
    joins = getattr(run, "joins", [])
    rss = [n.rss_kib for n in run.nodes if n.rss_kib is not None]
    anon = [n.anon_kib for n in run.nodes if n.anon_kib is not None]
    peers = [n.peers_count for n in run.nodes if n.peers_count is not None]
    result = {
        "run": number,
        "passed": passed,
        "members": options.members,
        "join_ms": [round(j * 1000, 1) for j in joins],
        "paused": run.paused_node.name if run.paused_node else None,
        "rosters_after_resume_ms": (
            round((run.roster_at - run.resumed_at) * 1000, 1) if run.roster_at and run.resumed_at else None),
        "expected_left": [{"at": round(at, 3), "node": node.name, **event} for at, node, event in run.expected_left],
        "roster_after_last_join_ms": (
            round((run.roster_at - run.last_joined) * 1000, 1) if run.roster_at and run.last_joined else None),
        "mesh_after_last_join_ms": (
            round((run.mesh_at - run.last_joined) * 1000, 1) if run.mesh_at and run.last_joined else None),
        "missing": missing,
        "not_started": unstarted,
        "bad_events": [{"at": round(at, 3), "node": node.name, **event} for at, node, event in run.bad_events],
        "problems": run.problems,
        "notes": run.notes,
        "rss_kib": {n.name: n.rss_kib for n in run.nodes},
        "rss_anon_kib": {n.name: n.anon_kib for n in run.nodes},
        "peers": {n.name: n.peers_count for n in run.nodes},
        "exit_status": {n.name: n.exit_status for n in run.nodes},
        "log_dir": run.directory,
    }

    # Report.
    head = f"run {number}: {'PASS' if passed else 'FAIL'}"
    if joins:
        head += (f"  join p50 {ms(percentile(joins, 0.5))} ms, p99 {ms(percentile(joins, 0.99))} ms, "
                 f"max {ms(max(joins))} ms")
    if result["roster_after_last_join_ms"] is not None:
        head += f"; rosters complete {result['roster_after_last_join_ms']:.0f} ms after the last join"
    if result["mesh_after_last_join_ms"] is not None:
        head += f"; full mesh {result['mesh_after_last_join_ms']:.0f} ms after the last join"
    elif completed:
        head += f"; no full mesh within {options.timeout:g} s of sending"
    print(head)
    if run.paused_node is not None:
        line = (f"  {run.paused_node.name} paused {options.pause_seconds:g} s at {run.paused_at - run.start:.1f} s "
                f"({'after it joined' if options.pause_when == 'joined' else 'once every pair was connected'})")
        if result["rosters_after_resume_ms"] is not None:
            line += f"; rosters complete {result['rosters_after_resume_ms'] / 1000:.1f} s after the resume"
        else:
            line += f"; rosters still incomplete {options.settle:g} s after the resume"
        print(line)
        by_node = {}
        for at, node, event in run.expected_left:
            by_node.setdefault((node.name, event.get("reason")), []).append((at, event.get("name")))
        for (name, reason), items in sorted(by_node.items(), key=lambda kv: int(kv[0][0][1:])):
            print(f"  {name}: participant-left ({reason}) for {len(items)} between {items[0][0]:.1f} s and "
                  f"{items[-1][0]:.1f} s: {' '.join(n for _, n in items)}")
    if rss:
        print(f"  RSS at the end: min {min(rss) / 1024:.1f} MiB, median {percentile(rss, 0.5) / 1024:.1f} MiB, "
              f"max {max(rss) / 1024:.1f} MiB over {len(rss)} processes"
              + (f"; RssAnon (anonymous, no library pages) median {percentile(anon, 0.5) / 1024:.1f} MiB, "
                 f"max {max(anon) / 1024:.1f} MiB, total {sum(anon) / 1024:.0f} MiB" if anon else ""))
    short_peers = [f"{n.name}:{n.peers_count}" for n in run.nodes
                   if n.peers_count is not None and n.peers_count < options.members - 1]
    if peers:
        print(f"  /peers (connections): min {min(peers)}, max {max(peers)} of {options.members - 1}"
              + (f"; short: {' '.join(short_peers)}" if short_peers else ""))
    for problem in run.problems:
        print(f"  problem: {problem}")
    if unstarted:
        print(f"  not started: {' '.join(unstarted)}")
    for node_name, lacking in missing.items():
        print(f"  {node_name} missed the lines of {len(lacking)}: {' '.join(lacking)}")
    for at, node, event in run.bad_events:
        detail = " ".join(f"{key}={value}" for key, value in event.items() if key != "event")
        print(f"  {node.name} at {at:.3f} s: {event.get('event')} {detail}")
    for note in run.notes:
        print(f"  note: {note}")
    if passed and not options.keep_logs:
        shutil.rmtree(run.directory, ignore_errors=True)
        result["log_dir"] = None
    else:
        print(f"  logs: {run.directory}")
    sys.stdout.flush()
    return result


def main():
    # SIGTERM or SIGHUP to this script: unwind so the current run stops its processes (they run in sessions of their
    # own, so a Ctrl-C at the terminal reaches only this script, which then stops them the same way).
    def interrupted(number, frame):
        raise SystemExit(128 + number)
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    parser = argparse.ArgumentParser(
        description="N huddle processes on loopback join one session one after another and must form the full mesh.")
    parser.add_argument("binary", help="the huddle executable")
    parser.add_argument("--members", type=int, required=True, help="processes per run, the host included (>= 2)")
    parser.add_argument("--runs", type=int, required=True, help="number of runs")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds to wait for each join and for every line to arrive (default 60)")
    parser.add_argument("--settle", type=float, default=15.0,
                        help="seconds after the last join to wait for complete rosters before sending (default 15)")
    parser.add_argument("--json-out", help="write every run's figures and findings to this file as JSON")
    parser.add_argument("--run-dir", default="/tmp/mesh-run", help="where run-K log directories go (/tmp/mesh-run)")
    parser.add_argument("--extra-args", default="",
                        help='more arguments for every node, one shell-quoted string (e.g. "--log-level debug")')
    parser.add_argument("--pause-member", type=int,
                        help="diagnosis: SIGSTOP node I (see --pause-when), SIGCONT --pause-seconds later")
    parser.add_argument("--pause-when", choices=["joined", "connected"], default="joined",
                        help="pause --pause-member right after it joined, or once every pair is connected (joined)")
    parser.add_argument("--pause-seconds", type=float, default=40.0, help="how long --pause-member pauses (40)")
    parser.add_argument("--keep-logs", action="store_true", help="keep the log directories of passing runs too")
    options = parser.parse_args()
    if options.members < 2 or options.runs < 1:
        parser.error("--members must be at least 2 and --runs at least 1")
    if options.pause_member is not None and not 1 <= options.pause_member < options.members:
        parser.error("--pause-member must name a joiner, 1 ... members-1")
    if not os.access(options.binary, os.X_OK):
        parser.error(f"{options.binary} is not an executable")
    options.binary = os.path.abspath(options.binary)
    options.extra = shlex.split(options.extra_args)
    os.makedirs(options.run_dir, exist_ok=True)

    print(f"{options.members} members, {options.runs} runs, binary {options.binary}"
          + (f", extra arguments {options.extra}" if options.extra else ""))
    sys.stdout.flush()
    results = []
    for number in range(1, options.runs + 1):
        results.append(run_once(options, number))
    passed = sum(1 for r in results if r["passed"])
    joins = [j for r in results for j in r["join_ms"]]
    meshes = [r["mesh_after_last_join_ms"] for r in results if r["mesh_after_last_join_ms"] is not None]
    line = f"{options.members} members: {passed} of {options.runs} runs formed the full mesh"
    if joins:
        line += f"; join p50 {percentile(joins, 0.5):.0f} ms, max {max(joins):.0f} ms"
    print(line)
    if joins:
        extra = f"  (join p99 {percentile(joins, 0.99):.0f} ms over {len(joins)} joins"
        if meshes:
            extra += (f"; full mesh after the last join p50 {percentile(meshes, 0.5):.0f} ms, "
                      f"max {max(meshes):.0f} ms over {len(meshes)} runs")
        print(extra + ")")
    if options.json_out:
        with open(options.json_out, "w") as out:
            json.dump({"members": options.members, "runs": options.runs, "passed": passed, "results": results},
                      out, indent=1)
    return 0 if passed == options.runs else 1


if __name__ == "__main__":
    sys.exit(main())
