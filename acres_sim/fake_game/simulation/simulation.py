"""One agent of the synthetic world: its pose on the loop and its INS, LiDAR and camera outputs.

Everything is a function of the world time t (the stream's stamp) and the seed:
* the truth pose is a function of t and of the agent's motion: driving its route from a start time
  (RouteMotion), held where the control channel put it (HeldMotion), or driven by its vehicle
  model through the Vehicle Bridge (DrivenMotion: the track of the steps so far);
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

from acres_sim.stream.hello import Hello

from acres_sim.stream.timing import column_firing_offsets
from acres_sim.rotations import matrix_to_quaternion, quaternion_of

from acres_sim.fake_game.world.conditions import CLEAR_DAY, Conditions
from acres_sim.fake_game.world.georef import Georeference
from acres_sim.fake_game.world.motion import DriveKnot, DrivenMotion, HeldMotion, Motion, RouteMotion
from acres_sim.fake_game.world.route import DriveProfile
from acres_sim.fake_game.world.scene import Scene, default_scene
from acres_sim.fake_game.simulation.camera_model import CameraModel
from acres_sim.fake_game.simulation.ins_model import InsModel
from acres_sim.fake_game.simulation.lidar_model import compiled_caster, LidarModel
from acres_sim.fake_game.simulation.poses import Kinematics, Pose, mount_pose
from acres_sim.fake_game.simulation.shifts import CALIBRATED, VehicleShift
from acres_sim.fake_game.simulation.vehicles import VEHICLES, lidar_elevations_deg

Vec3 = tuple[float, float, float]
Frame = tuple[Vec3, Vec3, Vec3, Vec3]  # a position and the forward, left and up axes (a rotation's columns)
_INS_STREAM, _LIDAR_STREAM, _CAMERA_STREAM, _CAMERA_NOISE_STREAM, _AIR_STREAM = 1, 2, 3, 4, 5
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
                 *, scene: Scene | None = None, georef: Georeference | None = None,
                 compiled_lidar: bool = True):
        self.hello = hello
        self.seed = int(seed)
        self.noise = bool(noise)
        self.start_offset_m = float(start_offset_m)
        self.scene = scene if scene is not None else default_scene()
        self.route = self.scene.route
        self.drive = DriveProfile(self.route.speed_mps, self.route.length_m, self._level_stop())
        self._agent_key = zlib.crc32(hello.agent.encode("utf-8"))
        if hello.georeferenced:
            zone = hello.ins.utm_zone or 16
            self.georef: Georeference | None = georef or Georeference(utm_zone=zone)
        else:
            self.georef = None
        self._ins = self._new_ins()
        self._motion: Motion = RouteMotion()
        self._kinematics: tuple[Motion, tuple, Kinematics] | None = None  # the last one, by its key
        self._lidar = LidarModel(hello.lidar, _elevations(hello)) if hello.lidar.enabled else None
        # False: the arrays cast every sweep (a cached game's few sweeps cost less than loading the
        # compiled caster)
        self.compiled_lidar = bool(compiled_lidar)
        self._camera: CameraModel | None = None
        self._camera_lock = threading.Lock()
        # The world as the control channel varies it (changed between steps, never while a render runs)
        self.conditions: Conditions = CLEAR_DAY
        self.shift: VehicleShift = CALIBRATED

    def _new_ins(self) -> InsModel:
        return InsModel(self.georef, self.hello.ins.position_flu_m,
                        rng=self._rng(_INS_STREAM) if self.noise else None)

    def _rng(self, *stream: int) -> np.random.Generator:
        words = [self.seed & _MASK64, self._agent_key, *(s & _MASK64 for s in stream)]
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(words)))

    @staticmethod
    def _stamp_key(t: float) -> int:
        return round(t * 1e9)  # nanoseconds: one key per stamp

    # -- truth -----------------------------------------------------------------------------------

    def _level_stop(self) -> float:
        """Where in each lap the vehicle stands: the most level spot of its route (at rest the INS
        then reads AccelZ = 9.81 and no tilt to speak of), with room to brake and start."""
        route, terrain = self.route, self.scene.terrain
        margin = DriveProfile.braking_distance(self.route.speed_mps, DriveProfile.accel) + 1.0
        candidates = np.arange(margin, route.length_m - margin, 1.0)
        if terrain is None or not candidates.size:
            return 0.5 * route.length_m

        def tilt(p: float) -> float:
            s = route.sample(self.start_offset_m + p)
            return float(self.scene.ground_normal(s.x, s.y)[2])
        return float(max(candidates, key=tilt))

    # -- motion (changed by the control channel between steps, never while a render runs) ------

    @property
    def motion(self) -> Motion:
        return self._motion

    def place(self, motion: Motion) -> None:
        """Drive or hold from now on as `motion` says (teleport, or back to the route)."""
        self._motion = motion

    def shift_time(self, dt: float) -> None:
        """The world clock jumps by dt (a TIME reset: dt < 0): the agent goes on from where it is,
        and its INS accepts the earlier epochs that follow (its error state carries on)."""
        self._motion = self._motion.shifted(dt)
        self._ins.shift_time(dt)

    def restart(self) -> None:
        """As launched: on the route from its start at world time 0, a new INS error process."""
        self._motion = RouteMotion()
        self._ins = self._new_ins()

    def _pose(self, t: float, motion: Motion | None = None) -> tuple[np.ndarray, np.ndarray]:
        """base_footprint position and body -> world rotation at world time t. On the route: on the
        ground, its z axis along the ground's normal and its x axis the route's heading in the
        ground's plane (the direction of travel, so there is no sideways velocity)."""
        motion = self._motion if motion is None else motion
        if isinstance(motion, HeldMotion):
            return motion.pose(t)
        return self.on_ground(*self.planar(t, motion))

    def planar(self, t: float, motion: Motion | None = None) -> tuple[float, float, float]:
        """x, y and heading of base_footprint at world time t."""
        motion = self._motion if motion is None else motion
        if isinstance(motion, DrivenMotion):
            return motion.planar(t)
        if isinstance(motion, HeldMotion):
            position, rotation = motion.pose(t)
            return float(position[0]), float(position[1]), math.atan2(rotation[1, 0], rotation[0, 0])
        distance, _speed, _accel = self.drive.state(t - motion.start_s)
        s = self.route.sample(self.start_offset_m + distance)
        return s.x, s.y, s.yaw

    def on_ground(self, x: float, y: float, yaw: float) -> tuple[np.ndarray, np.ndarray]:
        """base_footprint at (x, y) heading yaw, standing on the ground: position and rotation."""
        z, (fx, fy, fz), (lx, ly, lz), (ux, uy, uz) = self._ground_frame(x, y, yaw)
        return (np.array([x, y, z]),
                np.array([[fx, lx, ux], [fy, ly, uy], [fz, lz, uz]]))

    def _ground_frame(self, x: float, y: float, yaw: float) -> tuple[float, Vec3, Vec3, Vec3]:
        """on_ground in plain floats: the ground's height and the body's forward, left and up axes
        (the rotation's columns). Every physics step asks for several, and numpy costs more on three
        numbers than the arithmetic."""
        terrain = self.scene.terrain
        z, gx, gy = (0.0, 0.0, 0.0) if terrain is None else terrain.at(x, y)
        k = 1.0 / math.sqrt(1.0 + gx * gx + gy * gy)
        ux, uy, uz = -gx * k, -gy * k, k  # the ground's normal
        hx, hy = math.cos(yaw), math.sin(yaw)
        # forward: the heading lifted onto the ground's plane, the direction the body moves in
        fx, fy, fz = hx, hy, gx * hx + gy * hy
        n = 1.0 / math.sqrt(fx * fx + fy * fy + fz * fz)
        fx, fy, fz = fx * n, fy * n, fz * n
        left = (uy * fz - uz * fy, uz * fx - ux * fz, ux * fy - uy * fx)  # up x forward
        return z, (fx, fy, fz), left, (ux, uy, uz)

    def grade(self, x: float, y: float, yaw: float) -> float:
        """The ground's slope along the heading at (x, y): rise over run, + uphill."""
        terrain = self.scene.terrain
        if terrain is None:
            return 0.0
        _z, gx, gy = terrain.at(x, y)
        return gx * math.cos(yaw) + gy * math.sin(yaw)

    def track_knot(self, t: float, kin: Kinematics | None = None) -> DriveKnot:
        """The planar state at world time t as a track knot: x, y, heading, signed speed and yaw
        rate. Driven: the vehicle model's knot itself (so that a replay of logged knots draws the
        same track); otherwise from the motion's kinematics. A vehicle model takes over from it."""
        motion = self._motion
        if isinstance(motion, DrivenMotion):
            knot = motion.knot_at(t)
            if knot is not None:
                return knot
        kin = self.kinematics(t) if kin is None else kin
        rotation = kin.rotation
        return DriveKnot(t, float(kin.position[0]), float(kin.position[1]),
                         math.atan2(rotation[1, 0], rotation[0, 0]), float(kin.velocity_body[0]),
                         float(kin.angular_rate_body[2]))

    def kinematics(self, t: float, dt: float = 1e-3) -> Kinematics:
        """Motion of base_footprint at world time t. Rates from central differences over +-dt of the
        exact pose (errors of order dt^2: micrometres per second); at a stand they are exactly 0.
        The last result is kept: a step's INS epoch and its agent state ask for the same one."""
        motion = self._motion  # one motion for all three samples
        version = motion.revision if isinstance(motion, DrivenMotion) else None
        cached = self._kinematics
        if cached is not None and cached[0] is motion and cached[1] == (t, dt, version):
            return cached[2]
        kin = self._kinematics_of(motion, t, dt)
        self._kinematics = (motion, (t, dt, version), kin)
        return kin

    def _kinematics_of(self, motion: Motion, t: float, dt: float) -> Kinematics:
        frames = [self._frame(motion, s) for s in (t, t + dt, t - dt)]
        return _central_differences(*frames, dt)

    def _frame(self, motion: Motion, t: float) -> Frame:
        """_pose in plain floats: base_footprint's position and its forward, left and up axes."""
        if isinstance(motion, HeldMotion):
            position, rotation = motion.pose(t)
            return tuple(position.tolist()), *map(tuple, rotation.T.tolist())  # type: ignore[return-value]
        x, y, yaw = self.planar(t, motion)
        z, forward, left, up = self._ground_frame(x, y, yaw)
        return (x, y, z), forward, left, up

    def truth_pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """base_footprint position (3,) in the world (ENU, m) and quaternion (x, y, z, w) body -> world."""
        position, rotation = self._pose(t)
        return position, matrix_to_quaternion(rotation)

    def body_pose(self, t: float) -> Pose:
        return Pose(*self._pose(t))

    # -- sensors ---------------------------------------------------------------------------------

    def ins_values(self, t: float) -> np.ndarray:
        """(40,) float64: one INS epoch at world time t. Call with increasing t."""
        return self._ins.epoch(float(t), self.kinematics(t))

    def skip_ins(self, t: float) -> None:
        """The INS epoch at world time t, unread: its error model goes on as if it were read."""
        self._ins.skip(float(t))

    def lidar_points(self, t_end: float) -> np.ndarray:
        """(columns, rings, 4) float32: the sweep that ends at t_end (the frame's stamp).

        Motion-true, as the protocol page describes the real sensor: each column is cast from the
        mount pose at its own firing time and its points are in the sensor frame of that instant,
        so a moving, turning vehicle produces a skewed sweep (deskew with the per-point time)."""
        if self._lidar is None:
            raise ValueError(f"agent {self.hello.agent} has no LiDAR in its Hello")
        lidar = self.hello.lidar
        times = t_end + column_firing_offsets(lidar.columns, lidar.hz)
        key = self._stamp_key(t_end)
        rng = self._rng(_LIDAR_STREAM, key) if self.noise else None
        conditions = self.conditions
        air = self._rng(_AIR_STREAM, key) if conditions.extinction_per_m > 0.0 else None
        return self._lidar.render_sweep(self.scene, times, self.lidar_pose, rng, conditions=conditions,
                                        air_rng=air, compiled=self.compiled_lidar)

    def lidar_pose(self, t: float) -> Pose:
        """The LiDAR's pose in the world at world time t: its mount on the moving body, as shifted."""
        lidar, shift = self.hello.lidar, self.shift
        return self._mount_pose(t, lidar.position_flu_m, lidar.rpy_deg, shift.lidar_offset_m,
                                shift.lidar_rpy_deg)

    def camera_pose(self, t: float) -> Pose:
        """The camera's pose in the world at world time t: its mount on the body, as shifted."""
        cam, shift = self.hello.camera, self.shift
        return self._mount_pose(t, cam.position_flu_m, cam.rpy_deg, shift.camera_offset_m,
                                shift.camera_rpy_deg)

    def _mount_pose(self, t: float, position, rpy, offset, rpy_offset) -> Pose:
        """A mount of the Hello with a shift's offsets added (none: the calibrated mount, bit for bit)."""
        if not self.shift.calibrated:
            position, rpy = np.add(position, offset), np.add(rpy, rpy_offset)
        return self.body_pose(t).compose(mount_pose(tuple(map(float, position)), tuple(map(float, rpy))))

    def prepare(self) -> None:
        """Build the sensor models now. The camera's ray table (the lens model inverted for every
        pixel) takes over a second; built lazily, the world would stall at the first client while
        it waits for that first image. Likewise the LiDAR's compiled caster (about 1 s to load)."""
        if self.hello.camera.enabled:
            self._camera_model()
        if self._lidar is not None and self.compiled_lidar:
            compiled_caster()

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
        pose = self.camera_pose(t)
        rng = noise_rng = None
        if self.noise:
            rng = self._rng(_CAMERA_STREAM, self._stamp_key(t))
            noise_rng = self._rng(_CAMERA_NOISE_STREAM)
        return model.render(self.scene, pose, rng, noise_rng, self.conditions)


