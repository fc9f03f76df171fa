#!/usr/bin/env python3
"""Round-trip latency of a reliable chat line between two `huddle` processes on loopback, next to a plain UDP
ping-pong measured in the same run, and the time from starting `huddle join` to its `joined` event.

Prints figures; it is not a test. Usage: scripts/measure-latency.py [HUDDLE_BINARY] [ROUND_TRIPS]
(default .build/release/huddle if it exists, else .build/debug/huddle; 1000 round trips).

What a chat round trip includes: this script writes a line to A's stdin; A sends it (encrypted, reliable) to B;
B prints a JSON `message` event; the script reads it and writes a reply to B's stdin; B sends it to A; A prints
it and the script reads it. So it is the CLI's end-to-end latency, pipes and JSON included, not the transport's
alone. The UDP ping-pong runs between this script and a child Python process, so both sides cross a process
boundary as the huddle pair does.
"""
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def summary(name, samples):
    micros = [s * 1e6 for s in samples]
    print(f"{name:<34} n={len(micros):<5} p50 {percentile(micros, 0.5):8.1f} us   p99 {percentile(micros, 0.99):8.1f} us"
          f"   mean {statistics.mean(micros):8.1f} us")


class Node:
    """A huddle process with line-buffered JSON events on stdout."""

    def __init__(self, binary, args):
        self.proc = subprocess.Popen([binary] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, bufsize=0)
        self.buffer = b""

    def send(self, line):
        self.proc.stdin.write((line + "\n").encode())

    def event(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == name:
                    return event
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(name)
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError(name)
                self.buffer += chunk

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def udp_ping_pong(rounds):
    echo = subprocess.Popen([sys.executable, "-c", """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
while True:
    data, peer = s.recvfrom(2048)
    if data == b"stop":
        break
    s.sendto(data, peer)
"""], stdout=subprocess.PIPE)
    port = int(echo.stdout.readline())
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    samples = []
    payload = b"x" * 64
    for _ in range(100 + rounds):
        start = time.perf_counter()
        s.sendto(payload, ("127.0.0.1", port))
        s.recvfrom(2048)
        samples.append(time.perf_counter() - start)
    s.sendto(b"stop", ("127.0.0.1", port))
    echo.wait()
    return samples[100:]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else (
        ".build/release/huddle" if os.path.exists(".build/release/huddle") else ".build/debug/huddle")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    directory = tempfile.mkdtemp(prefix="huddle-latency-")
    print(f"binary {binary}, {rounds} round trips, {os.cpu_count()} CPUs")
    nodes = []
    try:
        host = Node(binary, ["host", "--json", "--name", "a", "--identity", f"{directory}/a"])
        nodes.append(host)
        ticket = host.event("ticket")["ticket"]
        host.event("joined")
        join_times = []
        for index in range(5):
            start = time.perf_counter()
            joiner = Node(binary, ["join", ticket, "--json", "--name", f"b{index}", "--identity",
                                   f"{directory}/b{index}"])
            nodes.append(joiner)
            joiner.event("joined")
            join_times.append(time.perf_counter() - start)
            if index < 4:
                joiner.stop()
                nodes.remove(joiner)
        peer = nodes[-1]
        host.event("participant-joined")
        # Warm up, then measure: a line from the host, answered by the joiner as soon as it arrives.
        samples = []
        for index in range(100 + rounds):
            start = time.perf_counter()
            host.send(f"ping {index}")
            peer.event("message")
            peer.send(f"pong {index}")
            host.event("message")
            samples.append(time.perf_counter() - start)
        samples = samples[100:]
        udp = udp_ping_pong(rounds)
        print("join: process start to `joined` event: " + ", ".join(f"{t * 1000:.0f} ms" for t in join_times)
              + f" (median {statistics.median(join_times) * 1000:.0f} ms)")
        summary("huddle chat line round trip", samples)
        summary("plain UDP ping-pong (python)", udp)
    finally:
        for node in nodes:
            node.stop()
        for name in os.listdir(directory):
            os.unlink(os.path.join(directory, name))
        os.rmdir(directory)


if __name__ == "__main__":
    main()
