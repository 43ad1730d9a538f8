"""The fake game as an application: a running session of agents plus its optional control channel,
what both the command line (cli.py) and the ROS node (node.py) start."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .control import ControlServer
from .server import LogFn, stdout_log
from .session import Session
from .session_config import AgentSpec, SessionConfig

VEHICLE_NAMES = ("polaris", "maxxum")  # as fake_game.vehicles.VEHICLES; kept here so --help is cheap


def agent_specs(ports: Sequence[int], vehicles: Sequence[str],
                agents: Sequence[str] | None = None) -> tuple[AgentSpec, ...]:
    """One AgentSpec per port; agent names default to the vehicle names."""
    if len(vehicles) != len(ports):
        raise ValueError(f"{len(ports)} port(s) but {len(vehicles)} vehicle(s): give one vehicle per port")
    for vehicle in vehicles:
        if vehicle not in VEHICLE_NAMES:
            raise ValueError(f"unknown vehicle {vehicle!r}: expected one of {', '.join(VEHICLE_NAMES)}")
    names = list(agents) if agents else list(vehicles)
    if len(names) != len(ports):
        raise ValueError(f"{len(ports)} port(s) but {len(names)} agent name(s)")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names must be unique, got {names} (give --agents)")
    return tuple(AgentSpec(a, v, p) for a, v, p in zip(names, vehicles, ports))


@dataclass
class FakeGame:
    """A running session plus its optional control channel."""

    session: Session
    control: ControlServer | None

    @classmethod
    def start(cls, config: SessionConfig, control_port: int | None,
              log: LogFn = stdout_log) -> FakeGame:
        session = Session(config, log)
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
