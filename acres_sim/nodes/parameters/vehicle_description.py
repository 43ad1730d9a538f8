"""vehicle_description's parameters (config/vehicle_description.yaml) and their checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.fake_game.simulation.vehicles import VEHICLES
from acres_sim.nodes.parameters.checks import (
    NON_NEGATIVE,
    NodeParameters,
    ParameterError,
    ParamSpec,
    check_boolean,
    check_positive,
    check_string,
)

VEHICLE_DESCRIPTION = NodeParameters("vehicle_description", "vehicle_description.yaml", (
    ParamSpec("agent", "",
              "The agent it describes (its name in /sim/agents and /sim/agent_states); empty: the last "
              "part of the node's namespace."),
    ParamSpec("frame_prefix", "", "In front of every link and joint name, as the agent's sim_bridge has it."),
    ParamSpec("vehicle", "",
              "The vehicle's dimensions until /sim/agents gives the agent's own: polaris or maxxum; "
              "empty: wait for /sim/agents (sim_control)."),
    ParamSpec("source_timeout_s", 1.0,
              "The joints follow /sim/agent_states, else vehicle/ackermann_state, else "
              "ground_truth/odom (wheels straight): a source this far behind the others (world "
              "time, s) gives way to the next.", range=NON_NEGATIVE),
    ParamSpec("robot_state_publisher", False,
              "A robot_state_publisher runs in the namespace (the launch started it with this "
              "description): its robot_description parameter is set again when the description changes."),
))


@dataclass(frozen=True)
class VehicleDescriptionConfig:
    agent: str
    frame_prefix: str
    vehicle: str
    source_timeout_s: float
    robot_state_publisher: bool


def vehicle_description_config(values: dict[str, Any], namespace: str) -> VehicleDescriptionConfig:
    v = {**VEHICLE_DESCRIPTION.defaults, **values}
    agent = check_string("agent", v["agent"]) or namespace.rstrip("/").rsplit("/", 1)[-1]
    if not agent:
        raise ParameterError("parameter agent is empty and the node has no namespace: name the agent")
    vehicle = check_string("vehicle", v["vehicle"])
    if vehicle and vehicle not in VEHICLES:
        raise ParameterError(
            f"parameter vehicle must be empty or one of {', '.join(VEHICLES)}, got {vehicle!r}")
    return VehicleDescriptionConfig(
        agent=agent, frame_prefix=check_string("frame_prefix", v["frame_prefix"]), vehicle=vehicle,
        source_timeout_s=check_positive("source_timeout_s", v["source_timeout_s"]),
        robot_state_publisher=check_boolean("robot_state_publisher", v["robot_state_publisher"]))
