"""Every node's parameters in one scheme: per node a table (name, default, description) that the
node declares, its config/<file>.yaml documents and the README lists, and the checks that turn the
values into the node's configuration, with one clear line for a value it refuses. No rclpy: the
checks are tested without a graph; the runner declares the tables (acres_sim.nodes.runner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from acres_sim.convert.settings import ConvertSettings
from acres_sim.fake_game.simulation.session_config import FLAVORS, SessionConfig, agent_specs
from acres_sim.game.control_client import DEFAULT_CONTROL_PORT
from acres_sim.game.vehicle_client import DEFAULT_VEHICLE_PORT
from acres_sim.stream.frame_reader import DEFAULT_MAX_PAYLOAD_BYTES
from acres_sim.net.loopback import NotLoopbackError, require_loopback
from acres_sim.stream.protocol import DEFAULT_STREAM_PORT


PORT = (1, 65535)
PORT_OR_ZERO = (0, 65535)  # 0: a free port the kernel picks (or: none)
NON_NEGATIVE = (0.0, math.inf)  # positive-only values take 0 here too; their check refuses it
UINT32_MAX = 0xFFFFFFFF


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str
    # The name of a parameter declared before this one whose value is the default (a default that
    # depends on another value). Config files leave such a parameter out unless they set it, and one
    # whose default is None (not set) too.
    default_from: str | None = None
    # The inclusive range the descriptor advertises (ros2 param describe) and rclpy holds a value of
    # the default's type to; the node's check below refuses the rest with its own message.
    range: tuple[float, float] | None = None


@dataclass(frozen=True)
class NodeParameters:
    """One node's parameter table and the file in config/ that documents it."""

    node: str
    config_file: str
    specs: tuple[ParamSpec, ...]

    @property
    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.specs}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.specs)


class ParameterError(ValueError):
    """A parameter value a node refuses; the message is one line for the user."""


def _number(name: str, value: Any, integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"parameter {name} must be a number, got {value!r}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ParameterError(f"parameter {name} must be an integer, got {value!r}")
        return int(value)
    if not math.isfinite(value):
        raise ParameterError(f"parameter {name} must be finite, got {value!r}")
    return float(value)


def _string(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ParameterError(f"parameter {name} must be a string, got {value!r}")
    return value


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"parameter {name} must be true or false, got {value!r}")
    return value


def _integer_in(name: str, value: Any, low: int, high: int | None = None) -> int:
    number = int(_number(name, value, integer=True))
    if number < low or (high is not None and number > high):
        bound = f"{low}..{high}" if high is not None else f"at least {low}"
        raise ParameterError(f"parameter {name} must be {bound}, got {number}")
    return number


def _bounds(table: NodeParameters, name: str) -> tuple[int, int]:
    """An integer parameter's range, as its table advertises it."""
    low, high = next(spec.range for spec in table.specs if spec.name == name and spec.range is not None)
    return int(low), int(high)


def _port(name: str, value: Any, allow_zero: bool = False) -> int:
    return _integer_in(name, value, 0 if allow_zero else 1, 65535)


def _positive(name: str, value: Any) -> float:
    number = float(_number(name, value))
    if not number > 0:
        raise ParameterError(f"parameter {name} must be positive, got {number}")
    return number


def _names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v and not any(c.isspace() for c in v)
                                         for v in value) or not value or len(set(value)) < len(value):
        raise ParameterError(f"parameter {name} must be distinct non-empty names, got {value!r}")
    return tuple(value)


# ---------------------------------------------------------------------------------------------
# sim_bridge

RELIABILITIES = ("reliable", "best_effort")
VARIANCE_PARAMETERS = (
    "imu_orientation_variance", "imu_angular_velocity_variance", "imu_linear_acceleration_variance",
    "odom_orientation_variance", "odom_linear_velocity_variance", "odom_angular_velocity_variance",
)

