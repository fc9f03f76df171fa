#!/usr/bin/env python3
"""Huddle side by side with reference stacks on this machine (loopback), interleaved over several rounds.

    python3 Benchmarks/compare/run.py              # full run: 3 rounds, writes Benchmarks/results/latest.{md,svg}
    python3 Benchmarks/compare/run.py --rounds 5
    python3 Benchmarks/compare/run.py --smoke      # a few seconds: C ping-pong, ENet, Huddle if built; CI check

Workloads (see Benchmarks/compare/README.md): round trip of 64 B (p50/p99), one-way 64 B message rate, a 100 MiB
reliable bulk transfer, and Huddle's join time. Every round runs every workload once, in a fixed order, so that
background load affects all stacks alike; the table reports the median, min and max over the rounds and the ratio
of each median to Huddle's.

Nothing is hard-coded: every figure comes from a tool that ran in this invocation. A tool that fails or times out
is reported as failed, with the reason, instead of a number; a tool that cannot be installed is "not available".
Every process this script starts is tracked by pid and stopped (SIGTERM, then SIGKILL after 5 s) when it is no
longer needed and, in any case, before the script exits (also on Ctrl-C or SIGTERM). Every subprocess has a timeout.

Exit status: 0 when every measurement that ran succeeded, 1 when one failed, 2 on a usage or setup error.

Options: --rounds N, --smoke, --skip-install (use what is installed), --no-build (use the existing
.build/release/huddle), --huddle PATH, --only KEY[,KEY...] (run only these workloads; implies --no-write),
--no-write (print only), --list (print the workload keys).
"""
import argparse
import collections
import datetime
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUILD = HERE / ".build"
PYLIB = BUILD / "pylib"
RESULTS = ROOT / "Benchmarks" / "results"
MiB = 1024 * 1024

APT_PACKAGES = ["iperf3", "libenet-dev", "uftp", "kcptun"]
C_PROGRAMS = {"udp_pingpong": [], "udp_blast": [], "enet_bench": ["-lenet"]}

# Sizes. The full run must finish in well under 15 minutes on a 2-core machine (3 rounds).
FULL = {"rtt_count": 5000, "rate_seconds": 3, "bulk_bytes": 100 * MiB, "blast_seconds": 3, "join_count": 10}
SMOKE = {"rtt_count": 1000, "rate_seconds": 1, "bulk_bytes": 4 * MiB, "blast_seconds": 1, "join_count": 3}

# ENet: at most this many bytes queued in ENet but not yet acknowledged by the receiver (see README: 256 KiB and
# 1 MiB measured best here, 128 KiB and 4-16 MiB slower).
ENET_WINDOW = 1 * MiB
# kcptun: send/receive windows in packets on both sides. The client's default send window (128) capped a one-stream
# upload at about 4 MB/s here; 1024 (the server's default) gave about 27 MB/s, 4096 and 8192 about 35 MB/s.
KCPTUN_WINDOW = 4096
KCPTUN_KEY = "huddle-compare"
# Per-process time limits (seconds).
T_SERVER_READY = 30
T_RTT = 120
T_BULK = 240
T_BUILD = 2400


SETUP_COMMANDS = []  # what setup actually ran this time (installs, builds), for latest.md


def log(message):
    print(f"[compare] {message}", flush=True)


class Failure(Exception):
    """A measurement that ran and failed (or timed out)."""


class Unavailable(Exception):
    """A tool that is not installed or not supported here; not a failure."""


def one_line(text, limit=300):
    text = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return text if len(text) <= limit else "..." + text[-limit:]


# ------------------------------------------------------------------------------------------------ processes

class Tracker:
    """Every process the script starts, by pid; stops them (SIGTERM, then SIGKILL after 5 s)."""

    def __init__(self):
        self.procs = []
        self.commands = []
        self.record = True

    def popen(self, argv, env=None, cwd=None, display=None):
        argv = [str(a) for a in argv]
        if self.record:
            self.commands.append((display or shlex.join(argv)).replace(f"{ROOT}/", ""))
        full_env = None
        if env:
            full_env = dict(os.environ)
            full_env.update(env)
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=full_env, cwd=cwd)
        self.procs.append(proc)
        return proc

    @staticmethod
    def stop(procs, grace=5.0):
        live = [p for p in procs if p.poll() is None]
        for p in live:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for p in live:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def stop_all(self):
        self.stop(self.procs)

    def scope(self):
        tracker = self

        class Scope:
            def __enter__(self):
                self.start = len(tracker.procs)
                return self

            def __exit__(self, *exc):
                tracker.stop(tracker.procs[self.start:])
                return False

        return Scope()


TRACKER = Tracker()


class Running:
    """A started process whose stdout lines and stderr tail are collected by two threads."""

    def __init__(self, argv, env=None, cwd=None, display=None):
        self.argv = [str(a) for a in argv]
        program = Path(self.argv[0]).name
        self.name = Path(self.argv[1]).name if program.startswith("python") and len(self.argv) > 1 else program
        self.started = time.monotonic()
        self.proc = TRACKER.popen(self.argv, env=env, cwd=cwd, display=display)
        self.lines = []
        self.err = collections.deque(maxlen=40)
        self.first = threading.Event()
        self.threads = [threading.Thread(target=self._read_out, daemon=True),
                        threading.Thread(target=self._read_err, daemon=True)]
        for t in self.threads:
            t.start()

    def _read_out(self):
        for raw in self.proc.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))
            self.first.set()
        self.first.set()

    def _read_err(self):
        for raw in self.proc.stderr:
            self.err.append(raw.decode(errors="replace").rstrip("\n"))

    def stderr_tail(self):
        return one_line("\n".join(self.err))

    def describe_exit(self):
        tail = self.stderr_tail()
        return f"{self.name} exited with status {self.proc.returncode}" + (f": {tail}" if tail else "")

    def first_line(self, timeout=T_SERVER_READY):
        if not self.first.wait(timeout):
            raise Failure(f"{self.name} printed nothing within {timeout} s" +
                          (f": {self.stderr_tail()}" if self.err else ""))
        if not self.lines:
            self.proc.wait(5)
            raise Failure(self.describe_exit())
        return self.lines[0]

    def listening_port(self):
        line = self.first_line()
        try:
            return int(json.loads(line)["listening"])
        except (ValueError, KeyError, TypeError):
            raise Failure(f"{self.name}: unexpected first line {line[:200]!r}")

    def wait(self, timeout):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            Tracker.stop([self.proc])
            raise Failure(f"{self.name} timed out after {timeout} s" +
                          (f": {self.stderr_tail()}" if self.err else ""))
        for t in self.threads:
            t.join(2)
        self.wall = time.monotonic() - self.started
        return self.proc.returncode

    def stdout(self):
        return "\n".join(self.lines)


def run_client(argv, timeout, env=None, cwd=None, display=None):
    """Runs a client to completion; returns the Running. Non-zero exit or timeout -> Failure."""
    client = Running(argv, env=env, cwd=cwd, display=display)
    if client.wait(timeout) != 0:
        raise Failure(client.describe_exit())
    return client


