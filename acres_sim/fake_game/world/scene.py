"""The scene of fake_game: rolling ground (a height field of a few plane waves), crop rows, trees,
a shed and posts as vertical cylinders, spheres and axis-aligned boxes standing on it, and the
bounding spheres the ray caster culls with.

World frame: x east, y north, z up, metres (map-grid ENU, see georef.py). For a Scene without
terrain the ground is the plane z = 0. The vehicles are not in the scene: like the game, a LiDAR
sees through its own vehicle.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.route import LoopRoute


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
    """Box from lo to hi, turned by yaw_rad about the vertical through its centre (0: axis-aligned);
    the top face gets `roof_material`."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    material: int
    roof_material: int
    yaw_rad: float = 0.0

    @property
    def centre(self) -> tuple[float, float, float]:
        lo, hi = self.lo, self.hi
        return (0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2]))


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

    @functools.cached_property
    def owner(self) -> np.ndarray:
        """(S,) the primitive of every sphere."""
        counts = np.diff(np.r_[self.first, len(self.radii)])
        return np.repeat(np.arange(len(self.first)), counts)

    @functools.cached_property
    def _outer(self) -> tuple[np.ndarray, np.ndarray]:
        centres = np.zeros((len(self.first), 3))
        radii = np.zeros(len(self.first))
        for p, (a, b) in enumerate(zip(self.first, np.r_[self.first[1:], len(self.radii)])):
            c, r = self.centres[a:b], self.radii[a:b]
            centres[p] = 0.5 * (c.min(axis=0) + c.max(axis=0))
            radii[p] = float(np.max(np.linalg.norm(c - centres[p], axis=1) + r))
        return centres, radii

    @property
    def outer_centres(self) -> np.ndarray:
        """(P, 3): the centre of a sphere round all of each primitive's spheres."""
        return self._outer[0]

    @property
    def outer_radii(self) -> np.ndarray:
        return self._outer[1]


def horizontal_extent(p: Primitive) -> tuple[float, float, float, float]:
    """(xmin, ymin, xmax, ymax) of everything the primitive covers: a point outside all of them
    can only be ground."""
    if isinstance(p, (Cylinder, Sphere)):
        return p.x - p.radius, p.y - p.radius, p.x + p.radius, p.y + p.radius
    if p.yaw_rad:
        cx, cy, _cz = p.centre
        c, s = abs(math.cos(p.yaw_rad)), abs(math.sin(p.yaw_rad))
        hx, hy = 0.5 * (p.hi[0] - p.lo[0]), 0.5 * (p.hi[1] - p.lo[1])
        ex, ey = c * hx + s * hy, s * hx + c * hy
        return cx - ex, cy - ey, cx + ex, cy + ey
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

    def ground_cells(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Material index and crop field id of the ground at world (x, y), vectorised: field 1
        inside the loop, 2 north of it, 0 elsewhere (the track, grass)."""
        sd = self.route.signed_distance(x, y)
        on_track = np.abs(sd) <= self.road_half_width_m
        north = (y > self.north_field_y_m) & (np.abs(x) < self.north_field_half_x_m)
        fields = np.where(sd < -self.road_half_width_m, 1, np.where(north, 2, 0))
        fields[on_track] = 0
        return self.ground_material(x, y, sd), fields

    def ground_cell(self, x: float, y: float) -> tuple[int, int]:
        """ground_cells of one point in plain floats (the same tests on the same values)."""
        sd = self.route.signed_distance_at(x, y)
        road = self.road_half_width_m
        north = y > self.north_field_y_m and abs(x) < self.north_field_half_x_m
        if abs(sd) <= road:
            return int(MAT["road"]), 0
        if sd < -road:
            field = 1
        else:
            field = 2 if north else 0
        if not (sd < -road or north):
            return int(MAT["grass"]), field
        u = x * (1.0 / self.row_spacing_m)
        u -= math.floor(u)
        return int(MAT["crop"] if u < self.row_plant_fraction else MAT["soil"]), field

    def ground_material(self, x: np.ndarray, y: np.ndarray, sd: np.ndarray | None = None) -> np.ndarray:
        """Material index of the ground at world (x, y), vectorised (sd: the route's signed distance
        there, if known; it is changed in place)."""
        sd = self.route.signed_distance(x, y) if sd is None else sd
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
