"""The Vehicle Bridge's reports in world time (ROS-free).

The game's Vehicle Bridge reports in the vehicle's own physics time; the agent's sensor stream tells
how to convert it: every Clock frame's offset, header stamp (world time) minus payload (vehicle time)
(001: "The vehicle bridge reports its data in vehicle time. Add the offset"). The sim_bridge that
reads the stream shares that offset (`sim/clock_offset`), and world time = vehicle time + offset.

Before the first offset is known (a world never stepped has sent no Clock frame; a report of step 1
may come before its Clock frame went through ROS) a report's world time is its step's by the time
base, step / physics_hz, which is what the offset gives too: nothing waits, so lockstep is as before.
Where both are known and differ by more than a microsecond, `disagreement_s` says by how much.
"""

from __future__ import annotations

AGREE_S = 1e-6


class VehicleTime:
    def __init__(self) -> None:
        self.offset_s: float | None = None
        self.physics_hz: float | None = None  # from the Vehicle Bridge's hello
        self.disagreement_s = 0.0  # the largest seen between the offset's and the step's world time
        self.converted = 0  # reports put in world time with the offset
        self.by_step = 0  # ... and by their step, before an offset was known

    def world_time(self, step: int, vehicle_time_s: float) -> float:
        by_step = None if self.physics_hz is None else step / self.physics_hz
        if self.offset_s is None:
            if by_step is None:
                raise ValueError("a report before the Vehicle Bridge's hello: its world time is unknown")
            self.by_step += 1
            return by_step
        world = vehicle_time_s + self.offset_s
        if by_step is not None and abs(world - by_step) > max(AGREE_S, self.disagreement_s):
            self.disagreement_s = abs(world - by_step)
        self.converted += 1
        return world
