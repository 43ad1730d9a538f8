"""The fake world's time base (ROS-free).

The world advances in physics steps of exactly 1/120 s. The world starts at step 0
(time 0) and produces nothing there; step n is the step that brings the world to time n/120
(computed as n / 120.0, never accumulated), so the first step is step 1 at 1/120 s. Every step
queues, on each agent's stream, one Clock frame and then the INS epochs that fell due. A sensor
at rate hz has its epoch k (k = 1, 2, ...) due at k / hz and produces it at the first step at or
after that time: the smallest n with n * hz >= 120 * k, evaluated in exact rational arithmetic.
All frames of a step are stamped with the world time of that step. So at 100 Hz the INS
intervals are 1/120 s or 2/120 s; steps 1..12 hold 12 clocks, 10 INS epochs (due 0.01 .. 0.10),
and one LiDAR scan and one camera image (due 0.1, produced at step 12, stamped 0.1 = the end of
the sweep). LiDAR and camera frames are rendered on a worker pool and queued when their render is
done, i.e. after the clock and INS frames of their step (and usually of some later steps).
"""

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
