#!/usr/bin/env python3
"""Handshake-flood figures against a live `huddle host` (issue 16 item 4).

Starts `huddle host --json --listen 127.0.0.1:0 --stay`, reads its ticket and, as an insider holding that ticket
(an invitation), floods the host with valid-mac1 handshake initiations (docs/PROTOCOL.md §7.6) from many UDP source
ports at a fixed rate for a bounded time. It measures:

- cookie replies received per second, and when the first one arrived after the flood started (cookie mode);
- handshake responses received per second (initiations that got past mac1 / the load check to Diffie-Hellman);
- the host's CPU use during the flood (/proc/PID/stat utime+stime) and its memory (/proc/PID/status VmHWM, VmRSS);
- how long a legitimate `huddle join TICKET --json` takes to print its `joined` event: once before the flood
  (baseline, same host) and once started `--join-at` seconds into the flood;
- with --drop-log, the host's own handshake-drop counters (its `--log-level debug` "handshake messages dropped"
  lines on stderr, one a second at most).

Every initiation is unique (fresh static key, ephemeral key, sender index), built before the flood from the
reference implementation in scripts/vectors (imported, not copied), so the sender only paces `sendto` calls.
With --answer-cookies the flooder behaves like a careful insider: it opens each cookie reply and puts a valid mac2
(the cookie for that source port) on the later initiations from that port.

    python3 scripts/flood/flood.py --huddle .build/release/huddle --rate 5000 --duration 10
    python3 scripts/flood/flood.py --summarize run1.json run2.json ...      # one Markdown table of saved runs

Only 127.0.0.1 is ever a target. Needs Python 3 and PyNaCl.
"""

import argparse
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "vectors"))

from peer import Host, now_timestamp  # noqa: E402
import ref_crypto as crypto  # noqa: E402
import ref_session as session  # noqa: E402
import ref_wire as wire  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
ZERO_MAC = b"\x00" * 16


# --- /proc sampling ------------------------------------------------------------------------------

