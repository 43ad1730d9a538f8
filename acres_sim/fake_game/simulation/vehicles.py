"""The sensor layouts of the two ACRES vehicles, as the Hello frame describes them.

The Polaris (Purdue Ranger) is the protocol page's Hello example value for value. The Maxxum tractor
uses the recorder's defaults of the protocol page (LiDAR 180 x 8, -20..10 deg, 60 m, counter-clockwise
columns), no camera, and the INS the stream adds to a vehicle without one (100 Hz, base_footprint).
The LiDAR ring tables are not part of the Hello; lidar_elevations_deg gives the ones the fake world
fires.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from acres_sim.description.vehicle_urdf import VehicleGeometry
from acres_sim.fake_game.simulation.session_config import FLAVORS, SENSORS, check_sensors
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.stream.hello import CameraConfig, Hello, InsConfig, LidarConfig

VEHICLES = ("polaris", "maxxum")

MOUNT_CONVENTION = (
    "position_flu_m: metres from base_footprint in the body FLU frame (x forward, y left, z up); "
    "rpy_deg: roll, pitch, yaw in degrees about the fixed FLU axes, R = Rz(yaw) Ry(pitch) Rx(roll), "
    "positive pitch looks down"
)

# A RoboSense Helios-like 32-beam table (-55..+15 deg, dense about the horizon), lowest ring first.
_POLARIS_ELEVATIONS_DEG = (
    -55.0, -45.0, -37.0, -31.0, -26.0, -22.0, -19.0, -16.5,
    -14.5, -12.5, -11.0, -9.5, -8.0, -7.0, -6.0, -5.0,
    -4.0, -3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0,
    4.0, 5.0, 6.5, 8.0, 9.5, 11.0, 13.0, 15.0,
)
_MAXXUM_RINGS = 8

_POLARIS_LIDAR = LidarConfig(
    enabled=True, frame_id="lidar", hz=10.0, columns=1800, rings=32, range_m=161.3,
    azimuth_order="cw", position_flu_m=(2.5, 0.0, 2.039), rpy_deg=(-1.518, 5.317, 0.0),
)
_POLARIS_CAMERA = CameraConfig(
    enabled=True, hz=10.0, width=896, height=512,
    fx=599.526, fy=592.378, cx=440.130, cy=270.805,
    distortion_model="plumb_bob", d=(-0.55389, 0.40842, -0.0099785, 0.0044239, -0.16673),
    encoding="bgr8", position_flu_m=(2.745, 0.606, 1.887), rpy_deg=(-3.49, 16.52, -2.63),
)
_POLARIS_INS = InsConfig(
    enabled=True, hz=100.0, position_flu_m=(0.0, 0.0, 0.0), utm_zone=16, datum="nad83_2011",
    imu_position_flu_m=(0.95, -0.45, 0.7), gnss_antenna_flu_m=(1.1, 0.0, 2.15),
)
_POLARIS_BODY_ORIGIN = (1.14808, 0.0, 0.65536)

# The tractor: a roof LiDAR tilted 3 deg down, INS point at base_footprint.
_MAXXUM_LIDAR = LidarConfig(
    enabled=True, frame_id="lidar", hz=10.0, columns=180, rings=_MAXXUM_RINGS, range_m=60.0,
    azimuth_order="ccw", position_flu_m=(3.0, 0.0, 2.8), rpy_deg=(0.0, 3.0, 0.0),
)
_MAXXUM_INS = InsConfig(
    enabled=True, hz=100.0, position_flu_m=(0.0, 0.0, 0.0), utm_zone=16, datum="nad83_2011",
    imu_position_flu_m=(1.3, 0.0, 1.0), gnss_antenna_flu_m=(1.6, 0.0, 3.1),
)
_MAXXUM_BODY_ORIGIN = (1.35, 0.0, 0.85)


def _check_vehicle(vehicle: str) -> None:
    if vehicle not in VEHICLES:
        raise ValueError(f"unknown vehicle {vehicle!r}; expected one of {', '.join(VEHICLES)}")


def vehicle_hello(vehicle: str, agent: str | None = None, georeferenced: bool = True,
                  flavor: str = "game", sensors: Sequence[str] = SENSORS) -> Hello:
    """The Hello of one agent driving `vehicle`. flavor "core" is the ACRES Core server: no camera.
    sensors: the ones it carries (a learner that observes no camera needs no camera rendered)."""
    _check_vehicle(vehicle)
    if flavor not in FLAVORS:
        raise ValueError(f"unknown flavor {flavor!r}; expected one of {', '.join(FLAVORS)}")
    check_sensors(sensors)
    if agent is not None and not agent:
        raise ValueError("agent name must not be empty")
    if vehicle == "polaris":
        body, lidar, camera, ins = _POLARIS_BODY_ORIGIN, _POLARIS_LIDAR, _POLARIS_CAMERA, _POLARIS_INS
    else:
        body, lidar, ins = _MAXXUM_BODY_ORIGIN, _MAXXUM_LIDAR, _MAXXUM_INS
        camera = CameraConfig(enabled=False)
    if flavor == "core" or "camera" not in sensors:
        camera = CameraConfig(enabled=False)
    if "lidar" not in sensors:
        lidar = LidarConfig(enabled=False, frame_id=lidar.frame_id)
    if "ins" not in sensors:
        ins = InsConfig(enabled=False)
    return Hello(
        agent=agent or vehicle,
        vehicle=vehicle,
        georeferenced=bool(georeferenced),
        body_origin_flu_m=body,
        lidar=lidar,
        camera=camera,
        ins=ins,
        mount_convention=MOUNT_CONVENTION,
    )


def lidar_elevations_deg(vehicle: str) -> np.ndarray:
    """Elevation of every ring in ring order (the second index of the organised cloud), degrees."""
    _check_vehicle(vehicle)
    if vehicle == "polaris":
        return np.array(_POLARIS_ELEVATIONS_DEG)
    return np.linspace(-20.0, 10.0, _MAXXUM_RINGS)


def vehicle_geometry(vehicle: str) -> VehicleGeometry:
    """The dimensions of a vehicle of the fake world (what its AgentInfo says), for its URDF."""
    _check_vehicle(vehicle)
    p = VEHICLE_PARAMS[vehicle]
    origin = _POLARIS_BODY_ORIGIN if vehicle == "polaris" else _MAXXUM_BODY_ORIGIN
    return VehicleGeometry(vehicle, p.wheelbase_m, p.track_m, p.wheel_radius_m, p.length_m, p.width_m,
                           p.height_m, p.rear_overhang_m, tuple(float(v) for v in origin))
