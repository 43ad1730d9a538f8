"""Sensor models of fake_game: the organised LiDAR, the distorted camera and the INS epoch.

LiDAR: one ray per cell, fired from the mount pose. Column k points at azimuth -360 k / columns deg
("cw") or +360 k / columns deg ("ccw"), column 0 forward; ring r at the table's elevation. Cell
(c, r) of the cloud is the point in the sensor frame (FLU), NaN and intensity 0 without a return.

Camera: for each output pixel the plumb_bob model is inverted (Newton, once per intrinsics) to a ray
of the camera frame (FLU; the optical frame is x right, y down, z forward). Pixels beyond the
model's monotonic range (the corners of a strongly barrel-distorted lens have no preimage) stay
black, like a vignette. The scene is shaded with one sun, haze towards the horizon and a sky gradient,
as the world's conditions say (world/conditions.py: light, wet ground, dust and fog).

INS: position errors as a first-order Gauss-Markov process plus white noise, heading and roll /
pitch errors as Gauss-Markov processes, white noise on velocity, angular rate and specific force.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from acres_sim.stream.protocol import INS_FIELDS, INS_GEO_FIELDS, Ins

from acres_sim.stream.hello import CameraConfig, LidarConfig
from acres_sim.rotations import matrix_to_quaternion, rpy_matrix

from acres_sim.fake_game.world.conditions import (
    CLEAR_DAY,
    CLEAR_HAZE_M,
    DUST_RETURN_INTENSITY,
    SKY_AIR_M,
    Conditions,
)
from acres_sim.fake_game.world.georef import Georeference
from acres_sim.fake_game.world.materials import COLOUR_TABLE, GROUND, INTENSITY_TABLE, MAT
from acres_sim.fake_game.world.raycast import Motion, RayBundle, block_groups, cast
from acres_sim.fake_game.world.scene import Scene

GRAVITY_MPS2 = 9.81  # the protocol page's value at rest

# ---------------------------------------------------------------------------------------------
# Shared helpers


@dataclass(frozen=True)
class Pose:
    """A sensor (or body) pose in the world: position (m) and the sensor -> world rotation."""

    position: np.ndarray
    rotation: np.ndarray

    def compose(self, position_flu_m, rpy_deg) -> Pose:
        """The pose of a mount given in this frame (Hello position and roll / pitch / yaw)."""
        r, p, y = (math.radians(float(a)) for a in rpy_deg)
        return Pose(self.position + self.rotation @ np.asarray(position_flu_m, float),
                    self.rotation @ rpy_matrix(r, p, y))


# ---------------------------------------------------------------------------------------------
# LiDAR


def beam_azimuths_deg(columns: int, azimuth_order: str) -> np.ndarray:
    """Azimuth of every column in the sensor frame, counter-clockwise from forward, degrees."""
    k = np.arange(columns, dtype=np.float64)
    if azimuth_order == "cw":
        return -360.0 * k / columns
    if azimuth_order == "ccw":
        return 360.0 * k / columns
    raise ValueError(f"azimuth_order must be cw or ccw, got {azimuth_order!r}")


class LidarModel:
    """Renders organised clouds for one LiDAR configuration."""

    def __init__(self, config: LidarConfig, elevations_deg: np.ndarray, range_noise_m: float = 0.01):
        if len(elevations_deg) != config.rings:
            raise ValueError(f"{len(elevations_deg)} ring elevations for {config.rings} rings")
        self.config = config
        self.range_noise_m = range_noise_m
        az = np.radians(beam_azimuths_deg(config.columns, config.azimuth_order))
        el = np.radians(np.asarray(elevations_deg, np.float64))
        ce = np.cos(el)
        dirs = np.stack([
            np.cos(az)[:, None] * ce[None, :],
            np.sin(az)[:, None] * ce[None, :],
            np.broadcast_to(np.sin(el)[None, :], (config.columns, config.rings)),
        ], axis=-1)  # (columns, rings, 3): cell c * rings + r
        self.dirs = dirs
        self._dirs32 = dirs.astype(np.float32)
        # culling groups: 10 columns x 8 rings
        groups = block_groups(config.columns, config.rings, min(10, config.columns), min(8, config.rings))
        self.bundle = RayBundle.build(dirs.reshape(-1, 3), groups, np.float32)

    def render(self, scene: Scene, sensor: Pose, rng: np.random.Generator | None,
               conditions: Conditions = CLEAR_DAY, air_rng: np.random.Generator | None = None) -> np.ndarray:
        """(columns, rings, 4) float32 from a sensor that stands still: x, y, z in the sensor frame
        and intensity. air_rng: the draws of dust and fog (needed when there is any)."""
        hits = cast(scene, self.bundle, sensor.position, sensor.rotation, self.config.range_m)
        return self._points(hits, rng, conditions, air_rng)

    def render_sweep(self, scene: Scene, times: np.ndarray, pose_at: Callable[[float], Pose],
                     rng: np.random.Generator | None, knots: int = 19, conditions: Conditions = CLEAR_DAY,
                     air_rng: np.random.Generator | None = None) -> np.ndarray:
        """(columns, rings, 4) float32 of a moving sensor: column c is fired from pose_at(times[c])
        and its points are in the sensor frame of that instant, as a spinning LiDAR's are.

        The pose is evaluated at `knots` instants of the sweep and interpolated in between
        (position linearly, rotation along the geodesic). Against exact per-column poses over a
        lap of the fake world: within 0.2 mm and 77 urad (12 mm at 160 m), the worst where a sweep
        enters or leaves a corner; 9 knots gave 711 urad."""
        cfg = self.config
        times = np.asarray(times, np.float64)
        positions, rotations = _sweep_poses(times, pose_at, knots)
        mid = len(times) // 2
        dirs = np.matmul(rotations, self.dirs.transpose(0, 2, 1)).transpose(1, 0, 2).reshape(3, -1)
        origins = np.repeat(positions.T, cfg.rings, axis=1)
        turn = _rotation_vectors(np.einsum("cji,jk->cik", rotations, rotations[mid]))  # R_c^T R_mid
        slack_m = float(np.linalg.norm(positions - positions[mid], axis=1).max())
        slack_rad = float(np.linalg.norm(turn, axis=1).max()) + 1e-9
        # float32 like the cloud itself (7.6 um steps at 100 m): half the memory traffic of float64
        motion = Motion(origins.astype(np.float32), dirs.astype(np.float32), slack_m=slack_m,
                        slack_rad=slack_rad)
        hits = cast(scene, self.bundle, positions[mid], rotations[mid], cfg.range_m, motion=motion)
        return self._points(hits, rng, conditions, air_rng)

    def _points(self, hits, rng: np.random.Generator | None, conditions: Conditions,
                air_rng: np.random.Generator | None) -> np.ndarray:
        cfg = self.config
        f32 = np.float32
        dist = hits.distance.reshape(cfg.columns, cfg.rings).astype(f32)
        material = hits.material.reshape(dist.shape)
        intensity = INTENSITY_TABLE[material]
        if conditions.wetness > 0.0:
            intensity[np.isin(material, GROUND)] *= f32(conditions.ground_reflectivity)
        extinction = conditions.extinction_per_m
        if extinction > 0.0:
            if air_rng is None:
                raise ValueError("dust or fog needs the draws of the air (air_rng)")
            # where the beam meets the particles, counted both ways: lost there if before its hit
            met = air_rng.exponential(1.0 / (2.0 * extinction), dist.shape).astype(f32)
            lost = met < np.minimum(dist, f32(cfg.range_m))
            dust_share = conditions.dust / (conditions.dust + conditions.fog)
            echo = lost & (air_rng.random(dist.shape) < 0.5 * dust_share)
            dist[lost] = np.inf
            dist[echo] = met[echo]  # back from the dust cloud: short and weak
            intensity[echo] = f32(DUST_RETURN_INTENSITY)
        valid = np.isfinite(dist)
        if rng is not None and self.range_noise_m > 0.0:
            noise = rng.standard_normal(dist.shape, dtype=f32)
            noise *= f32(self.range_noise_m)
            dist += noise
        dist[~valid] = np.nan
        out = np.empty((cfg.columns, cfg.rings, 4), f32)
        np.multiply(self._dirs32, dist[..., None], out=out[..., :3])
        out[..., 3] = np.where(valid, intensity, f32(0.0))
        return out


def _rotation_vectors(rotations: np.ndarray) -> np.ndarray:
    """(K, 3, 3) rotations (angles below pi) -> (K, 3) rotation vectors (log map)."""
    cos = np.clip((np.trace(rotations, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    angle = np.arccos(cos)
    axis = np.stack([rotations[:, 2, 1] - rotations[:, 1, 2], rotations[:, 0, 2] - rotations[:, 2, 0],
                     rotations[:, 1, 0] - rotations[:, 0, 1]], axis=1)
    sin = np.sin(angle)
    scale = np.where(sin > 1e-12, angle / np.where(sin > 1e-12, 2.0 * sin, 1.0), 0.5)
    return axis * scale[:, None]


def _rotation_matrices(vectors: np.ndarray) -> np.ndarray:
    """(K, 3) rotation vectors -> (K, 3, 3) rotations (Rodrigues)."""
    angle = np.linalg.norm(vectors, axis=1)
    k = vectors / np.where(angle > 1e-15, angle, 1.0)[:, None]
    kx = np.zeros((len(vectors), 3, 3))
    kx[:, 0, 1], kx[:, 0, 2], kx[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    kx[:, 1, 0], kx[:, 2, 0], kx[:, 2, 1] = k[:, 2], -k[:, 1], k[:, 0]
    cos, s = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    # cos I + sin [k]x + (1 - cos) k k^T: no stack of 3x3 matrix products
    return cos * np.eye(3) + s * kx + (1.0 - cos) * (k[:, :, None] * k[:, None, :])


def _sweep_poses(times: np.ndarray, pose_at: Callable[[float], Pose], knots: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Positions (C, 3) and rotations (C, 3, 3) at `times`, interpolated between `knots` poses."""
    knot_t = np.linspace(times[0], times[-1], max(2, knots))
    poses = [pose_at(float(t)) for t in knot_t]
    knot_p = np.array([p.position for p in poses])
    knot_r = np.array([p.rotation for p in poses])
    span = knot_t[-1] - knot_t[0]
    if span <= 0.0:
        return np.repeat(knot_p[:1], len(times), 0), np.repeat(knot_r[:1], len(times), 0)
    j = np.clip(np.searchsorted(knot_t, times, side="right") - 1, 0, len(knot_t) - 2)
    a = (times - knot_t[j]) / (knot_t[j + 1] - knot_t[j])
    positions = knot_p[j] + a[:, None] * (knot_p[j + 1] - knot_p[j])
    steps = _rotation_vectors(np.einsum("kji,kjl->kil", knot_r[:-1], knot_r[1:]))  # R_k^T R_k+1
    rotations = knot_r[j] @ _rotation_matrices(steps[j] * a[:, None])
    return positions, rotations


