"""The rclpy node `fake_game`: the ROS-free fake game session, configured by ROS parameters.

It publishes nothing: its clients are sim_bridge nodes that read the TCP streams it serves. The
ACRES_SENSOR_STREAM_* lines go through the node's logger (console and /rosout), once each; the
CLI prints them plain on stdout. SIGINT and SIGTERM end it cleanly with exit code 0.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Sequence

# As in __main__.py: one OpenBLAS thread. It must be set before numpy loads, and rclpy loads it,
# so the imports below come after it on purpose.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import rclpy  # noqa: E402, RUF100
from rclpy.node import Node  # noqa: E402, RUF100
from rclpy.signals import SignalHandlerOptions  # noqa: E402, RUF100

from .app import FakeGame, agent_specs  # noqa: E402, RUF100
from .server import DEFAULT_MAX_QUEUED_BYTES  # noqa: E402, RUF100
from .session_config import SessionConfig  # noqa: E402, RUF100


class FakeGameNode(Node):
    """Declares the parameters of the README and runs one fake game session."""

    def __init__(self) -> None:
        super().__init__("fake_game")
        ports = list(self.declare_parameter("ports", [5601]).value)
        vehicles = list(self.declare_parameter("vehicles", ["polaris"]).value)
        # Declared after vehicles so that its default can be the vehicle names.
        agents = list(self.declare_parameter("agents", vehicles).value)
        seed = int(self.declare_parameter("seed", 42).value)
        realtime_factor = float(self.declare_parameter("realtime_factor", 1.0).value)
        lockstep = bool(self.declare_parameter("lockstep", False).value)
        control_port = int(self.declare_parameter("control_port", 0).value)
        flavor = str(self.declare_parameter("flavor", "game").value)
        georeferenced = bool(self.declare_parameter("georeferenced", True).value)
        noise = bool(self.declare_parameter("noise", True).value)
        cached = bool(self.declare_parameter("cached", False).value)
        flat_ground = bool(self.declare_parameter("flat_ground", False).value)
        max_queued_bytes = int(self.declare_parameter("max_queued_bytes", DEFAULT_MAX_QUEUED_BYTES).value)
        stats_period_s = float(self.declare_parameter("stats_period_s", 30.0).value)
        duration_s = float(self.declare_parameter("duration_s", 0.0).value)
        render_workers = int(self.declare_parameter("render_workers", 0).value)

        if lockstep and control_port == 0:
            raise ValueError("lockstep needs control_port (the world only moves on step requests)")
        config = SessionConfig(
            agents=agent_specs(ports, vehicles, agents),
            seed=seed,
            realtime_factor=realtime_factor,
            lockstep=lockstep,
            flavor=flavor,
            georeferenced=georeferenced,
            noise=noise,
            cached=cached,
            flat_ground=flat_ground,
            render_workers=render_workers,
            max_queued_bytes=max_queued_bytes,
            stats_period_s=stats_period_s,
            duration_s=duration_s,
        )
        self.game = FakeGame.start(config, control_port if control_port else None, log=self._log_line)

    def _log_line(self, line: str) -> None:
        # Through the logger only (console and /rosout): printing too would show every line twice
        # under ros2 launch. The CLI (python -m acres_sim.fake_game) prints them plain on stdout.
        if "FAILED" in line:
            self.get_logger().error(line)
        else:
            self.get_logger().info(line)

    def shutdown(self) -> None:
        self.game.stop()


def main(args: Sequence[str] | None = None) -> int:
    # Our own signal handlers: the session must stop (and log STOP) before rclpy shuts down.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    node: FakeGameNode | None = None
    code = 0
    try:
        try:
            node = FakeGameNode()
        except ValueError as exc:
            print(f"fake_game: {exc}", file=sys.stderr)
            return 2
        session = node.game.session
        if not session.listening_agents:
            node.get_logger().error("no stream could listen; nothing to serve")
            code = 1
        else:
            while not stop.is_set() and not session.finished and rclpy.ok():
                rclpy.spin_once(node, timeout_sec=0.2)
    finally:
        if node is not None:
            node.shutdown()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
