"""One agent of the synthetic world: its pose on the loop and its INS, LiDAR and camera outputs.

Everything is a function of the world time t (the stream's stamp) and the seed:
* the truth pose is a pure function of t;
* the INS error state advances with each epoch, so ins_values() must be called in increasing t;
* the noise of a LiDAR scan or a camera image is seeded from (seed, agent, sensor, stamp), so a
  frame is the same whichever thread renders it, in whatever order, and whether others were dropped.

lidar_points() and camera_image() may run in worker threads at the same time as ins_values().
"""

from __future__ import annotations

import math
import threading
import zlib

import numpy as np

from acres_sim.protocol import Hello, column_firing_offsets

from .georef import Georeference
from .sensors import CameraModel, InsModel, Kinematics, LidarModel, Pose
from .vehicles import VEHICLES, lidar_elevations_deg
from .world import Scene, default_scene, rpy_matrix

_INS_STREAM, _LIDAR_STREAM, _CAMERA_STREAM, _CAMERA_NOISE_STREAM = 1, 2, 3, 4
_MASK64 = (1 << 64) - 1


def _elevations(hello: Hello) -> np.ndarray:
    if hello.vehicle in VEHICLES:
        table = lidar_elevations_deg(hello.vehicle)
        if len(table) == hello.lidar.rings:
            return table
    # a layout this module does not know: evenly spaced rings, the recorder's default span
    return np.linspace(-20.0, 10.0, hello.lidar.rings) if hello.lidar.rings > 1 else np.zeros(1)


class AgentSimulator:
    """The sensor outputs of one agent driving the loop of the scene."""

    def __init__(self, hello: Hello, seed: int = 42, noise: bool = True, start_offset_m: float = 0.0,
                 *, scene: Scene | None = None, georef: Georeference | None = None):
        self.hello = hello
        self.seed = int(seed)
        self.noise = bool(noise)
        self.start_offset_m = float(start_offset_m)
        self.scene = scene if scene is not None else default_scene()
        self.route = self.scene.route
        self._agent_key = zlib.crc32(hello.agent.encode("utf-8"))
        if hello.georeferenced:
            zone = hello.ins.utm_zone or 16
            self.georef: Georeference | None = georef or Georeference(utm_zone=zone)
        else:
            self.georef = None
        self._ins = InsModel(self.georef, hello.ins.position_flu_m,
                             rng=self._rng(_INS_STREAM) if self.noise else None)
        self._lidar = LidarModel(hello.lidar, _elevations(hello)) if hello.lidar.enabled else None
        self._camera: CameraModel | None = None
        self._camera_lock = threading.Lock()

    def _rng(self, *stream: int) -> np.random.Generator:
        words = [self.seed & _MASK64, self._agent_key, *(s & _MASK64 for s in stream)]
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(words)))

    @staticmethod
    def _stamp_key(t: float) -> int:
        return round(t * 1e9)  # nanoseconds: one key per stamp

    # -- truth -----------------------------------------------------------------------------------

    def kinematics(self, t: float) -> Kinematics:
        """Exact motion of base_footprint at world time t (flat ground: roll = pitch = 0)."""
        speed = self.route.speed_mps
        s = self.route.sample(self.start_offset_m + speed * t)
        rotation = rpy_matrix(0.0, 0.0, s.yaw)
        quaternion = np.array([0.0, 0.0, math.sin(0.5 * s.yaw), math.cos(0.5 * s.yaw)])
        yaw_rate = speed * s.curvature
        return Kinematics(
            position=np.array([s.x, s.y, 0.0]),
            rotation=rotation,
            quaternion=quaternion,
            velocity_body=np.array([speed, 0.0, 0.0]),
            angular_rate_body=np.array([0.0, 0.0, yaw_rate]),
            acceleration_body=np.array([0.0, speed * yaw_rate, 0.0]),  # centripetal, to the left
            speed=speed,
        )

    def truth_pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """base_footprint position (3,) in the world (ENU, m) and quaternion (x, y, z, w) body -> world."""
        kin = self.kinematics(t)
        return kin.position, kin.quaternion

    def body_pose(self, t: float) -> Pose:
        kin = self.kinematics(t)
        return Pose(kin.position, kin.rotation)

    # -- sensors ---------------------------------------------------------------------------------

    def ins_values(self, t: float) -> np.ndarray:
        """(40,) float64: one INS epoch at world time t. Call with increasing t."""
        return self._ins.epoch(float(t), self.kinematics(t))

    def lidar_points(self, t_end: float) -> np.ndarray:
        """(columns, rings, 4) float32: the sweep that ends at t_end (the frame's stamp).

        Motion-true, as the protocol page describes the real sensor: each column is cast from the
        mount pose at its own firing time and its points are in the sensor frame of that instant,
        so a moving, turning vehicle produces a skewed sweep (deskew with the per-point time)."""
        if self._lidar is None:
            raise ValueError(f"agent {self.hello.agent} has no LiDAR in its Hello")
        lidar = self.hello.lidar
        times = t_end + column_firing_offsets(lidar.columns, lidar.hz)
        rng = self._rng(_LIDAR_STREAM, self._stamp_key(t_end)) if self.noise else None
        return self._lidar.render_sweep(self.scene, times, self.lidar_pose, rng)

    def lidar_pose(self, t: float) -> Pose:
        """The LiDAR's pose in the world at world time t (its mount on the moving body)."""
        lidar = self.hello.lidar
        return self.body_pose(t).compose(lidar.position_flu_m, lidar.rpy_deg)

    def prepare(self) -> None:
        """Build the sensor models now. The camera's ray table (the lens model inverted for every
        pixel) takes over a second; built lazily, the world would stall at the first client while
        it waits for that first image."""
        if self.hello.camera.enabled:
            self._camera_model()

    def _camera_model(self) -> CameraModel:
        with self._camera_lock:
            if self._camera is None:
                self._camera = CameraModel(self.hello.camera)
            return self._camera

    def camera_image(self, t: float) -> np.ndarray:
        """(height, width, 3) uint8 bgr8: the camera sample at world time t."""
        if not self.hello.camera.enabled:
            raise ValueError(f"agent {self.hello.agent} has no camera in its Hello")
        model = self._camera_model()
        cam = self.hello.camera
        pose = self.body_pose(t).compose(cam.position_flu_m, cam.rpy_deg)
        rng = noise_rng = None
        if self.noise:
            rng = self._rng(_CAMERA_STREAM, self._stamp_key(t))
            noise_rng = self._rng(_CAMERA_NOISE_STREAM)
        return model.render(self.scene, pose, rng, noise_rng)
