"""The synthetic world of fake_game: a farm scene on rolling ground, vectorised ray casting and the
driven loop.

World frame: x east, y north, z up, metres (map-grid ENU, see georef.py). The ground is a smooth
height field (a few plane waves: slopes of a few degrees, so roll, pitch and z change along the
route) or, for a Scene without terrain, the plane z = 0; everything else is a vertical cylinder
(tree trunks, posts), a sphere (tree crowns) or an axis-aligned box (a building), standing on the
ground. The vehicles are not in the scene: like the game, a LiDAR sees through its own vehicle.

Ray casting works on a RayBundle: unit directions in the sensor frame plus groups of neighbouring
rays with a bounding cone each. A primitive is only intersected with the rays of
the groups whose cone meets the primitive's bounding sphere, so a scan costs a few milliseconds
however many objects are in the scene.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
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
    """3x3 rotation -> unit quaternion (x, y, z, w) with w >= 0. In plain floats: the INS asks for
    two a hundred times a second, and numpy costs microseconds per call on four numbers."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = np.asarray(m, float).tolist()
    trace = m00 + m11 + m22
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = ((m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s)
    elif m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        q = (0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s)
    elif m11 > m22:
        s = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        q = ((m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
        q = ((m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s)
    k = (-1.0 if q[3] < 0.0 else 1.0) / math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return np.array([q[0] * k, q[1] * k, q[2] * k, q[3] * k])


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
        x, y = np.asarray(x), np.asarray(y)
        f = np.result_type(x, y, np.float32).type  # float32 points stay float32
        r = self.corner_radius_m
        qx = np.abs(x) - f(self.half_x_m - r)
        qy = np.abs(y) - f(self.half_y_m - r)
        inside = np.minimum(np.maximum(qx, qy), f(0.0))
        # in place, and sqrt rather than hypot: an image asks this for every ground pixel
        np.maximum(qx, f(0.0), out=qx)
        np.maximum(qy, f(0.0), out=qy)
        qx *= qx
        qy *= qy
        qx += qy
        np.sqrt(qx, out=qx)
        qx += inside
        qx -= f(r)
        return qx


@dataclass(frozen=True)
class DriveProfile:
    """Distance driven along the loop against time: cruise at `speed`; once per lap of `lap_m`,
    brake at `accel` to a stand of `stand_s` seconds at `stop_at_m` into the lap, then accelerate
    at the same rate. state(t) -> (distance m, speed m/s, forward acceleration m/s^2)."""

    speed: float
    lap_m: float
    stop_at_m: float
    stand_s: float = 4.0
    accel: float = 0.6

    def __post_init__(self) -> None:
        if self.speed > 0.0:
            brake = self.braking_m
            if not brake <= self.stop_at_m <= self.lap_m - brake:
                raise ValueError(f"the stop at {self.stop_at_m} m leaves no room to brake and accelerate "
                                 f"({brake:.1f} m each) in a lap of {self.lap_m} m")

    @property
    def braking_m(self) -> float:
        return self.braking_distance(self.speed, self.accel)

    @staticmethod
    def braking_distance(speed: float, accel: float) -> float:
        """Distance to brake from `speed` to a stand at `accel` (the same to start again)."""
        return speed * speed / (2.0 * accel)

    @property
    def period_s(self) -> float:
        """One lap: the cruise time plus the stand plus v / a (braking and starting take v / a each
        and cover v^2 / 2a each, half the time it would take at speed)."""
        return self.lap_m / self.speed + self.stand_s + self.speed / self.accel

    def state(self, t: float) -> tuple[float, float, float]:
        v, a = self.speed, self.accel
        if v <= 0.0:
            return 0.0, 0.0, 0.0
        laps = math.floor(t / self.period_s)
        tau = t - laps * self.period_s
        base = laps * self.lap_m
        brake_m, brake_s = self.braking_m, v / a
        t1 = (self.stop_at_m - brake_m) / v  # cruise until braking starts
        if tau < t1:
            return base + v * tau, v, 0.0
        tau -= t1
        if tau < brake_s:
            return base + self.stop_at_m - brake_m + v * tau - 0.5 * a * tau * tau, v - a * tau, -a
        tau -= brake_s
        if tau < self.stand_s:
            return base + self.stop_at_m, 0.0, 0.0
        tau -= self.stand_s
        if tau < brake_s:
            return base + self.stop_at_m + 0.5 * a * tau * tau, a * tau, a
        tau -= brake_s
        return base + self.stop_at_m + brake_m + v * tau, v, 0.0


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


def bounding_spheres(p: Primitive) -> tuple[np.ndarray, np.ndarray]:
    """Spheres that together cover the primitive, (K, 3) centres and (K,) radii, for culling: a
    tall thin cylinder (a trunk, a post) is a stack of spheres about as wide as it is, so that
    only rays near it are intersected with it rather than all those in one sphere round it."""
    if isinstance(p, Cylinder):
        count = max(1, min(16, math.ceil(p.height / (2.0 * p.radius))))
        half = 0.5 * p.height / count
        z = p.z0 + half * (2.0 * np.arange(count) + 1.0)
        centres = np.stack([np.full(count, p.x), np.full(count, p.y), z], axis=1)
        return centres, np.full(count, math.hypot(p.radius, half))
    if isinstance(p, Sphere):
        return np.array([[p.x, p.y, p.z]]), np.array([p.radius])
    lo, hi = np.array(p.lo), np.array(p.hi)
    return (0.5 * (lo + hi))[None, :], np.array([0.5 * float(np.linalg.norm(hi - lo))])


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


@dataclass(frozen=True)
class CullingSpheres:
    """The culling spheres of a scene's primitives, one array: (S, 3) centres, (S,) radii, and the
    index of each primitive's first sphere."""

    centres: np.ndarray
    radii: np.ndarray
    first: np.ndarray

    @staticmethod
    def of(primitives) -> CullingSpheres:
        parts = [bounding_spheres(p) for p in primitives]
        counts = [len(r) for _c, r in parts]
        if not parts:
            return CullingSpheres(np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.intp))
        return CullingSpheres(np.concatenate([c for c, _r in parts]), np.concatenate([r for _c, r in parts]),
                              np.cumsum([0] + counts[:-1]).astype(np.intp))


def horizontal_extent(p: Primitive) -> tuple[float, float, float, float]:
    """(xmin, ymin, xmax, ymax) of everything the primitive covers: a point outside all of them
    can only be ground."""
    if isinstance(p, (Cylinder, Sphere)):
        return p.x - p.radius, p.y - p.radius, p.x + p.radius, p.y + p.radius
    return p.lo[0], p.lo[1], p.hi[0], p.hi[1]


_SINK_M = 0.3  # objects reach this far into the ground, so a slope shows no gap under them
_SWELL_M = 30.0  # waves at least this long are the terrain's swells


def tree(x: float, y: float, trunk_height: float = 4.0, crown_radius: float = 2.8,
         base: float | None = None) -> tuple[Primitive, ...]:
    """A trunk cylinder plus a spherical crown that sits on it; `base`: the ground height there on
    rolling ground (None: the plane z = 0)."""
    sink = 0.0 if base is None else _SINK_M
    base = base or 0.0
    return (
        Cylinder(x, y, 0.25, base - sink, trunk_height + 0.5 * crown_radius + sink, MAT["trunk"]),
        Sphere(x, y, base + trunk_height + 0.8 * crown_radius, crown_radius, MAT["foliage"]),
    )


def post(x: float, y: float, height: float = 1.6, radius: float = 0.08,
         base: float | None = None) -> Cylinder:
    sink = 0.0 if base is None else _SINK_M
    return Cylinder(x, y, radius, (base or 0.0) - sink, height + sink, MAT["post"])


@dataclass(frozen=True)
class Terrain:
    """Ground height z = sum of a cos(2 pi (x cos b + y sin b) / wavelength + phase) over `waves`
    of (amplitude m, wavelength m, direction b deg, phase rad): smooth, so its slope is exact and
    cheap, and gentle (the slope is at most 2 pi sum(a / wavelength) rad)."""

    waves: tuple[tuple[float, float, float, float], ...]

    def __post_init__(self) -> None:
        k = [(a, 2.0 * math.pi / w * math.cos(math.radians(b)), 2.0 * math.pi / w * math.sin(math.radians(b)),
              ph) for a, w, b, ph in self.waves]
        object.__setattr__(self, "_k", tuple(k))

    @functools.cached_property
    def swells(self) -> Terrain | None:
        """The waves of 30 m and longer alone (None when there are no shorter ones): a smooth first
        surface for the ray caster."""
        long = tuple(w for w in self.waves if w[1] >= _SWELL_M)
        return Terrain(long) if long and len(long) < len(self.waves) else None

    def height(self, x, y):
        """z of the ground at (x, y); arrays keep their dtype."""
        z = 0.0
        for a, kx, ky, ph in self._k:  # type: ignore[attr-defined]
            z = z + a * np.cos(kx * x + ky * y + ph)
        return z

    def height_and_slope(self, x, y):
        """(z, dz/dx, dz/dy) at (x, y)."""
        z = gx = gy = 0.0
        for a, kx, ky, ph in self._k:  # type: ignore[attr-defined]
            arg = kx * x + ky * y + ph
            z = z + a * np.cos(arg)
            s = a * np.sin(arg)
            gx = gx - kx * s
            gy = gy - ky * s
        return z, gx, gy

    def along_rays(self, px, py, dx, dy) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """For rays (px + t dx, py + t dy) (float32 arrays, or floats for one origin): t -> (height,
        its rate d height / dt) of the ground under them. Every wave's phase is linear in t, so a
        call needs no ground points and no slopes: what a Newton step on a ray needs, in float32."""
        f32 = np.float32
        terms = [(f32(a), kx * px + ky * py + ph, (kx * dx + ky * dy).astype(f32, copy=False))
                 for a, kx, ky, ph in self._k]  # type: ignore[attr-defined]

        def at(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            h, rise = np.zeros_like(t), np.zeros_like(t)
            arg, wave = np.empty_like(t), np.empty_like(t)
            for amplitude, phase0, rate in terms:
                np.multiply(rate, t, out=arg)
                arg += phase0
                np.cos(arg, out=wave)
                wave *= amplitude
                h += wave
                np.sin(arg, out=wave)
                wave *= rate
                wave *= amplitude
                rise -= wave
            return h, rise
        return at

    def at(self, x: float, y: float) -> tuple[float, float, float]:
        """(z, dz/dx, dz/dy) at one point, in plain floats (the vehicle's pose asks hundreds of
        times a second; math is ten times faster than numpy on scalars)."""
        z = gx = gy = 0.0
        for a, kx, ky, ph in self._k:  # type: ignore[attr-defined]
            arg = kx * x + ky * y + ph
            z += a * math.cos(arg)
            s = a * math.sin(arg)
            gx -= kx * s
            gy -= ky * s
        return z, gx, gy

    def normal(self, x: float, y: float) -> np.ndarray:
        """Unit upward normal of the ground at (x, y)."""
        _z, gx, gy = self.at(x, y)
        k = 1.0 / math.sqrt(1.0 + gx * gx + gy * gy)
        return np.array([-gx * k, -gy * k, k])


# Rolling farm ground: long, low swells (about 2 m of relief) and a shorter cross wave, plus two
# small undulations of 5-10 cm, 7-12 m long, as a worked field has. Those give a LiDAR odometry
# something to register on the ground: with the swells alone, KISS-ICP drifted 4.5 % over 90 m;
# with them 0.6 % (with the per-point times; 4.5 % without).
DEFAULT_TERRAIN = Terrain((
    (0.60, 130.0, 10.0, 0.4),
    (0.45, 80.0, 95.0, 1.3),
    (0.20, 36.0, 40.0, 2.2),
    (0.10, 12.0, 70.0, 0.3),
    (0.05, 7.0, 150.0, 1.7),
))


@dataclass(frozen=True)
class CropRows:
    """A field of row crops standing on the ground: every row a thin wall of foliage, north-south
    along x = (k + 0.5 fraction) * spacing (the middle of each crop stripe of the ground's texture),
    over x_min..x_max and y_min..y_max. Between the rows the ground shows. The plants are not all
    alike: each row has its own height (55-100 % of height_m) and the height varies along it, so a
    LiDAR sees the field's rows apart and not as one repeating pattern."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float
    spacing_m: float
    fraction: float
    height_m: float = 0.9

    def row_x(self, k):
        return (k + 0.5 * self.fraction) * self.spacing_m

    @functools.cached_property
    def _row_numbers(self) -> tuple[int, np.ndarray]:
        """A fixed pseudo-random number in [0, 1) per row index, from the first row index on: a
        table, so that a row's number does not depend on the dtype it is asked in."""
        first = math.floor(self.x_min / self.spacing_m) - 1
        k = np.arange(first, math.ceil(self.x_max / self.spacing_m) + 2, dtype=np.float64)
        row = np.sin(k * 12.9898) * 43758.5453
        return first, row - np.floor(row)

    def plant_height(self, k, y):
        """Height of row k's plants at y (m above the ground), vectorised; at most height_m. The
        result has the dtype of y (float32 in, float32 out)."""
        first, numbers = self._row_numbers
        i = np.clip(np.rint(k).astype(np.intp) - first, 0, len(numbers) - 1)
        dtype = np.result_type(y, np.float32)
        row = numbers.astype(dtype)[i]
        along = np.sin(y * dtype.type(2.0 * math.pi / 6.0) + dtype.type(2.7) * k)
        return dtype.type(self.height_m) * (dtype.type(0.625) + dtype.type(0.3) * row
                                            + dtype.type(0.075) * along)


@dataclass(frozen=True)
class Scene:
    """Objects on the ground plus the ground's texture: crop rows inside the loop and north of it, a
    gravel track on the loop, grass elsewhere. terrain None: the ground is the plane z = 0."""

    primitives: tuple[Primitive, ...] = ()
    route: LoopRoute = field(default_factory=LoopRoute)
    terrain: Terrain | None = None
    crops: CropRows | None = None  # plants with height in the north field
    road_half_width_m: float = 2.5
    row_spacing_m: float = 0.76  # 30-inch rows, north-south
    row_plant_fraction: float = 0.35
    north_field_y_m: float = 36.0
    north_field_half_x_m: float = 120.0

    @functools.cached_property
    def culling_spheres(self) -> CullingSpheres:
        """The primitives' culling spheres, for the ray caster."""
        return CullingSpheres.of(self.primitives)

    def ground_height(self, x, y):
        """z of the ground at (x, y) (0 without terrain)."""
        if self.terrain is None:
            return 0.0 * x
        if isinstance(x, float) and isinstance(y, float):
            return self.terrain.at(x, y)[0]
        return self.terrain.height(x, y)

    def ground_normal(self, x: float, y: float) -> np.ndarray:
        return np.array([0.0, 0.0, 1.0]) if self.terrain is None else self.terrain.normal(x, y)

    def ground_material(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Material index of the ground at world (x, y), vectorised."""
        sd = self.route.signed_distance(x, y)
        f = sd.dtype.type
        u = x * f(1.0 / self.row_spacing_m)
        u -= np.floor(u)  # the phase across the rows
        in_field = sd < f(-self.road_half_width_m)
        in_field |= (y > f(self.north_field_y_m)) & (np.abs(x) < f(self.north_field_half_x_m))
        crop_or_soil = np.where(u < f(self.row_plant_fraction), np.uint8(MAT["crop"]), np.uint8(MAT["soil"]))
        mat = np.where(in_field, crop_or_soil, np.uint8(MAT["grass"]))
        np.abs(sd, out=sd)
        np.copyto(mat, np.uint8(MAT["road"]), where=sd <= f(self.road_half_width_m))
        return mat


def default_scene(route: LoopRoute | None = None, terrain: Terrain | None = DEFAULT_TERRAIN) -> Scene:
    """The farm yard the agents drive around: a tree line to the south, two trees to the west,
    a machine shed to the east and orange marker posts 4 m outside the track, all standing on the
    rolling ground."""
    route = route or LoopRoute()

    def ground(x: float, y: float) -> float | None:
        return None if terrain is None else float(terrain.height(x, y))
    prims: list[Primitive] = []
    for x in np.arange(-60.0, 61.0, 15.0):
        prims.extend(tree(float(x), -42.0, base=ground(float(x), -42.0)))
    prims.extend(tree(-66.0, 18.0, trunk_height=5.0, crown_radius=3.5, base=ground(-66.0, 18.0)))
    prims.extend(tree(-70.0, 34.0, base=ground(-70.0, 34.0)))
    corners = [ground(x, y) or 0.0 for x in (58.0, 72.0) for y in (-16.0, 4.0)]
    floor = min(corners) - (_SINK_M if terrain is not None else 0.0)
    prims.append(Box((58.0, -16.0, floor), (72.0, 4.0, max(corners) + 7.0), MAT["wall"], MAT["roof"]))
    off = 4.0
    hx, hy = route.half_x_m + off, route.half_y_m + off
    for x, y in ((0.0, -hy), (20.0, -hy), (-20.0, -hy), (hx, 0.0), (0.0, hy), (-hx, 0.0),
                 (-hx, -12.0), (hx, 12.0)):
        prims.append(post(x, y, base=ground(x, y)))
    scene = Scene(tuple(prims), route, terrain=terrain)
    # the north field's rows as plants, 60 m of them, on the crop stripes of the ground's texture
    half, north = scene.north_field_half_x_m, scene.north_field_y_m
    crops = CropRows(-half, half, north, north + 60.0, scene.row_spacing_m, scene.row_plant_fraction)
    return dataclasses.replace(scene, crops=crops)


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
