"""What a viewer of an episode log needs to draw the vehicles (ROS-free): each agent's
robot_description, /tf_static (base_footprint -> base_link), and at every VIEW_EVERY_STEPS-th step
(30 Hz) /tf (map -> base_footprint from the agent's state, the wheels' and the steering's joints)
and each agent's joint_states; as message dicts for the recorder. Frame names follow the launch (a
prefix "<agent>/" when there is more than one agent).

30 Hz, not every physics step: a viewer interpolates between transforms, and at 120 Hz these
messages would be more than half of the log (2.5 kB a step for two agents against the states'
2 kB)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acres_sim.description.vehicle_urdf import VehicleGeometry, frame_prefix, vehicle_urdf
from acres_sim.description.wheel_joints import WheelJoints, joint_transforms
from acres_sim.episode.log_file import TF, TF_STATIC, Topic, joint_states_topic, robot_description_topic

WORLD_FRAME = "map"
VIEW_EVERY_STEPS = 4  # of the 120 Hz physics steps: 30 Hz

Message = tuple[Topic, dict[str, Any]]


@dataclass
class _Vehicle:
    name: str
    prefix: str
    geometry: VehicleGeometry
    joints: WheelJoints
    description: Topic
    joint_states: Topic


class VehicleViews:
    def __init__(self, agents: Sequence[Mapping[str, Any]]):
        self._vehicles: dict[str, _Vehicle] = {}
        for info in agents:
            try:
                geometry = VehicleGeometry.from_agent_info(info)
            except (KeyError, TypeError, ValueError):
                continue  # an agent without its dimensions is not drawn
            prefix = frame_prefix(info["name"], len(agents))
            self._vehicles[info["name"]] = _Vehicle(
                info["name"], prefix, geometry, WheelJoints(geometry, prefix),
                robot_description_topic(info["name"]), joint_states_topic(info["name"]))

    @property
    def topics(self) -> list[Topic]:
        return [TF, TF_STATIC, *(v.description for v in self._vehicles.values()),
                *(v.joint_states for v in self._vehicles.values())]

    def latched(self, stamp: Mapping[str, int]) -> list[Message]:
        """/tf_static and every robot_description, stamped `stamp`."""
        statics = []
        for v in self._vehicles.values():
            x, y, z = v.geometry.body_origin_flu_m
            statics.append(_transform(stamp, f"{v.prefix}base_footprint", f"{v.prefix}base_link", (x, y, z),
                                      (0.0, 0.0, 0.0, 1.0)))
        out: list[Message] = [(TF_STATIC, {"transforms": statics})]
        out += [(v.description, {"data": vehicle_urdf(v.geometry, v.prefix, v.name)})
                for v in self._vehicles.values()]
        return out

    def step(self, states: Mapping[str, Any]) -> list[Message]:
        """/tf and each agent's joint_states of one step's AgentStates; none between the 30 Hz steps."""
        if int(states.get("step", 0)) % VIEW_EVERY_STEPS:
            return []
        stamp = states["header"]["stamp"]
        t = stamp["sec"] + stamp["nanosec"] * 1e-9
        transforms, out = [], []
        for state in states["agents"]:
            v = self._vehicles.get(state["name"])
            if v is None:
                continue
            p, q = state["pose"]["position"], state["pose"]["orientation"]
            transforms.append(_transform(stamp, WORLD_FRAME, f"{v.prefix}base_footprint",
                                         (p["x"], p["y"], p["z"]), (q["x"], q["y"], q["z"], q["w"])))
            sample = v.joints.update(t, float(state["speed_mps"]), float(state["steer_rad"]))
            transforms += [_transform(stamp, *joint)
                           for joint in joint_transforms(v.geometry, v.prefix, sample)]
            out.append((v.joint_states, {"header": {"stamp": stamp, "frame_id": ""}, "name": sample.names,
                                         "position": sample.positions, "velocity": sample.velocities}))
        return [(TF, {"transforms": transforms}), *out]

    def restart(self) -> None:
        for v in self._vehicles.values():
            v.joints.restart()


def _transform(stamp: Mapping[str, int], parent: str, child: str, xyz: tuple[float, float, float],
               quaternion: tuple[float, float, float, float]) -> dict[str, Any]:
    return {"header": {"stamp": dict(stamp), "frame_id": parent}, "child_frame_id": child,
            "transform": {"translation": dict(zip("xyz", xyz)), "rotation": dict(zip("xyzw", quaternion))}}
