"""Which of a session's sources the joints follow (ROS-free): the best one heard lately.

Ranked: 0 the game's agent states (every physics step: the actual road-wheel angle and speed), 1
the Vehicle Bridge's reports (vehicle/ackermann_state), 2 the ground truth (speed only, the wheels
straight). A source is followed while nothing better was heard within timeout_s of wall time; when
the followed source changes, the joints restart (no spin over the gap between two clocks)."""

from __future__ import annotations

AGENT_STATES, VEHICLE_REPORTS, GROUND_TRUTH = 0, 1, 2
NAMES = ("/sim/agent_states", "vehicle/ackermann_state", "ground_truth/odom")


class JointSources:
    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._heard: dict[int, float] = {}
        self.followed: int | None = None

    def take(self, rank: int, wall_s: float) -> tuple[bool, bool]:
        """A message of source `rank` came at wall_s: (follow it, the followed source changed)."""
        self._heard[rank] = wall_s
        best = min(r for r, t in self._heard.items() if wall_s - t <= self.timeout_s)
        if rank != best:
            return False, False
        changed = self.followed != rank
        self.followed = rank
        return True, changed
