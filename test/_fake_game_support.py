"""The fake game as its users run it, for the fake_game suites: the CLI in a subprocess with its
log lines collected, and a stream client that reads whole frames with the bridge's FrameReader."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from acres_sim.protocol import FrameHeader
from acres_sim.stream import FrameReader

REPO = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60.0


class FakeGame:
    """`python -m acres_sim.fake_game` in a subprocess, with its stdout lines collected."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acres_sim.fake_game", *args], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._collect, daemon=True)
        self._reader.start()

    def _collect(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_line(self, pattern: str, start: int = 0, timeout: float = TIMEOUT_S) -> re.Match:
        """The first line from index start that matches pattern (re.search)."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines[start:]:
                    match = regex.search(line)
                    if match:
                        return match
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line matching {pattern!r}; got {self.lines}; "
                                         f"stderr: {self._stderr()}")
                self._cond.wait(min(remaining, 0.2))

    def stream_port(self, agent: str) -> int:
        return int(self.wait_line(rf"^ACRES_SENSOR_STREAM_LISTENING agent={agent} port=(\d+)$").group(1))

    def control_port(self) -> int:
        return int(self.wait_line(r"^ACRES_SIM_CONTROL_LISTENING port=(\d+)$").group(1))

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Signal the process; its exit code and stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self._reader.join(timeout=5)
        assert self.proc.stderr is not None
        return self.proc.returncode, self.proc.stderr.read()


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
