"""Every step's AgentStates (ROS-free): each agent's state assembled from its simulator (or, while
a replay drives it, as logged), its energy ledger, and what its wheels did to the farm; handed to
the hub after every step and refreshed after a reset."""

from __future__ import annotations

import math
from typing import Any

from acres_sim.fake_game.simulation.agent_states import (
    CONTROL_DRIVEN,
    CONTROL_PLACED,
    CONTROL_ROUTE,
    EnergyLedger,
    agent_state,
    knot_of,
    wheel_ground,
)
from acres_sim.episode.log_file import FARM_STAMPS
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub, agent_states, header
from acres_sim.fake_game.simulation.farm_marks import FarmMarks
from acres_sim.fake_game.simulation.session_agent import SessionAgent
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepContext, StepOwner
from acres_sim.fake_game.world.motion import HeldMotion
from acres_sim.stream.timing import PHYSICS_HZ


class AgentStatePublisher(StepOwner):
    def __init__(self, hub: EpisodeHub, agents: list[SessionAgent]):
        self._hub = hub
        self._agents = agents
        self._ledgers = {a.name: EnergyLedger() for a in agents}
        self._farm = FarmMarks()
        self.refresh(0, 0.0)

    def refresh(self, step: int, t: float, replayed: dict[str, dict[str, Any]] | None = None) -> None:
        """The hub's latest states read again (after a reset or a replay's start): nothing counted."""
        self._hub.latest = agent_states(step, t, self._states(step, t, replayed or {}, count=False))

    def end_step(self, step: StepContext) -> None:
        self._farm.stamping = self._hub.wants(FARM_STAMPS.event)  # the wheels' footprints: for a taker
        states = self._states(step.step, step.t, step.replayed)
        self._hub.step(step.step, step.t, states, *self._farm.take(header(step.t)))

    def before_reset(self, reset: ResetContext) -> None:
        if reset.scope != "spawned":
            self._farm.forget()

    def after_reset(self, reset: ResetContext) -> None:
        if reset.scope == "all":
            self._ledgers = {a.name: EnergyLedger() for a in self._agents}
        self.refresh(reset.step, reset.t)

    def _states(self, step: int, t: float, replayed: dict[str, dict[str, Any]],
                count: bool = True) -> list[dict[str, Any]]:
        """Every agent's AgentState after this step: a replayed one as logged; count: add the
        step's energy to the ledgers and its wheels to the farm (not for a state read again)."""
        states = []
        for agent in self._agents:
            name = agent.name
            simulator = agent.simulator
            params = agent.params
            logged = replayed.get(name)
            if logged is not None:
                states.append(logged)
                if count:
                    self._farm.observe(simulator.scene, name, agent.spec.vehicle, params, knot_of(logged, t),
                                       logged["steer_rad"], simulator.conditions.wetness,
                                       logged["surface_class"], logged["field_id"])
                continue
            kin = simulator.kinematics(t)
            knot = simulator.track_knot(t, kin)
            surfaces, fields = wheel_ground(simulator.scene, params, knot)
            driving = agent.driving
            model = driving.model if driving is not None and driving.driven else None
            if model is not None:
                control, steer = CONTROL_DRIVEN, model.state.steer_rad
            else:
                control = CONTROL_PLACED if isinstance(simulator.motion, HeldMotion) else CONTROL_ROUTE
                speed = knot.speed
                steer = math.atan(params.wheelbase_m * knot.yaw_rate / speed) if abs(speed) > 0.1 else 0.0
            ledger = self._ledgers[name]
            if count and step > 0:
                ledger.add(params, knot.speed, knot.yaw_rate, simulator.grade(knot.x, knot.y, knot.yaw),
                           surfaces, 1.0 / PHYSICS_HZ, model)
            state = agent_state(name, kin, knot, steer, surfaces, fields, ledger, control)
            states.append(state)
            if count:
                self._farm.observe(simulator.scene, name, agent.spec.vehicle, params, knot,
                                   state["steer_rad"], simulator.conditions.wetness, surfaces, fields)
        return states