# ---------------------------------------------------------------------------------------------
# Camera


def distort_normalized(x: np.ndarray, y: np.ndarray, d) -> tuple[np.ndarray, np.ndarray]:
    """plumb_bob (OpenCV): undistorted normalised coordinates -> distorted ones."""
    k1, k2, p1, p2, k3 = d
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    return (x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x),
            y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y)


def radial_limit(d) -> float:
    """Undistorted radius up to which r * radial(r) grows (the lens model is invertible)."""
    k1, k2, _p1, _p2, k3 = d
    # d/dr [r (1 + k1 r^2 + k2 r^4 + k3 r^6)] = 1 + 3 k1 u + 5 k2 u^2 + 7 k3 u^3 with u = r^2
    roots = np.roots([7.0 * k3, 5.0 * k2, 3.0 * k1, 1.0]) if any((k1, k2, k3)) else np.array([])
    real = [r.real for r in np.atleast_1d(roots) if abs(r.imag) < 1e-12 and r.real > 0.0]
    return math.sqrt(min(real)) if real else math.inf


def undistort_normalized(xd: np.ndarray, yd: np.ndarray, d, iterations: int = 40
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Invert plumb_bob with Newton steps: (x, y, valid). valid is False where the point has no
    preimage on the monotonic part of the model."""
    k1, k2, p1, p2, k3 = d
    x = xd.astype(np.float64).copy()
    y = yd.astype(np.float64).copy()
    for _ in range(iterations):
        r2 = x * x + y * y
        radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
        dradial = 2.0 * k1 + r2 * (4.0 * k2 + r2 * 6.0 * k3)  # d radial / d(x or y), over x or y
        fx, fy = distort_normalized(x, y, d)
        ex, ey = xd - fx, yd - fy
        j11 = radial + dradial * x * x + 2.0 * p1 * y + 6.0 * p2 * x
        j12 = dradial * x * y + 2.0 * p1 * x + 2.0 * p2 * y
        j21 = dradial * x * y + 2.0 * p1 * x + 2.0 * p2 * y
        j22 = radial + dradial * y * y + 6.0 * p1 * y + 2.0 * p2 * x
        det = j11 * j22 - j12 * j21
        with np.errstate(divide="ignore", invalid="ignore"):
            sx = (j22 * ex - j12 * ey) / det
            sy = (j11 * ey - j21 * ex) / det
        # damp large steps so that points without a preimage do not run away
        step = np.hypot(sx, sy)
        scale = np.where(step > 0.1, 0.1 / np.where(step > 0.1, step, 1.0), 1.0)
        x = np.nan_to_num(x + sx * scale, nan=0.0)
        y = np.nan_to_num(y + sy * scale, nan=0.0)
    fx, fy = distort_normalized(x, y, d)
    residual = np.hypot(xd - fx, yd - fy)
    valid = (residual < 1e-9) & (np.hypot(x, y) < radial_limit(d))
    return x, y, valid


@functools.lru_cache(maxsize=8)
def _camera_rays(width: int, height: int, fx: float, fy: float, cx: float, cy: float,
                 d: tuple[float, ...], tile: int) -> tuple[RayBundle, np.ndarray]:
    """Per-pixel rays of the camera frame (FLU), row-major, and the mask of pixels with a preimage."""
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    xd = (u - cx) / fx
    yd = (v - cy) / fy
    xn, yn, valid = undistort_normalized(xd, yd, d)
    # pixels without a preimage keep their distorted direction: close to their neighbours, so the
    # tile cones stay tight; they are painted black anyway
    xn = np.where(valid, xn, xd)
    yn = np.where(valid, yn, yd)
    dirs = np.stack([np.ones_like(xn), -xn, -yn], axis=-1)  # optical (x right, y down, z fwd) -> FLU
    groups = block_groups(height, width, tile, tile)
    return RayBundle.build(dirs.reshape(-1, 3), groups, np.float32), valid.reshape(-1)


_SKY_HORIZON = (235.0, 215.0, 200.0)
_SKY_ZENITH = (205.0, 140.0, 80.0)
_HAZE = (225.0, 210.0, 200.0)
_DUST = (120.0, 150.0, 175.0)  # brown-grey
# COLOUR_TABLE as one 256-byte translation table per channel (material index -> colour byte)
_COLOUR_BYTES = tuple(bytes(COLOUR_TABLE[:, c].astype(np.uint8).tolist()).ljust(256, b"\0") for c in range(3))


class CameraModel:
    """Renders bgr8 images for one camera configuration."""

    TILE = 32
    FAR_M = 3000.0
    NOISE_DN = 2.5  # sensor noise, standard deviation in digital numbers

    def __init__(self, config: CameraConfig):
        if not config.enabled:
            raise ValueError("the camera is disabled in the Hello")
        if config.encoding != "bgr8":
            raise ValueError(f"camera encoding {config.encoding!r} is not bgr8")
        if config.distortion_model not in ("plumb_bob", ""):
            raise ValueError(f"distortion model {config.distortion_model!r} is not plumb_bob")
        self.config = config
        self.bundle, self.valid = _camera_rays(config.width, config.height, config.fx, config.fy,
                                               config.cx, config.cy, tuple(config.d), self.TILE)
        self._invalid = np.flatnonzero(~self.valid)  # the pixels painted black
        self._noise: np.ndarray | None = None

    def _noise_buffer(self, rng: np.random.Generator) -> np.ndarray:
        if self._noise is None:
            # one fixed field of sensor noise, read at a random offset per frame: drawing 1.4 M
            # normals per frame would cost more than the rendering
            self._noise = (self.NOISE_DN * rng.standard_normal(6 * len(self.bundle))).astype(np.float32)
        return self._noise

    def render(self, scene: Scene, camera: Pose, rng: np.random.Generator | None,
               noise_rng: np.random.Generator | None = None, conditions: Conditions = CLEAR_DAY
               ) -> np.ndarray:
        """(height, width, 3) uint8 bgr8 image seen from `camera` (camera frame FLU -> world)."""
        cfg = self.config
        f32 = np.float32
        light = f32(conditions.light)
        # the ground on a 4-pixel grid with two Newton steps, interpolated in between: a pixel
        # needs far less than a LiDAR return
        hits = cast(scene, self.bundle, camera.position, camera.rotation, self.FAR_M, sun=conditions.sun,
                    ground_iterations=2, ground_tolerance_m=None,
                    ground_grid=(cfg.height, cfg.width, 4))
        dist, mat, lit = hits.distance, hits.material, hits.sun_cos
        sky = np.flatnonzero(mat == MAT["sky"])
        finite_dist = dist.copy()
        finite_dist[sky] = 0.0
        # far crop rows blend to their mean colour instead of aliasing into moire
        blend = finite_dist - f32(8.0)
        blend *= f32(1.0 / 30.0)
        np.clip(blend, 0.0, 1.0, out=blend)
        blend *= (mat == MAT["crop"]) | (mat == MAT["soil"])
        fog = finite_dist + f32(CLEAR_HAZE_M)
        np.divide(finite_dist, fog, out=fog)
        haze_per_m = conditions.haze_per_m
        if haze_per_m > 0.0:  # dust or fog: what the clear haze left is dimmed further
            clear = np.exp(finite_dist * f32(-haze_per_m))
            fog = f32(1.0) - (f32(1.0) - fog) * clear
        keep = lit * f32(0.55)  # shade, faded by the fog
        keep += f32(0.45)
        keep *= f32(1.0) - fog
        if conditions.wetness > 0.0:
            keep[np.isin(mat, GROUND)] *= f32(conditions.ground_shade)
        keep *= light
        own = f32(1.0) - blend  # pixel = own colour * own + rows' mean * blend + haze * fog
        own *= keep
        blend *= keep
        fog *= light
        up = np.sqrt(np.clip(hits.dirs_world[2, sky], 0.0, 1.0))
        # the sky behind dust or fog: the haze's share at the visibility's distance from the clear day's
        veil = f32(1.0 - math.exp(-haze_per_m * SKY_AIR_M))
        airborne = conditions.dust + conditions.fog
        haze = _HAZE if airborne == 0.0 else tuple(
            (h * conditions.fog + d * conditions.dust) / airborne for h, d in zip(_HAZE, _DUST))
        n = len(dist)
        noise = None
        if rng is not None:
            buf = self._noise_buffer(noise_rng or rng)
            start = int(rng.integers(0, len(buf) - 3 * n))
            noise = buf[start:start + 3 * n].reshape(3, n)
        f = scene.row_plant_fraction
        rows_mean = f * COLOUR_TABLE[MAT["crop"]] + (1.0 - f) * COLOUR_TABLE[MAT["soil"]]
        image = np.empty((cfg.height, cfg.width, 3), np.uint8)
        ch = np.empty(n, f32)
        for c in range(3):
            # the material's colour by a byte table: three times faster than indexing an array
            np.multiply(np.frombuffer(mat.tobytes().translate(_COLOUR_BYTES[c]), np.uint8), own, out=ch)
            ch += f32(rows_mean[c]) * blend
            ch += f32(haze[c]) * fog
            sky_colour = f32(_SKY_HORIZON[c]) + f32(_SKY_ZENITH[c] - _SKY_HORIZON[c]) * up
            ch[sky] = (sky_colour * (f32(1.0) - veil) + f32(haze[c]) * veil) * light
            if noise is not None:
                ch += noise[c]
            ch[self._invalid] = 0.0
            np.clip(ch, 0.0, 255.0, out=ch)
            image[:, :, c] = ch.reshape(cfg.height, cfg.width)
        return image


# ---------------------------------------------------------------------------------------------
# INS


@dataclass(frozen=True)
class Kinematics:
    """Exact motion of base_footprint at one instant (world frame ENU, body FLU)."""

    position: np.ndarray  # (3,) m, world
    rotation: np.ndarray  # (3, 3) body -> world
    quaternion: np.ndarray  # (4,) x y z w, body -> world
    velocity_body: np.ndarray  # (3,) m/s
    angular_rate_body: np.ndarray  # (3,) rad/s
    acceleration_body: np.ndarray  # (3,) m/s^2, kinematic (gravity not included)
    speed: float  # forward speed, m/s


@dataclass(frozen=True)
class InsNoise:
    """1-sigma values of the INS error model (east, north, up where there are three)."""

    position_gm_m: tuple[float, float, float] = (0.02, 0.02, 0.03)
    position_white_m: tuple[float, float, float] = (0.005, 0.005, 0.008)
    correlation_time_s: float = 60.0
    roll_pitch_deg: float = 0.03
    heading_deg: float = 0.1
    velocity_mps: float = 0.02
    gyro_radps: float = 0.001
    accel_mps2: float = 0.05

    @property
    def position_variance_m2(self) -> np.ndarray:
        return np.square(self.position_gm_m) + np.square(self.position_white_m)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b of two 3-vectors: np.cross costs 90 us on a 3-vector, this 3 us (100 epochs a second)."""
    ax, ay, az = float(a[0]), float(a[1]), float(a[2])
    bx, by, bz = float(b[0]), float(b[1]), float(b[2])
    return np.array([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx])


class InsModel:
    """One INS: call epoch() with increasing times; the error state is a Gauss-Markov process."""

    def __init__(self, georef: Georeference | None, lever_arm_flu_m=(0.0, 0.0, 0.0),
                 noise: InsNoise | None = None, rng: np.random.Generator | None = None):
        self.georef = georef
        self.lever_arm = np.asarray(lever_arm_flu_m, float)
        self.noise = noise or InsNoise()
        self.rng = rng  # None: no noise at all
        self._t: float | None = None
        self._pos_err = np.zeros(3)
        self._att_err = np.zeros(3)  # roll, pitch, heading, rad

    def _advance(self, t: float) -> np.ndarray:
        """Step the Gauss-Markov states to t; returns the white-noise draws of this epoch."""
        n = self.noise
        att_sigma = np.radians([n.roll_pitch_deg, n.roll_pitch_deg, n.heading_deg])
        gm_sigma = np.asarray(n.position_gm_m)
        w = self.rng.standard_normal(18)
        if self._t is None:
            self._pos_err = gm_sigma * w[0:3]  # start in the stationary distribution
            self._att_err = att_sigma * w[3:6]
        else:
            dt = t - self._t
            phi = math.exp(-dt / n.correlation_time_s)
            q = math.sqrt(max(0.0, 1.0 - phi * phi))
            self._pos_err = phi * self._pos_err + q * gm_sigma * w[0:3]
            self._att_err = phi * self._att_err + q * att_sigma * w[3:6]
        return w[6:]

    def shift_time(self, dt: float) -> None:
        """The world clock jumped by dt: epochs go on from the shifted time, the error state carries on."""
        if self._t is not None:
            self._t += dt

    def epoch(self, t: float, kin: Kinematics) -> np.ndarray:
        """The 40 INS values for the truth `kin` at world time t."""
        if self._t is not None and t < self._t:
            raise ValueError(f"INS epochs must come in increasing time: {t} after {self._t}")
        # the INS point may sit away from base_footprint: rigid-body lever arm
        omega = kin.angular_rate_body
        arm = self.lever_arm
        position = kin.position + kin.rotation @ arm
        velocity = kin.velocity_body + _cross(omega, arm)
        accel = kin.acceleration_body + _cross(omega, _cross(omega, arm))
        gravity_body = kin.rotation.T @ np.array([0.0, 0.0, GRAVITY_MPS2])
        specific_force = accel + gravity_body
        gyro = omega.copy()
        rotation = kin.rotation
        quaternion = kin.quaternion
        if self.rng is not None:
            white = self._advance(t)
            n = self.noise
            position = position + self._pos_err + np.asarray(n.position_white_m) * white[0:3]
            velocity = velocity + n.velocity_mps * white[3:6]
            gyro = gyro + n.gyro_radps * white[6:9]
            specific_force = specific_force + n.accel_mps2 * white[9:12]
            # attitude error: small rotations added to the true roll, pitch and heading
            er, ep, eh = self._att_err
            rotation = (rpy_matrix(0.0, 0.0, eh) @ kin.rotation) @ rpy_matrix(er, ep, 0.0)
            quaternion = matrix_to_quaternion(rotation)
        self._t = t

        v = np.full(INS_FIELDS, np.nan)
        v[Ins.VelX:Ins.VelZ + 1] = velocity
        v[Ins.GyroX:Ins.GyroZ + 1] = gyro
        v[Ins.AccelX:Ins.AccelZ + 1] = specific_force
        v[Ins.EnuQx:Ins.EnuQw + 1] = quaternion
        v[Ins.EnuX:Ins.EnuZ + 1] = position
        v[Ins.TruthEnuX:Ins.TruthEnuZ + 1] = kin.position
        v[Ins.TruthQx:Ins.TruthQw + 1] = kin.quaternion
        v[Ins.TruthSpeed] = kin.speed
        if self.georef is None:
            v[list(INS_GEO_FIELDS)] = np.nan
            v[Ins.FixStatus] = -1.0
            return v
        fix = self.georef.fix(*position)
        v[Ins.UtmE] = fix.utm_e
        v[Ins.UtmN] = fix.utm_n
        v[Ins.UtmH] = fix.height_m
        v[Ins.UtmQx:Ins.UtmQw + 1] = Georeference.enu_to_utm_quaternion(quaternion, fix.grid_rotation_deg)
        v[Ins.Lat] = fix.lat_deg
        v[Ins.Lon] = fix.lon_deg
        v[Ins.Height] = fix.height_m
        v[Ins.CovE:Ins.CovU + 1] = self.noise.position_variance_m2
        v[Ins.FixStatus] = 2.0
        v[Ins.GridRotationDeg] = fix.grid_rotation_deg
        v[Ins.UtmZone] = float(self.georef.utm_zone)
        return v
