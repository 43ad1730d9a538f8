"""Vectorised ray casting into a Scene.

Ray casting works on a RayBundle: unit directions in the sensor frame plus groups of neighbouring
rays with a bounding cone each. A primitive is only intersected with the rays of the groups whose
cone meets the primitive's bounding sphere, so a scan costs a few milliseconds however many
objects are in the scene.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from acres_sim.fake_game.world.raycast_ground import cast_crops, ground_shade, onto_terrain, onto_terrain_grid
from acres_sim.fake_game.world.scene import Box, CullingSpheres, Cylinder, Primitive, Scene, Sphere


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


def _cone_meets(centres: np.ndarray, radii: np.ndarray, axes: np.ndarray, cone: np.ndarray,
                origin: np.ndarray, grow_m: float, max_range: float) -> np.ndarray:
    """(G, S): whether the cone of group g (unit axes (G, 3) from `origin`, half angles `cone`)
    meets sphere s, the spheres grown by grow_m. An angle test on cosines: the angle to a centre is
    at most cone + the sphere's half angle <=> its cosine is at least
    cos(cone) cos(half) - sin(cone) sin(half)."""
    oc = centres - origin
    span = np.sqrt(np.einsum("ki,ki->k", oc, oc))
    radii = radii + grow_m
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
    return meets


def _cull(spheres: CullingSpheres, axes: np.ndarray, cone: np.ndarray, origin: np.ndarray, grow_m: float,
          max_range: float) -> np.ndarray:
    """(P, G): whether the cone of group g meets any culling sphere of primitive p (see _cone_meets).
    First each primitive's one enclosing sphere, then its own spheres for the pairs that met: a
    sweep's cones meet few of the scene's primitives, and those in few places."""
    outer = _cone_meets(spheres.outer_centres, spheres.outer_radii, axes, cone, origin, grow_m, max_range)
    near = np.zeros((len(spheres.first), len(axes)), bool)
    groups = np.flatnonzero(outer.any(axis=1))
    prims = np.flatnonzero(outer.any(axis=0))
    if not len(groups):
        return near
    owner = spheres.owner
    own = np.flatnonzero(np.isin(owner, prims))
    inner = _cone_meets(spheres.centres[own], spheres.radii[own], axes[groups], cone[groups], origin, grow_m,
                        max_range)
    # any sphere of p met, per primitive p: the rows of `own` are grouped by primitive, in order
    starts = np.flatnonzero(np.r_[True, owner[own][1:] != owner[own][:-1]])
    met = np.logical_or.reduceat(inner, starts, axis=1) & outer[groups][:, prims]
    near[np.ix_(prims, groups)] = met.T
    return near


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
            shade = onto_terrain_grid(terrain, dist, down, plane_dz, float(ox), float(oy), float(oz), d,
                                      ground_iterations, ground_grid, sun_w)
        elif terrain is not None:
            slopes = onto_terrain(terrain, dist, down, ox, oy, oz, d, ground_iterations,
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
                lit[on] = ground_shade(slopes[0][on], slopes[1][on], sun_w)

    if scene.crops is not None:
        cast_crops(scene, scene.crops, dist, mat, lit, ox, oy, oz, d, max_range, sun_w)

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
        if prim.yaw_rad:  # a turned box: the rays in the box's own axes
            px, py, dx, dy = _into_box(prim, px, py, dx, dy)
        # slabs, one axis at a time; a zero direction component becomes a tiny one (no NaN)
        tiny = np.finfo(dtype).tiny
        t_enter = t_exit = None
        for axis, (origin, da) in enumerate(((px, dx), (py, dy), (pz, dz))):
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
    dx, dy = d[0], d[1]
    if prim.yaw_rad:
        hx, hy, dx, dy = _into_box(prim, hx, hy, dx, dy)
    gaps = [np.minimum(np.abs(h - lo), np.abs(h - hi)) for h, lo, hi in zip((hx, hy, hz), prim.lo, prim.hi)]
    face = np.argmin(np.stack(gaps), axis=0)
    normal = np.zeros((3, len(t)), dtype)
    for axis, da in enumerate((dx, dy, d[2])):
        on = face == axis
        normal[axis, on] = -np.sign(da[on])
    if prim.yaw_rad:  # back to the world's axes
        c, s = math.cos(prim.yaw_rad), math.sin(prim.yaw_rad)
        normal[0], normal[1] = c * normal[0] - s * normal[1], s * normal[0] + c * normal[1]
    return normal


def _into_box(box: Box, px, py, dx, dy):
    """Positions (px, py) and directions (dx, dy) in the axes of a box turned by box.yaw_rad about
    its centre (positions relative to the same centre, so lo and hi still apply)."""
    cx, cy, _cz = box.centre
    c, s = math.cos(box.yaw_rad), math.sin(box.yaw_rad)
    rx, ry = px - cx, py - cy
    return (cx + c * rx + s * ry, cy - s * rx + c * ry, (c * dx + s * dy).astype(dx.dtype, copy=False),
            (c * dy - s * dx).astype(dx.dtype, copy=False))
