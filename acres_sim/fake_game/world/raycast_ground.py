"""Ray casting onto fake_game's ground and crops: the terrain height field (Newton iterations along
each ray, and for an image on a coarse grid of its rays, interpolated), the ground's sun shading,
and the crop rows as rows of foliage. raycast.cast calls these after the primitives."""

from __future__ import annotations

import functools

import numpy as np

from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.scene import CropRows, Scene, Terrain


def onto_terrain(terrain: Terrain, dist: np.ndarray, down: np.ndarray, ox, oy, oz, d: np.ndarray,
                 iterations: int, tolerance_m: float | None, slopes: bool = True
                 ) -> tuple[np.ndarray, np.ndarray] | None:
    """Newton on f(t) = oz + t dz - h(ox + t dx, oy + t dy) for the rays in `down`, from their
    distance to the ground's tangent plane at the origin (in `dist`); the result replaces it.

    Rays whose last step was still over tolerance_m (grazing rays) get inf. Returns the
    ground slope (dz/dx, dz/dy) per ray at its hit (0 elsewhere), for shading, when `slopes`.
    Rays that do not descend against the tangent plane never meet this gentle ground in range."""
    idx = np.flatnonzero(down)
    sx_all = sy_all = None
    if slopes:
        sx_all = np.zeros(dist.shape, dist.dtype)
        sy_all = np.zeros(dist.shape, dist.dtype)
    if idx.size and iterations >= 1:
        dist[idx], sx, sy = _newton(terrain, idx, dist[idx], ox, oy, oz, d, iterations, tolerance_m, slopes)
        if slopes:
            sx_all[idx], sy_all[idx] = sx, sy
    return (sx_all, sy_all) if slopes else None


