"""An rclpy participant of its own on an isolated domain, with subscriptions that collect what they
receive; and a free TCP port. Used by the tests and by the benchmark scripts."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """count different free ports: all held at once while they are chosen (free_port() twice in a
    row can give the same port twice)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class Graph:
    """The test's own rclpy participant on an isolated domain: subscriptions that collect messages."""

    def __init__(self, domain_id: int):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(f"bridge_test_{os.getpid()}", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.received: dict[str, list] = {}
        self.subscriptions: dict[str, object] = {}

    def subscribe(self, msg_type, topic: str, qos=None, callback=None, keep: bool = True) -> list:
        """Subscribe; every message is kept in the list returned (with its arrival time) unless
        `keep` is false (a long run that only counts with its callback)."""
        from rclpy.qos import QoSProfile

        got: list = []
        self.received[topic] = got

        def on_message(msg) -> None:
            if keep:
                got.append((time.monotonic(), msg))
            if callback is not None:
                callback(msg)

        self.subscriptions[topic] = self.node.create_subscription(
            msg_type, topic, on_message, qos if qos is not None else QoSProfile(depth=1000))
        return got

    def spin_until(self, predicate, timeout_s: float = 15.0, what: str = "condition") -> None:
        if not self.spin_while_not(predicate, timeout_s):
            counts = {t: len(v) for t, v in self.received.items()}
            raise AssertionError(f"{what} not reached within {timeout_s} s; received {counts}")

    def spin_while_not(self, predicate, timeout_s: float) -> bool:
        """Spin until predicate() holds (True) or timeout_s has passed (False)."""
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                return False
            self.executor.spin_once(timeout_sec=0.05)
        return True

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.05)

    def wait_matched(self, topics: Iterable[str], timeout_s: float = 15.0, settle_s: float = 1.0) -> None:
        """Until every subscription has matched a publisher, then `settle_s` more: matching is
        not symmetric, the publisher's side may match our reader a moment later."""
        topics = list(topics)
        self.spin_until(lambda: all(self.subscriptions[t].get_publisher_count() > 0 for t in topics),
                        timeout_s, f"publishers for {topics}")
        self.spin_for(settle_s)

    def messages(self, topic: str) -> list:
        return [m for _, m in self.received[topic]]

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


def leave_graph(executor, spinner, node) -> None:
    """Leave the graph before the process ends: a reader that just vanishes stays matched until its
    lease ends, and the bridge's barriers would wait for it meanwhile."""
    import rclpy

    executor.shutdown()
    spinner.join(5.0)
    node.destroy_node()
    rclpy.try_shutdown()
