"""A scripted agent's driver (ROS-free): pure pursuit along the scenario's waypoints at its speed,
stopping at the last one. The runner turns each answer into an Ackermann command stamped for the
step, so a scripted agent is driven through its vehicle_bridge like any stack's."""

from __future__ import annotations

import math
from collections.abc import Sequence

ARRIVED_M = 1.0  # within this of the last waypoint it stops


class WaypointDriver:
    def __init__(self, waypoints: Sequence[tuple[float, float]], speed_mps: float, wheelbase_m: float,
                 max_steer_rad: float, lookahead_m: float = 4.0):
        self.waypoints = list(waypoints)
        self.speed = speed_mps
        self.wheelbase = wheelbase_m
        self.max_steer = max_steer_rad
        self.lookahead = lookahead_m
        self.next = 0  # the waypoint it heads for

    def command(self, x: float, y: float, yaw: float) -> tuple[float, float]:
        """(road-wheel angle rad, speed m/s) from base_footprint's pose."""
        last = len(self.waypoints) - 1
        while self.next < last and math.hypot(self.waypoints[self.next][0] - x,
                                              self.waypoints[self.next][1] - y) < self.lookahead:
            self.next += 1
        tx, ty = self.waypoints[self.next]
        distance = math.hypot(tx - x, ty - y)
        if self.next == last and distance < ARRIVED_M:
            return 0.0, 0.0
        alpha = math.atan2(ty - y, tx - x) - yaw
        alpha = math.atan2(math.sin(alpha), math.cos(alpha))
        steer = math.atan2(2.0 * self.wheelbase * math.sin(alpha), max(distance, 1e-3))
        speed = self.speed if self.next < last else min(self.speed, max(0.5, distance))  # ease in
        return max(-self.max_steer, min(self.max_steer, steer)), speed
