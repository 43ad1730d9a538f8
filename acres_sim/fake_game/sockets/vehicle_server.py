"""One agent's Vehicle Bridge: the game side of the drive-by-wire socket (ROS-free). Its messages
are acres_sim.channels.vehicle's.

One client at a time (the next one waits in the listen queue). The session applies the latest
command at each physics step (zero-order hold). A client's first command takes the vehicle off its
route. Outside lockstep a client that sends nothing for WATCHDOG_S of wall time is braked to a stop
(the game brakes a client that is slow in wall-clock time); in lockstep it is not (the world waits
for it).
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from collections import deque
from typing import Any

from acres_sim.channels.vehicle import (
    MAX_COMMAND_LINE_BYTES,
    VehicleReport,
    barrier_message,
    error_message,
    held_message,
    hello_message,
    parse_command,
    report_message,
)
from acres_sim.fake_game.simulation.sinks import HeldCommand, LogFn, OpenVehicle, StateNow, stdout_log
from acres_sim.fake_game.simulation.vehicle_model import VehicleParams
from acres_sim.fake_game.sockets.loopback_server import LoopbackServer
from acres_sim.net.lines import TOO_LONG, read_lines
from acres_sim.stream.timing import PHYSICS_HZ

WATCHDOG_S = 0.5
MAX_QUEUED_LINES = 1200  # reports of 10 s; beyond that the oldest reports are dropped, never a barrier
_POLL_S = 0.1


class VehicleServer(LoopbackServer):
    """The Vehicle Bridge of one agent. report() and barrier() may be called from any thread."""

    def __init__(self, agent: str, vehicle: str, port: int, params: VehicleParams, physics_hz: int, *,
                 state_now: StateNow | None = None, log: LogFn = stdout_log):
        super().__init__(port, label="VEHICLE_BRIDGE", tags=f"agent={agent}", backlog=4, log=log)
        self.agent = agent
        self.vehicle = vehicle
        self._hello = json.dumps(hello_message(agent, vehicle, physics_hz, params.as_dict())) + "\n"
        self._state_now = state_now
        self._queue: deque[tuple[bytes, bool]] = deque()  # (line, droppable)
        self._held: HeldCommand | None = None
        self._last_line = 0.0  # monotonic time of the client's last line
        self._connected = False

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    # -- the session's side ---------------------------------------------------------------------

    def held_command(self, lockstep: bool) -> HeldCommand | None:
        """The latest command (None before a client's first). Outside lockstep (the world held or
        stepping), a client silent for WATCHDOG_S of wall time, or gone, gets the brakes."""
        with self._lock:
            held = self._held
            if held is None:
                return None
            silent = not self._connected or time.monotonic() - self._last_line > WATCHDOG_S
            if silent and not lockstep:
                braked = dataclasses.replace(held.command, throttle=0.0, brake=1.0)
                return HeldCommand(braked, held.stamp_s)
            return held

    def forget(self) -> None:
        """A STATE reset: the vehicle drives its route again until the next command."""
        with self._lock:
            self._held = None

    def report(self, report: VehicleReport) -> None:
        self._send(report_message(report), droppable=True)

    def barrier(self, step: int, vehicle_time_s: float) -> None:
        self._send(barrier_message(step, vehicle_time_s), droppable=False)

    def _send(self, message: dict[str, Any], droppable: bool) -> None:
        line = (json.dumps(message, allow_nan=False) + "\n").encode()
        with self._lock:
            if not self._connected:
                return
            if len(self._queue) >= MAX_QUEUED_LINES:
                for index, (_, can_drop) in enumerate(self._queue):
                    if can_drop:
                        del self._queue[index]
                        break
            self._queue.append((line, droppable))
            self._lock.notify()

    # -- the client -----------------------------------------------------------------------------

    def _handle(self, conn: socket.socket) -> None:
        # Lines go out as they come ("held", then a step's reports and barrier): without this Nagle
        # holds the second write for the client's delayed ACK, 40 ms a step.
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self._queue.clear()
            self._connected = True
            self._last_line = time.monotonic()
        self._log(f"ACRES_VEHICLE_BRIDGE_CONNECTED agent={self.agent} port={self.port}")
        reader = threading.Thread(target=self._read, args=(conn,), name=f"vehicle-{self.agent}-in",
                                  daemon=True)
        try:
            conn.sendall(self._hello.encode())
            if self._state_now is not None:  # the state now: a held world reports nothing until it steps
                state = json.dumps(report_message(self._state_now()), allow_nan=False) + "\n"
                conn.sendall(state.encode())
            reader.start()
            while not self._stop.is_set() and reader.is_alive():
                with self._lock:
                    if not self._queue:
                        self._lock.wait(_POLL_S)
                    lines = [line for line, _ in self._queue]
                    self._queue.clear()
                if lines:
                    conn.sendall(b"".join(lines))
        except OSError:
            pass
        finally:
            with self._lock:
                self._connected = False
                self._queue.clear()
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
            if reader.is_alive():
                reader.join(1.0)
            self._log(f"ACRES_VEHICLE_BRIDGE_DISCONNECTED agent={self.agent} port={self.port}")

    def _read(self, conn: socket.socket) -> None:
        for line in read_lines(conn, self._stop, MAX_COMMAND_LINE_BYTES):
            if line is TOO_LONG:
                self._refuse(f"a line longer than {MAX_COMMAND_LINE_BYTES} bytes")
            else:
                self._take(line)

    def _take(self, line: bytes) -> None:
        try:
            command = parse_command(json.loads(line))
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError and VehicleProtocolError too
            self._refuse(str(exc))
            return
        with self._lock:
            self._held = HeldCommand(command, command.stamp_s)
            self._last_line = time.monotonic()
        # Once held, said: a client can tell others (sim_control) that the next step applies it.
        self._send(held_message(command.stamp_s), droppable=False)

    def _refuse(self, why: str) -> None:
        self._send(error_message(why), droppable=False)


def vehicle_opener(log: LogFn = stdout_log) -> OpenVehicle:
    """How a session opens its agents' Vehicle Bridges: a VehicleServer on each vehicle port."""

    def open_vehicle(agent: str, vehicle: str, port: int, params: VehicleParams,
                     state_now: StateNow) -> VehicleServer | None:
        server = VehicleServer(agent, vehicle, port, params, PHYSICS_HZ, state_now=state_now, log=log)
        return server if server.start() else None  # LISTEN_FAILED was logged

    return open_vehicle
