"""The fake game as an application: a running session of agents plus its optional control channel,
what both the command line (cli.py) and the ROS node (node.py) start."""

from __future__ import annotations

from dataclasses import dataclass

from acres_sim.fake_game.sockets.control_server import ControlServer
from acres_sim.fake_game.simulation.sinks import LogFn, stdout_log
from acres_sim.fake_game.sockets.stream_server import stream_opener
from acres_sim.fake_game.sockets.vehicle_server import vehicle_opener
from acres_sim.fake_game.simulation.session import Session
from acres_sim.fake_game.simulation.session_config import SessionConfig


@dataclass
class FakeGame:
    """A running session plus its optional control channel."""

    session: Session
    control: ControlServer | None

    @classmethod
    def start(cls, config: SessionConfig, control_port: int | None,
              log: LogFn = stdout_log) -> FakeGame:
        session = Session(config, stream_opener(config, log), log, vehicle_opener(log))
        session.start()
        control = None
        if control_port is not None:
            control = ControlServer(control_port, session, log)
            if not control.start():
                control = None
        return cls(session, control)

    def stop(self) -> None:
        # The session first: a step request in progress then ends with an error answer.
        self.session.stop()
        if self.control is not None:
            self.control.stop()
