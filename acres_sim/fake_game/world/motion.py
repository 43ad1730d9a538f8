"""How an agent of the fake world moves: along its route, where the control channel put it, or as
its vehicle model drives it."""

from __future__ import annotations

import bisect
import math
import threading
from dataclasses import dataclass

import numpy as np

from acres_sim.rotations import rotation_vector_matrix


@dataclass(frozen=True)
class RouteMotion:
    """Driving the route: the drive profile is at its start (distance 0) at world time start_s."""

    start_s: float = 0.0

    def shifted(self, dt: float) -> RouteMotion:
        return RouteMotion(self.start_s + dt)


@dataclass(frozen=True)
class HeldMotion:
    """Placed by the control channel at world time since_s: base_footprint at `position` with
    `rotation` (body -> world) then, and moving on with the constant world-frame `velocity` and
    `angular_velocity` (both zero: it stands)."""

    since_s: float
    position: tuple[float, float, float]
    rotation: np.ndarray
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def shifted(self, dt: float) -> HeldMotion:
        return HeldMotion(self.since_s + dt, self.position, self.rotation, self.velocity,
                          self.angular_velocity)

    def pose(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        dt = t - self.since_s
        position = np.array(self.position) + dt * np.array(self.velocity)
        turn = rotation_vector_matrix(dt * np.array(self.angular_velocity))
        return position, turn @ self.rotation


@dataclass(frozen=True)
class DriveKnot:
    """base_footprint's planar state at one physics step of a driven vehicle: position, heading
    (unwrapped), signed speed along the heading and yaw rate."""

    t: float
    x: float
    y: float
    yaw: float
    speed: float
    yaw_rate: float


class DrivenMotion:
    """Driven by the vehicle model: the planar track, one knot per physics
    step. Between knots it is a cubic Hermite curve through their positions and velocities (smooth,
    so that the INS's finite differences see the real accelerations); after the last knot it goes on
    along the arc of its speed and yaw rate; before the first it stands there. Only the latest
    KEEP_S of knots are kept: the sensors look back one sweep at most. Knots are added by the
    simulation while renders read, hence the lock."""

    KEEP_S = 3.0

    def __init__(self, first: DriveKnot):
        self._knots: list[DriveKnot] = [first]
        self._times: list[float] = [first.t]
        self._lock = threading.Lock()
        self._revision = 0  # counts the changes: the curve is another one after each

    def add(self, knot: DriveKnot) -> None:
        with self._lock:
            if knot.t <= self._times[-1]:
                raise ValueError(f"knot at {knot.t} s is not after the last one ({self._times[-1]} s)")
            self._knots.append(knot)
            self._times.append(knot.t)
            self._revision += 1
            if knot.t - self._times[0] > 2.0 * self.KEEP_S:  # trim now and then, not every step
                cut = bisect.bisect_left(self._times, knot.t - self.KEEP_S)
                del self._knots[:cut], self._times[:cut]

    def replace_latest(self, knot: DriveKnot) -> None:
        """The latest knot as it turned out (a collision stopped the step's motion short)."""
        with self._lock:
            if knot.t != self._times[-1]:
                raise ValueError(f"knot at {knot.t} s is not the latest ({self._times[-1]} s)")
            self._knots[-1] = knot
            self._revision += 1

    @property
    def revision(self) -> int:
        """Changes with every knot added or replaced: a result computed from the curve is stale."""
        with self._lock:
            return self._revision

    def knot_at(self, t: float) -> DriveKnot | None:
        """The knot of world time t exactly, if it is the latest."""
        with self._lock:
            last = self._knots[-1]
        return last if last.t == t else None

    def shifted(self, dt: float) -> DrivenMotion:
        with self._lock:
            knots = [DriveKnot(k.t + dt, k.x, k.y, k.yaw, k.speed, k.yaw_rate) for k in self._knots]
        moved = DrivenMotion(knots[0])
        moved._knots, moved._times = knots, [k.t for k in knots]
        return moved

    def planar(self, t: float) -> tuple[float, float, float]:
        """x, y and heading of base_footprint at world time t."""
        with self._lock:
            i = bisect.bisect_right(self._times, t)
            if i == 0:
                k = self._knots[0]
                return k.x, k.y, k.yaw
            a = self._knots[i - 1]
            if i == len(self._knots):
                return _along_arc(a, t - a.t)
            b = self._knots[i]
        h = b.t - a.t
        s = (t - a.t) / h
        s2, s3 = s * s, s * s * s
        h00, h10, h01, h11 = 2 * s3 - 3 * s2 + 1, s3 - 2 * s2 + s, -2 * s3 + 3 * s2, s3 - s2

        def hermite(p0: float, m0: float, p1: float, m1: float) -> float:
            return h00 * p0 + h10 * h * m0 + h01 * p1 + h11 * h * m1

        return (hermite(a.x, a.speed * math.cos(a.yaw), b.x, b.speed * math.cos(b.yaw)),
                hermite(a.y, a.speed * math.sin(a.yaw), b.y, b.speed * math.sin(b.yaw)),
                hermite(a.yaw, a.yaw_rate, b.yaw, b.yaw_rate))


def _along_arc(k: DriveKnot, dt: float) -> tuple[float, float, float]:
    turn = k.yaw_rate * dt
    if abs(turn) < 1e-9:
        mid = k.yaw + 0.5 * turn
        return k.x + k.speed * dt * math.cos(mid), k.y + k.speed * dt * math.sin(mid), k.yaw + turn
    radius = k.speed / k.yaw_rate
    return (k.x + radius * (math.sin(k.yaw + turn) - math.sin(k.yaw)),
            k.y + radius * (math.cos(k.yaw) - math.cos(k.yaw + turn)), k.yaw + turn)


Motion = RouteMotion | HeldMotion | DrivenMotion
