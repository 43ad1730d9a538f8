"""The paced Polaris stream as a process of its own: `python3 -m benchmark.replay OUT`.

ReplayServer (harness.workload) on 127.0.0.1 for one client, in whatever network namespace
the process is started in (the remote-subscriber measurement runs it on its own test host). Prints
`PORT <n>` once listening; on SIGINT or SIGTERM writes OUT: [[frame type, stamp, publish time
(CLOCK_MONOTONIC, s)], ...], the log the latencies are measured from.
"""

from __future__ import annotations

import json
import sys

from acres_sim.stop_signals import stop_on_signals
from harness.workload import ReplayServer, polaris_period


def main(argv: list[str]) -> int:
    stop, _ = stop_on_signals()
    server = ReplayServer(polaris_period(), rate=1.0).start()
    print(f"PORT {server.port}", flush=True)
    stop.wait()
    server.stop()
    with open(argv[0], "w") as out:
        json.dump(server.sent.frames, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
