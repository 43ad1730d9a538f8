"""The socket's and the middleware's cost together: `python3 -m benchmark.forwarder SPEC PORT`.

A bridge that converts nothing: the optimal reader (workload.FrameDrain) takes each frame of the
benchmark's stream from PORT, and the no-op publisher's messages for that frame type, built once in
advance (noop.PrebuiltMessages: the same topics, QoS, bytes and rcl calls as the bridge), go out
with the frame's stamp written in, from the reading thread. What a bridge costs above this is its
own parsing and conversion. Prints "MBPS <MB/s>" once a second (the frame bytes it read, all of
which it published) and ends at SIGINT, SIGTERM or the end of the stream.
"""

from __future__ import annotations

import json
import sys

from acres_sim.stream.protocol import HEADER_SIZE


def main(argv: list[str]) -> int:
    from acres_sim.middleware import dds

    dds.apply_profile()  # the bridge's own profile, before rclpy creates the participant
    from benchmark.noop import MbpsReport, PrebuiltMessages
    from acres_sim.stop_signals import stop_on_signals
    from harness.workload import connect_drain

    spec, port = json.loads(argv[0]), int(argv[1])
    stop, _ = stop_on_signals()
    messages = PrebuiltMessages(spec, node_name="bench_forwarder")
    batches: dict[int, list] = {}
    for kind, _offset, payload in messages.period.frames:
        batches.setdefault(kind, messages.batch(kind, payload))
    drain = connect_drain(port)
    report = MbpsReport()
    try:
        while not stop.is_set():
            kind, size, stamp, _published = drain.next()
            batch = batches.get(kind)
            if batch:
                messages.publish(batch, stamp)
            report.add(HEADER_SIZE + size)
    except ConnectionError:
        pass  # the server ended the stream
    finally:
        drain.sock.close()
        messages.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
