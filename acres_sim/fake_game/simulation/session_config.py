"""What one fake-game run serves (ROS-free): the agents with their vehicles and ports, and the
options of the run; checked when made."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


FLAVORS = ("game", "core")
SENSORS = ("lidar", "camera", "ins")  # what a vehicle may carry; its Hello turns the others off
DEFAULT_MAX_QUEUED_BYTES = 96 << 20  # the game's MaxQueuedBytes


@dataclass(frozen=True)
class AgentSpec:
    agent: str
    vehicle: str
    port: int
    vehicle_port: int | None = None  # its Vehicle Bridge (0 = a free port); None: it drives its route


@dataclass(frozen=True)
class SessionConfig:
    agents: tuple[AgentSpec, ...]
    seed: int = 42
    realtime_factor: float = 1.0  # 0 = as fast as possible
    lockstep: bool = False
    flavor: str = "game"
    georeferenced: bool = True
    noise: bool = True
    cached: bool = False
    flat_ground: bool = False  # the plane z = 0 instead of the rolling ground: less CPU
    max_queued_bytes: int = DEFAULT_MAX_QUEUED_BYTES
    stats_period_s: float = 30.0
    duration_s: float = 0.0  # world time at which the run ends; 0 = never
    render_workers: int = 0  # 0: one per agent in real time, else two; at most one per core
    episode_log: str = ""  # record the episode log into this new file from the first step ("" = no)
    episode_replay: str = ""  # replay this episode log from the start ("" = no)
    stepping_token: str = ""  # set: only requests carrying it step, reset, pause or play (a scenario run)
    sensors: tuple[str, ...] = SENSORS  # the ones the vehicles carry (a learner's: what it observes)

    def __post_init__(self) -> None:
        if not self.agents:
            raise ValueError("at least one agent is needed")
        names = [a.agent for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError(f"agent names must be unique, got {names}")
        ports = [p for a in self.agents for p in (a.port, a.vehicle_port) if p]
        if len(set(ports)) != len(ports):
            raise ValueError(f"stream and vehicle ports must all differ, got {ports}")
        for a in self.agents:
            if not 0 <= a.port <= 65535:
                raise ValueError(f"port of agent {a.agent} must be 1-65535, got {a.port}")
            if a.vehicle_port is not None and not 0 <= a.vehicle_port <= 65535:
                raise ValueError(f"vehicle port of agent {a.agent} must be 1-65535, got {a.vehicle_port}")
            if not a.agent or any(c.isspace() for c in a.agent):
                raise ValueError(f"agent name {a.agent!r} must be non-empty without spaces")
        if self.flavor not in FLAVORS:
            raise ValueError(f"flavor must be one of {FLAVORS}, got {self.flavor!r}")
        if not (self.realtime_factor >= 0 and math.isfinite(self.realtime_factor)):
            raise ValueError(f"realtime_factor must be >= 0, got {self.realtime_factor}")
        if self.max_queued_bytes <= 0:
            raise ValueError(f"max_queued_bytes must be positive, got {self.max_queued_bytes}")
        if not self.stats_period_s > 0:
            raise ValueError(f"stats_period_s must be positive, got {self.stats_period_s}")
        if not self.duration_s >= 0:
            raise ValueError(f"duration_s must be >= 0, got {self.duration_s}")
        if self.render_workers < 0:
            raise ValueError(f"render_workers must be >= 0, got {self.render_workers}")
        check_sensors(self.sensors)


def check_sensors(sensors: Sequence[str]) -> None:
    unknown = [s for s in sensors if s not in SENSORS]
    if unknown or isinstance(sensors, str):
        raise ValueError(f"sensors must be some of {', '.join(SENSORS)}, got {list(sensors)!r}")


VEHICLE_NAMES = ("polaris", "maxxum")  # as vehicles.VEHICLES; kept here so --help is cheap


def agent_specs(ports: Sequence[int], vehicles: Sequence[str], agents: Sequence[str] | None = None,
                vehicle_ports: Sequence[int] | None = None) -> tuple[AgentSpec, ...]:
    """One AgentSpec per port; agent names default to the vehicle names; vehicle_ports (one per
    port, or none at all) open each agent's Vehicle Bridge."""
    if len(vehicles) != len(ports):
        raise ValueError(f"{len(ports)} port(s) but {len(vehicles)} vehicle(s): give one vehicle per port")
    for vehicle in vehicles:
        if vehicle not in VEHICLE_NAMES:
            raise ValueError(f"unknown vehicle {vehicle!r}: expected one of {', '.join(VEHICLE_NAMES)}")
    names = list(agents) if agents else list(vehicles)
    if len(names) != len(ports):
        raise ValueError(f"{len(ports)} port(s) but {len(names)} agent name(s)")
    if len(set(names)) != len(names):
        raise ValueError(f"agent names must be unique, got {names} (give --agents)")
    if vehicle_ports and len(vehicle_ports) != len(ports):
        raise ValueError(f"{len(ports)} port(s) but {len(vehicle_ports)} vehicle port(s): give one per agent")
    drive = list(vehicle_ports) if vehicle_ports else [None] * len(ports)
    return tuple(AgentSpec(a, v, p, d) for a, v, p, d in zip(names, vehicles, ports, drive))
