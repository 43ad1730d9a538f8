"""The compiled loops (numba) of a LiDAR sweep's cast, ray by ray: the terrain's Newton steps, the
ground's texture, the crop rows, the culling and the primitives, and the cloud's assembly; and the
tables they take a scene in. raycast_compiled puts them together; raycast.py and raycast_ground.py
are the same steps over arrays, the reference the tests hold these to.

The same steps in the same order, in float32 where the arrays are (the ground, the crops), so that
the clouds agree to rounding; the primitives in float64, which a float32 sum loses on grazing hits.
Each function runs without Python's lock, and is compiled on first use and cached beside the module.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.scene import Box, Cylinder, Primitive, Terrain

_F32 = np.float32
_TINY = float(np.finfo(np.float32).tiny)  # a zero direction component, as the arrays do
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}

# a primitive table's columns (primitive_table)
_KIND, _MATERIAL, _ROOF, _YAW_COS, _YAW_SIN, _CX, _CY, _A = 0, 1, 2, 3, 4, 5, 6, 7
_CYLINDER, _SPHERE, _BOX = 0, 1, 2
_MAT_ROAD, _MAT_CROP, _MAT_SOIL, _MAT_GRASS = (np.uint8(MAT[name]) for name in
                                               ("road", "crop", "soil", "grass"))


def wave_table(terrain: Terrain | None) -> np.ndarray:
    """(W, 4) float64: amplitude, kx, ky, phase of each of the terrain's waves (none: no rows)."""
    if terrain is None:
        return np.zeros((0, 4))
    return np.array(terrain._k, np.float64).reshape(-1, 4)  # type: ignore[attr-defined]


def primitive_table(primitives: tuple[Primitive, ...]) -> np.ndarray:
    """(P, 13) float64, a row per primitive in the scene's order: kind, material, roof material,
    a box's yaw (cos, sin) and centre (x, y), then the shape: a cylinder's x, y, radius, z0,
    height; a sphere's x, y, z, radius; a box's lo and hi."""
    table = np.zeros((len(primitives), 13))
    for row, p in zip(table, primitives):
        row[_MATERIAL] = p.material
        if isinstance(p, Cylinder):
            row[_KIND] = _CYLINDER
            row[_A:_A + 5] = (p.x, p.y, p.radius, p.z0, p.height)
        elif isinstance(p, Box):
            row[_KIND] = _BOX
            row[_ROOF] = p.roof_material
            row[_YAW_COS], row[_YAW_SIN] = math.cos(p.yaw_rad), math.sin(p.yaw_rad)
            row[_CX], row[_CY] = p.centre[0], p.centre[1]
            row[_A:_A + 6] = (*p.lo, *p.hi)
        else:
            row[_KIND] = _SPHERE
            row[_A:_A + 4] = (p.x, p.y, p.z, p.radius)
    return table


# sin and cos in float32 by polynomials, which the compiler vectorises (libm's are scalar, and
# NumPy's take seven times as long here): pi / 2 in three parts (Cody and Waite's reduction) and the
# minimax coefficients of the Cephes library's sinf and cosf; within 1e-7 of float64's sin and cos
# for the phases of the ground's waves (NumPy's float32: 7e-8)
_PI_2 = (_F32(1.5703125), _F32(4.837512969970703125e-4), _F32(7.549789948768648e-8))
_SIN = (_F32(-1.6666654611e-1), _F32(8.3321608736e-3), _F32(-1.9515295891e-4))
_COS = (_F32(4.166664568298827e-2), _F32(-1.388731625493765e-3), _F32(2.443315711809948e-5))
_TWO_OVER_PI = _F32(2.0 / math.pi)
_HALF, _ONE, _FOUR, _QUARTER = _F32(0.5), _F32(1.0), _F32(4.0), _F32(0.25)