def proc_cpu_seconds(pid):
    """utime + stime of every thread of `pid`, in seconds (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_memory_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(line.split()[1])
    return out


class Sampler(threading.Thread):
    """(monotonic time, cpu seconds, VmRSS KiB, VmHWM KiB) of the host every `period` seconds."""

    def __init__(self, pid, period=0.1):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples = []
        self.stop_flag = threading.Event()

    def sample(self):
        try:
            mem = proc_memory_kib(self.pid)
            s = (time.monotonic(), proc_cpu_seconds(self.pid), mem.get("VmRSS"), mem.get("VmHWM"))
        except (OSError, ValueError, IndexError):
            return None
        self.samples.append(s)
        return s

    def run(self):
        while not self.stop_flag.is_set():
            self.sample()
            self.stop_flag.wait(self.period)

    def window(self, t0, t1):
        return [s for s in self.samples if t0 <= s[0] <= t1]


# --- Initiations -------------------------------------------------------------------------------

def build_initiations(count, host_static, creds):
    """`count` unique initiations under the invitation's credentials: (sender index, body || mac1) each.

    The same construction as scripts/conformance/peer.py Peer.make_initiation (reference implementation, §7.6),
    with a fresh static key per initiation: each looks like a different joiner holding the ticket."""
    key = crypto.mac1_key(creds["mac_secret"], host_static)
    seconds, nanos = now_timestamp()
    payload = crypto.initiation_payload(seconds, nanos, 0)
    out, used = [], set()
    for _ in range(count):
        index = struct.unpack("<I", os.urandom(4))[0]
        while index == 0 or index in used:
            index = struct.unpack("<I", os.urandom(4))[0]
        used.add(index)
        _, e_pub, enc_static, enc_payload = crypto.write_message1(os.urandom(32), os.urandom(32), host_static,
                                                                 payload)
        body = wire.u8(wire.INITIATION) + wire.RESERVED3 + wire.u32le(index) + e_pub + enc_static + enc_payload
        out.append((index, crypto.add_macs(body, key)[:136]))      # body || mac1; mac2 added when sent
    return out


# --- The flood ---------------------------------------------------------------------------------

class Flood:
    def __init__(self, target, initiations, rate, duration, n_sockets, cookie_key, answer_cookies,
                 source_ip="127.0.0.1"):
        self.target, self.initiations = target, initiations
        self.rate, self.duration = rate, duration
        self.cookie_key, self.answer_cookies = cookie_key, answer_cookies
        self.socks = []
        for _ in range(n_sockets):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            s.bind((source_ip, 0))
            s.setblocking(False)
            self.socks.append(s)
        self.by_index = {}                    # sender index -> (socket number, mac1)
        self.cookies = [None] * n_sockets     # socket number -> cookie (answer_cookies only)
        self.cookie_times, self.response_times, self.other = [], [], 0
        self.bad_cookies = 0
        self.sent, self.send_errors = 0, 0
        self.start = self.end = None
        self.stop_receiving = threading.Event()

    def receive(self):
        sel = selectors.DefaultSelector()
        for i, s in enumerate(self.socks):
            sel.register(s, selectors.EVENT_READ, i)
        while not self.stop_receiving.is_set():
            for key, _ in sel.select(0.05):
                s = key.fileobj
                while True:
                    try:
                        data = s.recv(2048)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    now = time.monotonic()
                    if len(data) == 64 and data[0] == wire.COOKIE_REPLY:
                        self.cookie_times.append(now)
                        if self.answer_cookies:
                            self.open_cookie(data)
                    elif len(data) == 92 and data[0] == wire.RESPONSE:
                        self.response_times.append(now)
                    else:
                        self.other += 1
        sel.close()

    def open_cookie(self, data):
        index = struct.unpack_from("<I", data, 4)[0]
        entry = self.by_index.get(index)
        if entry is None:
            self.bad_cookies += 1
            return
        sock_no, mac1 = entry
        try:
            self.cookies[sock_no] = crypto.open_cookie(self.cookie_key, data[8:32], data[32:64], mac1)
        except Exception:
            self.bad_cookies += 1

    def run(self):
        receiver = threading.Thread(target=self.receive, daemon=True)
        receiver.start()
        n = min(len(self.initiations), int(self.rate * self.duration))
        n_socks = len(self.socks)
        self.start = time.monotonic()
        deadline = self.start + self.duration
        k = 0
        while k < n:
            now = time.monotonic()
            if now >= deadline + 0.5:           # could not keep the rate: stop at the time bound anyway
                break
            due = min(n, int((now - self.start) * self.rate) + 1)
            while k < due:
                index, packet = self.initiations[k]
                sock_no = k % n_socks
                if self.answer_cookies:
                    self.by_index[index] = (sock_no, packet[120:136])
                    cookie = self.cookies[sock_no]
                    packet = packet + (crypto.mac(cookie, packet) if cookie else ZERO_MAC)
                else:
                    packet = packet + ZERO_MAC
                try:
                    self.socks[sock_no].sendto(packet, self.target)
                    self.sent += 1
                except OSError:
                    self.send_errors += 1
                k += 1
            time.sleep(0.0005)
        self.end = time.monotonic()
        return receiver

    def finish(self, receiver, drain):
        time.sleep(drain)
        self.stop_receiving.set()
        receiver.join(2)
        for s in self.socks:
            s.close()


# --- A legitimate joiner -----------------------------------------------------------------------

class Joiner:
    """`huddle join TICKET --json`, timed from spawn to its `joined` event; stopped (SIGTERM) when done."""

    def __init__(self, huddle, ticket, workdir, name, timeout, log_path=None):
        self.huddle, self.ticket, self.timeout, self.log_path = huddle, ticket, timeout, log_path
        self.identity = os.path.join(workdir, f"identity-{name}")
        self.name = name
        self.seconds = None
        self.outcome = "not started"
        self.thread = threading.Thread(target=self.run, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def run(self):
        args = [self.huddle, "join", self.ticket, "--json", "--identity", self.identity, "--name", self.name]
        if self.log_path:
            args += ["--log-level", "debug"]
        err = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        t0 = time.monotonic()
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)
        self.pid = proc.pid
        timer = threading.Timer(self.timeout, lambda: self._kill(proc, signal.SIGKILL))
        timer.start()
        try:
            for raw in proc.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if event.get("event") == "joined":
                    self.seconds = time.monotonic() - t0
                    self.outcome = "joined"
                    break
            else:
                code = proc.wait()
                self.outcome = f"exit {code} after {time.monotonic() - t0:.1f} s, no joined event"
        finally:
            timer.cancel()
            if proc.poll() is None:
                self._kill(proc, signal.SIGTERM)
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    self._kill(proc, signal.SIGKILL)
                    proc.wait(5)
            if self.seconds is None and self.outcome == "not started":
                self.outcome = "no joined event"

    @staticmethod
    def _kill(proc, sig):
        if proc.poll() is None:
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                pass

    def wait(self):
        self.thread.join(self.timeout + 15)
        return self


# --- One run -----------------------------------------------------------------------------------

def drop_lines(host, since):
    return [line for line in host.stderr_lines[since:] if "handshake messages dropped" in line]


def run(args):
    workdir = tempfile.mkdtemp(prefix="huddle-flood-")
    extra = ["--log-level", "debug"] if args.drop_log else []
    host = Host(args.huddle, workdir, extra_args=extra)
    result = {"rate": args.rate, "duration_s": args.duration, "sockets": args.sockets,
              "answer_cookies": args.answer_cookies, "drop_log": args.drop_log, "loadavg_before": loadavg()}
    try:
        deadline = time.monotonic() + 15
        ticket_event = None
        while time.monotonic() < deadline and host.alive() and not ticket_event:
            ticket_event = host.find(lambda e: e.get("event") == "ticket")
            time.sleep(0.05)
        if not ticket_event:
            raise RuntimeError("the host printed no ticket within 15 s")
        ticket_text = ticket_event["ticket"]
        ticket = session.decode_ticket(ticket_text)
        member = ticket["members"][0]
        host_static = member["static_key"]
        target = (".".join(str(b) for b in member["ip"]), member["port"])
        if target[0] != "127.0.0.1":
            raise RuntimeError(f"the ticket names {target}, not loopback: refusing to send")
        creds = session.credentials(ticket["invitation_secret"], b"hdl-invt")
        pid = host.proc.pid
        result["host_pid"] = pid

        count = int(args.rate * args.duration)
        t = time.monotonic()
        initiations = build_initiations(count, host_static, creds) if count else []
        result["prebuild_s"] = round(time.monotonic() - t, 2)
        log(f"host pid {pid} at {target[0]}:{target[1]}; {count} initiations built in {result['prebuild_s']} s")

        sampler = Sampler(pid)
        sampler.start()

        # Baseline: a legitimate join with no flood.
        if args.baseline_join:
            j = Joiner(args.huddle, ticket_text, workdir, "flood-baseline", args.join_timeout).start().wait()
            result["join_baseline_ms"] = round(j.seconds * 1000, 1) if j.seconds is not None else None
            result["join_baseline_outcome"] = j.outcome
            log(f"baseline join: {j.outcome} {result['join_baseline_ms']} ms")
            time.sleep(1.0)

        # Idle CPU for one second before the flood.
        a = sampler.sample()
        time.sleep(1.0)
        b = sampler.sample()
        if a and b:
            result["host_cpu_idle_pct"] = round(100 * (b[1] - a[1]) / (b[0] - a[0]), 1)
            result["host_rss_before_kib"] = b[2]

        stderr_mark = len(host.stderr_lines)
        flood = Flood(target, initiations, args.rate, args.duration, args.sockets,
                      crypto.cookie_key(creds["mac_secret"], host_static), args.answer_cookies, args.source_ip)
        own_cpu0 = time.process_time()
        joiner = None
        if args.join_at is not None and count:
            def start_joiner():
                nonlocal joiner
                joiner = Joiner(args.huddle, ticket_text, workdir, "flood-joiner", args.join_timeout,
                                args.joiner_log).start()
            threading.Timer(args.join_at, start_joiner).start()
        c0 = sampler.sample()
        receiver = flood.run()
        c1 = sampler.sample()
        flood.finish(receiver, args.drain)
        own_cpu = time.process_time() - own_cpu0
        if joiner is None and args.join_at is not None and count:
            time.sleep(0.2)
        if joiner is not None:
            joiner.wait()
            result["join_flood_ms"] = round(joiner.seconds * 1000, 1) if joiner.seconds is not None else None
            result["join_flood_outcome"] = joiner.outcome
        sampler.stop_flag.set()
        sampler.join(1)

        wall = flood.end - flood.start
        result["sent"] = flood.sent
        result["send_errors"] = flood.send_errors
        result["send_rate_per_s"] = round(flood.sent / wall, 1) if wall > 0 else None
        result["flood_wall_s"] = round(wall, 2)
        result["cookie_replies"] = len(flood.cookie_times)
        result["responses"] = len(flood.response_times)
        result["other_datagrams"] = flood.other
        result["cookie_replies_per_s"] = round(len(flood.cookie_times) / wall, 1) if wall > 0 else None
        result["responses_per_s"] = round(len(flood.response_times) / wall, 1) if wall > 0 else None
        result["first_cookie_after_ms"] = (round((min(flood.cookie_times) - flood.start) * 1000, 1)
                                           if flood.cookie_times else None)
        if args.answer_cookies:
            result["cookies_unopened"] = flood.bad_cookies
        result["per_second"] = per_second(flood)
        if c0 and c1:
            result["host_cpu_flood_pct"] = round(100 * (c1[1] - c0[1]) / (c1[0] - c0[0]), 1)
        window = sampler.window(flood.start, flood.end + args.drain)
        rss = [s[2] for s in window if s[2]]
        result["host_rss_max_during_kib"] = max(rss) if rss else None
        hwm = [s[3] for s in sampler.samples if s[3]]
        result["host_vmhwm_kib"] = max(hwm) if hwm else None
        result["flooder_cpu_pct"] = round(100 * own_cpu / (wall + args.drain), 1)
        result["host_alive_after"] = host.alive()
        result["host_cpu_timeline_pct"] = cpu_timeline(sampler.samples, flood.start)
        if args.drop_log:
            result["host_drop_log"] = drop_lines(host, stderr_mark)
    finally:
        host.stop()
        result["loadavg_after"] = loadavg()
    return result


def cpu_timeline(samples, start):
    """The host's CPU use (% of one core) in each whole second from the flood's start to the last sample."""
    out, second = [], 0
    while True:
        lo = [x for x in samples if x[0] >= start + second]
        hi = [x for x in samples if x[0] >= start + second + 1]
        if not lo or not hi:
            return out
        a, b = lo[0], hi[0]
        out.append(round(100 * (b[1] - a[1]) / (b[0] - a[0]), 1))
        second += 1


def per_second(flood):
    bins = []
    for second in range(int(flood.duration + 0.999) + 1):
        lo, hi = flood.start + second, flood.start + second + 1
        bins.append({"second": second,
                     "cookies": sum(1 for t in flood.cookie_times if lo <= t < hi),
                     "responses": sum(1 for t in flood.response_times if lo <= t < hi)})
    return bins


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def log(text):
    print(f"[flood] {text}", file=sys.stderr, flush=True)


# --- Output ------------------------------------------------------------------------------------

COLUMNS = [
    ("rate/s", lambda r: f"{r['rate']:,}" + (" +mac2" if r.get("answer_cookies") else "")),
    ("sent (actual/s)", lambda r: f"{r.get('sent', 0):,} ({r.get('send_rate_per_s')})"),
    ("first cookie", lambda r: ms(r.get("first_cookie_after_ms"))),
    ("cookie replies/s", lambda r: r.get("cookie_replies_per_s")),
    ("responses/s", lambda r: r.get("responses_per_s")),
    ("host CPU idle / flood", lambda r: f"{r.get('host_cpu_idle_pct')}% / {r.get('host_cpu_flood_pct')}%"),
    ("host RSS before / max / VmHWM", lambda r: f"{mib(r.get('host_rss_before_kib'))} / "
                                                f"{mib(r.get('host_rss_max_during_kib'))} / "
                                                f"{mib(r.get('host_vmhwm_kib'))}"),
    ("join baseline", lambda r: ms(r.get("join_baseline_ms"), r.get("join_baseline_outcome"))),
    ("join in flood", lambda r: ms(r.get("join_flood_ms"), r.get("join_flood_outcome"))),
    ("flooder CPU", lambda r: f"{r.get('flooder_cpu_pct')}%"),
]


def ms(value, outcome=None):
    if value is None:
        return outcome or "n/a"
    return f"{value:.0f} ms" if value >= 10 else f"{value:.1f} ms"


def mib(kib):
    return "n/a" if kib is None else f"{kib / 1024:.1f} MiB"


def markdown(results):
    lines = ["| " + " | ".join(name for name, _ in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for r in results:
        lines.append("| " + " | ".join(str(f(r)) for _, f in COLUMNS) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--huddle", default=os.path.join(HERE, "..", "..", ".build", "release", "huddle"))
    p.add_argument("--rate", type=int, default=5000, help="initiations per second (default 5000)")
    p.add_argument("--duration", type=float, default=10.0, help="flood seconds (default 10, at most 60)")
    p.add_argument("--sockets", type=int, default=200, help="UDP source ports (default 200)")
    p.add_argument("--join-at", type=float, default=1.0, help="start the timed join this many s into the flood")
    p.add_argument("--no-baseline-join", dest="baseline_join", action="store_false",
                   help="skip the join before the flood")
    p.add_argument("--join-timeout", type=float, default=40.0, help="kill a joiner after this many s")
    p.add_argument("--drain", type=float, default=1.0, help="s to keep receiving after the last send")
    p.add_argument("--answer-cookies", action="store_true",
                   help="open cookie replies and put a valid mac2 on later initiations from that port")
    p.add_argument("--drop-log", action="store_true",
                   help="run the host with --log-level debug and report its handshake-drop counter lines")
    p.add_argument("--joiner-log", help="run the joiner in the flood with --log-level debug, its stderr to this file")
    p.add_argument("--json-out", help="also write the result as JSON to this file")
    p.add_argument("--source-ip", default="127.0.0.1",
                   help="the flooder's source address (127.0.0.2 keeps the joiner, on 127.0.0.1, off its per-address "
                        "Diffie-Hellman budget, as on a real network)")
    p.add_argument("--summarize", nargs="+", metavar="JSON", help="print one Markdown table of saved results")
    args = p.parse_args()
    args.huddle = os.path.abspath(args.huddle)

    if args.summarize:
        results = []
        for path in args.summarize:
            with open(path) as f:
                results.append(json.load(f))
        print(markdown(results))
        return 0
    if not 0 <= args.rate <= 20000 or not 0 < args.duration <= 60 or not 1 <= args.sockets <= 1000:
        p.error("bounds: rate 0..20000, duration (0, 60], sockets 1..1000")

    result = run(args)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items()
                      if k not in ("per_second", "host_drop_log", "host_cpu_timeline_pct")}))
    print("host CPU per second from the flood's start (% of one core):", result.get("host_cpu_timeline_pct"))
    print()
    print("per second of the flood (second: cookie replies, responses): " + ", ".join(
        f"{b['second']}: {b['cookies']}, {b['responses']}" for b in result.get("per_second", [])))
    for line in result.get("host_drop_log", []):
        print("host:", line)
    print()
    print(markdown([result]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
