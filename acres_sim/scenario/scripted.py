"""A scripted agent's driver (ROS-free): pure pursuit along the scenario's waypoints at its speed,
stopping at the last one. The runner turns each answer into an Ackermann command stamped for the
step, so a scripted agent is driven through its vehicle_bridge like any stack's."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from acres_sim.rotations import orientation_yaw

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


def scripted_commands(drivers: Mapping[str, WaypointDriver], states: Mapping[str, Mapping[str, Any]],
                      starts: Mapping[str, tuple[float, float, float]] | None = None
                      ) -> dict[str, tuple[float, float]]:
    """Each scripted agent's (steering, speed) from its latest AgentState (a dict of its fields), or
    from its start (x, y, yaw) before one came: the one way both the runner and the learners'
    environment drive them."""
    out = {}
    for name, driver in drivers.items():
        state = states.get(name)
        if state is not None:
            p = state["pose"]
            pose = (p["position"]["x"], p["position"]["y"], orientation_yaw(p["orientation"]))
        elif starts is not None and name in starts:
            pose = starts[name]
        else:
            continue
        out[name] = driver.command(*pose)
    return out
