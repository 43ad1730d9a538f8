"""A LiDAR sweep cast in compiled loops (raycast_kernels): the same rays, culling, terrain, crops
and primitives as raycast.cast over arrays with a Motion, in about a quarter of its time.

The arrays spend a sweep in hundreds of short NumPy passes over tens of thousands of rays; the
kernels take each ray through its solve at once and without Python's lock, so a sweep is cast in
two halves on two threads. The first cast in a new install compiles them (about 15 s on two cores,
once: `make build` does it); later ones load them (about 1 s with numba's import).
"""

from __future__ import annotations

import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from acres_sim.fake_game.world import raycast_kernels as kernels
from acres_sim.fake_game.world.raycast import Hits, RayBundle, block_groups
from acres_sim.fake_game.world.scene import Scene, default_scene

_F32 = np.float32


@dataclass(frozen=True)
class SceneTables:
    """A scene as the compiled loops take it: plain arrays, made once per scene."""

    waves: np.ndarray  # (W, 4) the terrain's waves
    swells: np.ndarray  # (S, 4) its long waves alone (no rows: none)
    primitives: np.ndarray  # (P, 13) primitive_table
    outer: np.ndarray  # (P, 4) each primitive's enclosing culling sphere: x, y, z, radius
    spheres: np.ndarray  # (S, 4) the culling spheres, grouped by primitive
    first: np.ndarray  # (P + 1,) each primitive's first sphere, then the count
    ground: np.ndarray  # (8,) the ground's texture: the loop's half x, half y, corner radius, the
    # road's half width, the rows' spacing and plant fraction, the north field's y and half x
    crops: np.ndarray  # (7,) the crop rows: x_min, x_max, y_min, y_max, spacing, fraction, height
    # (no rows: none)
    row_numbers: np.ndarray  # (K,) float32 each crop row's number, from row index row_first on
    row_first: int

    @staticmethod
    @functools.lru_cache(maxsize=8)
    def of(scene: Scene) -> SceneTables:
        spheres = scene.culling_spheres
        crops = scene.crops
        route = scene.route
        ground = np.array([route.half_x_m, route.half_y_m, route.corner_radius_m, scene.road_half_width_m,
                           scene.row_spacing_m, scene.row_plant_fraction, scene.north_field_y_m,
                           scene.north_field_half_x_m])
        if crops is None:
            crop_constants, numbers, first = np.zeros(0), np.zeros(1, _F32), 0
        else:
            crop_constants = np.array([crops.x_min, crops.x_max, crops.y_min, crops.y_max, crops.spacing_m,
                                       crops.fraction, crops.height_m])
            first, table = crops._row_numbers  # type: ignore[attr-defined]
            numbers = table.astype(_F32)
        return SceneTables(
            kernels.wave_table(scene.terrain),
            kernels.wave_table(scene.terrain.swells if scene.terrain else None),
            kernels.primitive_table(scene.primitives),
            np.column_stack([spheres.outer_centres, spheres.outer_radii]).reshape(-1, 4),
            np.column_stack([spheres.centres, spheres.radii]).reshape(-1, 4),
            np.r_[spheres.first, len(spheres.radii)].astype(np.int64),
            ground, crop_constants, numbers, int(first))


