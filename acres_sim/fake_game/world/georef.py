"""Georeference of the synthetic world: world (map grid ENU) <-> lat/lon/h <-> UTM zone 16.

The model
---------
The protocol pages define the world frame as "ENU on the map grid of the tile" and the game's ACRE
tile is surveyed in the Indiana West state-plane grid (EPSG:2968, a transverse Mercator on GRS80).
The fake world follows that literally:

* The map grid is the Indiana West transverse Mercator (lat0 37.5, lon0 -87.08333, k0 0.999966667,
  false easting 900 000 m, false northing 250 000 m, GRS80) in metres. World x / y are map-grid
  easting / northing minus those of the world origin; world z is ellipsoidal height minus the
  origin height (a flat-earth height, as a game level is flat).
* Latitude and longitude are NAD83(2011) (EPSG:6318). Both grids are pure projections of that one
  geodetic datum, so no datum shift is involved anywhere; UTM is zone 16N on GRS80, which is
  EPSG:6345 (NAD83(2011) / UTM zone 16N).
* GridRotationDeg is the UTM grid azimuth (clockwise from UTM grid north) of the map grid's
  north at the point. At ACRE it is about +0.054 deg: the two grids have different central
  meridians (-87.0833 and -87), so their norths differ by the difference of their convergences.
* UtmQ is EnuQ turned about the vertical so that the body axes are expressed on the UTM grid:
  q_utm = Rz(-GridRotationDeg) * q_enu (a heading measured on the map grid becomes a heading
  on the UTM grid that is smaller by the grid azimuth).
* UtmE / UtmN are the UTM projection of the same lat/lon, so projecting Lat/Lon with any
  NAD83(2011) -> UTM 16N tool gives back UtmE / UtmN to well below a millimetre.

Grid scale (about 30 ppm on the map grid, 400 ppm on UTM) is part of the model: a world metre is
a map-grid metre, as in the game.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pyproj import Proj

from acres_sim.rotations import quaternion_about_z, quaternion_multiply

# Indiana West (EPSG:2968 parameters), in metres instead of US survey feet.
MAP_GRID_PROJ = ("+proj=tmerc +lat_0=37.5 +lon_0=-87.08333333333333 +k=0.999966667 "
                 "+x_0=900000 +y_0=250000 +ellps=GRS80 +units=m +no_defs")
UTM_ZONE = 16
DATUM = "nad83_2011"

# The world origin: a point on the ACRE farm (Purdue, West Lafayette, Indiana).
ACRE_ORIGIN_LAT_DEG = 40.4716
ACRE_ORIGIN_LON_DEG = -86.9944
ACRE_ORIGIN_HEIGHT_M = 181.3


def utm_proj(zone: int) -> Proj:
    """UTM north on GRS80: with NAD83(2011) lat/lon this is EPSG:6345 for zone 16."""
    return Proj(f"+proj=utm +zone={zone} +ellps=GRS80 +units=m +no_defs")


@dataclass(frozen=True)
class GeoFix:
    """One georeferenced point: everything the INS frame needs from the georeference."""

    lat_deg: float
    lon_deg: float
    height_m: float
    utm_e: float
    utm_n: float
    grid_rotation_deg: float


@dataclass(frozen=True)
class Georeference:
    """World frame (map-grid ENU about an origin) to geodetic and UTM coordinates."""

    origin_lat_deg: float = ACRE_ORIGIN_LAT_DEG
    origin_lon_deg: float = ACRE_ORIGIN_LON_DEG
    origin_height_m: float = ACRE_ORIGIN_HEIGHT_M
    utm_zone: int = UTM_ZONE
    _map: Proj = field(init=False, repr=False, compare=False)
    _utm: Proj = field(init=False, repr=False, compare=False)
    _origin_grid: tuple[float, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.utm_zone <= 60:
            raise ValueError(f"UTM zone {self.utm_zone} is not 1..60")
        map_proj = Proj(MAP_GRID_PROJ)
        # frozen dataclass: the cached projections are set once here, never changed afterwards
        object.__setattr__(self, "_map", map_proj)
        object.__setattr__(self, "_utm", utm_proj(self.utm_zone))
        object.__setattr__(self, "_origin_grid",
                           tuple(float(v) for v in map_proj(self.origin_lon_deg, self.origin_lat_deg)))

    def world_to_geodetic(self, x: float, y: float, z: float) -> tuple[float, float, float]:
        """World ENU (m) -> NAD83(2011) latitude, longitude (deg), ellipsoidal height (m)."""
        lon, lat = self._map(self._origin_grid[0] + x, self._origin_grid[1] + y, inverse=True)
        return float(lat), float(lon), self.origin_height_m + z

    def geodetic_to_world(self, lat_deg: float, lon_deg: float,
                          height_m: float) -> tuple[float, float, float]:
        ge, gn = self._map(lon_deg, lat_deg)
        return (float(ge) - self._origin_grid[0], float(gn) - self._origin_grid[1],
                height_m - self.origin_height_m)

    def geodetic_to_utm(self, lat_deg: float, lon_deg: float) -> tuple[float, float]:
        e, n = self._utm(lon_deg, lat_deg)
        return float(e), float(n)

    def fix(self, x: float, y: float, z: float) -> GeoFix:
        """Geodetic and UTM coordinates of world (x, y, z), and the UTM grid azimuth of the map
        grid's north there (degrees clockwise) from the points half a metre south and north: the
        three points in one call per projection (the INS asks a hundred times a second)."""
        gx = self._origin_grid[0] + x
        gy = self._origin_grid[1] + y
        lon, lat = self._map([gx, gx, gx], [gy, gy - 0.5, gy + 0.5], inverse=True)
        e, n = self._utm(lon, lat)
        rotation = math.degrees(math.atan2(e[2] - e[1], n[2] - n[1]))
        return GeoFix(float(lat[0]), float(lon[0]), self.origin_height_m + z, float(e[0]), float(n[0]),
                      rotation)

    @staticmethod
    def enu_to_utm_quaternion(q_enu_xyzw: np.ndarray, grid_rotation_deg: float) -> np.ndarray:
        """Body -> world attitude re-expressed on the UTM grid (see the module docstring)."""
        return quaternion_multiply(quaternion_about_z(-math.radians(grid_rotation_deg)),
                                   np.asarray(q_enu_xyzw, float))
