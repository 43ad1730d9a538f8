"""Where a session's output goes (ROS-free): each agent's frames into a FrameSink, log lines into a
LogFn. The session knows these shapes only; the game's side of the sockets (fake_game.sockets)
provides them, so the simulation does not depend on the transport."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from acres_sim.channels.vehicle import VehicleCommand, VehicleReport
from acres_sim.fake_game.simulation.vehicle_model import VehicleParams
from acres_sim.stream.protocol import FrameType
from acres_sim.stream.hello import Hello

LogFn = Callable[[str], None]

_print_lock = threading.Lock()


def stdout_log(line: str) -> None:
    """Default log sink: one line on stdout, flushed at once (tests and launch files wait for them)."""
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class FrameSink(Protocol):
    """One agent's stream as the session sees it: frames go in, the sink numbers, queues and sends."""

    port: int

    @property
    def connected(self) -> bool: ...

    def would_drop(self, frame_type: FrameType, payload_size: int) -> bool: ...

    def count_drop(self, frame_type: FrameType) -> None: ...

    def publish(self, frame_type: FrameType, stamp: float, payload: bytes) -> bool: ...

    def stop(self) -> None: ...


# (agent name, port, Hello, the world time now) -> the agent's open stream, or None when it could
# not be opened (the session goes on without that agent).
OpenStream = Callable[[str, int, Hello, Callable[[], float]], "FrameSink | None"]


@dataclass(frozen=True)
class HeldCommand:
    """The command a Vehicle Bridge holds for its vehicle: what the client sent last (or the brakes,
    for a silent client), and the world time the client stamped it with (None: unstamped)."""

    command: VehicleCommand
    stamp_s: float | None


class VehicleSink(Protocol):
    """One agent's Vehicle Bridge as the session sees it: commands come out, reports go in."""

    port: int

    @property
    def connected(self) -> bool: ...

    def held_command(self, lockstep: bool) -> HeldCommand | None: ...

    def forget(self) -> None: ...

    def report(self, report: VehicleReport) -> None: ...

    def barrier(self, step: int, vehicle_time_s: float) -> None: ...

    def stop(self) -> None: ...


# (agent name, vehicle, port, the vehicle's parameters, the report of the world as it stands) -> its
# open Vehicle Bridge, or None when it could not be opened (the agent then drives its route).
StateNow = Callable[[], VehicleReport]
OpenVehicle = Callable[[str, str, int, VehicleParams, StateNow], "VehicleSink | None"]
