"""How an agent of the fake world moves: along its route, or where the control channel put it."""

from __future__ import annotations

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


Motion = RouteMotion | HeldMotion