def last_json(client, required=()):
    for line in reversed(client.lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                for key in required:
                    if not isinstance(value.get(key), (int, float)) or isinstance(value.get(key), bool):
                        raise Failure(f"{client.name} reported no number for {key!r}: {line[:200]}")
                return value
    raise Failure(f"{client.name} printed no JSON object" + (f": {client.stderr_tail()}" if client.err else ""))


USED_PORTS = set()


def free_port():
    """A loopback port free for both UDP and TCP right now, not handed out before in this run."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.bind(("127.0.0.1", 0))
            port = u.getsockname()[1]
            if port in USED_PORTS:
                continue
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
                    t.bind(("127.0.0.1", port))
            except OSError:
                continue
        USED_PORTS.add(port)
        return port
    raise Failure("no free port")


def port_bound(proto, port):
    wanted = f":{port:04X}"
    for table in (f"/proc/net/{proto}", f"/proc/net/{proto}6"):
        try:
            with open(table) as f:
                next(f)
                for row in f:
                    fields = row.split()
                    if fields[1].endswith(wanted) and (proto == "udp" or fields[3] == "0A"):
                        return True
        except OSError:
            continue
    return False


def wait_port(running, proto, port, timeout=T_SERVER_READY):
    """Waits until `running` has bound (UDP) or listens on (TCP) `port`, without connecting to it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if running.proc.poll() is not None:
            running.wait(5)
            raise Failure(running.describe_exit())
        if port_bound(proto, port):
            return
        time.sleep(0.02)
    raise Failure(f"{running.name} did not bind {proto} port {port} within {timeout} s")


def command_output(argv, timeout=30, env=None):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                             stdin=subprocess.DEVNULL, env=dict(os.environ, **env) if env else None)
        return out.returncode, out.stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)


# ------------------------------------------------------------------------------------------------ setup

def dpkg_installed(package):
    rc, out = command_output(["dpkg-query", "-W", "-f=${Status}", package])
    return rc == 0 and "install ok installed" in out


def apt_install(packages):
    """Installs the missing ones; returns {package: None or reason it is missing}."""
    missing = [p for p in packages if not dpkg_installed(p)]
    if not missing:
        log(f"apt: already installed: {' '.join(packages)}")
        return {p: None for p in packages}
    if shutil.which("apt-get") is None:
        return {p: (None if p not in missing else "apt-get not found") for p in packages}
    prefix = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    install = prefix + ["apt-get", "install", "-y", "--no-install-recommends"] + missing
    for attempt in (1, 2):
        log(f"apt: installing {' '.join(missing)}: {shlex.join(install)}")
        SETUP_COMMANDS.append(f"DEBIAN_FRONTEND=noninteractive {shlex.join(install)}")
        try:
            proc = subprocess.run(install, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=900)
            output = proc.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired:
            output = "apt-get install timed out after 900 s"
        if all(dpkg_installed(p) for p in missing):
            break
        if attempt == 1:
            update = prefix + ["apt-get", "update"]
            log(f"apt: install failed ({one_line(output, 200)}); running {shlex.join(update)} and retrying")
            SETUP_COMMANDS.append(shlex.join(update))
            try:
                subprocess.run(update, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=600)
            except subprocess.TimeoutExpired:
                pass
    return {p: (None if dpkg_installed(p) else f"apt-get install {p} failed: {one_line(output, 200)}")
            for p in packages}


