"""What the episode is (ROS-free): its id, minted at the start and at every reset ALL, and its agents
with their vehicles' dimensions (acres_interfaces Episode and Agents, transient local)."""

from __future__ import annotations

import os
import time
from typing import Any

from acres_sim.episode.log_file import AGENTS, EPISODE
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub, header
from acres_sim.fake_game.simulation.session_agent import SessionAgent
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepOwner
from acres_sim.stream.timing import PHYSICS_HZ


def agent_info(agent: SessionAgent) -> dict[str, Any]:
    """acres_interfaces/AgentInfo of one agent."""
    params = agent.params
    origin = agent.hello.body_origin_flu_m
    return {"name": agent.name, "vehicle": agent.spec.vehicle,
            "body_origin_flu_m": {"x": float(origin[0]), "y": float(origin[1]), "z": float(origin[2])},
            "wheelbase_m": params.wheelbase_m, "track_m": params.track_m,
            "wheel_radius_m": params.wheel_radius_m, "mass_kg": params.mass_kg,
            "length_m": params.length_m, "width_m": params.width_m, "height_m": params.height_m,
            "rear_overhang_m": params.rear_overhang_m}


class EpisodeInfo(StepOwner):
    def __init__(self, hub: EpisodeHub, agents: list[SessionAgent], source: str, world: str, seed: int):
        self._hub = hub
        self.source, self.world, self.seed = source, world, int(seed)
        self._count = 0
        hub.set_latched(AGENTS, {"header": header(0.0), "agents": [agent_info(a) for a in agents]})
        self.new_episode(0.0)

    @property
    def episode_id(self) -> str:
        return str(self._hub.episode.get("episode_id", ""))

    def new_episode(self, t: float, replay_of: str = "") -> None:
        self._count += 1
        self._hub.set_latched(EPISODE, {
            "header": header(t),
            "episode_id": f"{self.source}-{self.seed}-{os.getpid()}-{int(time.time())}-{self._count}",
            "source": self.source, "world": self.world, "seed": self.seed,
            "physics_step_s": 1.0 / PHYSICS_HZ, "replay_of": replay_of,
        })

    def after_reset(self, reset: ResetContext) -> None:
        if reset.scope == "all":
            if reset.seed is not None:
                self.seed = reset.seed
            self.new_episode(reset.t, reset.replay_of)
