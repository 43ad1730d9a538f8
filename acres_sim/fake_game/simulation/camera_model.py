"""The fake game's camera model (ROS-free): for each output pixel the plumb_bob model is inverted
(Newton, once per intrinsics) to a ray of the camera frame (FLU; the optical frame is x right, y
down, z forward). Pixels beyond the model's monotonic range (the corners of a strongly
barrel-distorted lens have no preimage) stay black, like a vignette. The scene is shaded with one
sun, haze towards the horizon and a sky gradient, as the world's conditions say
(world/conditions.py: light, wet ground, dust and fog).
"""

from __future__ import annotations

import functools
import math

import numpy as np


from acres_sim.stream.hello import CameraConfig

from acres_sim.fake_game.world.conditions import (
    CLEAR_DAY,
    CLEAR_HAZE_M,
    SKY_AIR_M,
    Conditions,
)
from acres_sim.fake_game.world.materials import COLOUR_TABLE, GROUND, MAT
from acres_sim.fake_game.world.raycast import RayBundle, block_groups, cast
from acres_sim.fake_game.world.scene import Scene


from acres_sim.fake_game.simulation.poses import Pose


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
    preimage on the monotonic part of the model.

    Each step is a function of the point alone, so a point that a step leaves where it was stays
    there, and one that a step takes back to where it was two steps before (an alternation in the
    last bit) alternates to the end: either drops out with the value it would have after all the
    steps. The result is bit for bit that of every point taking every step, in under half the time
    (the ray table is built as every fake game with a camera starts)."""
    shape = np.shape(xd)
    xd_all = np.asarray(xd, np.float64).reshape(-1)
    yd_all = np.asarray(yd, np.float64).reshape(-1)
    x, y = xd_all.copy(), yd_all.copy()
    moving = np.arange(x.size)
    xm, ym, xdm, ydm = x.copy(), y.copy(), xd_all, yd_all
    before_x = before_y = np.full(x.size, np.nan)  # each moving point one step before (none yet)
    for done_steps in range(1, iterations + 1):
        nx, ny = _newton_step(xm, ym, xdm, ydm, d)
        settled = (nx == xm) & (ny == ym)
        alternating = ~settled & (nx == before_x) & (ny == before_y)
        ends_on_other = alternating & bool((iterations - done_steps) % 2)  # the other value of its pair
        x[moving] = np.where(ends_on_other, xm, nx)
        y[moving] = np.where(ends_on_other, ym, ny)
        going = ~(settled | alternating)
        moving = moving[going]
        if moving.size == 0:
            break
        before_x, before_y = xm[going], ym[going]
        xm, ym, xdm, ydm = nx[going], ny[going], xdm[going], ydm[going]
    fx, fy = distort_normalized(x, y, d)
    residual = np.hypot(xd_all - fx, yd_all - fy)
    valid = (residual < 1e-9) & (np.hypot(x, y) < radial_limit(d))
    return x.reshape(shape), y.reshape(shape), valid.reshape(shape)


def _newton_step(x: np.ndarray, y: np.ndarray, xd: np.ndarray, yd: np.ndarray, d
                 ) -> tuple[np.ndarray, np.ndarray]:
    """One damped Newton step of undistort_normalized from (x, y) toward the preimage of (xd, yd)."""
    k1, k2, p1, p2, k3 = d
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
    return np.nan_to_num(x + sx * scale, nan=0.0), np.nan_to_num(y + sy * scale, nan=0.0)


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