def pip_install_aioquic():
    """aioquic into Benchmarks/compare/.build/pylib (pip --target works on Debian's externally managed Python)."""
    env = {"PYTHONPATH": str(PYLIB)}
    check = [sys.executable, "-c", "import aioquic, cryptography; print(aioquic.__version__)"]
    rc, out = command_output(check, 60, env) if PYLIB.exists() else (1, "")
    if rc == 0:
        log(f"pip: aioquic {out.strip()} already in {PYLIB}")
        return None
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target",
               str(PYLIB), "aioquic"]
    log(f"pip: {shlex.join(install)}")
    SETUP_COMMANDS.append(shlex.join(install))
    try:
        proc = subprocess.run(install, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=600)
        output = proc.stdout.decode(errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"pip install aioquic failed: {e}"
    rc, _ = command_output(check, 60, env)
    if rc != 0:
        return f"pip install aioquic failed: {one_line(output, 200)}"
    return None


def c_compiler():
    for name in (os.environ.get("CC"), "gcc", "cc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build_c(name, libs):
    """Builds c/NAME.c into .build/NAME when the binary is missing or older than its source."""
    source, binary = HERE / "c" / f"{name}.c", BUILD / name
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
        return binary
    cc = c_compiler()
    if cc is None:
        raise Failure("no C compiler (gcc, cc or clang) found")
    BUILD.mkdir(parents=True, exist_ok=True)
    argv = [cc, "-O2", "-Wall", "-o", str(binary), str(source)] + libs + ["-lm"]
    log(f"build: {shlex.join(argv)}")
    SETUP_COMMANDS.append(shlex.join(argv).replace(f"{ROOT}/", ""))
    rc, out = command_output(argv, 180)
    if rc != 0:
        raise Failure(f"compiling {name}.c failed: {one_line(out)}")
    return binary


def build_huddle():
    swift = shutil.which("swift")
    if swift is None:
        raise Unavailable("swift not found: cannot build the huddle CLI")
    argv = [swift, "build", "-c", "release", "--product", "huddle"]
    log(f"build: (cd {ROOT} && {shlex.join(argv)})  [may take minutes]")
    SETUP_COMMANDS.append(shlex.join(argv))
    BUILD.mkdir(parents=True, exist_ok=True)
    log_path = BUILD / "huddle-build.log"
    started = time.monotonic()
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        TRACKER.procs.append(proc)
        try:
            rc = proc.wait(T_BUILD)
        except subprocess.TimeoutExpired:
            Tracker.stop([proc])
            raise Failure(f"swift build timed out after {T_BUILD} s (log: {log_path})")
    if rc != 0:
        raise Failure(f"swift build failed (log: {log_path}): {one_line(log_path.read_text(errors='replace'))}")
    log(f"build: huddle built in {time.monotonic() - started:.0f} s")
    return ROOT / ".build" / "release" / "huddle"


def huddle_capabilities(binary):
    """Returns the set of `huddle bench run --test` values the binary supports; Unavailable without `bench`."""
    if not binary.exists():
        raise Unavailable(f"no huddle binary at {binary}")
    rc, out = command_output([str(binary), "bench", "--help"], 30)
    if rc != 0:
        raise Unavailable(f"`huddle bench` is not in this build ({one_line(out, 120)})")
    rc, out = command_output([str(binary), "bench", "run", "--help"], 30)
    if rc != 0:
        raise Unavailable(f"`huddle bench run --help` failed ({one_line(out, 120)})")
    found = {t for t in ("rtt", "rate", "bulk", "journal", "join") if re.search(rf"\b{t}\b", out)}
    found |= {t for t in ("rtt-journal", "--on-pool", "--no-path-mtu-discovery") if t in out}
    return found


# ------------------------------------------------------------------------------------------------ tools

class Tools:
    """Paths (or the reason a tool cannot be used), resolved once per invocation."""

    def __init__(self):
        self.state = {}  # key -> ("ok", value) | ("unavailable", reason) | ("failed", reason)

    def set(self, key, fn):
        try:
            self.state[key] = ("ok", fn())
        except Unavailable as e:
            self.state[key] = ("unavailable", str(e))
        except Failure as e:
            self.state[key] = ("failed", str(e))

    def get(self, key):
        kind, value = self.state.get(key, ("unavailable", f"{key} not set up"))
        if kind == "ok":
            return value
        raise (Unavailable if kind == "unavailable" else Failure)(value)


TOOLS = Tools()


def which_or_unavailable(name, package_state, package):
    path = shutil.which(name)
    if path:
        return path
    reason = package_state.get(package) if package_state else None
    raise Unavailable(reason or f"{name} not installed (apt package {package})")


# ------------------------------------------------------------------------------------------------ measurements
# Each returns a dict of numbers (and optionally "note"); raises Failure or Unavailable.

def huddle_test(test, args, required, timeout, on_pool=False, base_size=False):
    huddle, capabilities = TOOLS.get("huddle")
    if test not in capabilities:
        raise Unavailable(f"`huddle bench run` does not list --test {test}")
    if on_pool and "--on-pool" not in capabilities:
        raise Unavailable("`huddle bench` has no --on-pool flag")
    if base_size and "--no-path-mtu-discovery" not in capabilities:
        raise Unavailable("`huddle bench` has no --no-path-mtu-discovery flag")
    pool = (["--on-pool"] if on_pool else []) + (["--no-path-mtu-discovery"] if base_size else [])
    server = Running([huddle, "bench", "serve", "--listen", "127.0.0.1:0"] + pool)
    ticket = server.first_line().strip()
    if not ticket.startswith("huddle:"):
        raise Failure(f"huddle bench serve printed {ticket[:80]!r} instead of a ticket")
    argv = [huddle, "bench", "run", ticket, "--test", test] + [str(a) for a in args] + pool + ["--json"]
    display = shlex.join(argv).replace(shlex.quote(ticket), "$TICKET")
    client = run_client(argv, timeout, display=display)
    result = last_json(client, required)
    result["wall_s"] = client.wall
    Tracker.stop([server.proc])
    if server.proc.returncode not in (0, -signal.SIGTERM):
        result["note"] = f"serve exited with {server.proc.returncode} on SIGTERM"
    return result


def m_huddle_rtt(cfg, on_pool=False):
    r = huddle_test("rtt", ["--count", cfg["rtt_count"]], ["p50_us", "p99_us"], T_RTT, on_pool=on_pool)
    return {k: r[k] for k in ("p50_us", "p90_us", "p99_us", "p999_us") if isinstance(r.get(k), (int, float))}


def m_huddle_rtt_journal(cfg):
    r = huddle_test("rtt-journal", ["--size", cfg["bulk_bytes"]], ["p50_us", "p99_us"], T_BULK)
    out = {k: r[k] for k in ("p50_us", "p90_us", "p99_us", "p999_us") if isinstance(r.get(k), (int, float))}
    out["note"] = f"{r.get('messages')} round trips while the attachment moved at {r.get('mb_per_s', 0):.1f} MB/s"
    return out


def m_huddle_rate(cfg):
    r = huddle_test("rate", ["--duration", cfg["rate_seconds"]], ["messages_per_s"], T_RTT)
    return {"messages_per_s": r["messages_per_s"]}


def m_huddle_bulk(cfg, test="bulk", base_size=False):
    size = cfg["bulk_bytes"]
    r = huddle_test(test, ["--size", size], ["mb_per_s"], T_BULK, base_size=base_size)
    if isinstance(r.get("bytes"), (int, float)) and r["bytes"] < size:
        raise Failure(f"huddle reported {r['bytes']} of {size} bytes")
    out = {"mb_per_s": r["mb_per_s"], "wall_s": r["wall_s"]}
    if "note" in r:
        out["note"] = r["note"]
    return out


def m_huddle_join(cfg):
    r = huddle_test("join", ["--count", cfg["join_count"]], ["p50_us"], T_RTT)
    return {"join_ms": r["p50_us"] / 1000}


def m_c_rtt(cfg):
    binary = TOOLS.get("udp_pingpong")
    server = Running([binary, "server", "0", "--timeout", T_RTT + 30])
    port = server.listening_port()
    client = run_client([binary, "client", "127.0.0.1", port, cfg["rtt_count"], 64], T_RTT)
    r = last_json(client, ["p50_us", "p99_us"])
    return {k: r[k] for k in ("p50_us", "p90_us", "p99_us", "p999_us")}


def m_enet_rtt(cfg):
    binary = TOOLS.get("enet_bench")
    server = Running([binary, "server", "0", "--timeout", T_RTT + 30])
    port = server.listening_port()
    client = run_client([binary, "client", "127.0.0.1", port, "--test", "rtt", "--count", cfg["rtt_count"],
                         "--timeout", T_RTT], T_RTT + 10)
    r = last_json(client, ["p50_us", "p99_us"])
    return {k: r[k] for k in ("p50_us", "p90_us", "p99_us", "p999_us")}


def m_enet_bulk(cfg, packet):
    binary = TOOLS.get("enet_bench")
    server = Running([binary, "server", "0", "--timeout", T_BULK + 30])
    port = server.listening_port()
    client = run_client([binary, "client", "127.0.0.1", port, "--test", "bulk", "--size", cfg["bulk_bytes"],
                         "--packet", packet, "--window", ENET_WINDOW, "--timeout", T_BULK], T_BULK + 10)
    r = last_json(client, ["mb_per_s"])
    return {"mb_per_s": r["mb_per_s"], "wall_s": client.wall}


def m_blast(cfg, size, seconds_key):
    """Raw UDP, unreliable: the receiver's figures."""
    binary = TOOLS.get("udp_blast")
    seconds = cfg[seconds_key]
    receiver = Running([binary, "recv", "0", seconds + 20])
    port = receiver.listening_port()
    sender = run_client([binary, "send", "127.0.0.1", port, size, seconds], seconds + 20)
    sent = last_json(sender, ["sent_datagrams"])
    if receiver.wait(30) != 0:
        raise Failure(receiver.describe_exit())
    r = last_json(receiver, ["mb_per_s", "messages_per_s", "datagrams"])
    lost = 1 - r["datagrams"] / sent["sent_datagrams"] if sent["sent_datagrams"] else 0
    return {"mb_per_s": r["mb_per_s"], "messages_per_s": r["messages_per_s"], "wall_s": sender.wall,
            "loss_pct": 100 * lost}


def m_uftp(cfg, work):
    uftp, uftpd = TOOLS.get("uftp")
    size = cfg["bulk_bytes"]
    source = bulk_file(work, size)
    tmp = Path(tempfile.mkdtemp(prefix="uftp-", dir=work))
    try:
        dest = tmp / "dest"
        dest.mkdir()
        status = tmp / "status.txt"
        port = free_port()
        server = Running([uftpd, "-d", "-p", port, "-U", "0x00000002", "-D", dest, "-q", "-x", "1",
                          "-B", 8 * MiB, "-K", "ec:prime256v1"])
        wait_port(server, "udp", port)
        client = run_client([uftp, "-M", "127.0.0.1", "-p", port, "-U", "0x00000001", "-H", "0x00000002",
                             "-R", "-1", "-Y", "aes256-gcm", "-h", "sha256", "-e", "ecdh_ecdsa", "-x", "1",
                             "-B", 8 * MiB, "-S", status, source], T_BULK)
        lines = status.read_text(errors="replace").splitlines() if status.exists() else []
        results = [l.split(";") for l in lines if l.startswith("RESULT;")]
        stats = [l.split(";") for l in lines if l.startswith("STATS;")]
        if not results or results[-1][4] != "copy" or not stats:
            raise Failure(f"uftp status file: {one_line(chr(10).join(lines)) or 'empty'}; {client.stderr_tail()}")
        received = dest / source.name
        if not received.exists() or received.stat().st_size != size:
            got = received.stat().st_size if received.exists() else "no file"
            raise Failure(f"uftpd received {got} instead of {size} bytes")
        seconds = float(stats[-1][6])
        if seconds <= 0:
            raise Failure(f"uftp reported a transfer time of {stats[-1][6]} s")
        return {"mb_per_s": size / seconds / 1e6, "wall_s": client.wall}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def m_kcptun(cfg, crypt):
    server_bin, client_bin = TOOLS.get("kcptun")
    sink = Running([sys.executable, Path(__file__).resolve(), "_tcp-sink", "--port", "0", "--timeout", T_BULK + 30])
    sink_port = sink.listening_port()
    udp_port, tcp_port = free_port(), free_port()
    common = ["--crypt", crypt, "--key", KCPTUN_KEY, "--mode", "fast", "--nocomp", "--sndwnd", KCPTUN_WINDOW,
              "--rcvwnd", KCPTUN_WINDOW, "--quiet"]
    server = Running([server_bin, "--listen", f"127.0.0.1:{udp_port}", "--target", f"127.0.0.1:{sink_port}"]
                     + common)
    wait_port(server, "udp", udp_port)
    client = Running([client_bin, "--localaddr", f"127.0.0.1:{tcp_port}", "--remoteaddr",
                      f"127.0.0.1:{udp_port}"] + common)
    wait_port(client, "tcp", tcp_port)
    source = run_client([sys.executable, Path(__file__).resolve(), "_tcp-source", "--port", tcp_port, "--size",
                         cfg["bulk_bytes"], "--timeout", T_BULK], T_BULK + 10)
    r = last_json(source, ["mb_per_s"])
    return {"mb_per_s": r["mb_per_s"], "wall_s": source.wall}


def m_iperf3_tcp(cfg):
    iperf3 = TOOLS.get("iperf3")
    port = free_port()
    server = Running([iperf3, "-s", "-1", "-p", port])
    wait_port(server, "tcp", port)
    client = Running([iperf3, "-c", "127.0.0.1", "-p", port, "-n", cfg["bulk_bytes"], "-J"])
    rc = client.wait(T_BULK)
    data = parse_iperf(client)
    if rc != 0:
        raise Failure(client.describe_exit())
    sent, received = data["end"]["sum_sent"], data["end"]["sum_received"]
    if sent["bytes"] < cfg["bulk_bytes"]:
        raise Failure(f"iperf3 sent {sent['bytes']} of {cfg['bulk_bytes']} bytes")
    # iperf3's receiver figure: bytes the server counted over its own interval (it may stop counting a few MB
    # before the end of a -n transfer; the rate is still the one iperf3 reports).
    return {"mb_per_s": received["bytes"] / received["seconds"] / 1e6, "wall_s": client.wall}


def m_iperf3_udp(cfg):
    iperf3 = TOOLS.get("iperf3")
    port = free_port()
    server = Running([iperf3, "-s", "-1", "-p", port])
    wait_port(server, "tcp", port)
    client = Running([iperf3, "-c", "127.0.0.1", "-p", port, "-u", "-b", "0", "-l", "1200", "-n",
                      cfg["bulk_bytes"], "-J"])
    rc = client.wait(T_BULK)
    data = parse_iperf(client)
    if rc != 0:
        raise Failure(client.describe_exit())
    received = data["end"]["sum_received"]
    return {"mb_per_s": received["bytes"] / received["seconds"] / 1e6, "wall_s": client.wall,
            "loss_pct": received.get("lost_percent", 0.0)}


def parse_iperf(client):
    try:
        data = json.loads(client.stdout())
    except ValueError:
        raise Failure(f"iperf3 printed no JSON: {client.stderr_tail() or one_line(client.stdout())}")
    if data.get("error"):
        raise Failure(f"iperf3: {data['error']}")
    return data


def m_aioquic(cfg, work):
    TOOLS.get("aioquic")
    env = {"PYTHONPATH": str(PYLIB)}
    tmp = Path(tempfile.mkdtemp(prefix="quic-", dir=work))
    script = HERE / "quic_bench.py"
    server = Running([sys.executable, script, "server", "--port", "0", "--dir", tmp, "--timeout", T_BULK + 30],
                     env=env)
    port = server.listening_port()
    client = run_client([sys.executable, script, "client", "--port", port, "--size", cfg["bulk_bytes"],
                         "--timeout", T_BULK], T_BULK + 10, env=env)
    r = last_json(client, ["mb_per_s"])
    return {"mb_per_s": r["mb_per_s"], "wall_s": client.wall}


_BULK_FILES = {}


def bulk_file(work, size):
    if size not in _BULK_FILES:
        path = Path(work) / f"payload-{size}.bin"
        with open(path, "wb") as f:
            left = size
            while left:
                chunk = os.urandom(min(left, MiB))
                f.write(chunk)
                left -= len(chunk)
        _BULK_FILES[size] = path
    return _BULK_FILES[size]


# ------------------------------------------------------------------------------------------------ workloads

class Workload:
    def __init__(self, key, cls, stack, fn, detail="", huddle=False, smoke=False, fixed_size=True):
        self.key, self.cls, self.stack, self.fn, self.detail = key, cls, stack, fn, detail
        self.huddle, self.smoke = huddle, smoke
        # Whether a bulk workload moves exactly cfg["bulk_bytes"] (the fixed-time blasts do not).
        self.fixed_size = fixed_size


def workloads(work):
    size_note = "100 MiB"
    return [
        # Round trip, 64 B
        Workload("huddle-rtt", "rtt", "Huddle", m_huddle_rtt,
                 "reliable, encrypted (Noise IKpsk2 + ChaCha20-Poly1305); app tasks on the node's event loop",
                 huddle=True, smoke=True),
        Workload("huddle-rtt-pool", "rtt", "Huddle, app on the cooperative pool",
                 lambda cfg: m_huddle_rtt(cfg, on_pool=True), "as above, app tasks without an executor preference"),
        Workload("huddle-rtt-journal", "rtt", "Huddle during a 100 MiB attachment", m_huddle_rtt_journal,
                 "the same round trips while a journal attachment moves on the same connection"),
        Workload("c-rtt", "rtt", "C UDP ping-pong", m_c_rtt, "plain UDP, no reliability, no crypto", smoke=True),
        Workload("enet-rtt", "rtt", "ENet 1.3.17", m_enet_rtt, "reliable, no crypto", smoke=True),
        # Message rate, 64 B one way
        Workload("huddle-rate", "rate", "Huddle", m_huddle_rate, "reliable, encrypted", huddle=True),
        Workload("c-blast-64", "rate", "C UDP blast, 64 B (raw limit)",
                 lambda cfg: m_blast(cfg, 64, "rate_seconds"),
                 "UNRELIABLE plain UDP, sendmmsg/recvmmsg; datagrams received per second"),
        # Bulk, reliable
        Workload("huddle-bulk", "bulk", "Huddle bulk", m_huddle_bulk,
                 "reliable, encrypted; Path MTU discovery finds loopback's size: 8972 B datagrams", huddle=True,
                 smoke=True),
        Workload("huddle-bulk-1200", "bulk", "Huddle bulk, 1200 B datagrams",
                 lambda cfg: m_huddle_bulk(cfg, base_size=True),
                 "--no-path-mtu-discovery: the datagram size of the 1200 B rows below", huddle=True),
        Workload("huddle-journal", "bulk", "Huddle journal attachment", lambda cfg: m_huddle_bulk(cfg, "journal"),
                 "chunked, Merkle-verified, stored; encrypted", huddle=True),
        Workload("enet-bulk-64k", "bulk", "ENet, 64 KiB packets", lambda cfg: m_enet_bulk(cfg, 64 * 1024),
                 "reliable, no crypto", smoke=True),
        Workload("enet-bulk-1k", "bulk", "ENet, 1 KiB packets", lambda cfg: m_enet_bulk(cfg, 1024),
                 "reliable, no crypto"),
        Workload("uftp", "bulk", "uftp 4.10 AES-256-GCM", lambda cfg: m_uftp(cfg, work),
                 "file to uftpd over unicast; ECDH P-256; uftp's own transfer time"),
        Workload("kcptun-aes", "bulk", "kcptun (KCP) --crypt aes", lambda cfg: m_kcptun(cfg, "aes"),
                 f"TCP stream through the tunnel, mode fast, FEC 10/3, windows {KCPTUN_WINDOW}"),
        Workload("kcptun-none", "bulk", "kcptun (KCP) --crypt none", lambda cfg: m_kcptun(cfg, "none"),
                 f"as above without encryption"),
        Workload("iperf3-tcp", "bulk", "iperf3 TCP", m_iperf3_tcp, "kernel TCP on loopback, no crypto"),
        Workload("iperf3-udp", "bulk", "iperf3 UDP, 1200 B (unreliable)", m_iperf3_udp,
                 "-b 0: UNRELIABLE; MB/s received"),
        Workload("c-blast-1200", "bulk", "C UDP blast, 1200 B (raw limit)",
                 lambda cfg: m_blast(cfg, 1200, "blast_seconds"),
                 "UNRELIABLE plain UDP for a fixed time, not 100 MiB; MB/s received", fixed_size=False),
        Workload("aioquic", "bulk", "aioquic (QUIC, Python)", lambda cfg: m_aioquic(cfg, work),
                 "one stream, TLS 1.3; pure-Python QUIC"),
        # Join
        Workload("huddle-join", "join", "Huddle", m_huddle_join,
                 "median of the run's joins, each from starting a fresh node to joined", huddle=True),
    ]


def setup_tools(args, smoke, huddle_path):
    """Installs and builds what is needed; fills TOOLS."""
    packages = {}
    if args.skip_install:
        log("install: skipped (--skip-install)")
    else:
        packages = apt_install(["libenet-dev"] if smoke else APT_PACKAGES)
    for name, libs in C_PROGRAMS.items():
        if name == "enet_bench" and not Path("/usr/include/enet/enet.h").exists():
            reason = packages.get("libenet-dev") or "libenet-dev is not installed (/usr/include/enet/enet.h)"
            TOOLS.state[name] = ("failed" if smoke else "unavailable", reason)
            continue
        TOOLS.set(name, lambda n=name, l=libs: build_c(n, l))

    def huddle():
        binary = huddle_path
        if binary is None:
            if smoke or args.no_build:
                candidates = [ROOT / ".build" / "release" / "huddle", ROOT / ".build" / "debug" / "huddle"]
                binary = next((c for c in candidates if c.exists()), candidates[0])
            else:
                binary = build_huddle()
        binary = Path(binary)
        capabilities = huddle_capabilities(binary)
        log(f"huddle: {binary} (bench tests: {', '.join(sorted(capabilities)) or 'none'})")
        return str(binary), capabilities
    TOOLS.set("huddle", huddle)
    if smoke:
        return
    TOOLS.set("iperf3", lambda: which_or_unavailable("iperf3", packages, "iperf3"))
    TOOLS.set("uftp", lambda: (which_or_unavailable("uftp", packages, "uftp"),
                               which_or_unavailable("uftpd", packages, "uftp")))
    TOOLS.set("kcptun", lambda: (which_or_unavailable("kcptun-server", packages, "kcptun"),
                                 which_or_unavailable("kcptun-client", packages, "kcptun")))

    def aioquic():
        reason = None if args.skip_install else pip_install_aioquic()
        rc, out = command_output([sys.executable, "-c", "import aioquic, cryptography; print(aioquic.__version__)"],
                                 60, {"PYTHONPATH": str(PYLIB)})
        if rc != 0:
            raise Unavailable(reason or "aioquic is not installed")
        return out.strip()
    TOOLS.set("aioquic", aioquic)


# ------------------------------------------------------------------------------------------------ results

class Outcome:
    def __init__(self):
        self.values = []   # dicts from successful rounds
        self.failures = []  # (round, reason)
        self.unavailable = None


def children_cpu_seconds():
    """User + system CPU seconds of every child process reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(workload, cfg, round_number, outcome):
    label = f"round {round_number}: {workload.key}"
    started = time.monotonic()
    try:
        # The scope stops and reaps every process the workload started, so the children's CPU time grows by exactly
        # theirs (both ends, and any helper process such as a tunnel or a Python sink).
        cpu_before = children_cpu_seconds()
        with TRACKER.scope():
            value = workload.fn(cfg)
        cpu = children_cpu_seconds() - cpu_before
        if workload.cls == "bulk" and workload.fixed_size and cpu > 0:
            value["mb_per_cpu_s"] = cfg["bulk_bytes"] / cpu / 1e6
        outcome.values.append(value)
        shown = ", ".join(f"{k}={v:.1f}" for k, v in value.items() if isinstance(v, (int, float)))
        log(f"{label}: {shown}  ({time.monotonic() - started:.1f} s)")
    except Unavailable as e:
        outcome.unavailable = str(e)
        log(f"{label}: not available: {e}")
    except Failure as e:
        outcome.failures.append((round_number, str(e)))
        log(f"{label}: FAILED: {e}")
    except OSError as e:
        outcome.failures.append((round_number, f"{type(e).__name__}: {e}"))
        log(f"{label}: FAILED: {e}")


def median_of(outcome, key):
    values = [v[key] for v in outcome.values if isinstance(v.get(key), (int, float))]
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def fmt(value, key):
    if value is None:
        return "—"
    if key.endswith("_us") or key == "join_ms":
        return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"
    if key == "messages_per_s":
        return f"{value:,.0f}"
    if key == "wall_s":
        return f"{value:.2f}"
    if key == "loss_pct":
        return f"{value:.1f} %"
    return f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"


def ratio_text(value, reference):
    if value is None or reference is None or reference == 0:
        return "—"
    r = value / reference
    return f"{r:.2f}×" if r < 100 else f"{r:.0f}×"


def md_escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


def status_note(w, outcome, rounds):
    notes = [w.detail] if w.detail else []
    if outcome.unavailable:
        notes.append(f"**not available**: {outcome.unavailable}")
    if outcome.failures:
        first_round, reason = outcome.failures[0]
        notes.append(f"**failed** in {len(outcome.failures)} of {rounds} rounds (round {first_round}: {reason})")
    loss = median_of(outcome, "loss_pct")
    if loss:
        notes.append(f"median loss {loss[0]:.1f} %")
    extra = sorted({v["note"] for v in outcome.values if "note" in v})
    notes.extend(extra)
    return md_escape("; ".join(notes))


def cell(outcome, key):
    m = median_of(outcome, key)
    if m is None:
        return ("not available" if outcome.unavailable else "failed" if outcome.failures else "—"), "—"
    return fmt(m[0], key), f"{fmt(m[1], key)} – {fmt(m[2], key)}"


def huddle_reference(ws, outcomes, cls, key):
    for w in ws:
        if w.huddle and w.cls == cls and w.key in outcomes:
            m = median_of(outcomes[w.key], key)
            if m:
                return m[0]
    return None


def build_tables(ws, outcomes, rounds, cfg):
    out = []
    present = [w for w in ws if w.key in outcomes]

    def ok(o):
        return f"{len(o.values)}/{rounds}"

    rtt = [w for w in present if w.cls == "rtt"]
    if rtt:
        ref50, ref99 = (huddle_reference(ws, outcomes, "rtt", k) for k in ("p50_us", "p99_us"))
        out.append(f"### Round trip, 64 B ({cfg['rtt_count']:,} round trips after 100 warm-up; µs)\n")
        out.append("Ratio = other median / Huddle median: **below 1 means the other stack has the lower (faster) "
                   "round trip**.\n")
        out.append("| Stack | p50 median | p50 min – max | p99 median | p99 min – max | p50 vs Huddle | p99 vs Huddle"
                   " | Rounds ok | Notes |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for w in rtt:
            o = outcomes[w.key]
            p50, p50r = cell(o, "p50_us")
            p99, p99r = cell(o, "p99_us")
            m50, m99 = median_of(o, "p50_us"), median_of(o, "p99_us")
            out.append(f"| {w.stack} | {p50} | {p50r} | {p99} | {p99r} | "
                       f"{ratio_text(m50 and m50[0], ref50)} | {ratio_text(m99 and m99[0], ref99)} | {ok(o)} | "
                       f"{status_note(w, o, rounds)} |")
        out.append("")
    rate = [w for w in present if w.cls == "rate"]
    if rate:
        ref = huddle_reference(ws, outcomes, "rate", "messages_per_s")
        out.append(f"### Message rate, 64 B one way ({cfg['rate_seconds']} s per run; messages/s)\n")
        out.append("Ratio = other median / Huddle median: **above 1 means the other stack moves more messages per "
                   "second than Huddle**.\n")
        out.append("| Stack | msg/s median | min – max | vs Huddle | Rounds ok | Notes |")
        out.append("| --- | ---: | ---: | ---: | ---: | --- |")
        for w in rate:
            o = outcomes[w.key]
            med, rng = cell(o, "messages_per_s")
            m = median_of(o, "messages_per_s")
            out.append(f"| {w.stack} | {med} | {rng} | {ratio_text(m and m[0], ref)} | {ok(o)} | "
                       f"{status_note(w, o, rounds)} |")
        out.append("")
    bulk = [w for w in present if w.cls == "bulk"]
    if bulk:
        ref = huddle_reference(ws, outcomes, "bulk", "mb_per_s")
        size = cfg["bulk_bytes"]
        out.append(f"### Bulk transfer, {size // MiB} MiB ({size:,} bytes; MB/s = 10^6 bytes/s)\n")
        out.append("MB/s is each tool's own transfer figure (handshake excluded); wall s is the client process's "
                   "whole run as timed by run.py (start, handshake, transfer, exit). MB per CPU-s is the bytes moved "
                   "over the user + system CPU time of every process of the run (both ends, and any tunnel or "
                   "Python helper), as the kernel accounts it when they are reaped. Ratio = other median / Huddle "
                   "bulk median: **above 1 means the other stack is faster than Huddle**.\n")
        out.append("| Stack | MB/s median | min – max | wall s median | MB per CPU-s | vs Huddle | Rounds ok | Notes |")
        out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for w in bulk:
            o = outcomes[w.key]
            med, rng = cell(o, "mb_per_s")
            m, wall = median_of(o, "mb_per_s"), median_of(o, "wall_s")
            per_cpu = median_of(o, "mb_per_cpu_s")
            out.append(f"| {w.stack} | {med} | {rng} | {fmt(wall and wall[0], 'wall_s')} | "
                       f"{fmt(per_cpu and per_cpu[0], 'mb_per_s')} | "
                       f"{ratio_text(m and m[0], ref)} | {ok(o)} | {status_note(w, o, rounds)} |")
        out.append("")
    join = [w for w in present if w.cls == "join"]
    if join:
        out.append(f"### Join time ({cfg['join_count']} joins per round; ms)\n")
        out.append("| Stack | median | min – max | Rounds ok | Notes |")
        out.append("| --- | ---: | ---: | ---: | --- |")
        for w in join:
            o = outcomes[w.key]
            med, rng = cell(o, "join_ms")
            out.append(f"| {w.stack} | {med} | {rng} | {ok(o)} | {status_note(w, o, rounds)} |")
        out.append("")
    return "\n".join(out)


def goals(outcomes):
    """The benchmark issue's goals, decided on the medians. Each line also says whether the min - max ranges over
    the rounds agree (the goal holds, or fails, even comparing Huddle's worst round with the other's best)."""
    def rng(key, metric):
        o = outcomes.get(key)
        return median_of(o, metric) if o else None

    lines = []

    def goal(text, huddle, others, factor, higher_is_better, unit, metric):
        """Huddle's median must beat factor x each other's median (higher or lower is better)."""
        others = [(name, r) for name, r in others]
        figures = [f"Huddle {fmt(huddle and huddle[0], metric)} {unit}"]
        figures += [f"{name} {fmt(r and r[0], metric)} {unit}" for name, r in others]
        if huddle is None or any(r is None for _, r in others):
            lines.append(f"- {text}: not measured ({'; '.join(figures)})")
            return
        if higher_is_better:
            met = all(huddle[0] > factor * r[0] if factor == 1 else huddle[0] >= factor * r[0] for _, r in others)
            robust_met = all(huddle[1] >= factor * r[2] for _, r in others)
            robust_missed = any(huddle[2] < factor * r[1] for _, r in others)
        else:
            met = all(huddle[0] <= factor * r[0] for _, r in others)
            robust_met = all(huddle[2] <= factor * r[1] for _, r in others)
            robust_missed = any(huddle[1] > factor * r[2] for _, r in others)
        if met and robust_met or not met and robust_missed:
            spread = "and the min – max ranges over the rounds agree"
        else:
            spread = "but the min – max ranges over the rounds overlap, so these rounds do not settle it"
        verdict = "**met**" if met else "**missed**"
        lines.append(f"- {text}: {verdict}, {spread} ({'; '.join(figures)})")

    # The latency and host-path issue's targets (issue 15); earlier goals were looser (ENet 1x, RTT p99 2x,
    # 250,000 msg/s).
    h_bulk = rng("huddle-bulk", "mb_per_s")
    goal("Huddle 100 MiB bulk at least 1.2× ENet with 64 KiB packets", h_bulk,
         [("ENet 64 KiB", rng("enet-bulk-64k", "mb_per_s"))], 1.2, True, "MB/s", "mb_per_s")
    goal("Huddle bulk at least 2× uftp with AES-GCM", h_bulk, [("uftp", rng("uftp", "mb_per_s"))], 2, True,
         "MB/s", "mb_per_s")
    goal("Stretch: Huddle bulk within 1.5× of iperf3 TCP (at least 1/1.5 of it)", h_bulk,
         [("iperf3 TCP", rng("iperf3-tcp", "mb_per_s"))], 1 / 1.5, True, "MB/s", "mb_per_s")
    goal("Huddle RTT p50 within 1.5× of the C ping-pong p50", rng("huddle-rtt", "p50_us"),
         [("C", rng("c-rtt", "p50_us"))], 1.5, False, "µs", "p50_us")
    goal("Huddle RTT p99 within 3× of the C ping-pong p99", rng("huddle-rtt", "p99_us"),
         [("C", rng("c-rtt", "p99_us"))], 3, False, "µs", "p99_us")

    def threshold(text, figure, limit, higher_is_better, unit, metric):
        if figure is None:
            lines.append(f"- {text}: not measured")
            return
        def ok(value):
            return value >= limit if higher_is_better else value <= limit
        met = ok(figure[0])
        robust = ok(figure[1 if higher_is_better else 2]) if met else not ok(figure[2 if higher_is_better else 1])
        lines.append(f"- {text}: {'**met**' if met else '**missed**'}, "
                     f"{'in every round too' if robust else 'but not in every round'} "
                     f"(Huddle {fmt(figure[0], metric)} {unit}, rounds {fmt(figure[1], metric)} – "
                     f"{fmt(figure[2], metric)})")

    threshold("At least 400,000 64 B messages/s one way", rng("huddle-rate", "messages_per_s"), 400_000, True,
              "msg/s", "messages_per_s")
    threshold("RTT p50 at most 2 ms while a 100 MiB attachment moves on the same connection",
              rng("huddle-rtt-journal", "p50_us"), 2000, False, "µs", "p50_us")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ SVG

def svg_escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def svg_chart(panels, title):
    """panels: [(heading, subtitle, [(label, value, value_text)], reference_or_None, higher_is_better)];
    log-scale horizontal bars.

    With a reference (1.0 for ratios) bars grow left or right from it, orange where the other stack does better than
    Huddle and blue where Huddle does better; without one they grow from the left edge.
    """
    width, label_w, value_w, row_h, left_pad = 960, 300, 190, 24, 16
    plot_x0, plot_x1 = left_pad + label_w, width - value_w
    parts, y = [], 40
    parts.append(f'<text x="{left_pad}" y="26" font-size="17" font-weight="bold">{svg_escape(title)}</text>')
    for heading, subtitle, items, reference, higher_is_better in panels:
        y += 22
        parts.append(f'<text x="{left_pad}" y="{y}" font-size="15" font-weight="bold">{svg_escape(heading)}</text>')
        y += 18
        parts.append(f'<text x="{left_pad}" y="{y}" font-size="12" fill="#555">{svg_escape(subtitle)}</text>')
        y += 12
        values = [v for _, v, _ in items if v is not None and v > 0]
        if not values:
            y += 20
            parts.append(f'<text x="{plot_x0}" y="{y}" font-size="12" fill="#a00">no data</text>')
            y += 10
            continue
        lo = min(values + ([reference] if reference else []))
        hi = max(values + ([reference] if reference else []))
        lo_exp, hi_exp = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        if reference:  # symmetric around the reference line
            k = max(1, math.ceil(math.log10(reference)) - lo_exp, hi_exp - math.floor(math.log10(reference)))
            lo_exp, hi_exp = math.floor(math.log10(reference)) - k, math.ceil(math.log10(reference)) + k
        if hi_exp == lo_exp:
            hi_exp += 1

        def xpos(v):
            return plot_x0 + (math.log10(v) - lo_exp) / (hi_exp - lo_exp) * (plot_x1 - plot_x0)

        top = y + 6
        bottom = top + row_h * len(items) + 4
        for e in range(lo_exp, hi_exp + 1):
            x = xpos(10 ** e)
            label = (f"{10 ** e:g}×" if reference else f"{10 ** e:g}")
            parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#ddd"/>')
            parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" font-size="11" fill="#777" '
                         f'text-anchor="middle">{label}</text>')
        for i, (label, value, text) in enumerate(items):
            row_y = top + i * row_h
            parts.append(f'<text x="{plot_x0 - 8}" y="{row_y + 16}" font-size="12" text-anchor="end">'
                         f'{svg_escape(label)}</text>')
            if value is None or value <= 0:
                parts.append(f'<text x="{plot_x0 + 4}" y="{row_y + 16}" font-size="12" fill="#a00">'
                             f'{svg_escape(text)}</text>')
                continue
            base = xpos(reference) if reference else plot_x0
            x = xpos(value)
            x0, x1 = min(base, x), max(base, x)
            other_better = reference and (value > reference if higher_is_better else value < reference)
            color = "#d08a4a" if other_better else "#4a7bd0"
            parts.append(f'<rect x="{x0:.1f}" y="{row_y + 4}" width="{max(x1 - x0, 1):.1f}" height="{row_h - 8}" '
                         f'fill="{color}"/>')
            parts.append(f'<text x="{plot_x1 + 8}" y="{row_y + 16}" font-size="12">{svg_escape(text)}</text>')
        if reference:
            x = xpos(reference)
            parts.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#000" '
                         f'stroke-width="1.5"/>')
            parts.append(f'<text x="{x:.1f}" y="{top - 6}" font-size="11" text-anchor="middle">Huddle = 1.0</text>')
        y = bottom + 26
    height = y + 10
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif">\n'
            f'<rect width="100%" height="100%" fill="#fff"/>\n' + "\n".join(parts) + "\n</svg>\n")


def build_svg(ws, outcomes, stamp):
    def med(key, metric):
        o = outcomes.get(key)
        m = median_of(o, metric) if o else None
        return m[0] if m else None

    def reason(o):
        return "not available" if o.unavailable else "failed" if o.failures else "no data"

    panels = []
    ref = med("huddle-bulk", "mb_per_s")
    items = []
    for w in ws:
        if w.cls != "bulk" or w.key == "huddle-bulk" or w.key not in outcomes:
            continue
        v = med(w.key, "mb_per_s")
        if ref:
            items.append((w.stack, v / ref if v else None,
                          f"{v / ref:.2f}× ({v:,.1f} MB/s)" if v else reason(outcomes[w.key])))
        else:
            items.append((w.stack, v, f"{v:,.1f} MB/s" if v else reason(outcomes[w.key])))
    if items:
        panels.append(("Bulk transfer: MB/s relative to Huddle bulk" if ref else "Bulk transfer: MB/s",
                       (f"other / Huddle ({ref:,.1f} MB/s); right of the line (orange) = faster than Huddle, left "
                        "(blue) = slower" if ref else "Huddle bulk not measured: absolute medians, log scale"),
                       items, 1.0 if ref else None, True))
    items = []
    ref = med("huddle-rate", "messages_per_s")
    for w in ws:
        if w.cls != "rate" or w.huddle or w.key not in outcomes:
            continue
        v = med(w.key, "messages_per_s")
        if ref:
            items.append((w.stack, v / ref if v else None,
                          f"{v / ref:.2f}× ({v:,.0f} msg/s)" if v else reason(outcomes[w.key])))
        else:
            items.append((w.stack, v, f"{v:,.0f} msg/s" if v else reason(outcomes[w.key])))
    if items:
        panels.append(("Message rate, 64 B one way: relative to Huddle" if ref else "Message rate, 64 B: msg/s",
                       (f"other / Huddle ({ref:,.0f} msg/s); right of the line = more messages/s than Huddle"
                        if ref else "Huddle rate not measured: absolute medians, log scale"),
                       items, 1.0 if ref else None, True))
    items = []
    ref50, ref99 = med("huddle-rtt", "p50_us"), med("huddle-rtt", "p99_us")
    for w in ws:
        if w.cls != "rtt" or w.huddle or w.key not in outcomes:
            continue
        for metric, r in (("p50_us", ref50), ("p99_us", ref99)):
            v = med(w.key, metric)
            name = f"{w.stack} {metric[:3]}"
            if ref50 and ref99:
                items.append((name, v / r if v else None,
                              f"{v / r:.2f}× ({v:,.1f} µs)" if v else reason(outcomes[w.key])))
            else:
                items.append((name, v, f"{v:,.1f} µs" if v else reason(outcomes[w.key])))
    if items:
        panels.append(("Round trip, 64 B: relative to Huddle" if ref50 and ref99 else "Round trip, 64 B: µs",
                       (f"other / Huddle (p50 {ref50:,.1f} µs, p99 {ref99:,.1f} µs); left of the line (orange) = "
                        "lower latency than Huddle" if ref50 and ref99 else
                        "Huddle round trip not measured: absolute medians, log scale"), items,
                       1.0 if ref50 and ref99 else None, False))
    return svg_chart(panels, f"Huddle vs reference stacks on loopback — medians, {stamp}")


# ------------------------------------------------------------------------------------------------ report

def machine_info():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            models = [l.split(":", 1)[1].strip() for l in f if l.startswith("model name")]
        info["CPU"] = models[0] if models else platform.processor() or "unknown"
    except OSError:
        info["CPU"] = platform.processor() or "unknown"
    info["Cores"] = str(os.cpu_count())
    info["Kernel"] = platform.release()
    try:
        with open("/etc/os-release") as f:
            pretty = [l.split("=", 1)[1].strip().strip('"') for l in f if l.startswith("PRETTY_NAME=")]
        info["OS"] = pretty[0] if pretty else "unknown"
    except OSError:
        pass
    rc, out = command_output(["swift", "--version"], 60)
    info["Swift"] = out.strip().splitlines()[0] if rc == 0 and out.strip() else "not found"
    return info


def tool_versions():
    versions = {}
    for package in ("libenet-dev", "uftp", "kcptun", "iperf3"):
        rc, out = command_output(["dpkg-query", "-W", "-f=${Version}", package])
        versions[package] = out.strip() if rc == 0 and out.strip() else "not installed"
    cc = c_compiler()
    if cc:
        rc, out = command_output([cc, "--version"])
        versions["C compiler"] = out.splitlines()[0] if out else cc
    kind, value = TOOLS.state.get("aioquic", ("unavailable", ""))
    versions["aioquic"] = value if kind == "ok" else "not available"
    versions["Python"] = platform.python_version()
    rc, out = command_output(["git", "-C", str(ROOT), "describe", "--always", "--dirty"])
    versions["Huddle (git, repository root)"] = out.strip() if rc == 0 else "unknown"
    kind, value = TOOLS.state.get("huddle", ("unavailable", ""))
    versions["huddle binary"] = (str(value[0]).replace(f"{ROOT}/", "") if kind == "ok" else f"{kind}: {value}")
    return versions


# ------------------------------------------------------------------------------------------------ helpers run as
# subprocesses: the TCP endpoints carried through kcptun

def tcp_sink(argv):
    p = argparse.ArgumentParser(prog="run.py _tcp-sink")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--timeout", type=float, default=300)
    a = p.parse_args(argv)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", a.port))
    server.listen(1)
    server.settimeout(a.timeout)
    print(json.dumps({"listening": server.getsockname()[1]}), flush=True)
    conn, _ = server.accept()
    conn.settimeout(a.timeout)
    header = b""
    while len(header) < 8:
        chunk = conn.recv(8 - len(header))
        if not chunk:
            sys.exit("tcp sink: connection closed before the header")
        header += chunk
    total, got = int.from_bytes(header, "little"), 0
    buf = bytearray(MiB)
    while got < total:
        n = conn.recv_into(buf)
        if not n:
            sys.exit(f"tcp sink: connection closed after {got} of {total} bytes")
        got += n
    conn.sendall(b"D")
    conn.close()


def tcp_source(argv):
    p = argparse.ArgumentParser(prog="run.py _tcp-source")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--timeout", type=float, default=300)
    a = p.parse_args(argv)
    chunk = os.urandom(MiB)  # incompressible
    conn = socket.create_connection(("127.0.0.1", a.port), timeout=a.timeout)
    start = time.monotonic()
    conn.sendall(a.size.to_bytes(8, "little"))
    sent = 0
    while sent < a.size:
        n = min(len(chunk), a.size - sent)
        conn.sendall(chunk if n == len(chunk) else chunk[:n])
        sent += n
    reply = conn.recv(1)
    seconds = time.monotonic() - start
    if reply != b"D":
        sys.exit(f"tcp source: no acknowledgement from the sink (got {reply!r})")
    print(json.dumps({"test": "bulk", "bytes": a.size, "seconds": round(seconds, 6),
                      "mb_per_s": round(a.size / seconds / 1e6, 2)}), flush=True)


# ------------------------------------------------------------------------------------------------ main

def main():
    if len(sys.argv) > 1 and sys.argv[1] == "_tcp-sink":
        return tcp_sink(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "_tcp-source":
        return tcp_source(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--skip-install", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--huddle", default=None)
    parser.add_argument("--only", default=None)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="huddle-compare-")
    all_workloads = workloads(work)
    if args.list:
        for w in all_workloads:
            print(f"{w.key:<16} {w.cls:<5} {w.stack}")
        return 0
    smoke = args.smoke
    cfg = SMOKE if smoke else FULL
    rounds = args.rounds if args.rounds is not None else (1 if smoke else 3)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    selected = [w for w in all_workloads if w.smoke] if smoke else list(all_workloads)
    if args.only:
        keys = set(args.only.split(","))
        unknown = keys - {w.key for w in all_workloads}
        if unknown:
            parser.error(f"unknown workload(s) {', '.join(sorted(unknown))}; see --list")
        selected = [w for w in all_workloads if w.key in keys]
    write = not (smoke or args.only or args.no_write)

    def on_sigterm(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_sigterm)

    started = time.monotonic()
    start_date = datetime.datetime.now(datetime.timezone.utc)
    load_start = os.getloadavg()
    outcomes = {w.key: Outcome() for w in selected}
    interrupted = False
    try:
        TRACKER.record = False
        setup_tools(args, smoke, args.huddle)
        for key, (kind, value) in sorted(TOOLS.state.items()):
            if kind != "ok":
                log(f"tool {key}: {kind}: {value}")
        TRACKER.record = True
        setup_seconds = time.monotonic() - started
        log(f"setup took {setup_seconds:.0f} s; measuring {len(selected)} workloads x {rounds} rounds")
        measure_started = time.monotonic()
        for round_number in range(1, rounds + 1):
            for w in selected:
                if outcomes[w.key].unavailable:
                    continue
                measure(w, cfg, round_number, outcomes[w.key])
        measure_seconds = time.monotonic() - measure_started
    except KeyboardInterrupt as e:
        interrupted = True
        log(f"interrupted ({str(e) or 'Ctrl-C'}); stopping every process started")
    finally:
        TRACKER.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    if interrupted:
        return 130

    load_end = os.getloadavg()
    tables = build_tables(selected, outcomes, rounds, cfg)
    print()
    print(tables)
    failed = [w.key for w in selected if outcomes[w.key].failures]
    if write:
        total_seconds = time.monotonic() - started
        stamp = start_date.strftime("%Y-%m-%d %H:%M UTC")
        info = machine_info()
        versions = tool_versions()
        goal_text = goals(outcomes)
        print(goal_text)
        md = [f"# Huddle vs reference stacks — {stamp}", "",
              f"Generated by `python3 Benchmarks/compare/run.py` ({rounds} round{'s' if rounds != 1 else ''}, every workload once per round in "
              f"a fixed order; all on 127.0.0.1). Measuring took {measure_seconds:.0f} s; the whole run including "
              f"installs and builds {total_seconds:.0f} s. See Benchmarks/compare/README.md for what each workload "
              f"does.", "", "## Machine", ""]
        md += [f"- {k}: {v}" for k, v in info.items()]
        md += [f"- Load average (1, 5, 15 min) at start: {' '.join(f'{x:.2f}' for x in load_start)}; at end: "
               f"{' '.join(f'{x:.2f}' for x in load_end)}", "", "## Versions", ""]
        md += [f"- {k}: {v}" for k, v in versions.items()]
        md += ["", "## Results", "", tables, "## Goals (from the medians above)", "", goal_text, "",
               "## Commands run", "",
               "Setup (installs and builds that were needed this time; nothing when all was in place):", "",
               "```"] + (SETUP_COMMANDS or ["(none)"]) + ["```", "", "Measurements:", "",
               "One per line, in order. `$TICKET` is the ticket the preceding `huddle bench serve` printed on its "
               "first line; ports were chosen fresh for every run (0 = the program picked a free one and printed "
               "it).", "", "```"]
        md += TRACKER.commands
        md += ["```", ""]
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "latest.md").write_text("\n".join(md))
        (RESULTS / "latest.svg").write_text(build_svg(selected, outcomes, stamp))
        log(f"wrote {RESULTS / 'latest.md'} and {RESULTS / 'latest.svg'}")
    log(f"done in {time.monotonic() - started:.0f} s")
    if failed:
        log(f"FAILED measurements: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
