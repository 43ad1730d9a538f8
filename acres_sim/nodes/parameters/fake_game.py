"""The fake_game node's parameters (config/fake_game.yaml) and their checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.fake_game.simulation.session_config import FLAVORS, SessionConfig, agent_specs
from acres_sim.stream.protocol import DEFAULT_STREAM_PORT
from acres_sim.nodes.parameters.checks import (
    NON_NEGATIVE,
    PORT_OR_ZERO,
    check_boolean,
    check_integer_in,
    check_names,
    check_number,
    check_port,
    check_string,
    NodeParameters,
    ParameterError,
    ParamSpec,
    range_of,
)

FAKE_GAME = NodeParameters("fake_game", "fake_game.yaml", (
    ParamSpec("ports", [DEFAULT_STREAM_PORT],
              "Sensor stream ports on 127.0.0.1, one per agent (0 = a free port, named in the LISTENING "
              "line)."),
    ParamSpec("vehicles", ["polaris"], "The vehicle of each agent (polaris | maxxum), one per port."),
    ParamSpec("agents", None, "Agent names, one per port; default: the vehicle names.",
              default_from="vehicles"),
    ParamSpec("vehicle_ports", None,
              "Vehicle Bridge ports on 127.0.0.1, one per agent (0 = a free port); not set: no Vehicle "
              "Bridge, the vehicles drive their routes."),
    ParamSpec("seed", SessionConfig.seed, "Seed of every random process (noise, INS errors)."),
    ParamSpec("realtime_factor", SessionConfig.realtime_factor,
              "Simulated seconds per wall-clock second; 0 = as fast as possible.", range=NON_NEGATIVE),
    ParamSpec("lockstep", SessionConfig.lockstep,
              "Start held: the world moves only on step requests of the control channel (needs "
              "control_port)."),
    ParamSpec("control_port", 0, "Port of the JSON-lines control channel on 127.0.0.1; 0 = no channel.",
              range=PORT_OR_ZERO),
    ParamSpec("flavor", SessionConfig.flavor,
              "game, or core: the ACRES Core behaviour (Hello sequence 0 at world time, no camera)."),
    ParamSpec("georeferenced", SessionConfig.georeferenced,
              "A map with a geographic reference (false: NO_FIX, no ins/odom_utm)."),
    ParamSpec("noise", SessionConfig.noise, "Sensor noise and INS errors (false: exact sensors)."),
    ParamSpec("cached", SessionConfig.cached,
              "Render a few clouds and images once and re-serve them with fresh stamps (cheap)."),
    ParamSpec("flat_ground", SessionConfig.flat_ground,
              "The plane z = 0 instead of the rolling ground (cheaper; no roll or pitch)."),
    ParamSpec("max_queued_bytes", SessionConfig.max_queued_bytes,
              "Queue size per stream above which LiDAR and camera frames are dropped; every frame above "
              "twice this.", range=(1, 1 << 40)),
    ParamSpec("stats_period_s", SessionConfig.stats_period_s,
              "Period of the STATS lines while a client is connected, in seconds.", range=NON_NEGATIVE),
    ParamSpec("duration_s", SessionConfig.duration_s,
              "End the run when the world time reaches this, in seconds; 0 = run until stopped.",
              range=NON_NEGATIVE),
    ParamSpec("render_workers", SessionConfig.render_workers,
              "Threads that render clouds and images; 0 = one per agent in real time, two per agent "
              "in lockstep or faster than real time, at most one per core.", range=(0, 256)),
    ParamSpec("episode_log", SessionConfig.episode_log,
              "Record the episode log (MCAP) into this new file from the first physics step; empty: no."),
    ParamSpec("episode_replay", SessionConfig.episode_replay,
              "Replay this episode log from the start: the agents follow their logged states; empty: no."),
    ParamSpec("sensors", list(SessionConfig.sensors),
              "The sensors the vehicles carry (lidar, camera, ins): the others are off in the Hello and "
              "never rendered."),
))


@dataclass(frozen=True)
class FakeGameConfig:
    session: SessionConfig
    control_port: int | None  # None: no control channel


def fake_game_config(values: dict[str, Any]) -> FakeGameConfig:
    v = {**FAKE_GAME.defaults, **values}
    if v["agents"] is None:
        v["agents"] = v["vehicles"]
    ports = [check_port("ports", p, allow_zero=True) for p in v["ports"]]
    vehicle_ports = (None if v["vehicle_ports"] is None
                     else [check_port("vehicle_ports", p, allow_zero=True) for p in v["vehicle_ports"]])
    control_port = check_port("control_port", v["control_port"], allow_zero=True)
    flavor = check_string("flavor", v["flavor"])
    if flavor not in FLAVORS:
        raise ParameterError(f"parameter flavor must be one of {', '.join(FLAVORS)}, got {flavor!r}")
    lockstep = check_boolean("lockstep", v["lockstep"])
    if lockstep and control_port == 0:
        raise ParameterError("lockstep needs control_port (the world only moves on step requests)")
    try:
        session = SessionConfig(
            agents=agent_specs(ports, list(v["vehicles"]), list(v["agents"]), vehicle_ports),
            seed=int(check_number("seed", v["seed"], integer=True)),
            realtime_factor=float(check_number("realtime_factor", v["realtime_factor"])),
            lockstep=lockstep, flavor=flavor,
            georeferenced=check_boolean("georeferenced", v["georeferenced"]),
            noise=check_boolean("noise", v["noise"]), cached=check_boolean("cached", v["cached"]),
            flat_ground=check_boolean("flat_ground", v["flat_ground"]),
            max_queued_bytes=int(check_number("max_queued_bytes", v["max_queued_bytes"], integer=True)),
            stats_period_s=float(check_number("stats_period_s", v["stats_period_s"])),
            duration_s=float(check_number("duration_s", v["duration_s"])),
            render_workers=check_integer_in("render_workers", v["render_workers"],
                                            *range_of(FAKE_GAME, "render_workers")),
            episode_log=check_string("episode_log", v["episode_log"]),
            episode_replay=check_string("episode_replay", v["episode_replay"]),
            sensors=check_names("sensors", v["sensors"]))
    except ValueError as exc:  # SessionConfig and agent_specs check the rest
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(str(exc)) from None
    return FakeGameConfig(session=session, control_port=control_port or None)
