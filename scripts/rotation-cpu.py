#!/usr/bin/env python3
"""Prints what a removal costs in instructions, from a callgrind profile of `huddle-sim --scenario rotation-N` run
with --toggle-collect='*idlePhase*' --toggle-collect='*removalPhase*' (`make rotation-cpu`): the inclusive count of
the removal phase (every member's session machine and endpoint, and the simulated network, from the removal until
every remaining member holds the new key) and of 5 s of the idle session before it, for comparison."""

import re
import subprocess
import sys


def inclusive(profile, name):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", profile],
                         capture_output=True, text=True, check=True).stdout
    counts = [int(m.group(1).replace(",", "")) for m in
              re.finditer(r"^\s*([\d,]+) \([\s\d.]+%\)\s+\S*" + name, out, re.MULTILINE)]
    return max(counts) if counts else 0


def main():
    profile, members = sys.argv[1], int(sys.argv[2])
    removal, idle = inclusive(profile, "removalPhase"), inclusive(profile, "idlePhase")
    print(f"rotation-{members}: removal phase {removal / 1e6:.1f} M instructions in all, "
          f"{removal / (members - 1) / 1e6:.2f} M per remaining member; 5 s idle before it {idle / 1e6:.1f} M")


if __name__ == "__main__":
    main()
