"""The benchmark's child processes: started with their output collected line by line, on a graph
of their own (ROS_DOMAIN_ID), with the CPU they use measured between two points."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from acres_sim.middleware.dds import shipped_environment
from harness.workload import process_cpu_s


REPO = Path(__file__).resolve().parent.parent


class LineNotSeen(AssertionError):
    """A child process did not print the line waited for (its last lines are in the message)."""


class Proc:
    """A child process (cwd: the checkout) whose combined output is collected line by line by a
    thread, so that it never blocks on a pipe; the one wrapper of the tests and the benchmark."""

    def __init__(self, args: list[str], env: dict[str, str], name: str | None = None):
        self.args = args
        self.name = name or " ".join(args[:4])
        self.lines: list[str] = []
        self._new = threading.Condition()
        self.proc = subprocess.Popen(args, env=env, cwd=str(REPO), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()
        with self._new:
            self._new.notify_all()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_line(self, predicate: Callable[[str], bool], timeout_s: float, start: int = 0) -> str:
        """The first line from index `start`, printed so far or from now on, that `predicate` accepts."""
        deadline = time.monotonic() + timeout_s
        seen = start
        with self._new:
            while True:
                for line in self.lines[seen:]:
                    if predicate(line):
                        return line
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    tail = "\n  ".join(self.lines[-40:])
                    raise LineNotSeen(f"{self.name}: expected line not seen in {timeout_s:.0f} s:\n  {tail}")
                self._new.wait(min(left, 0.2))

    def wait_for(self, text: str, timeout_s: float = 20.0) -> str:
        """The first line that contains `text`."""
        return self.wait_line(lambda line: text in line, timeout_s)

    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self, sig: int = signal.SIGINT, timeout_s: float = 10.0) -> int | None:
        """Signal it (SIGINT), wait, kill it after `timeout_s`; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._reader.join(2)
        return self.proc.returncode


DOMAINS = iter(range(100 + os.getpid() % 50 * 2, 232))


def ros_env(domain: int, **extra: str | None) -> dict[str, str]:
    """This environment on an isolated graph, with `extra` set (None: removed); the child processes
    find the benchmark package (it is not installed) through PYTHONPATH."""
    env = dict(os.environ)
    env.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1",
               RCUTILS_LOGGING_BUFFERED_STREAM="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])))
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def start_bridge(port: int, domain: int, params: Mapping[str, object] | Iterable[str] | None = None,
                 namespace: str | None = None, env_extra: Mapping[str, str | None] | None = None,
                 name: str = "sim_bridge") -> Proc:
    """sim_bridge in a child process; params as {name: value} or ["name:=value", ...]."""
    args = [sys.executable, "-m", "acres_sim.nodes.sim_bridge", "--ros-args", "-p", f"port:={port}"]
    items = [f"{k}:={v}" for k, v in params.items()] if isinstance(params, Mapping) else list(params or ())
    for item in items:
        args += ["-p", item]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    if name != "sim_bridge":
        args += ["-r", f"__node:={name}"]
    return Proc(args, ros_env(domain, **(env_extra or {})), f"{name} {namespace or ''}")


def start_vehicle_bridge(vehicle_port: int, domain: int, params: Iterable[str] = (),
                         namespace: str | None = None,
                         env_extra: Mapping[str, str | None] | None = None) -> Proc:
    """vehicle_bridge in a child process, reconnecting fast; params as ["name:=value", ...]."""
    args = [sys.executable, "-m", "acres_sim.nodes.vehicle_bridge", "--ros-args",
            "-p", f"vehicle_port:={vehicle_port}", "-p", "reconnect_min_s:=0.1", "-p", "reconnect_max_s:=0.5"]
    for item in params:
        args += ["-p", item]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    return Proc(args, ros_env(domain, **(env_extra or {})), f"vehicle_bridge {namespace or ''}")


def start_module(module: str, args: list[str], domain: int, profile: bool = False) -> Proc:
    env = ros_env(domain)
    if profile:  # a user process that loads the shipped Fast DDS profile file
        env.update(shipped_environment())
    return Proc([sys.executable, "-m", module, *args], env, module)


def json_result(proc: Proc, timeout_s: float = 180.0) -> dict:
    """The JSON line a measuring child prints at its end (a learner), once it has ended by itself:
    interrupted, its readers would stay matched until their lease ends."""
    line = proc.wait_line(lambda s: s.startswith("{"), timeout_s)
    try:
        proc.proc.wait(30)
    except subprocess.TimeoutExpired:
        pass
    proc.stop()
    return json.loads(line)


def ready(proc: Proc, timeout_s: float = 60.0) -> None:
    proc.wait_line(lambda line: line.strip() == "READY", timeout_s)


class CpuWindow:
    """CPU seconds of some processes between start() and stop(), as % of one core."""

    def __init__(self, pids: list[int]):
        self.pids = pids

    def start(self) -> None:
        self._t0, self._cpu0 = time.monotonic(), [process_cpu_s(p) for p in self.pids]

    def stop(self) -> float:
        wall = time.monotonic() - self._t0
        return 100.0 * sum(process_cpu_s(p) - c for p, c in zip(self.pids, self._cpu0)) / wall