@dataclass(frozen=True)
class SweepSplit:
    """Where a sweep is cut in two for two threads: at a column that starts a culling group's block
    of columns, so that each half's groups hold only its own rays (block_groups's order)."""

    column: int
    group: int

    @staticmethod
    def of(columns: int, rings: int, block_columns: int, block_rings: int) -> SweepSplit:
        blocks = -(-columns // block_columns)
        half = blocks // 2
        return SweepSplit(half * block_columns, half * -(-rings // block_rings))


_HELPER_LOCK = threading.Lock()  # one sweep's half at a time on the helper; others cast both halves
_helpers: dict[int, ThreadPoolExecutor] = {}  # the other half's thread, by process (a fork has none)


def _helper() -> ThreadPoolExecutor:
    pid = os.getpid()
    if pid not in _helpers:
        _helpers.clear()
        _helpers[pid] = ThreadPoolExecutor(1, thread_name_prefix="sweep-half")
    return _helpers[pid]


def cast_sweep(scene: Scene, bundle: RayBundle, split: SweepSplit, positions: np.ndarray,
               rotations: np.ndarray, sensor_dirs: np.ndarray, max_range: float, slack_m: float,
               slack_rad: float, ground_iterations: int = 4, ground_tolerance_m: float = 0.01) -> Hits:
    """raycast.cast of a moving sensor's sweep (Motion), compiled: column c cast from positions[c]
    turned by rotations[c] (sensor_dirs: (columns, rings, 3)), the middle column the culling's
    reference (slack_m, slack_rad: Motion's). Scenes with terrain only (raycast.cast does the
    flat plane)."""
    tables = SceneTables.of(scene)
    columns, rings = sensor_dirs.shape[:2]
    n = columns * rings
    origins = np.empty((3, n), _F32)
    dirs = np.empty((3, n), _F32)
    dist = np.empty(n, _F32)
    material = np.zeros(n, np.uint8)
    mid = columns // 2
    origin, rotation = positions[mid], rotations[mid]
    h0, gx0, gy0 = scene.terrain.at(float(origin[0]), float(origin[1]))  # type: ignore[union-attr]
    plane = np.array([h0, gx0, gy0, origin[0], origin[1]])
    axes = bundle.axes @ rotation.T
    cones = bundle.radii + slack_rad
    near = np.zeros((len(tables.primitives), len(bundle.groups)), np.bool_)

    def half(c0: int, c1: int, g0: int, g1: int) -> None:
        rays = slice(c0 * rings, c1 * rings)
        kernels.sweep_rays(positions, rotations, sensor_dirs, origins, dirs, c0, c1)
        o, d, t, m = origins[:, rays], dirs[:, rays], dist[rays], material[rays]
        kernels.ground_distances(o, d, plane, tables.swells, tables.waves, ground_iterations,
                                 ground_tolerance_m, max_range, t)
        kernels.textures(o, d, t, m, tables.ground)
        if len(tables.crops):
            kernels.crop_rows(o, d, t, m, tables.crops, tables.row_numbers, tables.row_first, tables.waves,
                              max_range)
        if len(tables.primitives):
            kernels.cull(axes, cones, origin, slack_m, max_range, tables.outer, tables.spheres, tables.first,
                         near, g0, g1)
            kernels.nearest_primitives(origins, dirs, tables.primitives, bundle.groups, near, max_range, dist,
                                       material, g0, g1)

    groups = len(bundle.groups)
    if _HELPER_LOCK.acquire(blocking=False):
        try:
            other = _helper().submit(half, 0, split.column, 0, split.group)
            half(split.column, columns, split.group, groups)
            other.result()
        finally:
            _HELPER_LOCK.release()
    else:
        half(0, columns, 0, groups)
    return Hits(dist, material, None, dirs)


def warm_up() -> None:
    """Compile (or load) every kernel with the types a sweep gives them: a small sweep of the
    default scene, both halves and whole, and its cloud."""
    columns, rings = 20, 8
    az = np.linspace(0.0, 2.0 * np.pi, columns, endpoint=False)
    el = np.radians(np.linspace(-15.0, 15.0, rings))
    sensor_dirs = np.stack([np.cos(az)[:, None] * np.cos(el), np.sin(az)[:, None] * np.cos(el),
                            np.broadcast_to(np.sin(el), (columns, rings))], axis=-1)
    bundle = RayBundle.build(sensor_dirs.reshape(-1, 3), block_groups(columns, rings, 10, 8), _F32)
    positions = np.tile([0.0, -28.0, 2.0], (columns, 1))
    rotations = np.tile(np.eye(3), (columns, 1, 1))
    scene = default_scene()
    for split in (SweepSplit.of(columns, rings, 10, 8), SweepSplit(0, 0)):
        hits = cast_sweep(scene, bundle, split, positions, rotations, sensor_dirs, 100.0, 0.0, 0.0)
    knot_t = np.linspace(0.0, 0.1, 3)
    knot_r = np.tile(np.eye(3), (3, 1, 1))
    kernels.sweep_poses(knot_t, positions[:3].copy(), knot_r, np.zeros((2, 3)),
                        np.linspace(0.0, 0.1, columns), positions, rotations)
    kernels.sweep_slack(positions, rotations, columns // 2)
    out = np.empty((columns * rings, 4), _F32)
    dirs32 = sensor_dirs.reshape(-1, 3).astype(_F32)
    intensity = np.ones(columns * rings, _F32)
    for noise in (np.zeros(0, _F32), np.zeros(columns * rings, _F32)):
        kernels.cloud_points(dirs32, hits.distance, intensity, noise, out)


if __name__ == "__main__":  # `make build` compiles them into the install's cache
    warm_up()
