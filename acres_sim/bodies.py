"""What collides in the fake world (ROS-free): every vehicle's body and every spawned object as an
upright solid over the ground, and whether two of them overlap, how deep, and where they touch.

A vehicle's body is an upright box: its footprint a rectangle turned by the heading, from the
ground under base_footprint up to its height. An object keeps its catalogue shape: a round bale, a
marker post or a person an upright cylinder (its diameter the kind's x size), a square bale or a
fence panel a box, from the ground up to its height. The ground's slope is left out (the map's
slopes stay under 10 %: a tilt moves a box's top by centimetres).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

SEPARATE = -math.inf  # the depth of two bodies that do not overlap
_EPS = 1e-9


@dataclass(frozen=True)
class Solid:
    """An upright body: a box (half sizes along its own x and y, turned by yaw) or a cylinder
    (radius; half sizes 0), over [z0, z1]."""

    name: str
    x: float
    y: float
    yaw: float
    z0: float
    z1: float
    half_x: float = 0.0
    half_y: float = 0.0
    radius: float = 0.0

    @property
    def is_box(self) -> bool:
        return self.radius == 0.0

    def local(self, px: float, py: float) -> tuple[float, float]:
        """A world point in the solid's own frame."""
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        dx, dy = px - self.x, py - self.y
        return c * dx + s * dy, -s * dx + c * dy

    def world(self, lx: float, ly: float) -> tuple[float, float]:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return self.x + c * lx - s * ly, self.y + s * lx + c * ly

    def corners(self) -> list[tuple[float, float]]:
        hx, hy = self.half_x, self.half_y
        return [self.world(sx * hx, sy * hy) for sx, sy in ((1, 1), (-1, 1), (-1, -1), (1, -1))]

    def nearest(self, px: float, py: float) -> tuple[float, float]:
        """The point of the solid's footprint nearest a world point (the point itself inside)."""
        if not self.is_box:
            dx, dy = px - self.x, py - self.y
            d = math.hypot(dx, dy)
            if d <= self.radius:
                return px, py
            return self.x + dx * self.radius / d, self.y + dy * self.radius / d
        lx, ly = self.local(px, py)
        return self.world(min(max(lx, -self.half_x), self.half_x), min(max(ly, -self.half_y), self.half_y))


def vehicle_body(name: str, x: float, y: float, yaw: float, ground_z: float, length_m: float, width_m: float,
                 height_m: float, rear_overhang_m: float) -> Solid:
    """A vehicle's body with base_footprint at (x, y, ground_z) heading yaw."""
    ahead = 0.5 * length_m - rear_overhang_m  # the box's centre ahead of base_footprint
    return Solid(name, x + ahead * math.cos(yaw), y + ahead * math.sin(yaw), yaw, ground_z,
                 ground_z + height_m, half_x=0.5 * length_m, half_y=0.5 * width_m)


def object_body(name: str, shape: str, size_m: tuple[float, float, float], x: float, y: float, z: float,
                yaw: float) -> Solid:
    """A spawned object standing on the ground at (x, y, z): a box, or a cylinder for the round
    shapes (cylinder, person)."""
    sx, sy, sz = size_m
    if shape == "box":
        return Solid(name, x, y, yaw, z, z + sz, half_x=0.5 * sx, half_y=0.5 * sy)
    return Solid(name, x, y, yaw, z, z + sz, radius=0.5 * sx)


def depth(a: Solid, b: Solid) -> float:
    """How far a and b overlap (m, > 0) along the direction that separates them soonest; SEPARATE
    (or <= 0: they touch at most) when they do not."""
    if min(a.z1, b.z1) - max(a.z0, b.z0) <= 0.0:
        return SEPARATE
    if a.is_box and b.is_box:
        return _box_box(a, b)
    if a.is_box or b.is_box:
        box, round_ = (a, b) if a.is_box else (b, a)
        return _box_round(box, round_)
    return a.radius + b.radius - math.hypot(a.x - b.x, a.y - b.y)


def _box_box(a: Solid, b: Solid) -> float:
    """Separating axes: the least overlap of the two footprints' projections on the four edge
    directions (the footprints overlap when every projection does)."""
    least = math.inf
    dx, dy = b.x - a.x, b.y - a.y
    for axis_yaw in (a.yaw, a.yaw + 0.5 * math.pi, b.yaw, b.yaw + 0.5 * math.pi):
        ux, uy = math.cos(axis_yaw), math.sin(axis_yaw)
        overlap = _reach(a, ux, uy) + _reach(b, ux, uy) - abs(dx * ux + dy * uy)
        if overlap <= 0.0:
            return SEPARATE
        least = min(least, overlap)
    return least


def _reach(box: Solid, ux: float, uy: float) -> float:
    """Half the box's extent along a unit direction."""
    c, s = math.cos(box.yaw), math.sin(box.yaw)
    return box.half_x * abs(c * ux + s * uy) + box.half_y * abs(-s * ux + c * uy)


def _box_round(box: Solid, round_: Solid) -> float:
    lx, ly = box.local(round_.x, round_.y)
    out_x, out_y = abs(lx) - box.half_x, abs(ly) - box.half_y
    if out_x <= 0.0 and out_y <= 0.0:  # the centre is inside the box
        return round_.radius - max(out_x, out_y)
    outside = math.hypot(max(out_x, 0.0), max(out_y, 0.0))
    overlap = round_.radius - outside
    return overlap if overlap > 0.0 else SEPARATE


def clearance(a: Solid, b: Solid) -> float:
    """The horizontal gap between two footprints (m; 0 where they touch or overlap)."""
    if a.is_box and b.is_box:
        if _box_box(a, b) > 0.0:
            return 0.0
        # Two convex footprints apart: their nearest points include a corner of one of them.
        gaps = [math.hypot(cx - px, cy - py) for one, other in ((a, b), (b, a)) for cx, cy in one.corners()
                for px, py in (other.nearest(cx, cy),)]
        return min(gaps)
    if not a.is_box and not b.is_box:
        return max(0.0, math.hypot(a.x - b.x, a.y - b.y) - a.radius - b.radius)
    box, round_ = (a, b) if a.is_box else (b, a)
    px, py = box.nearest(round_.x, round_.y)
    return max(0.0, math.hypot(round_.x - px, round_.y - py) - round_.radius)


def overlaps(a: Solid, b: Solid) -> bool:
    return depth(a, b) > _EPS


def contact(a: Solid, b: Solid) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Where a, moving into b, touches it: the point of b's footprint nearest a's centre, at half the
    height they share, and the unit direction from a into b there (horizontal)."""
    px, py = b.nearest(a.x, a.y)
    if a.is_box and b.is_box:
        # Two boxes: the corners of a inside b (its front against a bale's side), or else the
        # corners of b inside a (a's side against b's corner).
        inside = [c for c in a.corners() if _inside(b, *c)] or [c for c in b.corners() if _inside(a, *c)]
        if inside:
            px, py = _centroid(inside)
    nx, ny = px - a.x, py - a.y
    n = math.hypot(nx, ny)
    normal = (nx / n, ny / n, 0.0) if n > _EPS else (math.cos(a.yaw), math.sin(a.yaw), 0.0)
    z = 0.5 * (max(a.z0, b.z0) + min(a.z1, b.z1))
    return (px, py, z), normal


def _inside(box: Solid, px: float, py: float) -> bool:
    lx, ly = box.local(px, py)
    return abs(lx) <= box.half_x + _EPS and abs(ly) <= box.half_y + _EPS


def _centroid(points: list[tuple[float, float]]) -> tuple[float, float]:
    return sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)
