"""A step request's summary (ROS-free): what the physics steps of one request did, gathered while
they run and answered with the request (acres_sim.channels.control, "summary"), so that a learner
or a judge reads one answer per request instead of every step's events.

It listens on the hub like a watch connection, from the step the request found: each step's
stamp and, per agent, the criteria's inputs (position, heading, forward speed, the crop its wheels
crushed), the steps' contacts as they were sent, and the last step's AgentStates.
"""

from __future__ import annotations

from typing import Any

from acres_sim.fake_game.simulation.farm_marks import CROP_CRUSHED
from acres_sim.rotations import orientation_yaw

TRACE_FIELDS = ("x", "y", "z", "yaw", "vx", "crushed_m2")


class StepSummary:
    """publish(event, body) as an EpisodeListener; start(step) before the first step it covers."""

    def __init__(self) -> None:
        self._after: int | None = None  # the world step the request started from (None: not yet)
        self._step: list[int] = []
        self._sec: list[int] = []
        self._nanosec: list[int] = []
        self._agents: dict[str, dict[str, list[float]]] = {}
        self._contacts: list[dict[str, Any]] = []
        self._crushed: dict[str, float] = {}
        self._last: dict[str, Any] | None = None

    def start(self, step: int) -> None:
        self._after = step

    def publish(self, event: str, body: dict[str, Any]) -> None:
        if self._after is None:
            return  # a message from before the request held the world
        if event == "states":
            self._states(body)
        elif event == "farm_events":
            for e in body.get("events", ()):
                if e.get("kind") == CROP_CRUSHED:
                    agent = e["agent"]
                    self._crushed[agent] = self._crushed.get(agent, 0.0) + float(e.get("value", 0.0))
        elif event == "contacts":
            self._contacts.append(body)

    def _states(self, body: dict[str, Any]) -> None:
        crushed, self._crushed = self._crushed, {}
        if body.get("step", -1) <= self._after:
            return  # the step the request found, said again
        stamp = body["header"]["stamp"]
        self._step.append(body["step"])
        self._sec.append(stamp["sec"])
        self._nanosec.append(stamp["nanosec"])
        for state in body["agents"]:
            name = state["name"]
            trace = self._agents.get(name)
            if trace is None:  # every step holds every agent: the first step makes the lists
                trace = self._agents[name] = {f: [] for f in TRACE_FIELDS}
            position = state["pose"]["position"]
            trace["x"].append(position["x"])
            trace["y"].append(position["y"])
            trace["z"].append(position["z"])
            trace["yaw"].append(orientation_yaw(state["pose"]["orientation"]))
            trace["vx"].append(state["twist"]["linear"]["x"])
            trace["crushed_m2"].append(crushed.get(name, 0.0))
        self._last = body

    def body(self) -> dict[str, Any]:
        """The answer's "summary" (the layout in acres_sim.channels.control)."""
        return {"step": self._step, "sec": self._sec, "nanosec": self._nanosec, "agents": self._agents,
                "contacts": self._contacts, "states": self._last}
