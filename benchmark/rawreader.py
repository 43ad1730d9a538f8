"""The socket's own cost: `python3 -m benchmark.rawreader PORT WARMUP_S SECONDS`.

An optimal client of the paced stream (workload.FrameDrain: recv_into with MSG_WAITALL into
reusable buffers, nothing else): the latency from each frame's publish time (its header,
CLOCK_MONOTONIC) to its last byte, per frame type, and this reader's CPU (thread time) over the
window. Prints one JSON line: {"cpu_pct": ..., "latency_ms": {type: [..]}}.
"""

from __future__ import annotations

import json
import sys
import time

from harness.workload import connect_drain


def main(argv: list[str]) -> int:
    port, warmup_s, seconds = int(argv[0]), float(argv[1]), float(argv[2])
    drain = connect_drain(port)
    latency: dict[int, list[float]] = {}
    start = time.monotonic() + warmup_s
    end = start + seconds
    cpu0 = None
    while True:
        kind, _size, _stamp, published = drain.next()
        now = time.monotonic()
        if now < start:
            continue
        if cpu0 is None:
            cpu0, start = time.thread_time(), now
        latency.setdefault(kind, []).append((now - published) * 1e3)
        if now >= end:
            cpu = (time.thread_time() - cpu0) / (now - start) * 100.0
            print(json.dumps({"cpu_pct": cpu, "latency_ms": latency}), flush=True)
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