BRIDGE = NodeParameters("sim_bridge", "bridge.yaml", (
    ParamSpec("host", "127.0.0.1",
              "Address of the game's sensor stream. Loopback only (127.0.0.0/8, ::1, localhost): the "
              "game listens on 127.0.0.1 and the data does not leave the computer."),
    ParamSpec("port", DEFAULT_STREAM_PORT,
              "TCP port of the sensor stream (the game's -SensorStream=<port>).", range=PORT),
    ParamSpec("frame_prefix", ConvertSettings.frame_prefix,
              "Put in front of every vehicle frame id, e.g. 'polaris/' when several agents share one "
              "TF tree. world_frame and utm_frame are not prefixed."),
    ParamSpec("world_frame", ConvertSettings.world_frame,
              "Frame id of the world (ENU map grid): parent of base_footprint."),
    ParamSpec("utm_frame", ConvertSettings.utm_frame,
              "Frame id of ins/odom_utm poses (UTM grid of the Hello's zone)."),
    ParamSpec("publish_clock", True,
              "Publish each Clock frame's stamp on /clock (best effort, depth 1). Only one bridge of a "
              "session should: the launch file enables it for the first agent."),
    ParamSpec("tf_source", ConvertSettings.tf_source,
              "Source of the world_frame -> base_footprint transform on /tf: ins (INS solution, with "
              "its errors), ground_truth (exact pose) or none."),
    ParamSpec("publish_ground_truth", True, "Publish the exact pose of each INS epoch on ground_truth/odom."),
    ParamSpec("lidar_fields", ConvertSettings.lidar_fields,
              "Point layout of lidar/points: xyzi (x, y, z, intensity float32; the frame's bytes unchanged) "
              "or xyzirt (adds ring uint16 at 16 and time float32 at 20, point_step 24: per-point time "
              "for deskewing in LiDAR odometry)."),
    ParamSpec("lidar_stamp", ConvertSettings.lidar_stamp,
              "Header stamp of lidar/points: end (the frame's stamp, the end of the sweep; times in "
              "(-1/hz, 0]) or start (end - 1/lidar.hz, the velodyne/ouster convention; times in (0, 1/hz])."),
    ParamSpec("qos_reliability", "reliable",
              "Reliability of the sensor topics: reliable (REP 2003, what rviz2 expects) or best_effort."),
    ParamSpec("qos_depth", 5, "History depth (keep last) of the sensor topics.", range=(1, 10000)),
    ParamSpec("reconnect_min_s", 0.5, "First delay before connecting again, in seconds (doubles each try).",
              range=NON_NEGATIVE),
    ParamSpec("reconnect_max_s", 5.0, "Longest delay between connection attempts, in seconds.",
              range=NON_NEGATIVE),
    ParamSpec("max_payload_bytes", DEFAULT_MAX_PAYLOAD_BYTES,
              "Largest frame payload accepted. A header announcing more is treated as a broken stream "
              "(the connection is closed and opened again); the memory is never allocated.",
              range=(1024, UINT32_MAX)),
    ParamSpec("stats_period_s", 10.0,
              "Period of the one-line INFO summary (rates, MB/s, latency, drops), in seconds; 0 = off.",
              range=NON_NEGATIVE),
    ParamSpec("jpeg_quality", 90,
              "JPEG quality (1-100) of camera/image_raw/compressed; images are encoded only while that "
              "topic has a subscriber.", range=(1, 100)),
    ParamSpec("imu_orientation_variance", ConvertSettings.imu_orientation_variance,
              "Variance (rad^2) on the diagonal of ins/imu orientation_covariance; 0 = unknown (REP 145)."),
    ParamSpec("imu_angular_velocity_variance", ConvertSettings.imu_angular_velocity_variance,
              "Variance ((rad/s)^2) on the diagonal of ins/imu angular_velocity_covariance; 0 = unknown."),
    ParamSpec("imu_linear_acceleration_variance", ConvertSettings.imu_linear_acceleration_variance,
              "Variance ((m/s^2)^2) on the diagonal of ins/imu linear_acceleration_covariance; 0 = unknown."),
    ParamSpec("odom_orientation_variance", ConvertSettings.odom_orientation_variance,
              "Variance (rad^2) of roll, pitch, yaw in the pose covariance of the odometry topics."),
    ParamSpec("odom_linear_velocity_variance", ConvertSettings.odom_linear_velocity_variance,
              "Variance ((m/s)^2) of the linear velocity in the twist covariance of the INS odometry."),
    ParamSpec("odom_angular_velocity_variance", ConvertSettings.odom_angular_velocity_variance,
              "Variance ((rad/s)^2) of the angular velocity in the twist covariance of the INS odometry."),
))


@dataclass(frozen=True)
class BridgeConfig:
    host: str
    port: int
    publish_clock: bool
    publish_ground_truth: bool
    qos_reliability: str
    qos_depth: int
    reconnect_min_s: float
    reconnect_max_s: float
    max_payload_bytes: int
    stats_period_s: float
    jpeg_quality: int
    # Frame names, tf_source and covariances: the parameters that shape the messages.
    convert: ConvertSettings