@njit(inline="always", **_JIT)
def _sincos(x):
    """(sin x, cos x) of a float32."""
    q = np.floor(x * _TWO_OVER_PI + _HALF)  # the quadrant, as a float (no integer overflow)
    r = ((x - q * _PI_2[0]) - q * _PI_2[1]) - q * _PI_2[2]
    z = r * r
    s = r + r * z * (_SIN[0] + z * (_SIN[1] + z * _SIN[2]))
    c = _ONE - _HALF * z + z * z * (_COS[0] + z * (_COS[1] + z * _COS[2]))
    k = q - _FOUR * np.floor(q * _QUARTER)  # 0..3 (NaN stays NaN)
    odd = (k == _ONE) | (k == _F32(3.0))
    sin = c if odd else s
    cos = s if odd else c
    return (-sin if k >= _F32(2.0) else sin), (-cos if (k == _ONE) | (k == _F32(2.0)) else cos)


@njit(**_JIT)
def _newton(waves, px, py, pz, dx, dy, dz, t, step, steps):
    """`steps` Newton steps of the rays (float32 arrays) on the ground of `waves`, in place on t
    and step (the last step), as raycast_ground._newton over arrays."""
    m = t.shape[0]
    count = waves.shape[0]
    rate = np.empty((count, m), _F32)
    phase0 = np.empty((count, m), _F32)
    for w in range(count):
        kx, ky, ph = _F32(waves[w, 1]), _F32(waves[w, 2]), _F32(waves[w, 3])
        for j in range(m):
            rate[w, j] = kx * dx[j] + ky * dy[j]
            phase0[w, j] = kx * px[j] + ky * py[j] + ph
    h = np.empty(m, _F32)
    rise = np.empty(m, _F32)
    floor = _F32(-1e-3)
    for _ in range(steps):
        h[:] = 0.0
        rise[:] = 0.0
        for w in range(count):
            amplitude = _F32(waves[w, 0])
            rate_w, phase_w = rate[w], phase0[w]
            for j in range(m):
                sin, cos = _sincos(rate_w[j] * t[j] + phase_w[j])
                h[j] += cos * amplitude
                rise[j] -= sin * rate_w[j] * amplitude
        for j in range(m):
            step[j] = (pz[j] + t[j] * dz[j] - h[j]) / min(dz[j] - rise[j], floor)
            t[j] -= step[j]


@njit(**_JIT)
def ground_distances(origins, dirs, plane, swells, waves, iterations, tolerance_m, max_range, dist):
    """Every ray's distance to the ground into `dist` (float32, inf: none or beyond max_range).

    plane: (height, dz/dx, dz/dy, x, y) of the ground's tangent plane at the reference origin,
    Newton's first guess; swells: the long waves alone (zero rows: none), for the first two of
    `iterations` steps when there are three or more (raycast_ground._newton says why)."""
    h0, gx0, gy0 = _F32(plane[0]), _F32(plane[1]), _F32(plane[2])
    x0, y0 = _F32(plane[3]), _F32(plane[4])
    n = dirs.shape[1]
    rays = np.empty(n, np.int64)
    t = np.empty(n, _F32)
    m = 0
    for i in range(n):  # the rays that descend against the tangent plane, from above it
        ox, oy, oz = origins[0, i], origins[1, i], origins[2, i]
        dx, dy, dz = dirs[0, i], dirs[1, i], dirs[2, i]
        under = h0 + gx0 * (ox - x0) + gy0 * (oy - y0)
        plane_dz = dz - gx0 * dx - gy0 * dy
        dist[i] = np.inf
        if plane_dz < -1e-9 and oz > under:
            rays[m] = i
            t[m] = (under - oz) / plane_dz
            m += 1
    rays, t = rays[:m], t[:m]
    px, py, pz = origins[0][rays], origins[1][rays], origins[2][rays]
    dx, dy, dz = dirs[0][rays], dirs[1][rays], dirs[2][rays]
    step = np.zeros(m, _F32)
    if swells.shape[0] > 0 and iterations >= 3:
        _newton(swells, px, py, pz, dx, dy, dz, t, step, 2)
        _newton(waves, px, py, pz, dx, dy, dz, t, step, iterations - 1)
    else:
        _newton(waves, px, py, pz, dx, dy, dz, t, step, iterations)
    for j in range(m):
        if t[j] > 0.0 and abs(step[j]) < tolerance_m and t[j] <= max_range:
            dist[rays[j]] = t[j]


