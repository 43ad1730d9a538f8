"""The fake world's time base (ROS-free): physics steps of exactly 1/120 s, and the steps at which a
sensor's epochs fall due (see the session's docstring for the rules)."""

from __future__ import annotations

import math
from fractions import Fraction

from acres_sim.stream.timing import PHYSICS_HZ


def world_time(step: int) -> float:
    """World time of physics step n, exact to the double nearest n / 120."""
    return step / float(PHYSICS_HZ)


def due_step(epoch: int, hz: float) -> int:
    """The first physics step at or after the due time epoch / hz (exact arithmetic)."""
    return math.ceil(Fraction(PHYSICS_HZ * epoch) / Fraction(hz))


class SensorSchedule:
    """Epochs k = 1, 2, ... of a sensor at rate hz, each at its first step at or after k / hz."""

    def __init__(self, hz: float):
        self.hz = hz
        self.epoch = 1
        self.next_step = due_step(1, hz)

    def due(self, step: int) -> int:
        """How many epochs fall due at this step (0 or 1 for rates up to 120 Hz)."""
        count = 0
        while self.next_step <= step:
            count += 1
            self.epoch += 1
            self.next_step = due_step(self.epoch, self.hz)
        return count
