"""The driven loop of fake_game: a rounded rectangle on the world's plan (LoopRoute) and the speed
along it (DriveProfile: cruise, a brake to a stand once per lap, accelerate again)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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

    def signed_distance_at(self, x: float, y: float) -> float:
        """signed_distance of one point in plain floats (the same operations: the same value), for
        the few points a step asks about (a vehicle's wheels)."""
        r = self.corner_radius_m
        qx = abs(x) - (self.half_x_m - r)
        qy = abs(y) - (self.half_y_m - r)
        inside = min(max(qx, qy), 0.0)
        qx, qy = max(qx, 0.0), max(qy, 0.0)
        return math.sqrt(qx * qx + qy * qy) + inside - r

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
