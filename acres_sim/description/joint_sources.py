"""Which of a session's sources the joints follow (ROS-free): the best one that is keeping up.

Ranked: 0 the game's agent states (every physics step: the actual road-wheel angle and speed), 1
the Vehicle Bridge's reports (vehicle/ackermann_state), 2 the ground truth (speed only, the wheels
straight). A source is followed while its last message is within timeout_s of world time of the
newest message of any source: in world time, so that a slow or paused lockstep world, where every
source waits alike, never changes the source; a source that falls silent while the world goes on
(its node ended) gives way. When the followed source changes, the joints restart (no spin over the
gap between two sources)."""

from __future__ import annotations

AGENT_STATES, VEHICLE_REPORTS, GROUND_TRUTH = 0, 1, 2
NAMES = ("/sim/agent_states", "vehicle/ackermann_state", "ground_truth/odom")


class JointSources:
    def __init__(self, timeout_s: float):
        self.timeout_s = timeout_s
        self._last: dict[int, float] = {}  # rank -> the world time of its last message
        self.followed: int | None = None

    def take(self, rank: int, stamp_s: float) -> tuple[bool, bool]:
        """A message of source `rank` stamped stamp_s (world time): (follow it, the followed source
        changed). Time that goes back (a reset) counts every source as keeping up."""
        self._last[rank] = stamp_s
        best = min(r for r, t in self._last.items() if t >= stamp_s - self.timeout_s)
        if rank != best:
            return False, False
        changed = self.followed != rank
        self.followed = rank
        return True, changed