def _newton(terrain: Terrain, idx: np.ndarray, t0: np.ndarray, ox, oy, oz, d: np.ndarray, iterations: int,
            tolerance_m: float | None, slopes: bool = True
            ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The rays `idx` of `d` from their first distances t0: (distance, slope x, slope y) each, the
    slopes (for shading) at the final distance when asked for, else None."""
    # float32 throughout: half the cost of the trigonometry, and 1e-5 m at 100 m is far finer than
    # a cloud's own float32 points
    f32 = np.float32
    dx, dy, dz = (d[axis, idx].astype(f32, copy=False) for axis in range(3))
    px, py, pz = (float(v) if np.ndim(v) == 0 else v[idx].astype(f32) for v in (ox, oy, oz))
    t = t0.astype(f32)
    # Rays that graze the short waves make Newton jump from crest to crest: with 3 steps or more,
    # the first two meet the swells alone (a smooth surface near the final one), the rest the whole
    # ground. Measured on Polaris sweeps: 91-94 % of the rays that 40 plain steps settle, settle in
    # 2 + 3 steps, against 82-87 % in 4 plain ones of the same cost.
    swells = terrain.swells if iterations >= 3 else None
    stages = [(swells, 2), (terrain, iterations - 1)] if swells is not None else [(terrain, iterations)]
    step = np.zeros(t.shape, f32)
    with np.errstate(over="ignore", invalid="ignore"):  # near-parallel rays: inf, dropped below
        for surface, count in stages:
            ground = surface.along_rays(px, py, dx, dy)
            for _ in range(count):
                h, rise = ground(t)
                # df/dt = dz - dh/dt < 0 while the ray descends faster than the ground
                step = (pz + t * dz - h) / np.minimum(dz - rise, f32(-1e-3))
                t = t - step
    # Newton converges quadratically: after a last step under 1 cm the error is far below it
    bad = ~(t > 0.0)
    if tolerance_m is not None:
        bad |= ~(np.abs(step) < tolerance_m)
        t[bad] = np.inf
    else:  # an image: a ray thrown off keeps the tangent plane's distance, rather than a hole
        t[bad] = t0[bad]
    if not slopes:
        return t, None, None
    with np.errstate(invalid="ignore"):
        _h, sx, sy = terrain.height_and_slope(px + t * dx, py + t * dy)
    return t, sx, sy


def cast_crops(scene: Scene, crops: CropRows, dist: np.ndarray, mat: np.ndarray, lit: np.ndarray | None,
               ox, oy, oz, d: np.ndarray, max_range: float, sun_w: np.ndarray | None) -> None:
    """The first row wall each ray meets below the crops' tops, where it is nearer than what the ray
    hit so far. Rays from outside the field enter it through its south edge (the track is south of
    it); a ray is below the tops from where it descends under them at the edge's ground height, and
    the first row it crosses from there on is checked (and the next, in case the ground rose)."""
    dx, dy, dz = d[0], d[1], d[2]
    per_ray = np.ndim(ox) != 0
    if not per_ray and oy >= crops.y_min:
        return
    # only descending rays that reach the field's edge before anything else stopped them (and in
    # range): (y_min - oy) / dy < min(dist, max_range), as one product; false for dy <= 0
    toward = np.minimum(dist, dist.dtype.type(max_range))
    toward *= dy
    toward = toward > crops.y_min - oy
    toward &= dz < 0.0
    if per_ray:
        toward &= oy < crops.y_min
    idx = np.flatnonzero(toward)
    if not idx.size:
        return
    # float32 whatever the rays' dtype: a tenth of the cost of float64 trigonometry, and 1e-5 m at
    # 100 m is far finer than a cloud's own float32 points
    f32 = np.float32
    px, py, pz = (f32(v) if not per_ray else v[idx].astype(f32) for v in (ox, oy, oz))
    ddx, ddy, ddz = (d[axis, idx].astype(f32, copy=False) for axis in range(3))
    t_in = (f32(crops.y_min) - py) / ddy
    edge = scene.ground_height(px + t_in * ddx, py + t_in * ddy) + f32(crops.height_m)
    t_start = np.maximum(t_in, (pz - edge) / -ddz)
    # the first row crossed at or after t_start (rows run north-south: walls x = const)
    u = (px + t_start * ddx) * f32(1.0 / crops.spacing_m) - f32(0.5 * crops.fraction)
    east = ddx > 0.0
    k = np.where(east, np.ceil(u), np.floor(u))
    best = np.full(idx.size, np.inf, f32)
    rays = np.flatnonzero(np.abs(ddx) > 1e-6)
    for extra in (0.0, 1.0):  # the next row too, for rays still above the tops: they follow the ground
        kk = k[rays] + np.where(east[rays], f32(extra), f32(-extra))
        x_row = crops.row_x(kk)
        qx, qy, qz = (v if not per_ray else v[rays] for v in (px, py, pz))
        t = (x_row - qx) / ddx[rays]
        y = qy + t * ddy[rays]
        z = qz + t * ddz[rays]
        ground = scene.ground_height(x_row, y)
        inside = ((t > 0.0) & (y <= f32(crops.y_max)) & (x_row >= f32(crops.x_min))
                  & (x_row <= f32(crops.x_max)) & (z >= ground))
        top = ground + crops.plant_height(kk, y)
        hit = inside & (z <= top)
        best[rays[hit]] = t[hit]
        rays = rays[inside & (z > top)]
        if not rays.size:
            break
    better = best < np.minimum(dist[idx], max_range)
    if not better.any():
        return
    sel = idx[better]
    dist[sel] = best[better]
    mat[sel] = MAT["crop"]
    if lit is not None and sun_w is not None:  # a wall facing the ray: normal (-sign dx, 0, 0)
        lit[sel] = np.clip(-np.sign(dx[sel]) * float(sun_w[0]), 0.0, 1.0)


_GRID_NEAR_M = 80.0  # beyond this a grid neighbour is too far apart on the ground to interpolate


@functools.lru_cache(maxsize=8)
def _grid_axis(n: int, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Coarse sample positions 0, step, ... plus the last index, and for every fine index its
    lower coarse neighbour and weight."""
    coarse = np.unique(np.append(np.arange(0, n, step), n - 1))
    fine = np.arange(n)
    lower = np.clip(np.searchsorted(coarse, fine, side="right") - 1, 0, len(coarse) - 2)
    span = (coarse[lower + 1] - coarse[lower]).astype(np.float32)
    weight = (fine - coarse[lower]).astype(np.float32) / span
    return coarse, lower, weight


def _upsample(values: np.ndarray, rows: tuple, cols: tuple) -> np.ndarray:
    """Bilinear interpolation of (coarse rows, coarse columns) values to the fine grid, raveled:
    across the columns on the coarse rows first (a quarter of the work), then down the rows, which
    gathers whole contiguous rows."""
    _r, r0, wr = rows
    _c, c0, wc = cols
    across = values[:, c0] * (1.0 - wc) + values[:, c0 + 1] * wc
    fine = across[r0] * (1.0 - wr)[:, None]
    fine += across[r0 + 1] * wr[:, None]
    return fine.ravel()


def _blocks(values: np.ndarray, step: int, height: int, width: int) -> np.ndarray:
    """Each value of the regular coarse grid (every step-th row and column) for its step x step
    block of the fine grid, raveled: for shading, where a block of one slope does not show."""
    return np.repeat(np.repeat(values, step, axis=0), step, axis=1)[:height, :width].ravel()


def ground_shade(sx: np.ndarray, sy: np.ndarray, sun_w: np.ndarray) -> np.ndarray:
    """Cosine between the sun and the ground's normal (-dz/dx, -dz/dy, 1) / norm, clipped to 0..1."""
    ux, uy, uz = (float(v) for v in sun_w)
    shade = (uz - ux * sx - uy * sy) / np.sqrt(1.0 + sx * sx + sy * sy)
    return np.clip(shade, 0.0, 1.0, out=shade)


def onto_terrain_grid(terrain: Terrain, dist: np.ndarray, down: np.ndarray, plane_dz: np.ndarray,
                      ox: float, oy: float, oz: float, d: np.ndarray, iterations: int,
                      grid: tuple[int, int, int], sun_w: np.ndarray | None) -> np.ndarray | None:
    """onto_terrain on a coarse grid of an image's rays, interpolated to all of them: what is
    interpolated is the ground's height above the tangent plane at the hit (smooth across the
    image). Rays in `down` keep their tangent-plane distance plus that height over the plane's rate
    of approach. Returns the sun's shading of the ground per ray (with a sun; else None), from the
    grid's slope for each step x step block."""
    height, width, step = grid
    rows, cols = _grid_axis(height, step), _grid_axis(width, step)
    sub = (rows[0][:, None] * width + cols[0][None, :]).ravel()
    sub_dist = dist[sub].copy()
    sub_down = down[sub]
    slopes = onto_terrain(terrain, sub_dist, sub_down, ox, oy, oz, d[:, sub], iterations, None,
                          slopes=sun_w is not None)
    approach = -plane_dz[sub]
    with np.errstate(invalid="ignore"):
        lift = np.where(sub_down & np.isfinite(sub_dist), (sub_dist - dist[sub]) * approach, 0.0)
    shape = (len(rows[0]), len(cols[0]))
    lift_all = _upsample(lift.astype(np.float32).reshape(shape), rows, cols)
    # Towards the horizon the ground's distance changes faster than a grid can follow: a ray with
    # a far or missing grid neighbour is solved on its own instead.
    near = (sub_down & (sub_dist < _GRID_NEAR_M)).reshape(shape)
    cell_near = near[:-1, :-1] & near[1:, :-1] & near[:-1, 1:] & near[1:, 1:]  # all four corners
    alone = down & ~cell_near[rows[1]][:, cols[1]].ravel()
    shade = None
    if slopes is not None:
        regular = (slice(0, (height + step - 1) // step), slice(0, (width + step - 1) // step))
        coarse = ground_shade(slopes[0], slopes[1], sun_w).astype(np.float32)
        shade = _blocks(coarse.reshape(shape)[regular], step, height, width)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.add(dist, lift_all / -plane_dz, out=dist, where=down & ~alone)
    dist[down & ~(dist > 0.0)] = np.inf
    own = np.flatnonzero(alone)
    if own.size:  # shaded by their block too: far ground, where a block is metres wide anyway
        dist[own] = _newton(terrain, own, dist[own], ox, oy, oz, d, iterations, None, slopes=False)[0]
    return shade