@njit(**_JIT)
def _hit(row, px, py, pz, dx, dy, dz):
    """(distance, on a box's roof) of the ray's nearest positive hit on the primitive (inf: none)."""
    kind = int(row[_KIND])
    a = row[_A:]
    if kind == _CYLINDER:
        ox, oy = px - a[0], py - a[1]
        r2 = a[2] * a[2]
        aa = dx * dx + dy * dy
        b = ox * dx + oy * dy
        disc = b * b - aa * (ox * ox + oy * oy - r2)
        t = np.inf
        top = a[3] + a[4]
        if disc >= 0.0 and aa > 1e-12:
            t_side = (-b - math.sqrt(disc)) / aa
            z = pz + t_side * dz
            if t_side > 0.0 and a[3] <= z <= top:
                t = t_side
        if pz > top and dz < 0.0:  # the top cap, seen from above only
            t_cap = (top - pz) / dz
            cx, cy = ox + t_cap * dx, oy + t_cap * dy
            if cx * cx + cy * cy <= r2 and t_cap < t:
                t = t_cap
        return t, False
    if kind == _SPHERE:
        ox, oy, oz = px - a[0], py - a[1], pz - a[2]
        b = ox * dx + oy * dy + oz * dz
        disc = b * b - (ox * ox + oy * oy + oz * oz - a[3] * a[3])
        if disc < 0.0:
            return np.inf, False
        t = -b - math.sqrt(disc)
        return (t if t > 0.0 else np.inf), False
    c, s = row[_YAW_COS], row[_YAW_SIN]
    if s != 0.0:  # a turned box: the ray in the box's own axes, about its centre
        rx, ry = px - row[_CX], py - row[_CY]
        px, py = row[_CX] + c * rx + s * ry, row[_CY] - s * rx + c * ry
        dx, dy = c * dx + s * dy, c * dy - s * dx
    t_enter, t_exit = -np.inf, np.inf
    for axis in range(3):
        o = px if axis == 0 else (py if axis == 1 else pz)
        d = dx if axis == 0 else (dy if axis == 1 else dz)
        inv = 1.0 / (d if d != 0.0 else _TINY)
        t1, t2 = (a[axis] - o) * inv, (a[3 + axis] - o) * inv
        t_enter = max(t_enter, min(t1, t2))
        t_exit = min(t_exit, max(t1, t2))
    if not (t_enter <= t_exit and t_enter > 0.0):
        return np.inf, False
    # the entry face: the one the hit is nearest to; the roof when that is the top, met from above
    best_gap, face = np.inf, 0
    for axis in range(3):
        o = px if axis == 0 else (py if axis == 1 else pz)
        d = dx if axis == 0 else (dy if axis == 1 else dz)
        h = o + t_enter * d
        gap = min(abs(h - a[axis]), abs(h - a[3 + axis]))
        if gap < best_gap:
            best_gap, face = gap, axis
    return t_enter, face == 2 and dz < 0.0


@njit(**_JIT)
def nearest_primitives(origins, dirs, table, groups, near, max_range, dist, material, g0, g1):
    """Where a primitive is hit nearer than `dist` (and within max_range), its distance and
    material (a box's roof material on its top) replace the ray's. Only the rays of the groups
    g0..g1 that a primitive's culling met (near: (P, G)); the primitives in the scene's order, as
    the arrays'."""
    for g in range(g0, g1):
        for p in range(table.shape[0]):
            if not near[p, g]:
                continue
            row = table[p]
            for k in range(groups.shape[1]):
                i = groups[g, k]
                t, roof = _hit(row, float(origins[0, i]), float(origins[1, i]), float(origins[2, i]),
                               float(dirs[0, i]), float(dirs[1, i]), float(dirs[2, i]))
                t32 = _F32(t)
                if t32 < min(dist[i], _F32(max_range)):
                    dist[i] = t32
                    material[i] = np.uint8(row[_ROOF] if roof else row[_MATERIAL])


@njit(**_JIT)
def sweep_rays(positions, rotations, sensor_dirs, origins, dirs, c0, c1):
    """The world origin and direction (float32) of every ray of columns c0..c1: column c's sensor
    directions turned by its rotation, from its position (cell c * rings + r)."""
    rings = sensor_dirs.shape[1]
    for c in range(c0, c1):
        rot = rotations[c]
        for r in range(rings):
            i = c * rings + r
            sx, sy, sz = sensor_dirs[c, r, 0], sensor_dirs[c, r, 1], sensor_dirs[c, r, 2]
            for axis in range(3):
                dirs[axis, i] = rot[axis, 0] * sx + rot[axis, 1] * sy + rot[axis, 2] * sz
                origins[axis, i] = positions[c, axis]


