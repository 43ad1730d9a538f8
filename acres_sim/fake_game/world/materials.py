"""The materials of fake_game's world: a LiDAR reflectivity byte and a camera colour (blue, green,
red) each, and the tables the ray caster looks them up in."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Material:
    name: str
    intensity: float  # calibrated reflectivity, 0..255
    bgr: tuple[int, int, int]


MATERIALS = (
    Material("sky", 0.0, (235, 200, 170)),
    Material("soil", 22.0, (48, 74, 104)),
    Material("crop", 58.0, (40, 150, 70)),
    Material("road", 40.0, (125, 140, 150)),
    Material("grass", 48.0, (55, 125, 80)),
    Material("trunk", 70.0, (30, 50, 72)),
    Material("foliage", 30.0, (40, 105, 45)),
    Material("wall", 110.0, (175, 180, 185)),
    Material("roof", 90.0, (70, 55, 150)),
    Material("post", 220.0, (20, 120, 250)),  # bright orange, retro-reflective marker posts
    Material("straw", 95.0, (95, 185, 215)),  # bales
    Material("timber", 60.0, (55, 95, 135)),  # fence panels
    Material("clothing", 150.0, (40, 190, 230)),  # a person in a high-visibility jacket
    Material("skin", 45.0, (120, 150, 200)),
)
GROUND_MATERIALS = ("soil", "crop", "road", "grass")
MAT = {m.name: i for i, m in enumerate(MATERIALS)}
GROUND = np.array([MAT[name] for name in GROUND_MATERIALS], np.uint8)  # what wetness darkens
INTENSITY_TABLE = np.array([m.intensity for m in MATERIALS], np.float32)
COLOUR_TABLE = np.array([m.bgr for m in MATERIALS], np.float32)
