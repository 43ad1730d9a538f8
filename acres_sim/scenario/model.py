"""A scenario as the runner and the judge use it (ROS-free): what scenario_file.py reads a file into."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

DEFAULT_START_TIMEOUT_S = 30.0
DEFAULT_STACK_TIMEOUT_S = 10.0
DEFAULT_COMMAND_PERIOD_S = 0.1  # lockstep: the world steps this long between two commands of the stack


@dataclass(frozen=True)
class Pose2D:
    """base_footprint (an agent) or the middle of the footprint (an object) in the map frame; z is
    the ground's."""

    x: float
    y: float
    yaw_deg: float = 0.0

    @property
    def yaw(self) -> float:
        return math.radians(self.yaw_deg)

    def quaternion(self) -> tuple[float, float, float, float]:
        return (0.0, 0.0, math.sin(0.5 * self.yaw), math.cos(0.5 * self.yaw))


@dataclass(frozen=True)
class AgentEntry:
    name: str
    vehicle: str
    pose: Pose2D
    waypoints: tuple[tuple[float, float], ...] = ()  # scripted: driven along them by the runner
    speed_mps: float = 0.0  # the scripted speed
    task: str = ""  # free text: what the agent is to do
    cmd_vel_stamped: bool = False  # its cmd_vel is TwistStamped (vehicle_bridge's cmd_vel_stamped)


@dataclass(frozen=True)
class ObjectEntry:
    name: str
    uri: str
    pose: Pose2D


@dataclass(frozen=True)
class Event:
    at_s: float
    kind: str  # EVENT_KINDS
    body: dict[str, Any]  # spawn: name, uri, pose; delete: name; move: name, pose; conditions; shifts


@dataclass(frozen=True)
class CriterionEntry:
    kind: str  # a name of criteria.CATALOGUE
    params: dict[str, Any]
    where: str  # FILE:LINE

    @property
    def agent(self) -> str:
        return str(self.params["agent"])

    @property
    def name(self) -> str:
        """What the report and the JUnit file call it: the kind, the agent and what sets it apart."""
        extra = [f"{k}={v}" for k, v in self.params.items() if k != "agent"]
        return f"{self.kind}({self.agent}{', ' if extra else ''}{', '.join(extra)})"


@dataclass
class Scenario:
    path: str
    name: str
    seed: int
    duration_s: float
    pace: str
    agents: list[AgentEntry]
    objects: list[ObjectEntry] = field(default_factory=list)
    conditions: dict[str, float] = field(default_factory=dict)
    shifts: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    criteria: list[CriterionEntry] = field(default_factory=list)
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    stack_timeout_s: float = DEFAULT_STACK_TIMEOUT_S
    command_period_s: float = DEFAULT_COMMAND_PERIOD_S

    def agent(self, name: str) -> AgentEntry:
        return next(a for a in self.agents if a.name == name)

    @property
    def judged_agents(self) -> list[str]:
        """The agents a criterion names, in the session's order."""
        named = {c.agent for c in self.criteria}
        return [a.name for a in self.agents if a.name in named]
