"""The rclpy node `fake_game`: the ROS-free fake game (acres_sim.fake_game), configured by ROS
parameters.

It publishes nothing: its clients are sim_bridge nodes that read the TCP streams it serves. The
ACRES_SENSOR_STREAM_* lines go through the node's logger (console and /rosout), once each; the
command line (python3 -m acres_sim.fake_game) prints them plain on stdout. SIGINT and SIGTERM end
it cleanly with exit code 0.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

# As in fake_game/__main__.py: one OpenBLAS thread. It must be set before numpy loads, and rclpy
# loads it, so the imports below come after it on purpose.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from acres_sim.fake_game.app import FakeGame  # noqa: E402
from acres_sim.nodes.parameters import FAKE_GAME, fake_game_config  # noqa: E402
from acres_sim.nodes.runner import RunnableNode, StartFailed, run  # noqa: E402


class FakeGameNode(RunnableNode):
    """Declares the parameters of config/fake_game.yaml and runs one fake game session."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("fake_game", **kwargs)
        self.config = fake_game_config(self.declare_table(FAKE_GAME))
        self.game: FakeGame | None = None

    def start(self) -> None:
        self.game = FakeGame.start(self.config.session, self.config.control_port, log=self._log_line)
        if not self.game.session.agents:
            ports = ", ".join(str(a.port) for a in self.config.session.agents)
            raise StartFailed(f"no stream could listen on 127.0.0.1 port {ports} (in use by another "
                              "program?): nothing to serve")

    @property
    def finished(self) -> bool:
        return self.game is not None and self.game.session.finished

    def stop(self) -> None:
        if self.game is not None:
            self.game.stop()

    def _log_line(self, line: str) -> None:
        # Through the logger only (console and /rosout): printing too would show every line twice
        # under ros2 launch. The command line prints them plain on stdout.
        if "FAILED" in line:
            self.get_logger().error(line)
        else:
            self.get_logger().info(line)


def main(args: Sequence[str] | None = None) -> int:
    return run(FakeGameNode, "fake_game", args)


if __name__ == "__main__":
    sys.exit(main())
