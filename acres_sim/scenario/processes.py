"""The processes of a session (ROS-free): a child process with its output in a file, in a process
group of its own, ended with SIGINT then SIGKILL and sent SIGTERM when the thread that started it
dies; and the fake game as such a child, its ports chosen by the system and read from its output
(concurrent sessions never race for a port). The scenario runner and the learners' environments
start their games here.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STOP_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1  # prctl(2)


class SessionFailed(RuntimeError):
    """A world's session (a scenario run's, a learner's) could not start, one of its processes died,
    or its game went away or stopped answering: the message says which, why, and where its output
    is."""


class Child:
    """A child process with its output in a file (and its lines kept for waiting on them)."""

    def __init__(self, name: str, args: list[str], env: Mapping[str, str], log_dir: Path,
                 shell: bool = False, cwd: str | Path | None = None, stdin: bool = False):
        self.name = name
        self._interrupted = False
        self.lines: list[str] = []
        self._new = threading.Condition()
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "w", encoding="utf-8")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(args if not shell else args[0], env=dict(env), shell=shell,
                                     stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1,
                                     cwd=cwd, start_new_session=True, preexec_fn=_in_the_child)
        self._reader = threading.Thread(target=self._read, name=f"{name}-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            self._log.flush()
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()
        with self._new:
            self._new.notify_all()

    def wait_line(self, pattern: str, timeout_s: float, since: float | None = None) -> re.Match:
        """The first line matching pattern, within timeout_s of `since` (time.monotonic(); now if
        None: several waits can share one limit)."""
        regex = re.compile(pattern)
        deadline = (time.monotonic() if since is None else since) + timeout_s
        seen = 0
        with self._new:
            while True:
                for line in self.lines[seen:]:
                    match = regex.search(line)
                    if match:
                        return match
                seen = len(self.lines)
                if self.proc.poll() is not None and not self._reader.is_alive():
                    raise SessionFailed(f"{self.name} ended (exit {self.proc.returncode}) before it was "
                                        f"ready: {' / '.join(line.strip() for line in self.lines[-5:])}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionFailed(f"{self.name} was not ready within {timeout_s:g} s")
                self._new.wait(min(left, 0.2))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def interrupt(self) -> None:
        """SIGINT, once: a second one would cut a node's own ending short."""
        if self._interrupted or self.proc.poll() is not None:
            return
        self._interrupted = True
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def stop(self, wait_s: float = STOP_WAIT_S) -> int | None:
        """SIGINT (unless sent already), then SIGKILL after wait_s."""
        self.interrupt()
        if self.proc.poll() is None:
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(5.0)
        self._reader.join(2.0)
        self._log.close()
        return self.proc.returncode


def stop_together(children: Sequence[Child], wait_s: float = STOP_WAIT_S) -> None:
    """Every child sent SIGINT at once, then each awaited (SIGKILL for those still running wait_s
    later): they end side by side (one after the other, a session's seven took 2.1 s)."""
    for child in children:
        child.interrupt()
    deadline = time.monotonic() + wait_s
    for child in children:
        child.stop(max(0.0, deadline - time.monotonic()))


@dataclass(frozen=True)
class GamePorts:
    """Where a game on this host listens (127.0.0.1): its control channel's port, and each agent's
    sensor-stream and Vehicle Bridge port in the scenario's order of agents (a game started here, or
    one already running that a learner is given)."""

    control_port: int
    ports: tuple[int, ...]
    vehicle_ports: tuple[int, ...]

    @classmethod
    def of(cls, value: GamePorts | Mapping[str, Any], agents: Sequence[str]) -> GamePorts:
        """From itself or a mapping with the same keys (what gymnasium.make and RLlib's env_config
        pass on), a port each for `agents`; ValueError naming what is wrong."""
        ports = value if isinstance(value, GamePorts) else cls._parsed(value)
        for key in ("ports", "vehicle_ports"):
            given = len(getattr(ports, key))
            if given != len(agents):
                raise ValueError(f"game: {key} has {given} ports; the scenario has {len(agents)} agents "
                                 f"({', '.join(agents)}), one port each")
        return ports

    @classmethod
    def _parsed(cls, value: Any) -> GamePorts:
        if not isinstance(value, Mapping) or set(value) != {"control_port", "ports", "vehicle_ports"}:
            raise ValueError("game: the ports of a running game, {'control_port': N, 'ports': [N, ...], "
                             f"'vehicle_ports': [N, ...]}}, got {value!r}")

        def port(v: Any, what: str) -> int:
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65535:
                raise ValueError(f"game: {what} is a port number (1-65535), got {v!r}")
            return v

        lists = {}
        for key in ("ports", "vehicle_ports"):
            if isinstance(value[key], (str, bytes)) or not isinstance(value[key], Sequence):
                raise ValueError(f"game: {key} is a list of port numbers, one per agent, got {value[key]!r}")
            lists[key] = tuple(port(v, key) for v in value[key])
        return cls(port(value["control_port"], "control_port"), lists["ports"], lists["vehicle_ports"])


@dataclass
class GameProcess:
    """A fake game started by start_fake_game, and the ports it listens on."""

    child: Child
    ports: GamePorts


def start_fake_game(agents: Sequence[str], vehicles: Sequence[str], seed: int, log_dir: Path,
                    env: Mapping[str, str], extra: Sequence[str] = (), timeout_s: float = 120.0,
                    name: str = "fake_game") -> GameProcess:
    """A fake game held in lockstep, serving `agents` on ports of its choosing (read from its output):
    a stream, a Vehicle Bridge each, and the control channel. SessionFailed if it is not ready in time
    (then it is stopped)."""
    args = [sys.executable, "-m", "acres_sim.fake_game", "--control-port", "0",
            "--ports", ",".join("0" for _ in agents), "--vehicle-ports", ",".join("0" for _ in agents),
            "--vehicles", ",".join(vehicles), "--agents", ",".join(agents), "--seed", str(seed),
            "--lockstep", *extra]
    child = Child(name, args, env, log_dir)
    since = time.monotonic()  # one limit for all its ports

    def port(pattern: str) -> int:
        return int(child.wait_line(pattern, timeout_s, since).group(1))

    try:
        ports = [port(rf"^ACRES_SENSOR_STREAM_LISTENING agent={a} port=(\d+)$") for a in agents]
        vehicle_ports = [port(rf"^ACRES_VEHICLE_BRIDGE_LISTENING agent={a} port=(\d+)$") for a in agents]
        control = port(r"^ACRES_SIM_CONTROL_LISTENING port=(\d+)$")
    except BaseException:
        child.stop()
        raise
    return GameProcess(child, GamePorts(control, tuple(ports), tuple(vehicle_ports)))


def _in_the_child() -> None:
    """(in the child, before exec) Its signals as a fresh process has them, whatever its parent
    blocked (a Ray worker runs its tasks with SIGINT blocked, and a blocked mask survives exec: its
    children would ignore the SIGINT that stops them), and its end tied to its parent's."""
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    end_with_the_parent()


def end_with_the_parent() -> None:
    """(in the child, before exec) SIGTERM when the thread that started it dies: a runner or a
    learner killed with SIGKILL leaves no session behind (Linux; elsewhere nothing)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
