"""The fake world's conditions (ROS-free): the sun, the ground's wetness, dust and fog, with their
ranges and what the sensor models take from them.

Effects (doc/fake-game.md has the figures):
* sun: the camera's light. The sun direction shades every surface; the light level falls from
  full at 20 deg elevation to a night's 5 % at -6 deg (civil dusk), the sky with it.
* wetness: wet ground is darker in the camera (up to 40 % at 1) and returns less LiDAR intensity
  (water on the surface scatters the beam away: up to 60 % less at 1).
* dust and fog: particles along every ray. The camera's haze grows with distance: besides a clear
  day's (half of a pixel at 700 m) the particles leave exp(-3.912 d / V) of a surface's contrast
  at distance d, V the visibility (5 m in full dust, 8 m in full fog); the sky turns to the
  colour of the dust or fog. A
  LiDAR beam is extinguished along its path (Beer-Lambert, both ways): a return is lost with the
  probability of meeting the particles first; in dust half of those come back from the dust cloud
  itself, short and weak.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields

import numpy as np


class InvalidConditions(ValueError):
    """Conditions out of range (or not numbers): the message says which and the range."""


RANGES = {
    "sun_elevation_deg": (-90.0, 90.0),
    "sun_azimuth_deg": (0.0, 360.0),
    "wetness": (0.0, 1.0),
    "dust": (0.0, 1.0),
    "fog": (0.0, 1.0),
}
CLEAR_HAZE_M = 700.0  # a clear day's haze: half of a pixel's colour at this distance
DUST_VISIBILITY_M = 5.0  # the camera's visibility in full dust (contrast down to 2 %): opaque
FOG_VISIBILITY_M = 8.0
SKY_AIR_M = 300.0  # the air the sky is seen through, for its veil of dust or fog
DUST_EXTINCTION_PER_M = 0.08  # at dust 1: a beam keeps exp(-2 x 0.08 x 10) = 20 % over 10 m and back
FOG_EXTINCTION_PER_M = 0.04
DUST_RETURN_INTENSITY = 4.0


@dataclass(frozen=True)
class Conditions:
    sun_elevation_deg: float = 50.0
    sun_azimuth_deg: float = 135.0  # from the south-east
    wetness: float = 0.0
    dust: float = 0.0
    fog: float = 0.0

    def changed(self, values: dict) -> Conditions:
        """These conditions with the fields `values` gives, checked (InvalidConditions)."""
        unknown = sorted(set(values) - set(RANGES))
        if unknown:
            raise InvalidConditions(f"unknown conditions {', '.join(unknown)}; they are {', '.join(RANGES)}")
        checked = {}
        for name, value in values.items():
            low, high = RANGES[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidConditions(f"{name} must be a finite number, got {value!r}")
            if not low <= value <= high:
                raise InvalidConditions(f"{name} must be {low:g} .. {high:g}, got {value:g}")
            checked[name] = float(np.float32(value))  # as the message carries it: a replay renders the same
        return dataclasses.replace(self, **checked)

    def message(self, header: dict) -> dict:
        """acres_interfaces/Conditions as a dict."""
        return {"header": header, **{f.name: getattr(self, f.name) for f in fields(self)}}

    # -- what the sensors take from them ---------------------------------------------------------

    @property
    def sun(self) -> np.ndarray:
        """Unit vector towards the sun, world ENU."""
        el, az = math.radians(self.sun_elevation_deg), math.radians(self.sun_azimuth_deg)
        return np.array([math.cos(el) * math.sin(az), math.cos(el) * math.cos(az), math.sin(el)])

    @property
    def light(self) -> float:
        """The light level, 0.05 (night) .. 1 (the sun 20 deg up or higher)."""
        up = min(1.0, max(0.0, (self.sun_elevation_deg + 6.0) / 26.0))
        return 0.05 + 0.95 * up * up * (3.0 - 2.0 * up)  # smoothstep: no kink at dusk

    @property
    def haze_per_m(self) -> float:
        """The camera's extinction by dust and fog, 1/m (Koschmieder: 3.912 / visibility)."""
        return 3.912 * (self.dust / DUST_VISIBILITY_M + self.fog / FOG_VISIBILITY_M)

    @property
    def extinction_per_m(self) -> float:
        return DUST_EXTINCTION_PER_M * self.dust + FOG_EXTINCTION_PER_M * self.fog

    @property
    def ground_shade(self) -> float:
        """Factor on the ground's colour (wet ground is darker)."""
        return 1.0 - 0.4 * self.wetness

    @property
    def ground_reflectivity(self) -> float:
        """Factor on the ground's LiDAR intensity."""
        return 1.0 - 0.6 * self.wetness


CLEAR_DAY = Conditions()
