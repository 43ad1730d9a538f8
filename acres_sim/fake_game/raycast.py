"""Vectorised ray casting into a Scene.

Ray casting works on a RayBundle: unit directions in the sensor frame plus groups of neighbouring
rays with a bounding cone each. A primitive is only intersected with the rays of the groups whose
cone meets the primitive's bounding sphere, so a scan costs a few milliseconds however many
objects are in the scene.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .materials import MAT
from .scene import Box, CropRows, CullingSpheres, Cylinder, Primitive, Scene, Sphere, Terrain


@dataclass(frozen=True)
class RayBundle:
    """Unit ray directions of a sensor frame plus groups of neighbouring rays for culling.

    dirs: (3, N) in the sensor's own order (cloud cells, image pixels), one contiguous row per
    axis so that every per-ray operation streams through memory. groups: (G, K) ray indices
    (an edge group may repeat an index); axes: (G, 3) unit cone axes; radii: (G,) cone half angles
    in rad, so that every ray of group g lies within radii[g] of axes[g].
    """

    dirs: np.ndarray
    groups: np.ndarray
    axes: np.ndarray
    radii: np.ndarray

    @staticmethod
    def build(dirs_n3: np.ndarray, groups: np.ndarray, dtype=np.float64) -> RayBundle:
        d = np.asarray(dirs_n3, np.float64)
        d = d / np.linalg.norm(d, axis=1, keepdims=True)
        g = d[groups]  # (G, K, 3)
        axes = g.sum(axis=1)
        axes /= np.linalg.norm(axes, axis=1, keepdims=True)
        cos = np.einsum("gkc,gc->gk", g, axes)
        radii = np.arccos(np.clip(cos.min(axis=1), -1.0, 1.0)) + 1e-6
        return RayBundle(np.ascontiguousarray(d.T, dtype), np.asarray(groups, np.intp), axes, radii)

    def __len__(self) -> int:
        return self.dirs.shape[1]


def block_groups(rows: int, cols: int, block_rows: int, block_cols: int) -> np.ndarray:
    """(G, block_rows * block_cols) indices of a row-major rows x cols grid cut into blocks; edge
    blocks are filled up by repeating their last row / column."""
    r0 = np.arange(0, rows, block_rows)
    c0 = np.arange(0, cols, block_cols)
    rr = np.minimum(r0[:, None] + np.arange(block_rows)[None, :], rows - 1)  # (Br, br)
    cc = np.minimum(c0[:, None] + np.arange(block_cols)[None, :], cols - 1)  # (Bc, bc)
    idx = rr[:, None, :, None] * cols + cc[None, :, None, :]  # (Br, Bc, br, bc)
    return idx.reshape(len(r0) * len(c0), block_rows * block_cols)


@dataclass
class Hits:
    """Result of one cast, in bundle order: distance along the unit ray (inf: none), material,
    the cosine between the surface normal and the sun (when a sun was given) and the world
    directions (3, N)."""

    distance: np.ndarray
    material: np.ndarray
    sun_cos: np.ndarray | None
    dirs_world: np.ndarray


@dataclass(frozen=True)
class Motion:
    """A sweep cast from a moving sensor: every ray has its own origin and world direction.

    `origin` and `rotation` of cast() are then a reference pose for culling; slack_m bounds how far
    any ray origin is from it and slack_rad how far any ray is turned from where the reference
    rotation would point it."""

    origins: np.ndarray  # (3, N) world, m
    dirs: np.ndarray  # (3, N) world unit directions
    slack_m: float
    slack_rad: float


def _cull(spheres: CullingSpheres, axes: np.ndarray, cone: np.ndarray, origin: np.ndarray, grow_m: float,
          max_range: float) -> np.ndarray:
    """(P, G): whether the cone of group g (unit axes (G, 3) from `origin`, half angles `cone`)
    meets any culling sphere of primitive p, the spheres grown by grow_m. An angle test on
    cosines: the angle to a centre is at most cone + the sphere's half angle
    <=> its cosine is at least cos(cone) cos(half) - sin(cone) sin(half)."""
    oc = spheres.centres - origin
    span = np.sqrt(np.einsum("ki,ki->k", oc, oc))
    radii = spheres.radii + grow_m
    inside = span <= radii  # spheres round the origin: every cone meets them (set below)
    sin_half = np.minimum(radii / np.maximum(span, 1e-9), 1.0)
    cos_half = np.sqrt(1.0 - sin_half * sin_half)
    cone_cos, cone_sin = np.cos(cone)[:, None], np.sin(cone)[:, None]
    threshold = cone_cos * cos_half - cone_sin * sin_half  # (G, S): cos(cone + half)
    # cone + half beyond pi (a sensor inside a sphere): sin(cone + half) < 0, every angle passes
    threshold[cone_sin * cos_half + cone_cos * sin_half < 0.0] = -2.0
    meets = (axes @ (oc / np.maximum(span, 1e-9)[:, None]).T) >= threshold
    meets[:, (span - radii > max_range)] = False
    meets[:, inside] = True
    return np.logical_or.reduceat(meets, spheres.first, axis=1).T


def cast(scene: Scene, bundle: RayBundle, origin: np.ndarray, rotation: np.ndarray,
         max_range: float, sun: np.ndarray | None = None, motion: Motion | None = None,
         ground_iterations: int = 4, ground_tolerance_m: float | None = 0.01,
         ground_grid: tuple[int, int, int] | None = None) -> Hits:
    """Cast every ray of `bundle` from `origin` (world, m) with sensor->world `rotation`, or, with
    `motion`, from per-ray origins along per-ray directions.

    Hits beyond max_range count as no hit. Works in the dtype of bundle.dirs (float32 for the
    sensors of fake_game; float64 works too). On terrain, ground hits are refined with `ground_iterations`
    Newton steps from the tangent plane; a ray whose last step still moved it by more than
    `ground_tolerance_m` has not converged and gets no ground hit (None: keep it, for an image).
    A converged LiDAR ground return is within 0.1 mm of the surface; a ray that grazes the short
    undulations and does not settle in 4 steps (6 % of the returns a 40-step solve finds, 18-84 m
    out from the 5th to the 95th percentile) is lost, as a real sensor loses many grazing ones. A
    converged ray may have met the ground behind a crest that should have hidden it (about 0.1 %).

    ground_grid (rows, columns, step), for rays in image order: the terrain is solved on every
    step-th ray of every step-th row only, and the height of the ground above its tangent plane is
    interpolated (bilinearly) for the rays in between: an image's ground at a sixteenth of the cost.
    """
    dtype = bundle.dirs.dtype
    o = np.asarray(origin, np.float64)
    rot = np.asarray(rotation, np.float64)
    if motion is None:
        d = rot.astype(dtype) @ bundle.dirs  # (3, N)
        ray_o: np.ndarray | None = None
        slack_m = slack_rad = 0.0
    else:
        d = motion.dirs.astype(dtype, copy=False)
        ray_o = motion.origins
        slack_m, slack_rad = motion.slack_m, motion.slack_rad
    n = d.shape[1]
    dist = np.full(n, np.inf, dtype)
    mat = np.zeros(n, np.uint8)
    lit = None
    sun_w = None
    if sun is not None:
        sun_w = np.asarray(sun, np.float64)
        lit = np.zeros(n, np.float32)

    # the ground, seen from above only
    # one origin as scalars of the rays' dtype (float32 rays stay float32), or one per ray
    ox, oy, oz = (dtype.type(v) for v in o) if ray_o is None else ray_o
    terrain = scene.terrain
    slopes = shade = None
    if terrain is None:
        under, plane_dz = 0.0, d[2]
    else:
        # the ground's tangent plane at the reference origin: Newton's first guess
        h0, gx0, gy0 = terrain.at(float(o[0]), float(o[1]))
        under = h0 + gx0 * (ox - float(o[0])) + gy0 * (oy - float(o[1]))
        plane_dz = d[2] - gx0 * d[0] - gy0 * d[1]
    if np.any(oz > under):
        down = (plane_dz < -1e-9) & (oz > under)
        np.divide(under - oz, plane_dz, out=dist, where=down)
        if terrain is not None and ground_grid is not None:
            shade = _onto_terrain_grid(terrain, dist, down, plane_dz, float(ox), float(oy), float(oz), d,
                                       ground_iterations, ground_grid, sun_w)
        elif terrain is not None:
            slopes = _onto_terrain(terrain, dist, down, ox, oy, oz, d, ground_iterations,
                                   ground_tolerance_m, slopes=sun_w is not None)
        hit = dist <= max_range
        dist[~hit] = np.inf
        # the texture only where the ground is hit (an image's sky is a third of its pixels)
        on = np.flatnonzero(hit)
        t_on = dist[on]
        gx = t_on * d[0, on]
        gx += ox if ray_o is None else ox[on]
        gy = t_on * d[1, on]
        gy += oy if ray_o is None else oy[on]
        mat[on] = scene.ground_material(gx, gy)
        if lit is not None:
            if terrain is None:
                lit[hit] = max(0.0, float(sun_w[2]))
            elif shade is not None:
                np.copyto(lit, shade, where=hit)
            else:  # the sun on the slope
                lit[on] = _ground_shade(slopes[0][on], slopes[1][on], sun_w)

    if scene.crops is not None:
        _cast_crops(scene, scene.crops, dist, mat, lit, ox, oy, oz, d, max_range, sun_w)

    axes_world = bundle.axes @ rot.T
    # a moving sensor: every ray is within slack_rad of its cone, every origin within slack_m of o
    near = _cull(scene.culling_spheres, axes_world, bundle.radii + slack_rad, o, slack_m, max_range) \
        if scene.primitives else ()
    for prim, meets in zip(scene.primitives, near):
        groups = np.flatnonzero(meets)
        if not len(groups):
            continue
        # an index repeated by an edge group is computed twice with the same result: harmless
        idx = bundle.groups[groups].ravel()
        t, cap = _intersect(prim, o if ray_o is None else ray_o[:, idx], d[:, idx])
        better = t < np.minimum(dist[idx], max_range)
        if not better.any():
            continue
        sel = idx[better]
        dist[sel] = t[better]
        mat[sel] = prim.material
        if lit is None and not isinstance(prim, Box):
            continue  # no normals needed: they shade, and tell a box's roof from its walls
        nb = _normals(prim, o if ray_o is None else ray_o[:, sel], d[:, sel], t[better],
                      None if cap is None else cap[better])
        if isinstance(prim, Box):
            mat[sel[nb[2] > 0.5]] = prim.roof_material
        if lit is not None:
            lit[sel] = np.clip(sun_w[0] * nb[0] + sun_w[1] * nb[1] + sun_w[2] * nb[2], 0.0, 1.0)
    return Hits(dist, mat, lit, d)


def _onto_terrain(terrain: Terrain, dist: np.ndarray, down: np.ndarray, ox, oy, oz, d: np.ndarray,
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


def _cast_crops(scene: Scene, crops: CropRows, dist: np.ndarray, mat: np.ndarray, lit: np.ndarray | None,
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


def _ground_shade(sx: np.ndarray, sy: np.ndarray, sun_w: np.ndarray) -> np.ndarray:
    """Cosine between the sun and the ground's normal (-dz/dx, -dz/dy, 1) / norm, clipped to 0..1."""
    ux, uy, uz = (float(v) for v in sun_w)
    shade = (uz - ux * sx - uy * sy) / np.sqrt(1.0 + sx * sx + sy * sy)
    return np.clip(shade, 0.0, 1.0, out=shade)


