"""The objects a client can spawn into the fake world (ROS-free): the catalogue, and each object as
the primitives the ray caster draws.

An object stands on the ground: its pose is the centre of its footprint, its heading a turn about
the vertical (a tilt in a requested orientation is dropped). Like the scene's own posts and trees it
reaches _SINK_M into the ground so that a slope shows no gap under it.
"""

from __future__ import annotations

from dataclasses import dataclass

from acres_sim.fake_game.world.materials import MAT
from acres_sim.rotations import quaternion_about_z
from acres_sim.fake_game.world.scene import Box, Cylinder, Primitive, Sphere

URI_PREFIX = "acres://objects/"
_SINK_M = 0.3


@dataclass(frozen=True)
class ObjectKind:
    """A catalogue entry: its name (the uri's last part), what it is, and its size (m) along its
    own x (forward), y (left) and z (up)."""

    name: str
    description: str
    size_m: tuple[float, float, float]
    shape: str  # "cylinder" (upright, diameter size x), "box", "person"
    material: int

    @property
    def uri(self) -> str:
        return URI_PREFIX + self.name


CATALOGUE = (
    ObjectKind("round_bale", "round straw bale standing on end, 1.5 m across, 1.2 m high", (1.5, 1.5, 1.2),
               "cylinder", MAT["straw"]),
    ObjectKind("square_bale", "big square straw bale, 2.4 x 1.2 x 0.9 m", (2.4, 1.2, 0.9), "box",
               MAT["straw"]),
    ObjectKind("marker_post", "orange retro-reflective marker post, 1.6 m", (0.16, 0.16, 1.6), "cylinder",
               MAT["post"]),
    ObjectKind("fence_panel", "solid timber fence panel, 3 m long, 1.2 m high", (3.0, 0.08, 1.2), "box",
               MAT["timber"]),
    ObjectKind("person", "a person standing, 1.75 m, in a high-visibility jacket", (0.44, 0.44, 1.75),
               "person", MAT["clothing"]),
)
KINDS = {kind.name: kind for kind in CATALOGUE}


def kind_of(uri: str) -> ObjectKind | None:
    """The catalogue entry a uri names: its full uri or its bare name."""
    name = uri[len(URI_PREFIX):] if uri.startswith(URI_PREFIX) else uri
    return KINDS.get(name)


@dataclass(frozen=True)
class WorldObject:
    """A spawned object: its name, kind, the centre of its footprint (x, y and the ground's z there,
    m) and its heading (rad, counter-clockwise from east)."""

    name: str
    kind: ObjectKind
    x: float
    y: float
    z: float
    yaw: float

    def primitives(self) -> tuple[Primitive, ...]:
        kind = self.kind
        sx, sy, sz = kind.size_m
        z0 = self.z - _SINK_M
        if kind.shape == "cylinder":
            return (Cylinder(self.x, self.y, 0.5 * sx, z0, sz + _SINK_M, kind.material),)
        if kind.shape == "person":
            head = 0.12
            body = sz - 2.0 * head
            return (Cylinder(self.x, self.y, 0.5 * sx, z0, body + _SINK_M, kind.material),
                    Sphere(self.x, self.y, self.z + body + head, head, MAT["skin"]))
        lo = (self.x - 0.5 * sx, self.y - 0.5 * sy, z0)
        hi = (self.x + 0.5 * sx, self.y + 0.5 * sy, self.z + sz)
        return (Box(lo, hi, kind.material, kind.material, yaw_rad=self.yaw),)

    @property
    def quaternion(self) -> tuple[float, float, float, float]:
        """Its heading as x, y, z, w."""
        return tuple(float(v) for v in quaternion_about_z(self.yaw))  # type: ignore[return-value]

    def message(self) -> dict:
        """acres_interfaces/WorldObject as a dict."""
        sx, sy, sz = self.kind.size_m
        qx, qy, qz, qw = self.quaternion
        return {"name": self.name, "uri": self.kind.uri,
                "pose": {"position": {"x": self.x, "y": self.y, "z": self.z},
                         "orientation": {"x": qx, "y": qy, "z": qz, "w": qw}},
                "size_m": {"x": sx, "y": sy, "z": sz}}
