"""A lockstep learner: `python3 -m benchmark.learner CONTROL_PORT REQUESTS MODE`.

Sends REQUESTS step requests of 12 physics steps each on the fake game's control channel, one
after the other, as fast as it can. MODE "control" waits only for each request's reply; MODE "ros"
also waits for the matching `sim/barrier` message (std_msgs/UInt64, the step reached) on the ROS
side. Prints one JSON line: {"mode", "steps", "seconds", "steps_per_s", "barrier_timeouts",
"reply_ms" (request -> reply, mean), "reply_to_barrier_ms" (reply -> sim/barrier, mean)}.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time

from harness.graph import leave_graph

STEPS_PER_REQUEST = 12


def main(argv: list[str]) -> int:
    port, requests, mode = int(argv[0]), int(argv[1]), argv[2]
    barrier_topic = argv[3] if len(argv) > 3 else "sim/barrier"
    reached = threading.Condition()
    latest = [0]
    spin = None
    if mode == "ros":
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import UInt64

        rclpy.init()
        node = rclpy.create_node("bench_learner")

        def on_barrier(msg: UInt64) -> None:
            with reached:
                latest[0] = max(latest[0], msg.data)
                reached.notify_all()
        sub = node.create_subscription(UInt64, barrier_topic, on_barrier, QoSProfile(
            depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE))
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        deadline = time.monotonic() + 20.0
        while sub.get_publisher_count() == 0 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    lines = sock.makefile("rb")
    request = (json.dumps({"op": "step", "steps": STEPS_PER_REQUEST}) + "\n").encode()
    timeouts = 0
    game_s = barrier_s = 0.0
    t0 = time.monotonic()
    for _ in range(requests):
        sent = time.monotonic()
        sock.sendall(request)
        reply = json.loads(lines.readline())
        replied = time.monotonic()
        game_s += replied - sent
        if not reply.get("ok"):
            raise SystemExit(f"step request refused: {reply}")
        if mode == "ros":
            with reached:
                if not reached.wait_for(lambda: latest[0] >= reply["step"], timeout=5.0):
                    timeouts += 1
            barrier_s += time.monotonic() - replied
    seconds = time.monotonic() - t0
    steps = requests * STEPS_PER_REQUEST
    print(json.dumps({"mode": mode, "steps": steps, "seconds": seconds, "steps_per_s": steps / seconds,
                      "barrier_timeouts": timeouts,
                      "reply_ms": game_s / requests * 1e3,
                      "reply_to_barrier_ms": barrier_s / requests * 1e3}),
          flush=True)
    sock.close()
    if spin is not None:
        leave_graph(executor, spin, node)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
