"""What launch/bridge.launch.py starts, as plain data (no launch imports, testable anywhere).

agents "polaris,maxxum" and ports "5601,5602" -> one sim_bridge per agent in namespace /<agent>;
frame_prefix "<agent>/" when there is more than one agent; /clock from the first agent only; a
vehicle_description per agent (and a robot_state_publisher where it is installed);
optionally fake_game serving those agents on those ports, sim_control on the control channel
(control_port > 0; fake_game then opens it, held from the start with lockstep), one vehicle_bridge
per agent (vehicle_ports "5611,5612"; fake_game then opens each agent's Vehicle Bridge there) and
rviz2.
"""

from __future__ import annotations

import os

import re
from dataclasses import dataclass

from acres_sim.fake_game.simulation.vehicles import VEHICLES
from acres_sim.share import SOURCE_CONFIG, config_path
from acres_sim.stream.protocol import DEFAULT_STREAM_PORT

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")  # a valid ROS namespace token and frame prefix
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
LOG_LEVELS = ("debug", "info", "warn", "error", "fatal")
DEFAULT_PORTS = str(DEFAULT_STREAM_PORT)  # the launch argument ports


class LaunchPlanError(ValueError):
    """A launch argument the plan cannot use; the message says which and why."""


@dataclass(frozen=True)
class BridgePlan:
    agent: str
    port: int
    namespace: str  # "/<agent>"
    frame_prefix: str  # "" for one agent, "<agent>/" for several
    publish_clock: bool  # the first agent only

    def parameters(self, host: str) -> dict[str, object]:
        """The per-agent parameters, given after the params file so that they win."""
        return {"host": host, "port": self.port, "frame_prefix": self.frame_prefix,
                "publish_clock": self.publish_clock}


@dataclass(frozen=True)
class VehicleBridgePlan:
    agent: str
    vehicle_port: int
    namespace: str  # "/<agent>", beside the agent's sim_bridge
    frame_prefix: str
    lockstep: bool

    def parameters(self) -> dict[str, object]:
        return {"vehicle_port": self.vehicle_port, "lockstep": self.lockstep,
                "frame_id": f"{self.frame_prefix}base_footprint"}


@dataclass(frozen=True)
class FakeGamePlan:
    ports: tuple[int, ...]
    vehicles: tuple[str, ...]
    agents: tuple[str, ...]
    control_port: int = 0
    lockstep: bool = False
    vehicle_ports: tuple[int, ...] = ()

    def parameters(self) -> dict[str, object]:
        values: dict[str, object] = {
            "ports": list(self.ports), "vehicles": list(self.vehicles), "agents": list(self.agents),
            "control_port": self.control_port, "lockstep": self.lockstep}
        if self.vehicle_ports:
            values["vehicle_ports"] = list(self.vehicle_ports)
        return values


@dataclass(frozen=True)
class SimControlPlan:
    control_port: int
    agents: tuple[str, ...]
    vehicle_bridges: bool = False
    episode_log: str = ""
    episode_replay: str = ""

    def parameters(self) -> dict[str, object]:
        return {"control_port": self.control_port, "agents": list(self.agents),
                "vehicle_bridges": self.vehicle_bridges, "episode_log": self.episode_log,
                "episode_replay": self.episode_replay}


@dataclass(frozen=True)
class DescriptionPlan:
    """The agent's vehicle_description, and its robot_state_publisher where that is installed and
    the vehicle is known at launch time (robot_state_publisher needs the URDF when it starts)."""

    agent: str
    namespace: str
    frame_prefix: str
    vehicle: str  # "" where the launch does not know it: /sim/agents gives it
    robot_state_publisher: bool

    def parameters(self) -> dict[str, object]:
        return {"agent": self.agent, "frame_prefix": self.frame_prefix, "vehicle": self.vehicle,
                "robot_state_publisher": self.robot_state_publisher}

    def robot_state_publisher_parameters(self, use_sim_time: bool) -> dict[str, object]:
        """robot_description: the URDF of the vehicle model (vehicle_description sets it again if the
        game's AgentInfo differs)."""
        from acres_sim.description.vehicle_urdf import vehicle_urdf
        from acres_sim.fake_game.simulation.vehicles import vehicle_geometry

        urdf = vehicle_urdf(vehicle_geometry(self.vehicle), self.frame_prefix, self.agent)
        return {"robot_description": urdf, "use_sim_time": use_sim_time}

    # robot_state_publisher republishes its parameter on robot_description; vehicle_description owns
    # that topic, so robot_state_publisher's goes beside it.
    ROBOT_STATE_PUBLISHER_REMAPS = (("robot_description", "robot_state_publisher/robot_description"),)


