"""The fake game's LiDAR model (ROS-free): one ray per cell, fired from the mount pose. Column k
points at azimuth -360 k / columns deg ("cw") or +360 k / columns deg ("ccw"), column 0 forward;
ring r at the table's elevation. Cell (c, r) of the cloud is the point in the sensor frame (FLU),
NaN and intensity 0 without a return; a sweep fires every column at its own time from the pose
the sensor has then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np


from acres_sim.stream.hello import LidarConfig

from acres_sim.fake_game.world.conditions import (
    CLEAR_DAY,
    DUST_RETURN_INTENSITY,
    Conditions,
)
from acres_sim.fake_game.world.materials import GROUND, INTENSITY_TABLE
from acres_sim.fake_game.world.raycast import Motion, RayBundle, block_groups, cast
from acres_sim.fake_game.world.scene import Scene


from acres_sim.fake_game.simulation.poses import Pose

# The sweep cast in compiled loops (numba), loaded on first use: a game loads it with its sensor
# models, before its ports open (AgentSimulator.prepare), and a game without a LiDAR never loads
# numba. Without numba, raycast's arrays cast it (slower).
COMPILED_AFTER_S = 3.0  # a first load this long compiled the caster (loading its cache takes ~1 s)
_UNSEEN = object()  # not looked for yet
_caster_lock = threading.Lock()
_caster: object = _UNSEEN  # then (raycast_compiled, raycast_kernels), or None without them
_report_compile: Callable[[str], None] | None = None


def report_compiles_to(report: Callable[[str], None]) -> None:
    """Where to say that the first sweep compiled the caster (rather than loading it from its cache)."""
    global _report_compile
    _report_compile = report


def compiled_caster():
    """(raycast_compiled, raycast_kernels) with every kernel loaded or compiled, on the first call;
    None without numba, or where it cannot compile them."""
    global _caster
    with _caster_lock:
        if _caster is _UNSEEN:
            _caster = _load_caster()
        return _caster


def _load_caster():
    started = time.monotonic()
    try:
        from acres_sim.fake_game.world import raycast_compiled, raycast_kernels
    except ImportError:
        return None
    try:
        raycast_compiled.warm_up()
    except Exception as exc:  # noqa: BLE001 -- a numba that cannot compile them: the arrays cast
        _report(f"the LiDAR's compiled ray caster failed to compile ({type(exc).__name__}: {exc}); "
                "casting with NumPy")
        return None
    took = time.monotonic() - started
    if took > COMPILED_AFTER_S:
        _report(f"compiled the LiDAR's ray caster in {took:.1f} s (once per install: it is cached)")
    return raycast_compiled, raycast_kernels


def _report(line: str) -> None:
    if _report_compile is not None:
        _report_compile(line)


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
        block = (min(10, config.columns), min(8, config.rings))
        groups = block_groups(config.columns, config.rings, *block)
        self.bundle = RayBundle.build(dirs.reshape(-1, 3), groups, np.float32)
        self._block = block

    def render(self, scene: Scene, sensor: Pose, rng: np.random.Generator | None,
               conditions: Conditions = CLEAR_DAY, air_rng: np.random.Generator | None = None) -> np.ndarray:
        """(columns, rings, 4) float32 from a sensor that stands still: x, y, z in the sensor frame
        and intensity. air_rng: the draws of dust and fog (needed when there is any)."""
        hits = cast(scene, self.bundle, sensor.position, sensor.rotation, self.config.range_m)
        return self._points(hits, rng, conditions, air_rng)

    def render_sweep(self, scene: Scene, times: np.ndarray, pose_at: Callable[[float], Pose],
                     rng: np.random.Generator | None, knots: int = 19, conditions: Conditions = CLEAR_DAY,
                     air_rng: np.random.Generator | None = None, compiled: bool = True) -> np.ndarray:
        """(columns, rings, 4) float32 of a moving sensor: column c is fired from pose_at(times[c])
        and its points are in the sensor frame of that instant, as a spinning LiDAR's are.

        The pose is evaluated at `knots` instants of the sweep and interpolated in between
        (position linearly, rotation along the geodesic). Against exact per-column poses over a
        lap of the fake world: within 0.2 mm and 77 urad (12 mm at 160 m), the worst where a sweep
        enters or leaves a corner; 9 knots gave 711 urad.

        compiled: cast by raycast_compiled where numba is installed and the scene has terrain
        (False: by raycast's arrays, the reference the tests compare it with)."""
        cfg = self.config
        times = np.asarray(times, np.float64)
        mid = len(times) // 2
        caster = compiled_caster() if compiled and scene.terrain is not None else None
        if caster is not None:
            raycast_compiled, raycast_kernels = caster
            positions, rotations = _sweep_poses(times, pose_at, knots, kernels=raycast_kernels)
            slack_m, slack_rad = raycast_kernels.sweep_slack(positions, rotations, mid)
            split = raycast_compiled.SweepSplit.of(cfg.columns, cfg.rings, *self._block)
            hits = raycast_compiled.cast_sweep(scene, self.bundle, split, positions, rotations,
                                               self.dirs, cfg.range_m, slack_m, slack_rad + 1e-9)
            return self._points(hits, rng, conditions, air_rng, raycast_kernels)
        positions, rotations = _sweep_poses(times, pose_at, knots)
        turn = _rotation_vectors(np.einsum("cji,jk->cik", rotations, rotations[mid]))  # R_c^T R_mid
        slack_m = float(np.linalg.norm(positions - positions[mid], axis=1).max())
        slack_rad = float(np.linalg.norm(turn, axis=1).max()) + 1e-9
        dirs = np.matmul(rotations, self.dirs.transpose(0, 2, 1)).transpose(1, 0, 2).reshape(3, -1)
        origins = np.repeat(positions.T, cfg.rings, axis=1)
        # float32 like the cloud itself (7.6 um steps at 100 m): half the memory traffic of float64
        motion = Motion(origins.astype(np.float32), dirs.astype(np.float32), slack_m=slack_m,
                        slack_rad=slack_rad)
        hits = cast(scene, self.bundle, positions[mid], rotations[mid], cfg.range_m, motion=motion)
        return self._points(hits, rng, conditions, air_rng)

    def _points(self, hits, rng: np.random.Generator | None, conditions: Conditions,
                air_rng: np.random.Generator | None, kernels=None) -> np.ndarray:
        """The cloud from a cast's hits (kernels: raycast_kernels, to assemble it in one pass)."""
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
        noise = None
        if rng is not None and self.range_noise_m > 0.0:
            noise = rng.standard_normal(dist.shape, dtype=f32)
            noise *= f32(self.range_noise_m)
        if kernels is not None:  # the same in one pass
            out = np.empty((cfg.columns, cfg.rings, 4), f32)
            kernels.cloud_points(self._dirs32.reshape(-1, 3), dist.ravel(), intensity.ravel(),
                                 _NO_NOISE if noise is None else noise.ravel(), out.reshape(-1, 4))
            return out
        valid = np.isfinite(dist)
        if noise is not None:
            dist += noise
        dist[~valid] = np.nan
        out = np.empty((cfg.columns, cfg.rings, 4), f32)
        np.multiply(self._dirs32, dist[..., None], out=out[..., :3])
        out[..., 3] = np.where(valid, intensity, f32(0.0))
        return out


_NO_NOISE = np.zeros(0, np.float32)


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


def _sweep_poses(times: np.ndarray, pose_at: Callable[[float], Pose], knots: int, kernels=None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Positions (C, 3) and rotations (C, 3, 3) at `times`, interpolated between `knots` poses
    (kernels: raycast_kernels, each column in its sweep_poses, the same steps)."""
    knot_t = np.linspace(times[0], times[-1], max(2, knots))
    poses = [pose_at(float(t)) for t in knot_t]
    knot_p = np.array([p.position for p in poses])
    knot_r = np.array([p.rotation for p in poses])
    span = knot_t[-1] - knot_t[0]
    if span <= 0.0:
        return np.repeat(knot_p[:1], len(times), 0), np.repeat(knot_r[:1], len(times), 0)
    steps = _rotation_vectors(np.einsum("kji,kjl->kil", knot_r[:-1], knot_r[1:]))  # R_k^T R_k+1
    if kernels is not None:
        positions, rotations = np.empty((len(times), 3)), np.empty((len(times), 3, 3))
        kernels.sweep_poses(knot_t, knot_p, knot_r, steps, times, positions, rotations)
        return positions, rotations
    j = np.clip(np.searchsorted(knot_t, times, side="right") - 1, 0, len(knot_t) - 2)
    a = (times - knot_t[j]) / (knot_t[j + 1] - knot_t[j])
    positions = knot_p[j] + a[:, None] * (knot_p[j + 1] - knot_p[j])
    rotations = knot_r[j] @ _rotation_matrices(steps[j] * a[:, None])
    return positions, rotations
