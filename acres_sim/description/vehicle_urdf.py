"""A vehicle's URDF from its dimensions (ROS-free; primitive shapes, nothing to fetch).

The root link is `base_link`, where the Hello's /tf_static chain ends (base_footprint -> base_link
is the body origin): the description adds only what /tf_static lacks, the wheels. Every link and
joint name takes the frame prefix once ("polaris/base_link" with the prefix "polaris/").

    base_link                     the body: a box of the vehicle's length and width from the axle
                                  height to its height (visual); the collision box the fake world
                                  uses, from the ground up (acres_sim/bodies.py)
      front_left_steering_joint   revolute about z at the front axle, +/- half the track
        front_left_wheel_joint    continuous about y (the wheel's axle), a cylinder of the wheel's
                                  radius and WHEEL_WIDTH_PER_RADIUS x radius wide
      front_right_...             the same on the right
      rear_left_wheel_joint       continuous about y at the rear axle (base_footprint's origin)
      rear_right_wheel_joint
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WHEEL_WIDTH_PER_RADIUS = 0.75  # a look, not a measure: 0.25 m on the Polaris, 0.6 m on the Maxxum
STEERING_LIMIT_RAD = 1.4  # the inner wheel of the tightest Ackermann turn stays inside this
FRONT = ("front_left", "front_right")
REAR = ("rear_left", "rear_right")
WHEELS = FRONT + REAR
# The body's colour by vehicle (URDF material, RGBA); others grey.
BODY_RGBA = {"polaris": (0.36, 0.42, 0.30, 1.0), "maxxum": (0.72, 0.08, 0.08, 1.0)}
_TYRE_RGBA = (0.08, 0.08, 0.08, 1.0)


@dataclass(frozen=True)
class VehicleGeometry:
    """What the URDF and the joints need (m): AgentInfo's dimensions."""

    vehicle: str
    wheelbase_m: float
    track_m: float
    wheel_radius_m: float
    length_m: float
    width_m: float
    height_m: float
    rear_overhang_m: float
    body_origin_flu_m: tuple[float, float, float]  # base_link in base_footprint

    @staticmethod
    def from_agent_info(info: Mapping[str, Any]) -> VehicleGeometry:
        """From an acres_interfaces/AgentInfo (a dict of its fields)."""
        o = info["body_origin_flu_m"]
        geometry = VehicleGeometry(
            str(info["vehicle"]), float(info["wheelbase_m"]), float(info["track_m"]),
            float(info["wheel_radius_m"]), float(info["length_m"]), float(info["width_m"]),
            float(info["height_m"]), float(info["rear_overhang_m"]),
            (float(o["x"]), float(o["y"]), float(o["z"])))
        geometry.check()
        return geometry

    def check(self) -> None:
        sizes = {"wheelbase_m": self.wheelbase_m, "track_m": self.track_m,
                 "wheel_radius_m": self.wheel_radius_m,
                 "length_m": self.length_m, "width_m": self.width_m, "height_m": self.height_m}
        bad = [f"{k}={v!r}" for k, v in sizes.items() if not (math.isfinite(v) and v > 0.0)]
        if bad or not all(math.isfinite(v) for v in (self.rear_overhang_m, *self.body_origin_flu_m)):
            raise ValueError(f"a {self.vehicle} with dimensions that are not finite and positive: "
                             f"{', '.join(bad) or 'rear_overhang_m or body_origin_flu_m'}")

    @property
    def wheel_width_m(self) -> float:
        return WHEEL_WIDTH_PER_RADIUS * self.wheel_radius_m

    def wheel_position(self, wheel: str) -> tuple[float, float, float]:
        """A wheel's centre in base_link."""
        bx, by, bz = self.body_origin_flu_m
        x = self.wheelbase_m if wheel in FRONT else 0.0
        y = 0.5 * self.track_m if wheel.endswith("left") else -0.5 * self.track_m
        return x - bx, y - by, self.wheel_radius_m - bz


def joint_names(prefix: str) -> tuple[list[str], list[str]]:
    """(the steering joints, the wheel joints) in JointState order."""
    return ([f"{prefix}{w}_steering_joint" for w in FRONT], [f"{prefix}{w}_wheel_joint" for w in WHEELS])


