#!/usr/bin/env python3
"""Peak heap of an operator by structure, from heaptrack's peak stacks.

    heap_breakdown.py STACKS OBJECTS

STACKS is `heaptrack_print --flamegraph-cost-type peak -F STACKS` output (one
`root;...;leaf bytes` line per stack). Each stack counts for the structure of its
innermost frame that names one; prints a Markdown table with bytes per object.
"""
import collections
import re
import sys

STRUCTURES = [
    ("claims index", r"claims\.rs"),
    ("zone access lists kept", r"zone_lists\.rs|shared_reads\.rs"),
    ("metric bookkeeping", r"metrics\.rs"),
    ("Secret metadata cache", r"secret_watch\.rs|credentials\.rs"),
    ("controller queue (scheduler)", r"delay_queue|scheduler\.rs"),
    ("predicate hashes", r"predicate\.rs"),
    ("objects (reflector store)", r"\(store\.rs\)|reflect\.rs|event_decode"),
    ("HTTP and TLS buffers", r"hyper|h2::|bytes_mut|rustls"),
]


def structure(frames):
    for frame in reversed(frames):
        for name, pattern in STRUCTURES:
            if re.search(pattern, frame):
                return name
    return "other"


def main():
    path, objects = sys.argv[1], int(sys.argv[2])
    bytes_by = collections.Counter()
    with open(path) as stacks:
        for line in stacks:
            stack, _, value = line.rstrip().rpartition(" ")
            bytes_by[structure(stack.split(";"))] += int(value)
    print("| structure | peak heap | per object |")
    print("|---|---|---|")
    for name, value in bytes_by.most_common():
        print(f"| {name} | {value / 1e6:.1f} MB | {value / objects:.0f} B |")
    total = sum(bytes_by.values())
    print(f"| total | {total / 1e6:.1f} MB | {total / objects:.0f} B |")


if __name__ == "__main__":
    main()
