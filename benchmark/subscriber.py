"""One user on every topic: `python3 -m benchmark.subscriber SPEC OUT [raw] [best_effort]`.

SPEC is JSON: [[topic, message type name, qos kind], ...] with qos kind "sensor" (reliable, depth 5,
as the bridge's default), "tf" (reliable, depth 100) or "clock" (best effort, depth 1). Each
callback keeps only (header stamp in ns, CLOCK_MONOTONIC in ns at the callback). The process
prints READY once every subscription has a publisher, and on SIGINT or SIGTERM writes OUT:
{topic: [[stamp_ns, received_ns], ...]} (for /tf: "/tf <child frame>", one per agent). Default
middleware settings, as a new user has them. With `raw`, the subscriptions take the serialized
bytes (rclpy's raw=True) and read the stamp (and the child frame) from the CDR: the middleware's
delivery without Python building every message, as a C++ user would have it. With
`best_effort`, the sensor and tf subscriptions are best effort, depth 5 (SensorDataQoS, as
KISS-ICP, FAST-LIO or nav2 subscribe). With `deep`, they keep 1000 instead of 5: a counter that
falls behind for a moment (its process starved of CPU on a loaded machine) then still takes every
message the middleware delivered, so that what is counted is delivery, not this process's speed.
"""

from __future__ import annotations

import json
import sys
import time

from acres_sim.convert.cdr import STAMP, STAMP_AT
from acres_sim.convert.ins_cdr import TF_STAMP_AT
from acres_sim.stop_signals import stop_on_signals


def _stamp_of(type_name: str):
    if type_name == "Clock":
        return lambda m: m.clock.sec * 1_000_000_000 + m.clock.nanosec
    if type_name == "TFMessage":
        return lambda m: (m.transforms[0].header.stamp.sec * 1_000_000_000
                          + m.transforms[0].header.stamp.nanosec)
    if type_name == "UInt64":
        return lambda m: m.data
    return lambda m: m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec


def _cdr_string(data: bytes, at: int) -> tuple[str, int]:
    """A CDR string at `at` (aligned to 4 from the end of the encapsulation): (text, end)."""
    at = STAMP_AT + ((at - STAMP_AT + 3) & ~3)
    n = int.from_bytes(data[at:at + 4], "little")
    return data[at + 4:at + 3 + n].decode(), at + 4 + n


def raw_stamp_of(type_name: str):
    """The stamp in ns from a little-endian CDR message (the offsets acres_sim.convert.cdr and
    acres_sim.convert.ins_cdr write them at): a Header or a Clock opens with sec (int32) and nanosec
    (uint32), a TFMessage with the transforms' count; UInt64 is its data."""
    def time_at(data: bytes, at: int) -> int:
        sec, nanosec = STAMP.unpack_from(data, at)
        return sec * 1_000_000_000 + nanosec
    if type_name == "TFMessage":
        return lambda data: time_at(data, TF_STAMP_AT)
    if type_name == "UInt64":
        return lambda data: int.from_bytes(data[STAMP_AT:STAMP_AT + 8], "little")
    return lambda data: time_at(data, STAMP_AT)


def raw_child_frame(data: bytes) -> str:
    """child_frame_id of a TFMessage's first transform (after its stamp and frame_id)."""
    _frame, end = _cdr_string(data, TF_STAMP_AT + STAMP.size)
    return _cdr_string(data, end)[0]


def main(argv: list[str]) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

    from acres_sim.middleware.message_types import message_type

    spec, out = json.loads(argv[0]), argv[1]
    raw, best_effort = "raw" in argv[2:], "best_effort" in argv[2:]
    depth = 1000 if "deep" in argv[2:] else 5
    stop, _ = stop_on_signals()
    rclpy.init(signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    node = rclpy.create_node(f"bench_subscriber_{__import__('os').getpid()}")
    qos = {"sensor": QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                                reliability=ReliabilityPolicy.RELIABLE),
           "tf": QoSProfile(depth=max(depth, 100), history=HistoryPolicy.KEEP_LAST,
                            reliability=ReliabilityPolicy.RELIABLE),
           "clock": QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                               reliability=ReliabilityPolicy.BEST_EFFORT)}
    if best_effort:
        qos["sensor"] = qos["tf"] = QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST,
                                               reliability=ReliabilityPolicy.BEST_EFFORT)
    received: dict[str, list[tuple[int, int]]] = {}
    subscriptions = []
    for topic, type_name, kind in spec:
        got = received.setdefault(topic, []) if type_name != "TFMessage" else []
        stamp = raw_stamp_of(type_name) if raw else _stamp_of(type_name)
        clock = time.monotonic_ns

        if type_name == "TFMessage":  # shared by every agent: one record list per child frame
            child = raw_child_frame if raw else (lambda m: m.transforms[0].child_frame_id)

            def callback(msg, topic=topic, stamp=stamp, clock=clock, child=child) -> None:
                key = f"{topic} {child(msg)}"
                received.setdefault(key, []).append((stamp(msg), clock()))
        else:
            def callback(msg, got=got, stamp=stamp, clock=clock) -> None:
                got.append((stamp(msg), clock()))
        subscriptions.append(node.create_subscription(message_type(type_name), topic, callback, qos[kind],
                                                      raw=raw))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    ready = False
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.05)
        if not ready and all(s.get_publisher_count() > 0 for s in subscriptions):
            ready = True
            print("READY", flush=True)
    with open(out, "w") as f:
        json.dump(received, f)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
