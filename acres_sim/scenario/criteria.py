"""The criteria a scenario is judged by (ROS-free): each one watches every physics step (the agents'
states, the step's contacts and farm events, every body as it stands) and is decided, passed or
failed, with its measured value, its limit and the world time it was decided at. A step request's
summary hands them several steps at once (StepTrace: each step's poses, speeds and crop, without the
rest of the states): the same values, step by step, the same verdicts at the same times.

- no_collision {agent, with: [names] (default: anything)}: value the contacts (limit 0); failed at
  the first contact, else passed at the end.
- reach {agent, x, y, radius_m (2), within_s (the duration)}: value the world time it was within
  radius_m of (x, y) (limit within_s); passed then, else failed at within_s.
- stop_before {agent, entity, min_distance_m}: value the box-to-box gap while at rest (limit
  min_distance_m); failed at a contact with the entity, else decided at the end: passed when the
  agent is at rest and the gap is at least the limit.
- min_clearance_m {agent, entity, limit}: value the least box-to-box gap; failed when it falls below.
- max_crop_crushed_m2 {agent, limit}: value the crop its wheels crushed (m2); failed past the limit.
- max_speed_mps {agent, limit}: value the highest speed (m/s); failed past the limit.

An agent never under command by the scenario's start_timeout_s fails every criterion that names it
("no command").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from acres_sim.bodies import Solid, clearance

REST_MPS = 0.05  # below this an agent is at rest
CLOSING_MPS = 1e-3  # a gap closing slower than this is not closing (min_ttc_s)
CROP_CRUSHED = 0  # acres_interfaces/FarmEvent.CROP_CRUSHED


@dataclass
class StepView:
    """What the criteria see of one physics step."""

    t: float  # world time since the scenario started
    states: dict[str, dict[str, Any]]  # agent -> its AgentState (dict of fields)
    contacts: list[dict[str, Any]]  # the step's Contact dicts
    crushed_m2: dict[str, float]  # agent -> crop crushed in the step
    bodies: dict[str, Solid]  # every entity's body as it stands

    def speed(self, agent: str) -> float:
        return abs(float(self.states[agent]["twist"]["linear"]["x"]))

    def position(self, agent: str) -> tuple[float, float]:
        p = self.states[agent]["pose"]["position"]
        return float(p["x"]), float(p["y"])


@dataclass
class StepTrace:
    """What the criteria see of several physics steps at once (a step request's summary)."""

    t: list[float]  # each step's time since the scenario started
    agents: dict[str, dict[str, list[float]]]  # agent -> x, y, z, yaw, vx, crushed_m2: one per step
    contacts: dict[int, list[dict[str, Any]]]  # index of a step -> its Contact dicts
    body: Callable[[str, int], Solid | None]  # an entity's body at a step (None: not in the world)

    def speed(self, agent: str, i: int) -> float:
        return abs(float(self.agents[agent]["vx"][i]))


@dataclass
class Verdict:
    passed: bool | None = None  # None: not decided yet
    value: float | None = None
    limit: float | None = None
    decided_at_s: float | None = None
    detail: str = ""


@dataclass
class Criterion:
    """One criterion of a scenario: `update` at every step, `finish` at the end."""

    name: str
    agent: str
    params: dict[str, Any]
    verdict: Verdict = field(default_factory=Verdict)
    duration_s: float = 0.0
    unit: ClassVar[str] = ""  # of its value and limit, as the report, runs.csv and the summary say it
    # +1: the value must stay at or above the limit (a gap), -1: at or below it (a speed, a time)
    sense: ClassVar[int] = -1

    def __post_init__(self) -> None:
        pass  # each kind sets its limit and its running measure here

    @property
    def decided(self) -> bool:
        return self.verdict.passed is not None

    @property
    def margin(self) -> float | None:
        """How far the value is from failing, in its unit: the clearance left, the time to spare,
        the speed below the limit (negative: beyond it); None while there is no value."""
        value, limit = self.verdict.value, self.verdict.limit
        if value is None or limit is None:
            return None
        return self.sense * (float(value) - float(limit)) + 0.0  # + 0.0: no -0.0 for "at the limit"

    def decide(self, passed: bool, t: float, detail: str) -> None:
        if not self.decided:
            self.verdict.passed, self.verdict.decided_at_s, self.verdict.detail = passed, t, detail

    def update(self, view: StepView) -> None:
        raise NotImplementedError

    def update_trace(self, trace: StepTrace) -> None:
        """update() for each step of the trace, in order (each kind reads only what it needs)."""
        raise NotImplementedError

    def finish(self, t: float) -> None:
        """The run ended at world time t: every criterion still open is decided."""
        self.decide(True, t, "held to the end")

    def progress(self, t: float) -> float:
        """The task's own measure of how far it is, 0..1 (default: the run's time)."""
        return 1.0 if self.decided else min(1.0, t / self.duration_s) if self.duration_s > 0 else 0.0


class NoCollision(Criterion):
    unit = "contacts"

    def __post_init__(self) -> None:
        self.verdict.value, self.verdict.limit = 0.0, 0.0

    def update(self, view: StepView) -> None:
        self._contacts(view.t, view.contacts)

    def update_trace(self, trace: StepTrace) -> None:
        for i in sorted(trace.contacts):
            self._contacts(trace.t[i], trace.contacts[i])

    def _contacts(self, t: float, contacts: list[dict[str, Any]]) -> None:
        hits = contacts_of(self.agent, contacts, self.params.get("with"))
        if hits:
            self.verdict.value = float(self.verdict.value or 0.0) + len(hits)
            c = hits[0]
            other = c["other"] if c["agent"] == self.agent else c["agent"]
            p = c["position"]
            self.decide(False, t, f"hit {other} at ({p['x']:.2f}, {p['y']:.2f}) at "
                                  f"{c['relative_speed_mps']:.2f} m/s")


class Reach(Criterion):
    unit = "s"

    def __post_init__(self) -> None:
        self.radius = float(self.params.get("radius_m", 2.0))
        self.within_s = float(self.params.get("within_s", self.duration_s))
        self.verdict.limit = self.within_s
        self.closest = math.inf
        self.start: float | None = None

    def update(self, view: StepView) -> None:
        self._at(view.t, *view.position(self.agent))

    def update_trace(self, trace: StepTrace) -> None:
        mine = trace.agents[self.agent]
        for t, x, y in zip(trace.t, mine["x"], mine["y"]):
            self._at(t, float(x), float(y))

    def _at(self, t: float, x: float, y: float) -> None:
        distance = math.hypot(x - float(self.params["x"]), y - float(self.params["y"]))
        if self.start is None:
            self.start = distance
        self.closest = min(self.closest, distance)
        if self.decided:
            return
        if distance <= self.radius:
            self.verdict.value = t
            self.decide(True, t, f"within {self.radius:g} m at {t:.2f} s")
        elif t >= self.within_s:
            self.decide(False, t, f"not there by {self.within_s:g} s (closest {self.closest:.2f} m)")

    def finish(self, t: float) -> None:
        self.decide(False, t, f"not there by the end (closest {self.closest:.2f} m)")

    def progress(self, t: float) -> float:
        if self.decided or self.start is None:
            return 1.0 if self.decided else 0.0
        left = max(0.0, self.closest - self.radius)
        span = max(1e-9, self.start - self.radius)
        return max(0.0, min(1.0, 1.0 - left / span))


class StopBefore(Criterion):
    unit = "m"
    sense = 1

    def __post_init__(self) -> None:
        self.verdict.limit = float(self.params["min_distance_m"])
        self.gap: float | None = None
        self.at_rest = True

    def update(self, view: StepView) -> None:
        entity = self.params["entity"]
        self._contacts(view.t, view.contacts)
        self._at(view.speed(self.agent), view.bodies.get(self.agent), view.bodies.get(entity))

    def update_trace(self, trace: StepTrace) -> None:
        entity, last = self.params["entity"], len(trace.t) - 1
        for i, t in enumerate(trace.t):
            self._contacts(t, trace.contacts.get(i, ()))
            speed = trace.speed(self.agent, i)
            # the gap counts while at rest, and at the end: the steps in between need none
            if i == last or (speed < REST_MPS and not self.decided):
                self._at(speed, trace.body(self.agent, i), trace.body(entity, i))
            else:
                self.at_rest = speed < REST_MPS

    def _contacts(self, t: float, contacts: Any) -> None:
        entity = self.params["entity"]
        if any({c["agent"], c["other"]} == {self.agent, entity} for c in contacts):
            self.verdict.value = 0.0
            self.decide(False, t, f"ran into {entity}")

    def _at(self, speed: float, body: Solid | None, other: Solid | None) -> None:
        self.at_rest = speed < REST_MPS
        if body is not None and other is not None:
            self.gap = clearance(body, other)
            if self.at_rest and not self.decided:
                self.verdict.value = self.gap

    def finish(self, t: float) -> None:
        entity = self.params["entity"]
        if self.gap is None:
            self.decide(False, t, f"{entity} was not in the world")
        elif not self.at_rest:
            self.decide(False, t, f"still moving at the end, {self.gap:.2f} m from {entity}")
        else:
            limit = float(self.verdict.limit or 0.0)
            self.decide(self.gap >= limit, t, f"at rest {self.gap:.2f} m from {entity}")


class MinClearance(Criterion):
    unit = "m"
    sense = 1

    def __post_init__(self) -> None:
        self.verdict.limit = float(self.params["limit"])

    def update(self, view: StepView) -> None:
        self._at(view.t, view.bodies.get(self.agent), view.bodies.get(self.params["entity"]))

    def update_trace(self, trace: StepTrace) -> None:
        entity = self.params["entity"]
        for i, t in enumerate(trace.t):
            body, other = trace.body(self.agent, i), trace.body(entity, i)
            if body is not None and other is not None and self.verdict.value is not None:
                # a step whose gap cannot be below the least so far nor the limit changes nothing
                floor = math.hypot(body.x - other.x, body.y - other.y) - _reach(body) - _reach(other)
                if floor > max(self.verdict.value, float(self.verdict.limit or 0.0)) + 1e-9:
                    continue
            self._at(t, body, other)

    def _at(self, t: float, body: Solid | None, other: Solid | None) -> None:
        if body is None or other is None:
            return
        gap = clearance(body, other)
        self.verdict.value = gap if self.verdict.value is None else min(self.verdict.value, gap)
        if gap < float(self.verdict.limit or 0.0):
            self.decide(False, t, f"{gap:.3f} m from {self.params['entity']}")


class MinTimeToCollision(Criterion):
    """The least time to collision with an entity: the box-to-box gap over the speed at which it
    closes, step to step (a gap that holds or opens counts no time); failed when it falls below the
    limit. A contact while closing is a time of 0."""

    unit = "s"
    sense = 1

    def __post_init__(self) -> None:
        self.verdict.limit = float(self.params["limit"])
        self._last: tuple[float, float] | None = None  # the previous step's (t, gap)

    def update(self, view: StepView) -> None:
        self._at(view.t, view.bodies.get(self.agent), view.bodies.get(self.params["entity"]))

    def update_trace(self, trace: StepTrace) -> None:
        entity = self.params["entity"]
        for i, t in enumerate(trace.t):
            self._at(t, trace.body(self.agent, i), trace.body(entity, i))

    def _at(self, t: float, body: Solid | None, other: Solid | None) -> None:
        if body is None or other is None:
            self._last = None
            return
        gap = clearance(body, other)
        last, self._last = self._last, (t, gap)
        if last is None or t <= last[0]:
            return
        closing = (last[1] - gap) / (t - last[0])
        if closing <= CLOSING_MPS:
            return
        ttc = gap / closing
        if self.verdict.value is None or ttc < self.verdict.value:
            self.verdict.value = ttc
        if ttc < float(self.verdict.limit or 0.0):
            self.decide(False, t, f"{ttc:.2f} s from {self.params['entity']} ({gap:.2f} m, closing at "
                                  f"{closing:.2f} m/s)")


def contacts_of(agent: str, contacts: list[dict[str, Any]], named: Any = None) -> list[dict[str, Any]]:
    """The contacts an agent had among a step's (with those `named` only, where given), each once:
    its own, and another agent's that ran into it (it stood) unless it reported that one too."""
    mine = [c for c in contacts if c["agent"] == agent and (named is None or c["other"] in named)]
    theirs = [c for c in contacts
              if c["other"] == agent and (named is None or c["agent"] in named)
              and not any(h["other"] == c["agent"] for h in mine)]
    return mine + theirs


def _reach(body: Solid) -> float:
    """How far the body's footprint reaches from its middle."""
    return math.hypot(body.half_x, body.half_y) if body.is_box else body.radius


class MaxCropCrushed(Criterion):
    unit = "m2"

    def __post_init__(self) -> None:
        self.verdict.value, self.verdict.limit = 0.0, float(self.params["limit"])

    def update(self, view: StepView) -> None:
        self._at(view.t, view.crushed_m2.get(self.agent, 0.0))

    def update_trace(self, trace: StepTrace) -> None:
        for t, crushed in zip(trace.t, trace.agents[self.agent]["crushed_m2"]):
            self._at(t, float(crushed))

    def _at(self, t: float, crushed_m2: float) -> None:
        self.verdict.value = float(self.verdict.value or 0.0) + crushed_m2
        if self.verdict.value > float(self.verdict.limit or 0.0):
            self.decide(False, t, f"{self.verdict.value:.3f} m2 of crop crushed")


class MaxSpeed(Criterion):
    unit = "m/s"

    def __post_init__(self) -> None:
        self.verdict.value, self.verdict.limit = 0.0, float(self.params["limit"])

    def update(self, view: StepView) -> None:
        self._at(view.t, view.speed(self.agent))

    def update_trace(self, trace: StepTrace) -> None:
        for i, t in enumerate(trace.t):
            self._at(t, trace.speed(self.agent, i))

    def _at(self, t: float, speed: float) -> None:
        self.verdict.value = max(float(self.verdict.value or 0.0), speed)
        if speed > float(self.verdict.limit or 0.0):
            self.decide(False, t, f"{speed:.2f} m/s")


@dataclass(frozen=True)
class CriterionKind:
    """A catalogue entry: the parameters (name -> kind: agent, entity, entities, time, length, speed,
    area, coordinate) and which are required."""

    cls: type[Criterion]
    params: dict[str, str]
    required: tuple[str, ...]


CATALOGUE = {
    "no_collision": CriterionKind(NoCollision, {"agent": "agent", "with": "entities"}, ("agent",)),
    "reach": CriterionKind(Reach, {"agent": "agent", "x": "coordinate", "y": "coordinate",
                                   "radius_m": "length", "within_s": "time"}, ("agent", "x", "y")),
    "stop_before": CriterionKind(StopBefore, {"agent": "agent", "entity": "entity",
                                              "min_distance_m": "length"},
                                 ("agent", "entity", "min_distance_m")),
    "min_clearance_m": CriterionKind(MinClearance, {"agent": "agent", "entity": "entity",
                                                    "limit": "length"}, ("agent", "entity", "limit")),
    "max_crop_crushed_m2": CriterionKind(MaxCropCrushed, {"agent": "agent", "limit": "area"},
                                         ("agent", "limit")),
    "max_speed_mps": CriterionKind(MaxSpeed, {"agent": "agent", "limit": "speed"}, ("agent", "limit")),
    "min_ttc_s": CriterionKind(MinTimeToCollision, {"agent": "agent", "entity": "entity", "limit": "time"},
                               ("agent", "entity", "limit")),
}


def make(kind: str, name: str, params: dict[str, Any], duration_s: float) -> Criterion:
    return CATALOGUE[kind].cls(name=name, agent=str(params["agent"]), params=params, duration_s=duration_s)