@dataclass(frozen=True)
class LaunchPlan:
    bridges: tuple[BridgePlan, ...]
    fake_game: FakeGamePlan | None
    sim_control: SimControlPlan | None
    vehicle_bridges: tuple[VehicleBridgePlan, ...]
    descriptions: tuple[DescriptionPlan, ...]
    rviz: bool
    use_sim_time: bool
    log_level: str
    host: str


def split_list(text: str) -> list[str]:
    """'a, b,,c ' -> ['a', 'b', 'c']."""
    return [item.strip() for item in str(text).split(",") if item.strip()]


def parse_bool(name: str, text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise LaunchPlanError(f"launch argument {name} must be true or false, got {text!r}")


def plan_launch(agents: str = "polaris", ports: str = DEFAULT_PORTS, host: str = "127.0.0.1",
                fake_game: str | bool = "false", rviz: str | bool = "false",
                use_sim_time: str | bool = "true", log_level: str = "info",
                vehicles: str = "", control_port: str | int = "0",
                lockstep: str | bool = "false", vehicle_ports: str = "", episode_log: str = "",
                episode_replay: str = "", robot_state_publisher: bool = False) -> LaunchPlan:
    """robot_state_publisher: whether it is installed (the launch file looks)."""
    names = split_list(agents)
    if not names:
        raise LaunchPlanError("launch argument agents is empty")
    for name in names:
        if not _NAME.match(name):
            raise LaunchPlanError(f"agent name {name!r} is not a valid ROS name (letters, digits, _)")
    if len(set(names)) != len(names):
        raise LaunchPlanError(f"agent names must be distinct, got {names}")
    port_texts = split_list(ports)
    if len(port_texts) != len(names):
        raise LaunchPlanError(f"launch arguments agents ({len(names)}: {','.join(names)}) and ports "
                              f"({len(port_texts)}: {','.join(port_texts)}) need the same length")
    try:
        port_numbers = [int(p) for p in port_texts]
    except ValueError:
        raise LaunchPlanError(f"launch argument ports must be integers, got {ports!r}") from None
    if any(not 1 <= p <= 65535 for p in port_numbers) or len(set(port_numbers)) != len(port_numbers):
        raise LaunchPlanError(f"ports must be distinct and in 1..65535, got {port_numbers}")
    level = str(log_level).strip().lower()
    if level not in LOG_LEVELS:
        raise LaunchPlanError(
            f"launch argument log_level must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")
    several = len(names) > 1
    bridges = tuple(
        BridgePlan(agent=name, port=port, namespace=f"/{name}", frame_prefix=f"{name}/" if several else "",
                   publish_clock=index == 0)
        for index, (name, port) in enumerate(zip(names, port_numbers)))
    try:
        control = int(str(control_port).strip())
    except ValueError:
        raise LaunchPlanError(
            f"launch argument control_port must be an integer, got {control_port!r}") from None
    if not 0 <= control <= 65535 or control in port_numbers:
        raise LaunchPlanError(f"control_port must be 0 (none) or a port in 1..65535 other than the stream "
                              f"ports, got {control}")
    held = parse_bool("lockstep", lockstep)
    vehicle_port_texts = split_list(vehicle_ports)
    try:
        vehicle_port_numbers = tuple(int(p) for p in vehicle_port_texts)
    except ValueError:
        raise LaunchPlanError(
            f"launch argument vehicle_ports must be integers, got {vehicle_ports!r}") from None
    if vehicle_port_numbers:
        if len(vehicle_port_numbers) != len(names):
            raise LaunchPlanError(f"launch argument vehicle_ports needs one port per agent ({len(names)}: "
                                  f"{','.join(names)}), got {','.join(vehicle_port_texts)}")
        taken = set(port_numbers) | {control}
        if (any(not 1 <= p <= 65535 or p in taken for p in vehicle_port_numbers)
                or len(set(vehicle_port_numbers)) != len(vehicle_port_numbers)):
            raise LaunchPlanError(f"vehicle_ports must be distinct, in 1..65535 and other than the stream "
                                  f"and control ports, got {list(vehicle_port_numbers)}")
    vehicle_bridges = tuple(
        VehicleBridgePlan(agent=b.agent, vehicle_port=port, namespace=b.namespace,
                          frame_prefix=b.frame_prefix, lockstep=held)
        for b, port in zip(bridges, vehicle_port_numbers))
    game = None
    vehicle_names = split_list(vehicles) or names
    if split_list(vehicles) and len(vehicle_names) != len(names):
        raise LaunchPlanError(f"launch argument vehicles needs one vehicle per agent, got {vehicle_names}")
    known = [v if v in VEHICLES else "" for v in vehicle_names]
    descriptions = tuple(
        DescriptionPlan(agent=b.agent, namespace=b.namespace, frame_prefix=b.frame_prefix, vehicle=vehicle,
                        robot_state_publisher=robot_state_publisher and bool(vehicle))
        for b, vehicle in zip(bridges, known))
    if parse_bool("fake_game", fake_game):
        if held and not control:
            raise LaunchPlanError("lockstep:=true needs a control_port (the world moves on step requests)")
        game = FakeGamePlan(tuple(port_numbers), tuple(vehicle_names), tuple(names), control, held,
                            vehicle_port_numbers)
    elif held:
        raise LaunchPlanError("lockstep:=true is for fake_game:=true (the real game is held by -Lockstep)")
    # The game writes and reads the files: relative names are the user's, not the game's directory.
    log_file, replay_file = (os.path.abspath(p.strip()) if p.strip() else ""
                             for p in (episode_log, episode_replay))
    if (log_file or replay_file) and not control:
        raise LaunchPlanError(
            "episode_log and episode_replay need a control_port (sim_control asks the game)")
    sim_control = SimControlPlan(control, tuple(names), bool(vehicle_bridges), log_file, replay_file) \
        if control else None
    return LaunchPlan(bridges=bridges, fake_game=game, sim_control=sim_control,
                      vehicle_bridges=vehicle_bridges, descriptions=descriptions,
                      rviz=parse_bool("rviz", rviz),
                      use_sim_time=parse_bool("use_sim_time", use_sim_time), log_level=level, host=host)


def config_file(name: str) -> str:
    """config/<name> of the installed package, else of the source tree (the path even where it is
    missing: launch then names the file it could not open)."""
    return str(config_path(name) or SOURCE_CONFIG / name)


ROBOT_MODEL = "rviz_default_plugins/RobotModel"
TEMPLATE_AGENT = "polaris"  # the agent config/acres_sim.rviz shows


def rviz_config(template: str, agents: list[str]) -> str:
    """config/acres_sim.rviz for the agents a launch names: the first agent's sensors in place of the
    template's, and a RobotModel of every agent (its robot_description topic)."""
    import copy

    import yaml

    doc = yaml.safe_load(template)
    displays = doc["Visualization Manager"]["Displays"]
    model = next(d for d in displays if d["Class"] == ROBOT_MODEL)
    kept = []
    for display in displays:
        if display["Class"] == ROBOT_MODEL:
            continue
        topic = display.get("Topic")
        if topic is not None and topic["Value"].startswith(f"/{TEMPLATE_AGENT}/"):
            topic["Value"] = f"/{agents[0]}/" + topic["Value"][len(TEMPLATE_AGENT) + 2:]
        kept.append(display)
    for agent in agents:
        shown = copy.deepcopy(model)
        shown["Name"] = agent
        shown["Description Topic"]["Value"] = f"/{agent}/robot_description"
        kept.append(shown)
    doc["Visualization Manager"]["Displays"] = kept
    return yaml.safe_dump(doc, sort_keys=False)
