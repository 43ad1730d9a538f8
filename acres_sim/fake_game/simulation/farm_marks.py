"""What the vehicles do to the farm (ROS-free): every physics step, each wheel that rolled leaves a
footprint (acres_interfaces FarmStamp), and the crop it rolled over inside a crop field is crushed
(FarmEvent CROP_CRUSHED); a wheel that sinks deep forms a rut (RUT_FORMED).

The wheel model, per wheel: load = m g / 4; footprint width = the tyre's width; length = the chord
of the tyre at its deflection (TYRE_DEFLECTION_M) plus its sinkage; pressure = load / (width x
length); sinkage = the surface's sinkage at 100 kPa (SINKAGE_AT_100KPA) x pressure / 100 kPa x
(1 + 1.5 wetness), at most a third of the radius (solved by a few fixed-point steps). Crushed area =
the distance the wheel rolled in the step x its width x the share of the tyre's extent across the
rows that lies on their crop stripes, where the wheel is in a field (not on the track). The fake
world has no implements and no regrowth: GROUND_WORKED and FIELD_RESTORED never come from it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

from acres_sim.fake_game.simulation.agent_states import (
    SURFACE_CROP,
    SURFACE_GRASS,
    SURFACE_ROAD,
    SURFACE_SOIL,
    wheel_points,
)
from acres_sim.fake_game.simulation.vehicle_model import GRAVITY, VehicleParams
from acres_sim.fake_game.world.motion import DriveKnot
from acres_sim.fake_game.world.scene import Scene

CROP_CRUSHED, GROUND_WORKED, RUT_FORMED, FIELD_RESTORED = 0, 1, 2, 3
KIND_WHEEL, KIND_BODY = 0, 1
TYRE_WIDTH_M = {"polaris": 0.25, "maxxum": 0.54}  # 25x10-12 and 540/65R38 tyres
TYRE_DEFLECTION_M = 0.02
SINKAGE_AT_100KPA = {SURFACE_SOIL: 0.03, SURFACE_CROP: 0.03, SURFACE_ROAD: 0.0, SURFACE_GRASS: 0.01}
RUT_DEPTH_M = 0.05  # a wheel sinking at least this deep forms a rut
MAX_ROLL_M = 1.0  # a wheel "rolling" further in one step was placed: no footprint


@dataclass
class FarmMarks:
    """The footprints and events of the current step, and where each wheel was at the last one."""

    stamps: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    stamping: bool = True  # the footprints are made only while someone takes them (the events always)
    # agent -> its wheels' x and y at the last step
    _last: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)

    def forget(self) -> None:
        """After a reset or a placement nothing rolled from where the wheels were."""
        self._last.clear()

    def observe(self, scene: Scene, agent: str, vehicle: str, params: VehicleParams, knot: DriveKnot,
                steer_rad: float, wetness: float, surfaces: list[int], fields: list[int]) -> None:
        """The wheels of one agent at this step: its track knot, steering, and the surface class and
        field under each wheel (what its AgentState says)."""
        xs, ys = wheel_points(params, knot)
        last = self._last.get(agent)
        self._last[agent] = (xs, ys)
        if last is None:
            return
        width = TYRE_WIDTH_M.get(vehicle, 0.3)
        radius = params.wheel_radius_m
        terrain = scene.terrain
        for w in range(4):
            x, y = float(xs[w]), float(ys[w])
            rolled = math.hypot(x - float(last[0][w]), y - float(last[1][w]))
            if not 1e-6 < rolled <= MAX_ROLL_M:
                continue
            heading = knot.yaw + steer_rad if w < 2 else knot.yaw  # the front wheels are steered
            surface = surfaces[w]
            length, pressure, sinkage = _footprint(params, width, surface, wetness)
            crushed = 0.0
            if fields[w] > 0 and surface in (SURFACE_CROP, SURFACE_SOIL):
                half = 0.5 * width * abs(math.sin(heading))  # the tyre's extent across the rows (x)
                crushed = rolled * width * _crop_share(scene, x, half)
            if self.stamping:
                self.stamps.append({
                    "kind": KIND_WHEEL, "agent": agent, "wheel": w, "x": x, "y": y,
                    "z": 0.0 if terrain is None else terrain.at(x, y)[0],
                    "forward_x": math.cos(heading), "forward_y": math.sin(heading),
                    "width_m": width, "length_m": length, "pressure_pa": pressure, "sinkage_m": sinkage,
                    "tyre_diameter_m": 2.0 * radius, "clearance_m": 0.0, "crushed_m2": crushed})
            if crushed > 0.0:
                self.events.append({"kind": CROP_CRUSHED, "agent": agent, "x": x, "y": y, "value": crushed})
            if sinkage >= RUT_DEPTH_M:
                self.events.append({"kind": RUT_FORMED, "agent": agent, "x": x, "y": y, "value": sinkage})

    def take(self, header: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The step's FarmEvents and FarmStamps messages; the next step starts empty."""
        events, stamps = self.events, self.stamps
        self.events, self.stamps = [], []
        return {"header": header, "events": events}, {"header": header, "stamps": stamps}


@functools.lru_cache(maxsize=256)
def _footprint(params: VehicleParams, width: float, surface: int, wetness: float
               ) -> tuple[float, float, float]:
    """Length (m), pressure (Pa) and sinkage (m) of a wheel's footprint: pressure and sinkage depend
    on each other, settled by a few fixed-point steps (the same for every step on that ground)."""
    radius = params.wheel_radius_m
    load = params.mass_kg * GRAVITY / 4.0
    base = SINKAGE_AT_100KPA.get(surface, 0.0) * (1.0 + 1.5 * wetness)
    sinkage = 0.0
    for _ in range(4):
        length = _chord(radius, TYRE_DEFLECTION_M + sinkage)
        sinkage = min(radius / 3.0, base * load / (width * length) / 1e5)
    length = _chord(radius, TYRE_DEFLECTION_M + sinkage)
    return length, load / (width * length), sinkage


def _crop_share(scene: Scene, x: float, half: float) -> float:
    """The share of [x - half, x + half] on the crop stripes of the rows (north-south, every
    row_spacing_m, row_plant_fraction of it crop)."""
    spacing, fraction = scene.row_spacing_m, scene.row_plant_fraction

    def crop_up_to(v: float) -> float:  # crop length in [0, v] (any sign: differences count)
        rows = math.floor(v / spacing)
        return rows * fraction * spacing + min(v - rows * spacing, fraction * spacing)
    if half < 1e-9:
        u = x / spacing - math.floor(x / spacing)
        return 1.0 if u < fraction else 0.0
    return (crop_up_to(x + half) - crop_up_to(x - half)) / (2.0 * half)


def _chord(radius: float, depth: float) -> float:
    """Length of a circle's chord `depth` in from its rim."""
    return 2.0 * math.sqrt(max(0.0, 2.0 * radius * depth - depth * depth))