@njit(**_JIT)
def _heights(waves, x, y, out):
    """The ground's height at each (x, y) into out, float32 (Terrain.height over float32 arrays);
    wave by wave over all the points, which the compiler vectorises."""
    out[:] = 0.0
    for w in range(waves.shape[0]):
        a, kx, ky, ph = _F32(waves[w, 0]), _F32(waves[w, 1]), _F32(waves[w, 2]), _F32(waves[w, 3])
        for j in range(x.shape[0]):
            out[j] += a * _sincos(kx * x[j] + ky * y[j] + ph)[1]


@njit(**_JIT)
def _texture(ground, x, y):
    """The ground's material at (x, y), float32 (Scene.ground_material)."""
    r = _F32(ground[2])
    qx = abs(x) - _F32(ground[0] - ground[2])
    qy = abs(y) - _F32(ground[1] - ground[2])
    inside = min(max(qx, qy), _F32(0.0))
    qx, qy = max(qx, _F32(0.0)), max(qy, _F32(0.0))
    sd = math.sqrt(qx * qx + qy * qy) + inside - r
    if abs(sd) <= _F32(ground[3]):
        return _MAT_ROAD
    if sd < _F32(-ground[3]) or (y > _F32(ground[6]) and abs(x) < _F32(ground[7])):
        u = x * _F32(1.0 / ground[4])
        u -= np.floor(u)
        return _MAT_CROP if u < _F32(ground[5]) else _MAT_SOIL
    return _MAT_GRASS


@njit(**_JIT)
def textures(origins, dirs, dist, material, ground):
    """Each ground hit's material (Scene.ground_material at the hit)."""
    for i in range(dist.shape[0]):
        t = dist[i]
        if t < np.inf:
            material[i] = _texture(ground, t * dirs[0, i] + origins[0, i], t * dirs[1, i] + origins[1, i])


@njit(**_JIT)
def _row_walls(crops, numbers, first, waves, k, east, extra, px, py, pz, dx, dy, dz, x_row, t, y, z,
               ground, top):
    """For each ray, the wall of row k (or the next one east or west: extra) it crosses: where (t,
    y, z), the ground there and the plants' top (CropRows.row_x and plant_height)."""
    half_fraction, spacing = _F32(0.5 * crops[5]), _F32(crops[4])
    for j in range(k.shape[0]):
        kk = k[j] + extra if east[j] else k[j] - extra
        x_row[j] = (kk + half_fraction) * spacing
        t[j] = (x_row[j] - px[j]) / dx[j]
        y[j] = py[j] + t[j] * dy[j]
        z[j] = pz[j] + t[j] * dz[j]
    _heights(waves, x_row, y, ground)
    for j in range(k.shape[0]):
        kk = k[j] + extra if east[j] else k[j] - extra
        i = min(max(int(np.rint(kk)) - first, 0), numbers.shape[0] - 1)
        along = _sincos(y[j] * _F32(2.0 * math.pi / 6.0) + _F32(2.7) * kk)[0]
        top[j] = ground[j] + _F32(crops[6]) * (_F32(0.625) + _F32(0.3) * numbers[i] + _F32(0.075) * along)