def _dot(a: Vec3, b: Vec3) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _rate(after: Vec3, before: Vec3, k: float) -> Vec3:
    """(after - before) * k: a central difference, k = 1 / (2 dt)."""
    return ((after[0] - before[0]) * k, (after[1] - before[1]) * k, (after[2] - before[2]) * k)


def _central_differences(now: Frame, after: Frame, before: Frame, dt: float) -> Kinematics:
    """The kinematics at an instant from base_footprint's frames there and dt after and before
    (errors of order dt^2), in plain floats (a few per physics step): with R's columns the axes
    f, l, u, R^T v = (f.v, l.v, u.v) and (R^T dR)[i, j] = axis_i . d axis_j."""
    (p0, f0, l0, u0), (p1, f1, l1, u1), (pm, fm, lm, um) = now, after, before
    k = 1.0 / (2.0 * dt)
    velocity, df, dl, du = (_rate(a, b, k) for a, b in ((p1, pm), (f1, fm), (l1, lm), (u1, um)))
    kk = 1.0 / (dt * dt)
    acceleration = ((p1[0] - 2.0 * p0[0] + pm[0]) * kk, (p1[1] - 2.0 * p0[1] + pm[1]) * kk,
                    (p1[2] - 2.0 * p0[2] + pm[2]) * kk)
    omega = (0.5 * (_dot(u0, dl) - _dot(l0, du)), 0.5 * (_dot(f0, du) - _dot(u0, df)),
             0.5 * (_dot(l0, df) - _dot(f0, dl)))
    velocity_body = (_dot(f0, velocity), _dot(l0, velocity), _dot(u0, velocity))
    return Kinematics(
        position=np.array(p0),
        rotation=np.array([[f0[0], l0[0], u0[0]], [f0[1], l0[1], u0[1]], [f0[2], l0[2], u0[2]]]),
        quaternion=np.array(quaternion_of(f0[0], l0[0], u0[0], f0[1], l0[1], u0[1], f0[2], l0[2], u0[2])),
        velocity_body=np.array(velocity_body),
        angular_rate_body=np.array(omega),
        # kinematic; the INS adds gravity
        acceleration_body=np.array((_dot(f0, acceleration), _dot(l0, acceleration), _dot(u0, acceleration))),
        speed=velocity_body[0],
    )
