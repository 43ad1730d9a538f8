"""The fake game as an application: a running session of agents plus its optional control channel,
what both the command line (cli.py) and the ROS node (node.py) start."""

from __future__ import annotations

from dataclasses import dataclass

from acres_sim.fake_game.sockets.control_server import ControlServer
from acres_sim.fake_game.simulation.sinks import LogFn, stdout_log
from acres_sim.fake_game.sockets.stream_server import stream_opener
from acres_sim.fake_game.sockets.vehicle_server import vehicle_opener
from acres_sim.fake_game.simulation.fake_world import FakeWorld
from acres_sim.fake_game.simulation.session import Session
from acres_sim.fake_game.simulation.session_config import SessionConfig


@dataclass
class FakeGame:
    """A running world plus its optional control channel."""

    world: FakeWorld
    control: ControlServer | None

    @classmethod
    def start(cls, config: SessionConfig, control_port: int | None,
              log: LogFn = stdout_log) -> FakeGame:
        world = FakeWorld(config, stream_opener(config, log), log, vehicle_opener(log))
        world.start()
        control = None
        if control_port is not None:
            control = ControlServer(control_port, world, log)
            if not control.start():
                control = None
        return cls(world, control)

    @property
    def session(self) -> Session:
        return self.world.session

    def stop(self) -> None:
        # The session first: a step request in progress then ends with an error answer.
        self.world.stop()
        if self.control is not None:
            self.control.stop()