@njit(**_JIT)
def crop_rows(origins, dirs, dist, material, crops, numbers, first, waves, max_range):
    """The first crop row wall each ray meets below the plants' tops, where nearer than what it hit
    (raycast_ground.cast_crops): rays into the field through its south edge, the row crossed from
    where a ray is under the tops, and the next; in passes over the rays that may meet them."""
    y_min, reach_max = _F32(crops[2]), _F32(max_range)
    n = dist.shape[0]
    rays = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        dy, dz, oy = dirs[1, i], dirs[2, i], origins[1, i]
        if min(dist[i], reach_max) * dy > y_min - oy and dz < 0.0 and oy < y_min and abs(dirs[0, i]) > 1e-6:
            rays[m] = i
            m += 1
    rays = rays[:m]
    px, py, pz = origins[0][rays], origins[1][rays], origins[2][rays]
    dx, dy, dz = dirs[0][rays], dirs[1][rays], dirs[2][rays]
    t_in = (y_min - py) / dy
    edge = np.empty(m, _F32)
    _heights(waves, px + t_in * dx, py + t_in * dy, edge)
    edge += _F32(crops[6])
    t_start = np.maximum(t_in, (pz - edge) / -dz)
    u = (px + t_start * dx) * _F32(1.0 / crops[4]) - _F32(0.5 * crops[5])
    east = dx > 0.0
    k = np.where(east, np.ceil(u), np.floor(u))
    rows = np.empty((6, m), _F32)
    x_row, t, y, z, ground, top = rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]
    best = np.full(m, np.inf, _F32)
    going = np.ones(m, np.bool_)  # still above the tops: the next row too (it follows the ground)
    for extra in range(2):
        _row_walls(crops, numbers, first, waves, k, east, _F32(extra), px, py, pz, dx, dy, dz, x_row, t, y, z,
                   ground, top)
        for j in range(m):
            if going[j]:
                inside = (t[j] > 0.0 and y[j] <= _F32(crops[3]) and x_row[j] >= _F32(crops[0])
                          and x_row[j] <= _F32(crops[1]) and z[j] >= ground[j])
                if inside and z[j] <= top[j]:
                    best[j] = t[j]
                going[j] = inside and z[j] > top[j]
    for j in range(m):
        i = rays[j]
        if best[j] < min(dist[i], reach_max):
            dist[i] = best[j]
            material[i] = _MAT_CROP


@njit(**_JIT)
def _cone_meets(axis, cone_cos, cone_sin, origin, centre_x, centre_y, centre_z, radius, max_range):
    """Whether the cone (unit axis, the cosine and sine of its half angle) from origin meets the
    sphere (raycast._cone_meets)."""
    ox, oy, oz = centre_x - origin[0], centre_y - origin[1], centre_z - origin[2]
    span = math.sqrt(ox * ox + oy * oy + oz * oz)
    if span <= radius:
        return True
    if span - radius > max_range:
        return False
    s = max(span, 1e-9)
    sin_half = min(radius / s, 1.0)
    cos_half = math.sqrt(1.0 - sin_half * sin_half)
    threshold = cone_cos * cos_half - cone_sin * sin_half
    if cone_sin * cos_half + cone_cos * sin_half < 0.0:
        threshold = -2.0
    return (axis[0] * ox + axis[1] * oy + axis[2] * oz) / s >= threshold


@njit(**_JIT)
def cull(axes, cones, origin, grow_m, max_range, outer, spheres, first, near, g0, g1):
    """near[p, g] for the groups g0..g1: whether group g's cone meets primitive p's enclosing
    sphere and then one of its own culling spheres (raycast._cull)."""
    for g in range(g0, g1):
        cone_cos, cone_sin = math.cos(cones[g]), math.sin(cones[g])
        for p in range(outer.shape[0]):
            near[p, g] = False
            if not _cone_meets(axes[g], cone_cos, cone_sin, origin, outer[p, 0], outer[p, 1], outer[p, 2],
                               outer[p, 3] + grow_m, max_range):
                continue
            for s in range(first[p], first[p + 1]):
                if _cone_meets(axes[g], cone_cos, cone_sin, origin, spheres[s, 0], spheres[s, 1],
                               spheres[s, 2], spheres[s, 3] + grow_m, max_range):
                    near[p, g] = True
                    break


@njit(**_JIT)
def cloud_points(dirs, dist, intensity, noise, out):
    """The organised cloud (cells, 4) float32 from the sensor-frame ray directions (cells, 3), the
    distances (inf: no return), intensities and range noise (cells; empty: none), as
    LidarModel._points assembles it: a return at its noisy distance, NaN and intensity 0 without."""
    noisy = noise.shape[0] > 0
    for i in range(dist.shape[0]):
        d = dist[i]
        if d < np.inf:
            if noisy:
                d += noise[i]
            out[i, 0] = dirs[i, 0] * d
            out[i, 1] = dirs[i, 1] * d
            out[i, 2] = dirs[i, 2] * d
            out[i, 3] = intensity[i]
        else:
            out[i, 0] = out[i, 1] = out[i, 2] = np.nan
            out[i, 3] = 0.0


