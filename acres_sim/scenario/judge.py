"""A scenario's run judged from the game's episode events (ROS-free): every step's agent states,
contacts and farm events, the objects and the agents' bodies as they stand, handed to the criteria;
each judged agent's task status (acres_interfaces/TaskStatus as a dict) when it changes; the report
at the end (report.py writes it).

Events arrive in the game's order (episode_feed.py): a step's contacts and farm events before its
states, so a step is judged when its states arrive. A step request's summary (on_summary) judges
its steps at once: the same criteria, step by step, from the summary's poses and speeds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from acres_sim.bodies import Solid, object_body, vehicle_body
from acres_sim.fake_game.world.farm_objects import kind_of
from acres_sim.rotations import orientation_yaw
from acres_sim.scenario.criteria import CROP_CRUSHED, Criterion, StepTrace, StepView, contacts_of, make
from acres_sim.scenario.model import Scenario

# acres_interfaces/TaskStatus states
RUNNING, SUCCEEDED, FAILED, ABORTED = 0, 1, 2, 3


class Judge:
    """on_task(status) gets each judged agent's TaskStatus dict when its state changes (and at the end)."""

    def __init__(self, scenario: Scenario, start_s: float, on_task: Callable[[dict[str, Any]], None]):
        self.scenario = scenario
        self.start_s = start_s  # the world time the scenario's clock starts at (inf: not yet)
        self._on_task = on_task
        self.criteria: list[Criterion] = [make(c.kind, c.name, c.params, scenario.duration_s)
                                          for c in scenario.criteria]
        self._bodies_of_agents: dict[str, dict[str, float]] = {}  # AgentInfo by name
        self._objects: dict[str, Solid] = {}
        self._contacts: list[dict[str, Any]] = []
        self._crushed: dict[str, float] = {}
        self._told: dict[str, tuple[int, str]] = {}
        self.t = 0.0  # the scenario's time of the last step judged
        self.steps = 0
        self._last_step = -1  # the world step of the last states judged
        # each agent's contacts (each once, as no_collision counts them) and crop crushed (m2) in
        # the steps judged since the last take_tally(): a learner's reward reads what the verdicts do
        self._tally: dict[str, tuple[int, float]] = {}

    # -- the feed ------------------------------------------------------------------------------

    def on_event(self, event: str, body: dict[str, Any]) -> None:
        if event == "agents":
            self._bodies_of_agents = {a["name"]: a for a in body.get("agents", [])}
        elif event == "objects":
            self._objects = {o["name"]: _object_solid(o) for o in body.get("objects", [])}
        elif event == "contacts":
            self._contacts += body.get("contacts", [])
        elif event == "farm_events":
            for e in body.get("events", []):
                if e.get("kind") == CROP_CRUSHED:
                    self._crushed[e["agent"]] = self._crushed.get(
                        e["agent"], 0.0) + float(e.get("value", 0.0))
        elif event == "states":
            self._step(body)

    def _step(self, message: dict[str, Any]) -> None:
        step = message.get("step")
        if isinstance(step, int):
            if step <= self._last_step:  # states repeated for a late subscriber: judged once
                return
            self._last_step = step
        stamp = message["header"]["stamp"]
        t = self._scenario_time(stamp["sec"], stamp["nanosec"])
        contacts, crushed = self._contacts, self._crushed
        self._contacts, self._crushed = [], {}
        if t <= 0.0:  # before the scenario's first step (the start's own states)
            return
        states = {a["name"]: a for a in message.get("agents", [])}
        bodies = dict(self._objects)
        for name, state in states.items():
            info = self._bodies_of_agents.get(name)
            if info is not None and "length_m" in info:
                bodies[name] = _agent_solid(state, info)
        view = StepView(t, states, contacts, crushed, bodies)
        for name in states:
            self._count(name, len(contacts_of(name, contacts)), crushed.get(name, 0.0))
        self.t = t
        self.steps += 1
        for criterion in self.criteria:
            if criterion.agent in states:
                criterion.update(view)
        self._tell(t)

    def on_summary(self, summary: dict[str, Any]) -> None:
        """A step request's summary (acres_sim.channels.control): its steps judged in order, each
        once, from the scenario's start on (as their states would have been on the feed)."""
        steps, secs, nanos = summary["step"], summary["sec"], summary["nanosec"]
        kept: list[int] = []
        times: list[float] = []
        for i, step in enumerate(steps):
            if step <= self._last_step:
                continue
            self._last_step = step
            t = self._scenario_time(secs[i], nanos[i])
            if t > 0.0:
                kept.append(i)
                times.append(t)
        if not kept:
            return
        agents = {name: {k: [v[i] for i in kept] for k, v in trace.items()}
                  for name, trace in summary["agents"].items()}
        index = {steps[i]: j for j, i in enumerate(kept)}
        contacts: dict[int, list[dict[str, Any]]] = {}
        for message in summary.get("contacts", ()):
            j = index.get(message.get("step"))
            if j is not None:
                contacts.setdefault(j, []).extend(message.get("contacts", []))

        def body(name: str, j: int) -> Solid | None:
            mine = agents.get(name)
            if mine is None:
                return self._objects.get(name)
            info = self._bodies_of_agents.get(name)
            if info is None or "length_m" not in info:
                return None
            return _vehicle_solid(name, mine["x"][j], mine["y"][j], mine["z"][j], mine["yaw"][j], info)

        trace = StepTrace(times, agents, contacts, body)
        for name, mine in agents.items():
            hits = sum(len(contacts_of(name, c)) for c in contacts.values())
            self._count(name, hits, sum(mine["crushed_m2"], 0.0))
        self.t = times[-1]
        self.steps += len(times)
        for criterion in self.criteria:
            if criterion.agent in agents:
                criterion.update_trace(trace)
        self._tell(self.t)

    def _scenario_time(self, sec: int, nanosec: int) -> float:
        """The scenario's time of a stamp (a step's; <= 0 before the scenario's first step)."""
        return sec + nanosec * 1e-9 - self.start_s

    def _count(self, agent: str, contacts: int, crushed_m2: float) -> None:
        before = self._tally.get(agent, (0, 0.0))
        self._tally[agent] = (before[0] + contacts, before[1] + crushed_m2)

    def take_tally(self) -> dict[str, tuple[int, float]]:
        """Each agent's (contacts, crop crushed m2) in the steps judged since the last call."""
        tally, self._tally = self._tally, {}
        return tally

    # -- the end and the tasks -----------------------------------------------------------------

    def no_command(self, agents: list[str], why: dict[str, str] | None = None) -> None:
        """These agents were never under command by start_timeout_s: their criteria fail ("no
        command", with what was refused instead where `why` says)."""
        for criterion in self.criteria:
            if criterion.agent in agents:
                refused = (why or {}).get(criterion.agent)
                detail = f"no command (refused: {refused})" if refused else "no command"
                criterion.decide(False, self.t, detail)
        self._tell(self.t)

    def finish(self) -> None:
        for criterion in self.criteria:
            criterion.finish(self.t)
        self._tell(self.t, final=True)

    def abort(self, reason: str) -> None:
        """The run ended without a verdict for the criteria still open (error, interrupt)."""
        for agent in self.scenario.judged_agents:
            self._publish(agent, ABORTED, self._progress(agent), reason, self.t)

    @property
    def all_decided(self) -> bool:
        return all(c.decided for c in self.criteria)

    @property
    def passed(self) -> bool:
        return all(c.verdict.passed for c in self.criteria)

    def task_status(self, agent: str, reward: float = 0.0, cumulative_reward: float = 0.0) -> dict[str, Any]:
        """The agent's TaskStatus now (its fields as a dict), with a learner's reward where it has one."""
        state, detail = self._state(agent)
        return self._status(agent, state, self._progress(agent), detail, self.t, reward, cumulative_reward)

    def _state(self, agent: str) -> tuple[int, str]:
        mine = [c for c in self.criteria if c.agent == agent]
        failed = [c for c in mine if c.verdict.passed is False]
        if failed:
            return FAILED, "; ".join(f"{c.name}: {c.verdict.detail}" for c in failed)
        if mine and all(c.verdict.passed for c in mine):
            return SUCCEEDED, ""
        return RUNNING, ""

    def _progress(self, agent: str) -> float:
        mine = [c.progress(self.t) for c in self.criteria if c.agent == agent]
        return sum(mine) / len(mine) if mine else 0.0

    def _tell(self, t: float, final: bool = False) -> None:
        for agent in self.scenario.judged_agents:
            state, detail = self._state(agent)
            if final or self._told.get(agent) != (state, detail):
                self._told[agent] = (state, detail)
                self._publish(agent, state, self._progress(agent), detail, t)

    def _publish(self, agent: str, state: int, progress: float, detail: str, t: float) -> None:
        self._on_task(self._status(agent, state, progress, detail, t))

    def _status(self, agent: str, state: int, progress: float, detail: str, t: float, reward: float = 0.0,
                cumulative_reward: float = 0.0) -> dict[str, Any]:
        # the game stamps it again with the world time it is at; this one is for other readers
        stamp_ns = round(((self.start_s if math.isfinite(self.start_s) else 0.0) + t) * 1e9)
        return {"header": {"stamp": {"sec": stamp_ns // 10**9, "nanosec": stamp_ns % 10**9}, "frame_id": ""},
                "agent": agent, "task": self.scenario.name, "state": state,
                "progress": float(max(0.0, min(1.0, progress))), "reward": float(reward),
                "cumulative_reward": float(cumulative_reward), "detail": detail}


def _agent_solid(state: dict[str, Any], info: dict[str, Any]) -> Solid:
    p = state["pose"]["position"]
    yaw = orientation_yaw(state["pose"]["orientation"])
    return _vehicle_solid(state["name"], p["x"], p["y"], p["z"], yaw, info)


def _vehicle_solid(name: str, x: float, y: float, z: float, yaw: float, info: dict[str, Any]) -> Solid:
    return vehicle_body(name, x, y, yaw, z, info["length_m"], info["width_m"], info["height_m"],
                        info["rear_overhang_m"])


def _object_solid(o: dict[str, Any]) -> Solid:
    p, size = o["pose"]["position"], o["size_m"]
    kind = kind_of(o["uri"])
    shape = "box" if kind is not None and kind.shape == "box" else "cylinder"
    return object_body(o["name"], shape, (size["x"], size["y"], size["z"]), p["x"], p["y"], p["z"],
                       orientation_yaw(o["pose"]["orientation"]))
