#!/usr/bin/env python3
"""Bulk goodput (or round-trip latency) over a real lossy path, per congestion controller, with ENet for comparison
(issues 13 and 37).

Two network namespaces joined by a veth pair; nftables in each drops a random P % of the UDP datagrams (so both the
data and the acknowledgements lose P %). For every loss rate and controller, `huddle bench serve` runs in one namespace
and `huddle bench run --test bulk` in the other; ENet's `enet_bench` (Benchmarks/compare/c) runs over the same path.
The kernel here has no netem, so the path has no added delay: a round trip is tens of microseconds.

Where the datagrams are dropped (--drop-at):
- `path` (the default) models loss on the path: the receiving namespace drops P % of arriving UDP datagrams in its
  prerouting hook, so the sender sees nothing. Both veth ends get gso_max_segs 1, so the kernel cuts a
  segmentation-offload send into single datagrams before the veth (as a NIC without UDP segmentation offload does) and
  each datagram is dropped on its own; otherwise one drop would take a whole 64 KiB burst.
- `firewall` drops in the sender's output hook, as a local firewall does: `sendmsg` then fails with EPERM for the
  whole (unsegmented) burst. SwiftNIO closes a datagram socket on that error and Huddle binds a new one (see
  ChannelReplacement.swift), so this mode measures that recovery rather than the congestion controller.

Needs root, `ip`, `nft` and a release build of huddle. Every run is bounded by --timeout; namespaces are named after
this process and removed at the end, also on failure.

    python3 scripts/measure-loss.py .build/release/huddle [--size 32MiB] [--losses 0,1,2,5,10] [--timeout 120]
        [--drop-at path|firewall] [--rounds 1] [--test bulk|rtt] [--count 3000]

With --test rtt, each stack does --count round trips of 64-byte reliable messages, one at a time (`huddle bench run
--test rtt`, `enet_bench client --test rtt`), and the table shows p50 / p99 / p99.9 in microseconds: what one lost
message costs an interactive exchange (issue 37).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

PID = os.getpid()
NS_A, NS_B = f"hl-a-{PID}", f"hl-b-{PID}"
ADDR_A, ADDR_B = "10.77.0.1", "10.77.0.2"
ENET_WINDOW = 4 * 1024 * 1024
HERE = os.path.dirname(os.path.abspath(__file__))
ENET_SOURCE = os.path.join(HERE, "..", "Benchmarks", "compare", "c", "enet_bench.c")


def sh(*argv, check=True):
    return subprocess.run([str(a) for a in argv], check=check, capture_output=True, text=True)


def in_ns(ns, *argv):
    return ["ip", "netns", "exec", ns] + [str(a) for a in argv]


def setup(drop_at):
    sh("ip", "netns", "add", NS_A)
    sh("ip", "netns", "add", NS_B)
    sh("ip", "link", "add", f"hla{PID % 100000}", "netns", NS_A, "type", "veth", "peer", "name",
       f"hlb{PID % 100000}", "netns", NS_B)
    for ns, dev, addr in ((NS_A, f"hla{PID % 100000}", ADDR_A), (NS_B, f"hlb{PID % 100000}", ADDR_B)):
        sh(*in_ns(ns, "ip", "addr", "add", f"{addr}/24", "dev", dev))
        if drop_at == "path":
            sh(*in_ns(ns, "ip", "link", "set", dev, "gso_max_segs", "1"))
        sh(*in_ns(ns, "ip", "link", "set", dev, "up"))
        sh(*in_ns(ns, "ip", "link", "set", "lo", "up"))
        sh(*in_ns(ns, "nft", "add", "table", "inet", "loss"))
        hook = "prerouting" if drop_at == "path" else "output"
        sh(*in_ns(ns, "nft", "add", "chain", "inet", "loss", "lossy", f"{{ type filter hook {hook} priority 0; }}"))


def set_loss(percent):
    for ns in (NS_A, NS_B):
        sh(*in_ns(ns, "nft", "flush", "chain", "inet", "loss", "lossy"))
        if percent > 0:
            sh(*in_ns(ns, "nft", "add", "rule", "inet", "loss", "lossy", "meta", "l4proto", "udp", "numgen", "random",
                      "mod", "100", "lt", str(percent), "drop"))


def teardown():
    for ns in (NS_A, NS_B):
        sh("ip", "netns", "del", ns, check=False)


def first_line(proc, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line:
            return line.strip()
        if proc.poll() is not None:
            break
    raise RuntimeError("server printed nothing")


def stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def huddle_bench(huddle, controller, test_args, timeout):
    """One `huddle bench run` against a fresh `huddle bench serve`: its JSON result, or (None, why not)."""
    server = subprocess.Popen(in_ns(NS_A, huddle, "bench", "serve", "--listen", f"{ADDR_A}:0", "--congestion",
                                    controller), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ticket = first_line(server, 15)
        client = subprocess.run(in_ns(NS_B, huddle, "bench", "run", ticket, *test_args, "--congestion", controller,
                                      "--listen", f"{ADDR_B}:0", "--json"),
                                capture_output=True, text=True, timeout=timeout)
        lines = [l for l in client.stdout.splitlines() if l.startswith("{")]
        if client.returncode != 0 or not lines:
            return None, f"exit {client.returncode}: {client.stderr.strip()[-200:]}"
        return json.loads(lines[-1]), ""
    except subprocess.TimeoutExpired:
        return None, f"not done in {timeout} s"
    finally:
        stop(server)


def enet_bench(binary, test_args, timeout):
    """One `enet_bench client` against a fresh server: its JSON result, or (None, why not)."""
    server = subprocess.Popen(in_ns(NS_A, binary, "server", "0", "--bind", ADDR_A, "--timeout", timeout + 30),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = json.loads(first_line(server, 15))["listening"]
        client = subprocess.run(in_ns(NS_B, binary, "client", ADDR_A, port, *test_args, "--timeout", timeout),
                                capture_output=True, text=True, timeout=timeout + 10)
        lines = [l for l in client.stdout.splitlines() if l.startswith("{")]
        if client.returncode != 0 or not lines:
            return None, f"exit {client.returncode}"
        return json.loads(lines[-1]), ""
    except (subprocess.TimeoutExpired, ValueError, KeyError) as error:
        return None, str(error)[:100]
    finally:
        stop(server)


def percentiles(result):
    return (result["p50_us"], result["p99_us"], result["p999_us"])


def huddle_bulk(huddle, controller, size, timeout):
    result, note = huddle_bench(huddle, controller, ["--test", "bulk", "--size", size], timeout)
    return (result["mb_per_s"], note) if result else (None, note)


def huddle_rtt(huddle, controller, count, timeout):
    result, note = huddle_bench(huddle, controller, ["--test", "rtt", "--count", count], timeout)
    return (percentiles(result), note) if result else (None, note)


def enet_rtt(binary, count, timeout):
    result, note = enet_bench(binary, ["--test", "rtt", "--count", count], timeout)
    return (percentiles(result), note) if result else (None, note)


def build_enet(work):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    binary = os.path.join(work, "enet_bench")
    result = subprocess.run([cc, "-O2", "-o", binary, ENET_SOURCE, "-lenet", "-lm"], capture_output=True, text=True)
    return binary if result.returncode == 0 else None


def enet_bulk(binary, size_bytes, timeout):
    result, note = enet_bench(
        binary, ["--test", "bulk", "--size", size_bytes, "--packet", 64 * 1024, "--window", ENET_WINDOW], timeout)
    return (result["mb_per_s"], note) if result else (None, note)


def parse_size(text):
    units = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3, "K": 1000, "M": 1000 ** 2, "G": 1000 ** 3}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(text)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("huddle")
    parser.add_argument("--size", default="32MiB")
    parser.add_argument("--losses", default="0,1,2,5,10")
    parser.add_argument("--controllers", default="bbr,cubic,newreno")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per transfer")
    parser.add_argument("--drop-at", choices=["path", "firewall"], default="path",
                        help="path: the receiver drops arriving datagrams; firewall: the sender's output hook drops")
    parser.add_argument("--rounds", type=int, default=1,
                        help="interleaved rounds over every loss rate and stack; the table shows medians")
    parser.add_argument("--test", choices=["bulk", "rtt"], default="bulk")
    parser.add_argument("--count", type=int, default=3000, help="round trips per run with --test rtt")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("measure-loss.py needs root (network namespaces)")
    huddle = os.path.abspath(args.huddle)
    losses = [int(x) for x in args.losses.split(",")]
    controllers = args.controllers.split(",")
    work = f"/tmp/measure-loss-{PID}"
    os.makedirs(work, exist_ok=True)
    enet = build_enet(work)
    if not enet:
        print("ENet not measured: enet_bench did not build (needs a C compiler and libenet-dev)", file=sys.stderr)
    if args.test == "rtt":
        return measure_rtt(args, huddle, losses, controllers, work, enet)
    results = {}
    notes = {}
    try:
        setup(args.drop_at)
        for round_index in range(args.rounds):
            for loss in losses:
                set_loss(loss)
                for controller in controllers:
                    rate, note = huddle_bulk(huddle, controller, args.size, args.timeout)
                    if rate is not None:
                        results.setdefault((loss, controller), []).append(rate)
                    notes[(loss, controller)] = note
                    print(json.dumps({"round": round_index + 1, "loss_percent": loss, "drop_at": args.drop_at,
                                      "stack": f"huddle-{controller}", "mb_per_s": rate, "note": note}), flush=True)
                if enet:
                    rate, note = enet_bulk(enet, parse_size(args.size), args.timeout)
                    if rate is not None:
                        results.setdefault((loss, "enet"), []).append(rate)
                    notes[(loss, "enet")] = note
                    print(json.dumps({"round": round_index + 1, "loss_percent": loss, "drop_at": args.drop_at,
                                      "stack": "enet", "mb_per_s": rate, "note": note}), flush=True)
    finally:
        teardown()
        shutil.rmtree(work, ignore_errors=True)
    stacks = controllers + (["enet"] if enet else [])
    print()
    print(f"Bulk {args.size} over a veth pair, random UDP loss each way dropped at the {args.drop_at}, "
          f"median of {args.rounds} round(s) (MB/s; % of the same stack lossless)")
    print("| loss | " + " | ".join(f"Huddle {s}" if s != "enet" else "ENet (no crypto)" for s in stacks) + " |")
    print("|---" * (len(stacks) + 1) + "|")
    for loss in losses:
        cells = []
        for stack in stacks:
            rates = results.get((loss, stack))
            base = results.get((0, stack))
            if not rates:
                note = notes.get((loss, stack), "not run")
                cells.append(f"- ({note})" if note else "-")
            elif base and loss > 0:
                cells.append(f"{median(rates):.1f} ({100 * median(rates) / median(base):.0f} %)")
            else:
                cells.append(f"{median(rates):.1f}")
        print(f"| {loss} % | " + " | ".join(cells) + " |")


def measure_rtt(args, huddle, losses, controllers, work, enet):
    """--test rtt: round-trip percentiles per loss rate, Huddle (each controller) and ENet in the same run."""
    results, notes = {}, {}
    try:
        setup(args.drop_at)
        for round_index in range(args.rounds):
            for loss in losses:
                set_loss(loss)
                runs = [(f"huddle-{c}", lambda c=c: huddle_rtt(huddle, c, args.count, args.timeout))
                        for c in controllers]
                if enet:
                    runs.append(("enet", lambda: enet_rtt(enet, args.count, args.timeout)))
                for stack, run in runs:
                    figures, note = run()
                    if figures is not None:
                        results.setdefault((loss, stack), []).append(figures)
                    notes[(loss, stack)] = note
                    print(json.dumps({"round": round_index + 1, "loss_percent": loss, "stack": stack,
                                      "p50_us": figures and figures[0], "p99_us": figures and figures[1],
                                      "p999_us": figures and figures[2], "note": note}), flush=True)
    finally:
        teardown()
        shutil.rmtree(work, ignore_errors=True)
    stacks = [f"huddle-{c}" for c in controllers] + (["enet"] if enet else [])
    print()
    print(f"{args.count} round trips of 64-byte reliable messages over a veth pair, random UDP loss each way dropped "
          f"at the {args.drop_at}, median of {args.rounds} round(s): p50 / p99 / p99.9")
    print("| loss | " + " | ".join("ENet 1.3" if s == "enet" else s.replace("huddle-", "Huddle ") for s in stacks) + " |")
    print("|---" * (len(stacks) + 1) + "|")

    def show(micros):
        return f"{micros:.0f} µs" if micros < 1000 else f"{micros / 1000:.1f} ms"
    for loss in losses:
        cells = []
        for stack in stacks:
            runs = results.get((loss, stack))
            if not runs:
                cells.append(f"- ({notes.get((loss, stack), 'not run')})")
                continue
            cells.append(" / ".join(show(median([r[i] for r in runs])) for i in range(3)))
        print(f"| {loss} % | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