def _onto_terrain_grid(terrain: Terrain, dist: np.ndarray, down: np.ndarray, plane_dz: np.ndarray,
                       ox: float, oy: float, oz: float, d: np.ndarray, iterations: int,
                       grid: tuple[int, int, int], sun_w: np.ndarray | None) -> np.ndarray | None:
    """_onto_terrain on a coarse grid of an image's rays, interpolated to all of them: what is
    interpolated is the ground's height above the tangent plane at the hit (smooth across the
    image). Rays in `down` keep their tangent-plane distance plus that height over the plane's rate
    of approach. Returns the sun's shading of the ground per ray (with a sun; else None), from the
    grid's slope for each step x step block."""
    height, width, step = grid
    rows, cols = _grid_axis(height, step), _grid_axis(width, step)
    sub = (rows[0][:, None] * width + cols[0][None, :]).ravel()
    sub_dist = dist[sub].copy()
    sub_down = down[sub]
    slopes = _onto_terrain(terrain, sub_dist, sub_down, ox, oy, oz, d[:, sub], iterations, None,
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
        coarse = _ground_shade(slopes[0], slopes[1], sun_w).astype(np.float32)
        shade = _blocks(coarse.reshape(shape)[regular], step, height, width)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.add(dist, lift_all / -plane_dz, out=dist, where=down & ~alone)
    dist[down & ~(dist > 0.0)] = np.inf
    own = np.flatnonzero(alone)
    if own.size:  # shaded by their block too: far ground, where a block is metres wide anyway
        dist[own] = _newton(terrain, own, dist[own], ox, oy, oz, d, iterations, None, slopes=False)[0]
    return shade


def _intersect(prim: Primitive, o: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Nearest positive hit distance per ray (inf: none), and for a cylinder whether that hit is on
    its top cap (None for the others): what _normals() needs, which runs on the winning rays only.

    `o` is one origin (3,) or one per ray (3, M). A single origin is used as Python floats so that
    float32 rays stay float32 (NumPy 2 promotion)."""
    dtype = d.dtype
    px, py, pz = (float(v) for v in o) if o.ndim == 1 else (o[0], o[1], o[2])
    dx, dy, dz = d[0], d[1], d[2]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if isinstance(prim, Cylinder):
            ox, oy = px - prim.x, py - prim.y
            a = dx * dx + dy * dy
            b = ox * dx + oy * dy
            c = ox * ox + oy * oy - prim.radius * prim.radius
            disc = b * b - a * c
            t_side = (-b - np.sqrt(disc)) / a
            z = pz + t_side * dz
            side_ok = ((disc >= 0.0) & (a > 1e-12) & (t_side > 0.0)
                       & (z >= prim.z0) & (z <= prim.z0 + prim.height))
            t = np.where(side_ok, t_side, np.inf)
            top = prim.z0 + prim.height
            above = pz > top
            if np.any(above):  # the top cap is only visible from above
                t_cap = (top - pz) / dz
                cx = ox + t_cap * dx
                cy = oy + t_cap * dy
                use_cap = above & (dz < 0.0) & (cx * cx + cy * cy <= prim.radius * prim.radius) & (t_cap < t)
                t = np.where(use_cap, t_cap, t)
            else:
                use_cap = np.zeros(len(t), bool)
            return t.astype(dtype, copy=False), use_cap
        if isinstance(prim, Sphere):
            ox, oy, oz = px - prim.x, py - prim.y, pz - prim.z
            b = ox * dx + oy * dy + oz * dz
            c = ox * ox + oy * oy + oz * oz - prim.radius * prim.radius
            disc = b * b - c
            t = -b - np.sqrt(disc)
            return np.where((disc >= 0.0) & (t > 0.0), t, np.inf).astype(dtype, copy=False), None
        # slabs, one axis at a time; a zero direction component becomes a tiny one (no NaN)
        tiny = np.finfo(dtype).tiny
        t_enter = t_exit = None
        for axis, origin in enumerate((px, py, pz)):
            da = d[axis]
            inv = 1.0 / np.where(da == 0.0, tiny, da)
            t1 = (prim.lo[axis] - origin) * inv
            t2 = (prim.hi[axis] - origin) * inv
            near, far = np.minimum(t1, t2), np.maximum(t1, t2)
            t_enter = near if t_enter is None else np.maximum(t_enter, near)
            t_exit = far if t_exit is None else np.minimum(t_exit, far)
        t = np.where((t_enter <= t_exit) & (t_enter > 0.0), t_enter, np.inf)
        return t.astype(dtype, copy=False), None


def _normals(prim: Primitive, o: np.ndarray, d: np.ndarray, t: np.ndarray, cap: np.ndarray | None
             ) -> np.ndarray:
    """World normals (3, M) at the hits t of rays (o, d) on `prim` (cap: from _intersect)."""
    dtype = d.dtype
    px, py, pz = (float(v) for v in o) if o.ndim == 1 else (o[0], o[1], o[2])
    hx, hy, hz = px + t * d[0], py + t * d[1], pz + t * d[2]
    if isinstance(prim, Cylinder):
        inv = 1.0 / prim.radius
        side = ~cap
        return np.stack([(hx - prim.x) * inv * side, (hy - prim.y) * inv * side, cap]).astype(dtype)
    if isinstance(prim, Sphere):
        inv = 1.0 / prim.radius
        return np.stack([(hx - prim.x) * inv, (hy - prim.y) * inv, (hz - prim.z) * inv]).astype(dtype)
    # the entry face: the one the hit point is nearest to; its normal faces the ray
    gaps = [np.minimum(np.abs(h - lo), np.abs(h - hi)) for h, lo, hi in zip((hx, hy, hz), prim.lo, prim.hi)]
    face = np.argmin(np.stack(gaps), axis=0)
    normal = np.zeros((3, len(t)), dtype)
    for axis in range(3):
        on = face == axis
        normal[axis, on] = -np.sign(d[axis, on])
    return normal