def bridge_config(values: dict[str, Any]) -> BridgeConfig:
    """Validate parameter values (missing ones take their defaults); ParameterError if bad."""
    v = {**BRIDGE.defaults, **values}
    host = _string("host", v["host"])
    try:
        require_loopback(host)
    except NotLoopbackError as exc:
        raise ParameterError(f"refusing parameter host: {exc}") from None
    port = _integer_in("port", v["port"], 1, 65535)
    reliability = _string("qos_reliability", v["qos_reliability"])
    if reliability not in RELIABILITIES:
        raise ParameterError(
            f"parameter qos_reliability must be reliable or best_effort, got {reliability!r}")
    depth = _integer_in("qos_depth", v["qos_depth"], *_bounds(BRIDGE, "qos_depth"))
    rmin = float(_number("reconnect_min_s", v["reconnect_min_s"]))
    rmax = float(_number("reconnect_max_s", v["reconnect_max_s"]))
    if not 0 < rmin <= rmax:
        raise ParameterError(
            f"reconnect delays need 0 < reconnect_min_s ({rmin}) <= reconnect_max_s ({rmax})")
    max_payload = _integer_in("max_payload_bytes", v["max_payload_bytes"],
                              *_bounds(BRIDGE, "max_payload_bytes"))
    stats_period = float(_number("stats_period_s", v["stats_period_s"]))
    if stats_period < 0:
        raise ParameterError(f"parameter stats_period_s must be >= 0, got {stats_period}")
    jpeg_quality = _integer_in("jpeg_quality", v["jpeg_quality"], 1, 100)
    try:  # ConvertSettings checks its own fields (tf_source, frame names, variances)
        convert = ConvertSettings(
            **{name: _string(name, v[name]) for name in ("frame_prefix", "world_frame", "utm_frame",
                                                         "tf_source", "lidar_fields", "lidar_stamp")},
            **{name: float(_number(name, v[name])) for name in VARIANCE_PARAMETERS})
    except ValueError as exc:
        raise ParameterError(f"parameter {exc}") from None
    return BridgeConfig(
        host=host, port=port, publish_clock=_boolean("publish_clock", v["publish_clock"]),
        publish_ground_truth=_boolean("publish_ground_truth", v["publish_ground_truth"]),
        qos_reliability=reliability, qos_depth=depth, reconnect_min_s=rmin, reconnect_max_s=rmax,
        max_payload_bytes=max_payload, stats_period_s=stats_period, jpeg_quality=jpeg_quality,
        convert=convert)


# ---------------------------------------------------------------------------------------------
# sim_control

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
    world_frame = _string("world_frame", v["world_frame"])
    if not world_frame:
        raise ParameterError("parameter world_frame must not be empty")
    return SimControlConfig(
        control_port=_port("control_port", v["control_port"]), agents=_names("agents", v["agents"]),
        barrier_timeout_s=_positive("barrier_timeout_s", v["barrier_timeout_s"]),
        feedback_steps=_integer_in("feedback_steps", v["feedback_steps"], 1, SERVICE_CHUNK_STEPS),
        world_frame=world_frame, request_timeout_s=_positive("request_timeout_s", v["request_timeout_s"]),
        vehicle_bridges=_boolean("vehicle_bridges", v["vehicle_bridges"]),
        command_wait_s=_positive("command_wait_s", v["command_wait_s"]),
        episode_log=_string("episode_log", v["episode_log"]),
        episode_replay=_string("episode_replay", v["episode_replay"]))


# ---------------------------------------------------------------------------------------------
# vehicle_bridge

VEHICLE_BRIDGE = NodeParameters("vehicle_bridge", "vehicle_bridge.yaml", (
    ParamSpec("vehicle_port", DEFAULT_VEHICLE_PORT,
              "TCP port of the agent's Vehicle Bridge on 127.0.0.1 (fake_game: --vehicle-ports).",
              range=PORT),
    ParamSpec("lockstep", False,
              "The world moves only on step requests: commands are forwarded when they arrive and at "
              "each step's end, never between the steps of a request (the same commands give the "
              "same trajectory). false: also at every report, so the speed controller runs at the "
              "physics rate."),
    ParamSpec("command_timeout_s", 0.5,
              "Ackermann and Twist watchdog in world time: a command older than this releases the "
              "throttle and brakes to a stop, steering held. (Drive-by-wire: 0.1 s, Dataspeed's.)",
              range=NON_NEGATIVE),
    ParamSpec("cmd_vel_stamped", False,
              "cmd_vel is geometry_msgs/TwistStamped (nav2's enable_stamped_cmd_vel) instead of Twist."),
    ParamSpec("speed_kp", 1.0, "Speed controller: pedal per m/s of speed error (feed-forward + PI).",
              range=NON_NEGATIVE),
    ParamSpec("speed_ki", 0.5, "Speed controller: pedal per m of integrated speed error.",
              range=NON_NEGATIVE),
    ParamSpec("frame_id", "base_footprint", "Frame id of the reports' headers."),
    ParamSpec("reconnect_min_s", 0.5, "First delay before connecting again, in seconds (doubles each try).",
              range=NON_NEGATIVE),
    ParamSpec("reconnect_max_s", 5.0, "Longest delay between connection attempts, in seconds.",
              range=NON_NEGATIVE),
))


