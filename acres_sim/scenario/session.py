"""The processes of one scenario run (ROS-free: it starts the nodes, it does not import ROS): the
fake game (ports chosen by the system and read from its output, holding the stepping token), a
sim_bridge and a vehicle_bridge per agent and sim_control as the launch file plans them (in lockstep
the sim_bridges do not publish /clock: the runner says the ticks; an agent's `cmd_vel_stamped` goes
to its vehicle_bridge), and the user's stack. Each child's output goes to a file of the run's
directory; every child is in a process group of its own and is stopped with SIGINT, then SIGKILL;
dead() says which one ended.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

from acres_sim.nodes.launch_plan import plan_launch
from acres_sim.scenario.model import Scenario
from acres_sim.scenario.processes import Child, SessionFailed, start_fake_game, stop_together

__all__ = ["Child", "RunSession", "SessionFailed", "session_key"]


def session_key(scenario: Scenario, game_args: list[str]) -> tuple:
    """What the processes of a scenario's session depend on: two runs with the same key can share
    one session (a warm runner's), the world reset between them. The seed, objects, conditions,
    shifts and start poses are not in it: a reset and the world's setup make them the run's."""
    return (tuple((a.name, a.vehicle, a.cmd_vel_stamped) for a in scenario.agents), scenario.pace,
            tuple(game_args))


class RunSession:
    """Everything a run starts, in order; stop() ends it: the stack, the nodes, the game."""

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
        # held until the runner steps it or plays it (real time); the stepping token makes it the runner's
        game = start_fake_game(agents, [a.vehicle for a in s.agents], s.seed, self.run_dir, self.env,
                               ["--stepping-token", self.token, *self.game_args], timeout_s)
        self.game = game.child
        self.children.append(game.child)
        ports, vehicle_ports = game.ports.ports, game.ports.vehicle_ports
        self.control_port = game.ports.control_port
        # The launch file's plan for the same session (its fake game is the one started above).
        plan = plan_launch(agents=",".join(agents), ports=",".join(map(str, ports)),
                           control_port=self.control_port, vehicle_ports=",".join(map(str, vehicle_ports)),
                           vehicles=",".join(a.vehicle for a in s.agents), lockstep=lockstep, fake_game=True)
        for bridge in plan.bridges:
            parameters = dict(bridge.parameters(plan.host))
            if lockstep:  # the runner says the ticks' time on /clock (acres_sim/scenario/pacing.py)
                parameters["publish_clock"] = False
            self._start(f"sim_bridge_{bridge.agent}", _node("sim_bridge", bridge.namespace, parameters))
        stamped = {a.name for a in s.agents if a.cmd_vel_stamped}
        for vehicle in plan.vehicle_bridges:
            parameters = dict(vehicle.parameters())
            if vehicle.agent in stamped:
                parameters["cmd_vel_stamped"] = True
            self._start(f"vehicle_bridge_{vehicle.agent}",
                        _node("vehicle_bridge", vehicle.namespace, parameters))
        assert plan.sim_control is not None
        self._start("sim_control", _node("sim_control", "", plan.sim_control.parameters()))

    def start_stack(self, command: str, log_dir: Path | None = None) -> None:
        """The user's stack, a shell command line, in the run's environment (its ROS domain), its
        output in log_dir (default: the session's). A simple command replaces the shell (exec), so
        that it is the process that ends with the runner."""
        simple = not any(mark in command for mark in (";", "&", "|", "\n", "(", "`", "$("))
        self.stack = Child("stack", [f"exec {command}" if simple else command], self.env,
                           log_dir or self.run_dir, shell=True)

    def stop_stack(self) -> None:
        if self.stack is not None:
            self.stack.stop()
            self.stack = None

    def dead(self) -> str:
        """'' while every process runs, else which ended (the stack's end is not a session's death)."""
        for child in self.children:
            if not child.alive:
                log = self.run_dir / f"{child.name}.log"
                return f"{child.name} ended (exit {child.proc.returncode}; its output: {log})"
        return ""

    def stop(self) -> None:
        """The stack first, then the bridges and sim_control side by side, the game last (while
        they end, it is still there to answer them)."""
        self.stop_stack()
        stop_together([c for c in reversed(self.children) if c is not self.game])
        if self.game is not None:
            self.game.stop()

    def _start(self, name: str, args: list[str], shell: bool = False) -> Child:
        child = Child(name, args, self.env, self.run_dir, shell)
        self.children.append(child)
        return child


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
