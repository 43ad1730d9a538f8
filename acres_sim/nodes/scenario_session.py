"""The processes of one scenario run (ROS-free): the fake game (its command line, ports chosen by the
system and read from its output, holding the stepping token), a sim_bridge and a vehicle_bridge per
agent and sim_control (their parameters from the launch file's plan), and the user's stack. Each
child's output goes to a file of the run's directory; every child is in a process group of its own
and is stopped with SIGINT, then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from acres_sim.nodes.launch_plan import plan_launch
from acres_sim.scenario.model import Scenario

STOP_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1  # prctl(2)


class SessionFailed(RuntimeError):
    """The session could not start, or one of its processes died: the message says which and why."""


class Child:
    """A child process with its output in a file (and its lines kept for waiting on them)."""

    def __init__(self, name: str, args: list[str], env: Mapping[str, str], log_dir: Path,
                 shell: bool = False):
        self.name = name
        self.lines: list[str] = []
        self._new = threading.Condition()
        self._log = open(log_dir / f"{name}.log", "w", encoding="utf-8")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(args if not shell else args[0], env=dict(env), shell=shell,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                     start_new_session=True, preexec_fn=_end_with_the_runner)
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

    def wait_line(self, pattern: str, timeout_s: float) -> re.Match:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
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
                                        f"ready: {' / '.join(self.lines[-5:])}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SessionFailed(f"{self.name} was not ready within {timeout_s:g} s")
                self._new.wait(min(left, 0.2))

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5.0)
            except ProcessLookupError:
                pass
        self._reader.join(2.0)
        self._log.close()
        return self.proc.returncode


class RunSession:
    """Everything a run starts, in order; stop() ends it in reverse."""

    def __init__(self, scenario: Scenario, run_dir: Path, env: Mapping[str, str], game_args: list[str]):
        self.scenario = scenario
        self.run_dir = run_dir
        self.env = dict(env)
        self.game_args = list(game_args)
        self.token = secrets.token_hex(8)
        self.children: list[Child] = []
        self.game: Child | None = None
        self.stack: Child | None = None
        self.control_port = 0

    def start(self, timeout_s: float = 120.0) -> None:
        s = self.scenario
        agents = [a.name for a in s.agents]
        lockstep = s.pace == "lockstep"
        game = [sys.executable, "-m", "acres_sim.fake_game", "--control-port", "0",
                "--ports", ",".join("0" for _ in agents), "--vehicle-ports", ",".join("0" for _ in agents),
                "--vehicles", ",".join(a.vehicle for a in s.agents), "--agents", ",".join(agents),
                "--seed", str(s.seed), "--stepping-token", self.token,
                "--lockstep", *self.game_args]  # held until the runner steps it or plays it (real time)
        self.game = self._start("fake_game", game)
        ports = [int(self.game.wait_line(rf"^ACRES_SENSOR_STREAM_LISTENING agent={a} port=(\d+)$",
                                         timeout_s).group(1)) for a in agents]
        vehicle_ports = [int(self.game.wait_line(rf"^ACRES_VEHICLE_BRIDGE_LISTENING agent={a} port=(\d+)$",
                                                 timeout_s).group(1)) for a in agents]
        self.control_port = int(self.game.wait_line(r"^ACRES_SIM_CONTROL_LISTENING port=(\d+)$",
                                                    timeout_s).group(1))
        # The launch file's plan for the same session (its fake game is the one started above).
        plan = plan_launch(agents=",".join(agents), ports=",".join(map(str, ports)),
                           control_port=self.control_port, vehicle_ports=",".join(map(str, vehicle_ports)),
                           vehicles=",".join(a.vehicle for a in s.agents), lockstep=lockstep, fake_game=True)
        for bridge in plan.bridges:
            self._start(f"sim_bridge_{bridge.agent}", _node("sim_bridge", bridge.namespace,
                                                            bridge.parameters(plan.host)))
        for vehicle in plan.vehicle_bridges:
            self._start(f"vehicle_bridge_{vehicle.agent}", _node("vehicle_bridge", vehicle.namespace,
                                                                 vehicle.parameters()))
        assert plan.sim_control is not None
        self._start("sim_control", _node("sim_control", "", plan.sim_control.parameters()))

    def start_stack(self, command: str) -> None:
        """The user's stack, a shell command line, in the run's environment (its ROS domain). A simple
        command replaces the shell (exec), so that it is the process that ends with the runner."""
        simple = not any(mark in command for mark in (";", "&", "|", "\n", "(", "`", "$("))
        self.stack = self._start("stack", [f"exec {command}" if simple else command], shell=True)

    def dead(self) -> str:
        """'' while every process runs, else which ended (the stack's end is not a session's death)."""
        for child in self.children:
            if child is not self.stack and not child.alive:
                log = self.run_dir / f"{child.name}.log"
                return f"{child.name} ended (exit {child.proc.returncode}; its output: {log})"
        return ""

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop()
        for child in reversed(self.children):
            if child is not self.stack:
                child.stop()

    def _start(self, name: str, args: list[str], shell: bool = False) -> Child:
        child = Child(name, args, self.env, self.run_dir, shell)
        self.children.append(child)
        return child


def _end_with_the_runner() -> None:
    """(in the child, before exec) SIGTERM when the runner's thread that started it dies: a runner
    killed with SIGKILL leaves no session behind (Linux; elsewhere nothing)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _node(executable: str, namespace: str, parameters: Mapping[str, object]) -> list[str]:
    args = [sys.executable, "-m", f"acres_sim.nodes.{executable}", "--ros-args"]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    for key, value in parameters.items():
        if value == "":
            continue  # the node's default
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (list, tuple)):
            text = "[" + ", ".join(f"'{v}'" if isinstance(v, str) else str(v) for v in value) + "]"
        else:
            text = str(value)
        args += ["-p", f"{key}:={text}"]
    return args
