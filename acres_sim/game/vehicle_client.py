"""The game's Vehicle Bridge as Python calls and callbacks (ROS-free): the one place that speaks its
protocol's client (its messages: acres_sim.channels.vehicle), so that the real game's is a change
there and here.

VehicleClient connects to one agent's Vehicle Bridge on 127.0.0.1 (again after it broke, with
backoff), hands on the vehicle's parameters once per connection, every report, every barrier (after
each lockstep step request and each reset) and every command the game took (held), in arrival
order, on its reader thread. The game reports in the vehicle's own time; reports and barriers are
handed on in world time, converted with the offset of the agent's Clock frames that
set_clock_offset() gives (vehicle_time.py). send() forwards a command. Bad lines are counted and
logged once per kind, and the stream goes on; a line longer than MAX_GAME_LINE_BYTES is skipped.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import replace

from acres_sim.channels.vehicle import (
    MAX_GAME_LINE_BYTES,
    VehicleCommand,
    VehicleInfo,
    VehicleProtocolError,
    VehicleReport,
    command_message,
    number,
    parse_info,
    parse_report,
)
from acres_sim.game.vehicle_time import VehicleTime
from acres_sim.net.lines import TOO_LONG, read_lines
from acres_sim.net.log_limiter import LogLimiter
from acres_sim.net.reconnect import ReconnectLoop

_LOG = logging.getLogger("acres_sim.game.vehicle_client")
DEFAULT_VEHICLE_PORT = 5611  # the Vehicle Bridge port of a single agent (fake_game --vehicle-ports)


class VehicleClient:
    """One agent's Vehicle Bridge. The callbacks run on the reader thread, in arrival order."""

    def __init__(self, port: int, *, on_info: Callable[[VehicleInfo], None],
                 on_report: Callable[[VehicleReport], None], on_barrier: Callable[[int, float], None],
                 on_held: Callable[[float | None], None] = lambda stamp_s: None,
                 on_answer: Callable[[], None] = lambda: None,
                 host: str = "127.0.0.1", reconnect_min_s: float = 0.5, reconnect_max_s: float = 5.0,
                 logger: logging.Logger | None = None):
        self._on_info, self._on_report, self._on_barrier = on_info, on_report, on_barrier
        self._on_held = on_held
        self._on_answer = on_answer  # after each answer to a command (held, or a refusal)
        self._count_lock = threading.Lock()
        self._sent = self._answered = 0  # commands on this connection, and the game's answers to them
        self._log = logger if logger is not None else _LOG
        self._faults = LogLimiter()
        self._link = ReconnectLoop(host, port, self._serve, name=f"vehicle-client-{port}",
                                   reconnect_min_s=reconnect_min_s, reconnect_max_s=reconnect_max_s,
                                   on_unreachable=self._on_unreachable)
        self.host, self.port = self._link.host, self._link.port
        self._stop = self._link.stopping
        self.time = VehicleTime()

    @property
    def connected(self) -> bool:
        return self._link.connected

    def start(self) -> None:
        self._link.start()

    def stop(self, timeout_s: float = 1.0) -> None:
        self._link.stop(timeout_s)

    def set_clock_offset(self, offset_s: float) -> None:
        """World minus vehicle time, from the agent's Clock frames (header stamp minus payload)."""
        self.time.offset_s = float(offset_s)

    def send(self, command: VehicleCommand) -> bool:
        """Forward a command; False when there is no connection (the command is not kept)."""
        line = json.dumps(command_message(command)).encode() + b"\n"
        with self._count_lock:
            sent = self._link.sendall(line)
            self._sent += int(sent)
        return sent

    @property
    def all_answered(self) -> bool:
        """The game answered every command sent on this connection: it holds the latest."""
        with self._count_lock:
            return self._answered >= self._sent

    # -- reader thread ----------------------------------------------------------------------------

    def _on_unreachable(self, reason: str, changed: bool) -> None:
        if changed:
            self._log.warning(f"Vehicle Bridge {self._link.address} not reachable ({reason}); trying again")

    def _serve(self, sock: socket.socket) -> None:
        with self._count_lock:
            self._sent = self._answered = 0  # a new connection: nothing sent on it yet
        self._link.backoff.reset()
        self._log.info(f"Vehicle Bridge connected to {self._link.address}")
        self._read(sock)
        if not self._stop.is_set():
            self._log.warning(f"Vehicle Bridge {self._link.address} disconnected; connecting again")

    def _read(self, sock: socket.socket) -> None:
        for line in read_lines(sock, self._stop, MAX_GAME_LINE_BYTES):
            if line is TOO_LONG:
                self._bad("too long", f"a line longer than {MAX_GAME_LINE_BYTES} bytes, skipped")
            else:
                self._handle(line)

    def _handle(self, line: bytes) -> None:
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise VehicleProtocolError("a line that is not a JSON object")
            kind = doc.get("type")
            if kind == "report":
                report = parse_report(doc)
                world = self.time.world_time(report.step, report.vehicle_time_s)
                self._on_report(replace(report, time_s=world))
            elif kind == "barrier":
                step = int(number(doc, "step"))
                self._on_barrier(step, self.time.world_time(step, number(doc, "vehicle_time_s")))
            elif kind == "held":
                stamp = None if doc.get("stamp_s") is None else number(doc, "stamp_s")
                with self._count_lock:  # counted first: on_held may ask whether every one is answered
                    self._answered += 1
                self._on_held(stamp)
                self._on_answer()
            elif kind == "hello":
                info = parse_info(doc)
                self.time.physics_hz = float(info.physics_hz)
                self._on_info(info)
            elif kind == "error":
                self._bad("refused", f"the Vehicle Bridge refused a command: {doc.get('error')}")
                self._answered_one()
            else:
                raise VehicleProtocolError(f"unknown message type {kind!r}")
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            self._bad(type(exc).__name__, f"Vehicle Bridge line not used: {exc}")

    def _answered_one(self) -> None:
        with self._count_lock:
            self._answered += 1
        self._on_answer()

    def _bad(self, key: str, message: str) -> None:
        silenced = self._faults.allow(key)
        if silenced is not None:
            self._log.warning(message + self._faults.suffix(silenced))