@dataclass(frozen=True)
class VehicleBridgeConfig:
    vehicle_port: int
    lockstep: bool
    command_timeout_s: float
    cmd_vel_stamped: bool
    speed_kp: float
    speed_ki: float
    frame_id: str
    reconnect_min_s: float
    reconnect_max_s: float


def vehicle_bridge_config(values: dict[str, Any]) -> VehicleBridgeConfig:
    v = {**VEHICLE_BRIDGE.defaults, **values}
    rmin = _positive("reconnect_min_s", v["reconnect_min_s"])
    rmax = _positive("reconnect_max_s", v["reconnect_max_s"])
    if rmin > rmax:
        raise ParameterError(f"reconnect delays need reconnect_min_s ({rmin}) <= reconnect_max_s ({rmax})")
    kp, ki = float(_number("speed_kp", v["speed_kp"])), float(_number("speed_ki", v["speed_ki"]))
    if kp < 0 or ki < 0:
        raise ParameterError(f"speed_kp and speed_ki must be >= 0, got {kp} and {ki}")
    return VehicleBridgeConfig(
        vehicle_port=_port("vehicle_port", v["vehicle_port"]), lockstep=_boolean("lockstep", v["lockstep"]),
        command_timeout_s=_positive("command_timeout_s", v["command_timeout_s"]),
        cmd_vel_stamped=_boolean("cmd_vel_stamped", v["cmd_vel_stamped"]), speed_kp=kp, speed_ki=ki,
        frame_id=_string("frame_id", v["frame_id"]), reconnect_min_s=rmin, reconnect_max_s=rmax)


# ---------------------------------------------------------------------------------------------
# fake_game

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
))


@dataclass(frozen=True)
class FakeGameConfig:
    session: SessionConfig
    control_port: int | None  # None: no control channel


def fake_game_config(values: dict[str, Any]) -> FakeGameConfig:
    v = {**FAKE_GAME.defaults, **values}
    if v["agents"] is None:
        v["agents"] = v["vehicles"]
    ports = [_port("ports", p, allow_zero=True) for p in v["ports"]]
    vehicle_ports = (None if v["vehicle_ports"] is None
                     else [_port("vehicle_ports", p, allow_zero=True) for p in v["vehicle_ports"]])
    control_port = _port("control_port", v["control_port"], allow_zero=True)
    flavor = _string("flavor", v["flavor"])
    if flavor not in FLAVORS:
        raise ParameterError(f"parameter flavor must be one of {', '.join(FLAVORS)}, got {flavor!r}")
    lockstep = _boolean("lockstep", v["lockstep"])
    if lockstep and control_port == 0:
        raise ParameterError("lockstep needs control_port (the world only moves on step requests)")
    try:
        session = SessionConfig(
            agents=agent_specs(ports, list(v["vehicles"]), list(v["agents"]), vehicle_ports),
            seed=int(_number("seed", v["seed"], integer=True)),
            realtime_factor=float(_number("realtime_factor", v["realtime_factor"])),
            lockstep=lockstep, flavor=flavor,
            georeferenced=_boolean("georeferenced", v["georeferenced"]),
            noise=_boolean("noise", v["noise"]), cached=_boolean("cached", v["cached"]),
            flat_ground=_boolean("flat_ground", v["flat_ground"]),
            max_queued_bytes=int(_number("max_queued_bytes", v["max_queued_bytes"], integer=True)),
            stats_period_s=float(_number("stats_period_s", v["stats_period_s"])),
            duration_s=float(_number("duration_s", v["duration_s"])),
            render_workers=_integer_in("render_workers", v["render_workers"],
                                       *_bounds(FAKE_GAME, "render_workers")),
            episode_log=_string("episode_log", v["episode_log"]),
            episode_replay=_string("episode_replay", v["episode_replay"]))
    except ValueError as exc:  # SessionConfig and agent_specs check the rest
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(str(exc)) from None
    return FakeGameConfig(session=session, control_port=control_port or None)


NODES = (BRIDGE, SIM_CONTROL, FAKE_GAME, VEHICLE_BRIDGE)
