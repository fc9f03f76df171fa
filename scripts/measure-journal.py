#!/usr/bin/env python3
"""Journal transfer figures between `huddle` processes on loopback: a 100 MiB attachment from its author to one
joiner, a late joiner fetching it from 1 holder and from 3 holders, and the peak resident memory of a receiver.

Prints figures; it is not a test. Usage: scripts/measure-journal.py [HUDDLE_BINARY] [SIZE_MIB]
(default .build/release/huddle if it exists, else .build/debug/huddle; 100 MiB).

Times run from the moment the command is written (`/share`, or starting `huddle join`) to the receiver's
`attachment-complete` event, which comes after every chunk was verified against the signed Merkle root and stored,
and after the receiver computed the BLAKE2b-512 of the whole file for the event. Every receiver's hash is checked
against the author's. Memory: each receiver runs under `/usr/bin/time -v`; its "Maximum resident set size" is
compared with that of a node that joins and leaves the same way without receiving anything.
"""
import json
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


class Node:
    """A huddle process (optionally under /usr/bin/time -v) with JSON events on stdout."""

    def __init__(self, binary, args, measure_memory=False):
        command = [binary] + args
        if measure_memory:
            command = ["/usr/bin/time", "-v"] + command
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE if measure_memory else subprocess.DEVNULL, bufsize=0)
        self.buffer = b""
        self.events = []

    def send(self, line):
        self.proc.stdin.write((line + "\n").encode())

    def event(self, event_name, timeout=300, **fields):
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.get("event") == event_name and all(str(event.get(k)) == str(v) for k, v in fields.items()):
                    return event
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{event_name} {fields}")
            ready, _, _ = select.select([self.proc.stdout], [], [], remaining)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError(event_name)
                self.buffer += chunk
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    try:
                        self.events.append(json.loads(line))
                    except ValueError:
                        pass

    def stop(self):
        """Closes stdin (the node leaves) and returns the peak RSS in KiB when measured."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is None:
            return None
        match = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", self.proc.stderr.read())
        return int(match.group(1)) if match else None


def mb_per_s(size, seconds):
    return size / seconds / 1e6


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else (
        ".build/release/huddle" if os.path.exists(".build/release/huddle") else ".build/debug/huddle")
    size = int(float(sys.argv[2]) * 1048576) if len(sys.argv) > 2 else 104857600
    directory = tempfile.mkdtemp(prefix="huddle-journal-")
    nodes = []

    def start(name, args, measure_memory=False):
        node = Node(binary, args + ["--json", "--name", name, "--identity", f"{directory}/{name}.id"],
                    measure_memory)
        nodes.append(node)
        return node

    try:
        source = os.path.join(directory, "shared.bin")
        with open(source, "wb") as out:
            remaining = size
            while remaining:
                piece = os.urandom(min(remaining, 1 << 20))
                out.write(piece)
                remaining -= len(piece)
        print(f"binary {binary}, attachment {size} bytes, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

        host = start("host", ["host"])
        ticket = host.event("ticket")["ticket"]
        host.event("joined")

        # Baseline memory: a node that joins and leaves without receiving anything.
        idle = start("idle", ["join", ticket], measure_memory=True)
        idle.event("joined")
        time.sleep(1)
        idle_peak = idle.stop()
        nodes.remove(idle)
        host.event("participant-left", name="idle", timeout=30)

        # 1. Author -> one joiner (the only holder is the author).
        ada = start("ada", ["join", ticket], measure_memory=True)
        ada.event("joined")
        host.event("participant-joined", name="ada")
        started = time.perf_counter()
        host.send(f"/share {source}")
        shared = host.event("attachment-shared")
        attachment = shared["id"]
        digest = host.event("attachment-complete", id=attachment)["blake2b"]
        shared_at = time.perf_counter() - started
        got = ada.event("attachment-complete", id=attachment)
        direct = time.perf_counter() - started
        assert got["blake2b"] == digest, "ada's hash differs"

        # 2. A late joiner with one holder besides the author leaving... first with the author alone: ada leaves.
        ada_peak = ada.stop()
        nodes.remove(ada)
        host.event("participant-left", name="ada", timeout=30)
        started = time.perf_counter()
        one = start("one", ["join", ticket])
        one.event("joined")
        assert one.event("attachment-complete", id=attachment)["blake2b"] == digest
        from_one = time.perf_counter() - started

        # 3. Three holders (host, one, two): a late joiner fetches from all of them.
        two = start("two", ["join", ticket])
        two.event("joined")
        assert two.event("attachment-complete", id=attachment)["blake2b"] == digest
        started = time.perf_counter()
        late = start("late", ["join", ticket], measure_memory=True)
        late.event("joined")
        assert late.event("attachment-complete", id=attachment)["blake2b"] == digest
        from_three = time.perf_counter() - started
        late_peak = late.stop()
        nodes.remove(late)

        print(f"author stores and hashes the file (/share to its own attachment-complete): {shared_at:.2f} s")
        print(f"author -> one joiner:            {direct:6.2f} s  {mb_per_s(size, direct):6.1f} MB/s")
        print(f"late joiner from 1 holder:       {from_one:6.2f} s  {mb_per_s(size, from_one):6.1f} MB/s"
              " (includes starting the process and joining)")
        print(f"late joiner from 3 holders:      {from_three:6.2f} s  {mb_per_s(size, from_three):6.1f} MB/s"
              " (includes starting the process and joining)")
        if idle_peak and ada_peak and late_peak:
            print(f"peak RSS: idle member {idle_peak / 1024:.1f} MiB; receiver from the author "
                  f"{ada_peak / 1024:.1f} MiB (growth {(ada_peak - idle_peak) / 1024:.1f} MiB); late joiner from 3 "
                  f"holders {late_peak / 1024:.1f} MiB (growth {(late_peak - idle_peak) / 1024:.1f} MiB)")
    finally:
        for node in nodes:
            node.stop()
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
