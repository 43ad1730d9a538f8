"""sim_control's parameters (config/sim_control.yaml) and their checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.convert.settings import ConvertSettings
from acres_sim.game.control_client import DEFAULT_CONTROL_PORT
from acres_sim.nodes.parameters.checks import (
    NON_NEGATIVE,
    PORT,
    check_boolean,
    check_integer_in,
    check_names,
    check_port,
    check_positive,
    check_string,
    NodeParameters,
    ParameterError,
    ParamSpec,
)

SERVICE_CHUNK_STEPS = 1200  # steps per game request of step_simulation: 10 s of world time

SIM_CONTROL = NodeParameters("sim_control", "sim_control.yaml", (
    ParamSpec("control_port", DEFAULT_CONTROL_PORT,
              "TCP port of the game's control channel on 127.0.0.1 (fake_game: --control-port).", range=PORT),
    ParamSpec("agents", ["polaris"],
              "The agents whose /<agent>/sim/barrier a step waits for: every agent with a sim_bridge."),
    ParamSpec("barrier_timeout_s", 5.0,
              "How long a step waits for every agent's sim/barrier after the game answered, in seconds; "
              "then it answers OPERATION_FAILED naming the agents missing.", range=NON_NEGATIVE),
    ParamSpec("feedback_steps", 12,
              "Steps per chunk of the simulate_steps action: feedback and cancelling between chunks "
              f"(1..{SERVICE_CHUNK_STEPS}).", range=(1, SERVICE_CHUNK_STEPS)),
    ParamSpec("world_frame", ConvertSettings.world_frame,
              "Frame id of entity states (as sim_bridge's world_frame)."),
    ParamSpec("request_timeout_s", 60.0,
              "Longest wait for one answer of the control channel, in seconds.", range=NON_NEGATIVE),
    ParamSpec("vehicle_bridges", False,
              "Every agent has a vehicle_bridge: a step also waits for each agent's vehicle/barrier, "
              "and for the command of every agent under command (see command_wait_s)."),
    ParamSpec("command_wait_s", 0.5,
              "How long a step waits, before the game steps, for each agent under command to hold a "
              "command stamped at or after the current world time, in seconds; then it steps with "
              "what the vehicle holds (the watchdog's rule) and logs a WARN.", range=NON_NEGATIVE),
    ParamSpec("episode_log", "",
              "Record the episode log (MCAP) into this new file once the game is reachable, from the "
              "step the world is at (in lockstep: the first physics step); empty: no recording. Stop it "
              "with the stop_recording service; the file is complete when the game ends too."),
    ParamSpec("episode_replay", "",
              "Replay this episode log once the game is reachable (before episode_log starts, so that "
              "a replay can be recorded); empty: no replay."),
))


@dataclass(frozen=True)
class SimControlConfig:
    control_port: int
    agents: tuple[str, ...]
    barrier_timeout_s: float
    feedback_steps: int
    world_frame: str
    request_timeout_s: float
    vehicle_bridges: bool
    command_wait_s: float
    episode_log: str
    episode_replay: str


def sim_control_config(values: dict[str, Any]) -> SimControlConfig:
    v = {**SIM_CONTROL.defaults, **values}
    world_frame = check_string("world_frame", v["world_frame"])
    if not world_frame:
        raise ParameterError("parameter world_frame must not be empty")
    return SimControlConfig(
        control_port=check_port("control_port", v["control_port"]), agents=check_names("agents", v["agents"]),
        barrier_timeout_s=check_positive("barrier_timeout_s", v["barrier_timeout_s"]),
        feedback_steps=check_integer_in("feedback_steps", v["feedback_steps"], 1, SERVICE_CHUNK_STEPS),
        world_frame=world_frame, request_timeout_s=check_positive(
            "request_timeout_s", v["request_timeout_s"]),
        vehicle_bridges=check_boolean("vehicle_bridges", v["vehicle_bridges"]),
        command_wait_s=check_positive("command_wait_s", v["command_wait_s"]),
        episode_log=check_string("episode_log", v["episode_log"]),
        episode_replay=check_string("episode_replay", v["episode_replay"]))
