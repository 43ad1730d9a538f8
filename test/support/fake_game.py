"""The fake game as its users run it, for the fake_game suites: the CLI in a subprocess with its
log lines collected, and a stream client that reads whole frames with the bridge's FrameReader."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from acres_sim.stream.protocol import FrameHeader
from acres_sim.stream.frame_reader import FrameReader
from harness.processes import Proc

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60.0


class FakeGame:
    """`python -m acres_sim.fake_game` in a subprocess (the one child-process wrapper, Proc), with
    its output lines collected."""

    def __init__(self, *args: str):
        self._proc = Proc([sys.executable, "-m", "acres_sim.fake_game", *args], dict(os.environ), "fake_game")
        self.proc = self._proc.proc
        self.lines = self._proc.lines

    def wait_line(self, pattern: str, start: int = 0, timeout: float = TIMEOUT_S) -> re.Match:
        """The match of the first line from index start that matches pattern (re.search)."""
        regex = re.compile(pattern)
        return regex.search(self._proc.wait_line(lambda line: regex.search(line) is not None, timeout, start))

    def stream_port(self, agent: str) -> int:
        return int(self.wait_line(rf"^ACRES_SENSOR_STREAM_LISTENING agent={agent} port=(\d+)$").group(1))

    def vehicle_port(self, agent: str) -> int:
        return int(self.wait_line(rf"^ACRES_VEHICLE_BRIDGE_LISTENING agent={agent} port=(\d+)$").group(1))

    def control_port(self) -> int:
        return int(self.wait_line(r"^ACRES_SIM_CONTROL_LISTENING port=(\d+)$").group(1))

    def wait(self, timeout: float = TIMEOUT_S) -> tuple[int, str]:
        """Wait for the process to end by itself; its exit code and its output."""
        code = self.proc.wait(timeout=timeout)
        self._proc.stop()  # it has ended: this only waits until its last line is collected
        return code, self._proc.output()

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Signal the process; its exit code and its output."""
        code = self._proc.stop(sig, TIMEOUT_S)
        return code, self._proc.output()


class Client:
    """A stream client that reads whole frames (header, payload bytes)."""

    def __init__(self, port: int, rcvbuf: int | None = None):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(TIMEOUT_S)
        self.sock.connect(("127.0.0.1", port))
        self.reader = FrameReader(self.sock)

    def read(self) -> tuple[FrameHeader, bytearray]:
        frame = self.reader.read_frame()
        return frame.header, frame.payload

    def close(self) -> None:
        self.sock.close()


class FeedEvents:
    """Everything an EpisodeFeed (the control channel's watch connection) hands on, in order."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict]] = []
        self.problems: list[str] = []
        self.cond = threading.Condition()

    def on_event(self, event: str, body: dict) -> None:
        with self.cond:
            self.items.append((event, body))
            self.cond.notify_all()

    def of(self, event: str) -> list[dict]:
        with self.cond:
            return [b for e, b in self.items if e == event]

    def wait(self, predicate, timeout_s: float = 30.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self), timeout_s), self.items[-3:]


def wait_streams_connected(control: Any, timeout_s: float = TIMEOUT_S) -> None:
    """Until the game accepted every stream's client: it renders frames only for a connected one."""
    deadline = time.monotonic() + timeout_s
    while not all(a["connected"] for a in control.request({"op": "status"})["agents"]):
        assert time.monotonic() < deadline, "the game did not accept the streams' clients"
        time.sleep(0.02)
