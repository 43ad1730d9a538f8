"""The synthetic world of fake_game: a flat farm scene, vectorised ray casting and the driven loop.

World frame: x east, y north, z up, metres (map-grid ENU, see georef.py). The ground is the plane
z = 0; everything else is a vertical cylinder (tree trunks, posts), a sphere (tree crowns) or an
axis-aligned box (a building). The vehicles are not in the scene: like the game, a LiDAR sees
through its own vehicle.

Ray casting works on a RayBundle: unit directions in the sensor frame plus groups of neighbouring
rays with a bounding cone each. A primitive is only intersected with the rays of
the groups whose cone meets the primitive's bounding sphere, so a scan costs a few milliseconds
however many objects are in the scene.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# ---------------------------------------------------------------------------------------------
# Rotations. The Hello gives roll, pitch, yaw about the fixed FLU axes: R = Rz(yaw) Ry(pitch) Rx(roll).


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """3x3 rotation R = Rz(yaw) @ Ry(pitch) @ Rx(roll), angles in radians."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_to_quaternion(m: np.ndarray) -> np.ndarray:
    """3x3 rotation -> unit quaternion (x, y, z, w) with w >= 0."""
    m = np.asarray(m, float)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = np.array([(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s])
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = np.array([0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s])
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = np.array([(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s])
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = np.array([(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s])
    q /= np.linalg.norm(q)
    return -q if q[3] < 0.0 else q


# ---------------------------------------------------------------------------------------------
# Materials: LiDAR reflectivity byte and camera colour (blue, green, red).


@dataclass(frozen=True)
class Material:
    name: str
    intensity: float  # calibrated reflectivity, 0..255
    bgr: tuple[int, int, int]


MATERIALS = (
    Material("sky", 0.0, (235, 200, 170)),
    Material("soil", 22.0, (48, 74, 104)),
    Material("crop", 58.0, (40, 150, 70)),
    Material("road", 40.0, (125, 140, 150)),
    Material("grass", 48.0, (55, 125, 80)),
    Material("trunk", 70.0, (30, 50, 72)),
    Material("foliage", 30.0, (40, 105, 45)),
    Material("wall", 110.0, (175, 180, 185)),
    Material("roof", 90.0, (70, 55, 150)),
    Material("post", 220.0, (20, 120, 250)),  # bright orange, retro-reflective marker posts
)
MAT = {m.name: i for i, m in enumerate(MATERIALS)}
INTENSITY_TABLE = np.array([m.intensity for m in MATERIALS], np.float32)
COLOUR_TABLE = np.array([m.bgr for m in MATERIALS], np.float32)


# ---------------------------------------------------------------------------------------------
# The driven loop


@dataclass(frozen=True)
class RouteSample:
    x: float
    y: float
    yaw: float  # rad, heading of the body x axis from east, counter-clockwise
    curvature: float  # 1/m, positive when turning left


@dataclass(frozen=True)
class LoopRoute:
    """A rounded rectangle centred on the world origin, driven counter-clockwise at constant speed.

    Arc length 0 is the middle of the south side, heading east.
    """

    half_x_m: float = 45.0
    half_y_m: float = 28.0
    corner_radius_m: float = 12.0
    speed_mps: float = 3.0

    def __post_init__(self) -> None:
        if not 0.0 < self.corner_radius_m <= min(self.half_x_m, self.half_y_m):
            raise ValueError("corner radius must be positive and fit the rectangle")
        if self.speed_mps < 0.0:
            raise ValueError("speed must not be negative")

    @property
    def straight_x(self) -> float:
        return 2.0 * (self.half_x_m - self.corner_radius_m)

    @property
    def straight_y(self) -> float:
        return 2.0 * (self.half_y_m - self.corner_radius_m)

    @property
    def length_m(self) -> float:
        return 2.0 * (self.straight_x + self.straight_y) + 2.0 * math.pi * self.corner_radius_m

    def sample(self, s: float) -> RouteSample:
        """The pose on the loop at arc length s (any real number; the loop repeats)."""
        r = self.corner_radius_m
        ax, ay = self.half_x_m - r, self.half_y_m - r  # corner-centre offsets
        quarter = 0.5 * math.pi * r
        # (length, kind, data): straights start at a point with a heading; arcs have a centre and
        # start angle. Counter-clockwise: east along the south side first.
        s = math.fmod(s, self.length_m)
        if s < 0.0:
            s += self.length_m
        segments = (
            ("line", ax, (0.0, -self.half_y_m), 0.0),
            ("arc", quarter, (ax, -ay), -0.5 * math.pi),
            ("line", self.straight_y, (self.half_x_m, -ay), 0.5 * math.pi),
            ("arc", quarter, (ax, ay), 0.0),
            ("line", self.straight_x, (ax, self.half_y_m), math.pi),
            ("arc", quarter, (-ax, ay), 0.5 * math.pi),
            ("line", self.straight_y, (-self.half_x_m, ay), -0.5 * math.pi),
            ("arc", quarter, (-ax, -ay), math.pi),
            ("line", ax, (-ax, -self.half_y_m), 0.0),
        )
        for i, (kind, length, (px, py), angle) in enumerate(segments):
            if s <= length or i == len(segments) - 1:
                if kind == "line":
                    return RouteSample(px + s * math.cos(angle), py + s * math.sin(angle), _wrap(angle), 0.0)
                phi = angle + s / r
                return RouteSample(px + r * math.cos(phi), py + r * math.sin(phi),
                                   _wrap(phi + 0.5 * math.pi), 1.0 / r)
            s -= length
        raise AssertionError("unreachable: the last segment takes any remainder")

    def signed_distance(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Signed distance of points from the loop's centre line (negative inside), vectorised."""
        r = self.corner_radius_m
        qx = np.abs(x) - (self.half_x_m - r)
        qy = np.abs(y) - (self.half_y_m - r)
        outside = np.hypot(np.maximum(qx, 0.0), np.maximum(qy, 0.0))
        return outside + np.minimum(np.maximum(qx, qy), 0.0) - r


def _wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


# ---------------------------------------------------------------------------------------------
# The scene


@dataclass(frozen=True)
class Cylinder:
    """Vertical cylinder from z0 to z0 + height, with a top cap."""

    x: float
    y: float
    radius: float
    z0: float
    height: float
    material: int


@dataclass(frozen=True)
class Sphere:
    x: float
    y: float
    z: float
    radius: float
    material: int


@dataclass(frozen=True)
class Box:
    """Axis-aligned box; the top face gets `roof_material`."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    material: int
    roof_material: int


Primitive = Cylinder | Sphere | Box


def bounding_sphere(p: Primitive) -> tuple[np.ndarray, float]:
    if isinstance(p, Cylinder):
        h = 0.5 * p.height
        return np.array([p.x, p.y, p.z0 + h]), math.hypot(p.radius, h)
    if isinstance(p, Sphere):
        return np.array([p.x, p.y, p.z]), p.radius
    lo, hi = np.array(p.lo), np.array(p.hi)
    return 0.5 * (lo + hi), 0.5 * float(np.linalg.norm(hi - lo))


def horizontal_extent(p: Primitive) -> tuple[float, float, float, float]:
    """(xmin, ymin, xmax, ymax) of everything the primitive covers: a point outside all of them
    can only be ground."""
    if isinstance(p, (Cylinder, Sphere)):
        return p.x - p.radius, p.y - p.radius, p.x + p.radius, p.y + p.radius
    return p.lo[0], p.lo[1], p.hi[0], p.hi[1]


def tree(x: float, y: float, trunk_height: float = 4.0, crown_radius: float = 2.8) -> tuple[Primitive, ...]:
    """A trunk cylinder plus a spherical crown that sits on it."""
    return (
        Cylinder(x, y, 0.25, 0.0, trunk_height + 0.5 * crown_radius, MAT["trunk"]),
        Sphere(x, y, trunk_height + 0.8 * crown_radius, crown_radius, MAT["foliage"]),
    )


def post(x: float, y: float, height: float = 1.6, radius: float = 0.08) -> Cylinder:
    return Cylinder(x, y, radius, 0.0, height, MAT["post"])


@dataclass(frozen=True)
class Scene:
    """Objects on the flat ground plus the ground's texture: crop rows inside the loop and north of
    it, a gravel track on the loop, grass elsewhere."""

    primitives: tuple[Primitive, ...] = ()
    route: LoopRoute = field(default_factory=LoopRoute)
    road_half_width_m: float = 2.5
    row_spacing_m: float = 0.76  # 30-inch rows, north-south
    row_plant_fraction: float = 0.35
    north_field_y_m: float = 36.0

    def ground_material(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Material index of the ground at world (x, y), vectorised."""
        sd = self.route.signed_distance(x, y)
        in_field = (sd < -self.road_half_width_m) | ((y > self.north_field_y_m) & (np.abs(x) < 120.0))
        u = x * (1.0 / self.row_spacing_m)
        row_phase = u - np.floor(u)
        mat = np.where(in_field,
                       np.where(row_phase < self.row_plant_fraction, MAT["crop"], MAT["soil"]),
                       MAT["grass"]).astype(np.uint8)
        mat[np.abs(sd) <= self.road_half_width_m] = MAT["road"]
        return mat


def default_scene(route: LoopRoute | None = None) -> Scene:
    """The farm yard the agents drive around: a tree line to the south, two trees to the west,
    a machine shed to the east and orange marker posts 4 m outside the track."""
    route = route or LoopRoute()
    prims: list[Primitive] = []
    for x in np.arange(-60.0, 61.0, 15.0):
        prims.extend(tree(float(x), -42.0))
    prims.extend(tree(-66.0, 18.0, trunk_height=5.0, crown_radius=3.5))
    prims.extend(tree(-70.0, 34.0))
    prims.append(Box((58.0, -16.0, 0.0), (72.0, 4.0, 7.0), MAT["wall"], MAT["roof"]))
    off = 4.0
    hx, hy = route.half_x_m + off, route.half_y_m + off
    for x, y in ((0.0, -hy), (20.0, -hy), (-20.0, -hy), (hx, 0.0), (0.0, hy), (-hx, 0.0),
                 (-hx, -12.0), (hx, 12.0)):
        prims.append(post(x, y))
    return Scene(tuple(prims), route)


# ---------------------------------------------------------------------------------------------
# Ray casting


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


def cast(scene: Scene, bundle: RayBundle, origin: np.ndarray, rotation: np.ndarray,
         max_range: float, sun: np.ndarray | None = None, motion: Motion | None = None) -> Hits:
    """Cast every ray of `bundle` from `origin` (world, m) with sensor->world `rotation`, or, with
    `motion`, from per-ray origins along per-ray directions.

    Hits beyond max_range count as no hit. Works in the dtype of bundle.dirs (float64 for the
    LiDAR, float32 for the camera).
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

    # ground plane z = 0, seen from above only
    # one origin as scalars of the rays' dtype (float32 rays stay float32), or one per ray
    ox, oy, oz = (dtype.type(v) for v in o) if ray_o is None else ray_o
    if np.any(oz > 0.0):
        dz = d[2]
        down = (dz < -1e-9) & (oz > 0.0)
        np.divide(-oz, dz, out=dist, where=down)
        hit = dist <= max_range
        dist[~hit] = np.inf
        # evaluate the texture everywhere (no compress/scatter); rays off the ground look at the
        # sensor's own footprint and are masked out
        tg = np.where(hit, dist, dtype.type(0.0))
        gx = tg * d[0]
        gx += ox
        gy = tg * d[1]
        gy += oy
        mat = np.where(hit, scene.ground_material(gx, gy), np.uint8(0))
        if lit is not None:
            lit[hit] = max(0.0, float(sun_w[2]))

    axes_world = bundle.axes @ rot.T
    for prim in scene.primitives:
        centre, radius = bounding_sphere(prim)
        radius += slack_m  # a moving sensor: every origin is within slack_m of o
        oc = centre - o
        span = float(np.linalg.norm(oc))
        if span - radius > max_range:
            continue
        if span <= radius:
            groups = np.arange(len(bundle.axes))
        else:
            half = math.asin(radius / span)
            ang = np.arccos(np.clip(axes_world @ (oc / span), -1.0, 1.0))
            groups = np.flatnonzero(ang <= half + bundle.radii + slack_rad)
            if not len(groups):
                continue
        # an index repeated by an edge group is computed twice with the same result: harmless
        idx = bundle.groups[groups].ravel()
        t, normal = _intersect(prim, o if ray_o is None else ray_o[:, idx], d[:, idx])
        better = t < np.minimum(dist[idx], max_range)
        if not better.any():
            continue
        sel = idx[better]
        dist[sel] = t[better]
        nb = normal[:, better]
        if isinstance(prim, Box):
            mat[sel] = np.where(nb[2] > 0.5, prim.roof_material, prim.material)
        else:
            mat[sel] = prim.material
        if lit is not None:
            lit[sel] = np.clip(sun_w @ nb, 0.0, 1.0)
    return Hits(dist, mat, lit, d)


def _intersect(prim: Primitive, o: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest positive hit distance per ray (inf: none) and the world normal there, (3, M).

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
            t = t.astype(dtype, copy=False)
            inv = 1.0 / prim.radius
            normal = np.stack([np.where(use_cap, 0.0, (ox + t * dx) * inv),
                               np.where(use_cap, 0.0, (oy + t * dy) * inv),
                               use_cap]).astype(dtype)
            return t, np.nan_to_num(normal, nan=0.0, posinf=0.0, neginf=0.0)
        if isinstance(prim, Sphere):
            ox, oy, oz = px - prim.x, py - prim.y, pz - prim.z
            b = ox * dx + oy * dy + oz * dz
            c = ox * ox + oy * oy + oz * oz - prim.radius * prim.radius
            disc = b * b - c
            t = -b - np.sqrt(disc)
            t = np.where((disc >= 0.0) & (t > 0.0), t, np.inf).astype(dtype, copy=False)
            inv = 1.0 / prim.radius
            normal = np.stack([(ox + t * dx) * inv, (oy + t * dy) * inv, (oz + t * dz) * inv])
            return t, np.nan_to_num(normal, nan=0.0, posinf=0.0, neginf=0.0)
        # slabs, one axis at a time; a zero direction component becomes a tiny one (no NaN)
        tiny = np.finfo(dtype).tiny
        near = []
        far = []
        for axis, origin in enumerate((px, py, pz)):
            da = d[axis]
            inv = 1.0 / np.where(da == 0.0, tiny, da)
            t1 = (prim.lo[axis] - origin) * inv
            t2 = (prim.hi[axis] - origin) * inv
            near.append(np.minimum(t1, t2))
            far.append(np.maximum(t1, t2))
        t_enter = np.maximum(np.maximum(near[0], near[1]), near[2])
        t_exit = np.minimum(np.minimum(far[0], far[1]), far[2])
        t = np.where((t_enter <= t_exit) & (t_enter > 0.0), t_enter, np.inf).astype(dtype, copy=False)
        # the entry face is on the axis whose slab was entered last; its normal faces the ray
        normal = np.stack([np.where(near[axis] == t_enter, -np.sign(d[axis]), 0.0) for axis in range(3)])
        return t, normal.astype(dtype, copy=False)