@njit(**_JIT)
def sweep_poses(knot_t, knot_p, knot_r, steps, times, positions, rotations):
    """Each column's position and rotation at its time, between the knot poses: the position
    linearly, the rotation along the geodesic (knot_r[j] times Rodrigues of steps[j] scaled by the
    fraction of the way; steps[j]: the rotation vector from knot j to j + 1), as lidar_model's
    _sweep_poses over arrays."""
    last = knot_t.shape[0] - 2
    for c in range(times.shape[0]):
        j = min(max(np.searchsorted(knot_t, times[c], side="right") - 1, 0), last)
        a = (times[c] - knot_t[j]) / (knot_t[j + 1] - knot_t[j])
        for axis in range(3):
            positions[c, axis] = knot_p[j, axis] + a * (knot_p[j + 1, axis] - knot_p[j, axis])
        vx, vy, vz = steps[j, 0] * a, steps[j, 1] * a, steps[j, 2] * a
        angle = math.sqrt(vx * vx + vy * vy + vz * vz)
        scale = 1.0 / angle if angle > 1e-15 else 1.0
        kx, ky, kz = vx * scale, vy * scale, vz * scale
        cos, sin = math.cos(angle), math.sin(angle)
        one = 1.0 - cos
        # cos I + sin [k]x + (1 - cos) k k^T, and knot_r[j] times it: written out, as a 3 x 3 array
        # and a matrix product per column cost more in allocation than in arithmetic
        t00, t01, t02 = cos + one * kx * kx, -sin * kz + one * kx * ky, sin * ky + one * kx * kz
        t10, t11, t12 = sin * kz + one * ky * kx, cos + one * ky * ky, -sin * kx + one * ky * kz
        t20, t21, t22 = -sin * ky + one * kz * kx, sin * kx + one * kz * ky, cos + one * kz * kz
        for row in range(3):
            r0, r1, r2 = knot_r[j, row, 0], knot_r[j, row, 1], knot_r[j, row, 2]
            rotations[c, row, 0] = r0 * t00 + r1 * t10 + r2 * t20
            rotations[c, row, 1] = r0 * t01 + r1 * t11 + r2 * t21
            rotations[c, row, 2] = r0 * t02 + r1 * t12 + r2 * t22


@njit(**_JIT)
def _column_dot(rotations, a, i, b, j):
    """Column i of rotations[a] dot column j of rotations[b]: (R_a^T R_b)[i, j]."""
    return (rotations[a, 0, i] * rotations[b, 0, j] + rotations[a, 1, i] * rotations[b, 1, j]
            + rotations[a, 2, i] * rotations[b, 2, j])


@njit(**_JIT)
def sweep_slack(positions, rotations, mid):
    """(slack_m, slack_rad): how far any column's origin is from the middle column's, and by what
    angle any column's rotation is turned from the middle one's (Motion's)."""
    slack_m = 0.0
    slack_rad = 0.0
    for c in range(positions.shape[0]):
        dx = positions[c, 0] - positions[mid, 0]
        dy = positions[c, 1] - positions[mid, 1]
        dz = positions[c, 2] - positions[mid, 2]
        slack_m = max(slack_m, math.sqrt(dx * dx + dy * dy + dz * dz))
        # R_c^T R_mid, the entries the angle needs (m[i, j]: column i of R_c dot column j of R_mid)
        ax = _column_dot(rotations, c, 2, mid, 1) - _column_dot(rotations, c, 1, mid, 2)
        ay = _column_dot(rotations, c, 0, mid, 2) - _column_dot(rotations, c, 2, mid, 0)
        az = _column_dot(rotations, c, 1, mid, 0) - _column_dot(rotations, c, 0, mid, 1)
        trace = (_column_dot(rotations, c, 0, mid, 0) + _column_dot(rotations, c, 1, mid, 1)
                 + _column_dot(rotations, c, 2, mid, 2))
        half_axis = 0.5 * math.sqrt(ax * ax + ay * ay + az * az)
        # the angle from its sine and cosine: exact near zero, where an arccos of the trace is not
        slack_rad = max(slack_rad, math.atan2(half_axis, 0.5 * (trace - 1.0)))
    return slack_m, slack_rad