def vehicle_urdf(geometry: VehicleGeometry, prefix: str = "", name: str = "") -> str:
    """The URDF document (a string) of one vehicle; name: the robot's name (default: the vehicle)."""
    g = geometry
    bx, by, bz = g.body_origin_flu_m
    robot = ET.Element("robot", name=name or g.vehicle)
    for material, rgba in (("body", BODY_RGBA.get(g.vehicle, (0.6, 0.6, 0.6, 1.0))), ("tyre", _TYRE_RGBA)):
        ET.SubElement(ET.SubElement(robot, "material", name=f"{prefix}{material}"), "color",
                      rgba=_numbers(rgba))
    base = ET.SubElement(robot, "link", name=f"{prefix}base_link")
    ahead = 0.5 * g.length_m - g.rear_overhang_m  # the box's centre ahead of base_footprint
    lift = g.wheel_radius_m  # the visual body rides above the axles, so the wheels show below it
    _box(base, "visual", (ahead - bx, -by, 0.5 * (lift + g.height_m) - bz),
         (g.length_m, g.width_m, g.height_m - lift), f"{prefix}body")
    _box(base, "collision", (ahead - bx, -by, 0.5 * g.height_m - bz), (g.length_m, g.width_m, g.height_m))
    _inertial(base, 1.0)
    _, wheel_joints = joint_names(prefix)
    for wheel, wheel_joint in zip(WHEELS, wheel_joints):
        parent = f"{prefix}base_link"
        origin = g.wheel_position(wheel)
        if wheel in FRONT:
            steering = f"{prefix}{wheel}_steering_link"
            link = ET.SubElement(robot, "link", name=steering)
            _inertial(link, 0.1)
            joint = ET.SubElement(robot, "joint", name=f"{prefix}{wheel}_steering_joint", type="revolute")
            _joint(joint, parent, steering, origin, (0.0, 0.0, 1.0))
            ET.SubElement(joint, "limit", lower=_number(-STEERING_LIMIT_RAD),
                          upper=_number(STEERING_LIMIT_RAD),
                          effort="1000", velocity="2")
            parent, origin = steering, (0.0, 0.0, 0.0)
        link = ET.SubElement(robot, "link", name=f"{prefix}{wheel}_wheel_link")
        for kind in ("visual", "collision"):
            element = ET.SubElement(link, kind)
            ET.SubElement(element, "origin", xyz="0 0 0", rpy=_numbers((math.pi / 2, 0.0, 0.0)))
            ET.SubElement(ET.SubElement(element, "geometry"), "cylinder",
                          radius=_number(g.wheel_radius_m), length=_number(g.wheel_width_m))
            if kind == "visual":
                ET.SubElement(element, "material", name=f"{prefix}tyre")
        _inertial(link, 1.0)
        joint = ET.SubElement(robot, "joint", name=wheel_joint, type="continuous")
        _joint(joint, parent, f"{prefix}{wheel}_wheel_link", origin, (0.0, 1.0, 0.0))
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding="unicode") + "\n"


def _box(link: ET.Element, kind: str, centre: tuple[float, float, float], size: tuple[float, float, float],
         material: str = "") -> None:
    element = ET.SubElement(link, kind)
    ET.SubElement(element, "origin", xyz=_numbers(centre), rpy="0 0 0")
    ET.SubElement(ET.SubElement(element, "geometry"), "box", size=_numbers(size))
    if material:
        ET.SubElement(element, "material", name=material)


def _joint(joint: ET.Element, parent: str, child: str, origin: tuple[float, float, float],
           axis: tuple[float, float, float]) -> None:
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=child)
    ET.SubElement(joint, "origin", xyz=_numbers(origin), rpy="0 0 0")
    ET.SubElement(joint, "axis", xyz=_numbers(axis))


def _inertial(link: ET.Element, mass: float) -> None:
    """A token inertia: the description is for drawing (some tools refuse links without one)."""
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "mass", value=_number(mass))
    ET.SubElement(inertial, "inertia", ixx="0.1", ixy="0", ixz="0", iyy="0.1", iyz="0", izz="0.1")


def _number(v: float) -> str:
    return repr(float(v))


def _numbers(values: tuple[float, ...]) -> str:
    return " ".join(_number(v) for v in values)


def frame_prefix(agent: str, agent_count: int) -> str:
    """The launch's rule: "<agent>/" when a session has more than one agent, else none."""
    return f"{agent}/" if agent_count > 1 else ""
