"""The world's objects and its recent contacts as one visualization_msgs/MarkerArray (ROS-free):
an owner of the step that keeps /sim/markers (latched: on the watch feed, sim_control publishes it,
the recorder logs it) for rviz2 and Foxglove.

Every message is the full set: a DELETEALL, then each object in its catalogue shape and colour
standing on the ground (a round bale, a marker post or a person a cylinder, a person with a head;
a square bale or a fence panel a box) with its name above it, then each contact of the last
CONTACT_SHOWN_S of world time (a red sphere where they touched, and who touched what at what speed).
It changes when an object is spawned, moved or deleted, when a pair of bodies comes into contact,
and when a contact's time is over; a contact that goes on keeps its marker without a new message.
"""

from __future__ import annotations

import math
from typing import Any

from acres_sim.episode.log_file import CONTACTS, MARKERS, OBJECTS, Topic
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub, header
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepContext, StepOwner
from acres_sim.fake_game.world.farm_objects import kind_of
from acres_sim.fake_game.world.materials import MAT, MATERIALS

CONTACT_SHOWN_S = 3.0
WORLD_FRAME = "map"
# visualization_msgs/Marker's types and actions
CUBE, SPHERE, CYLINDER, TEXT_VIEW_FACING = 1, 2, 3, 9
ADD, DELETEALL = 0, 3
HEAD_M = 0.12  # a person's head radius, as the fake world draws it
LABEL_M = 0.35  # text height of the names
CONTACT_RGBA = (1.0, 0.1, 0.1, 0.9)
LABEL_RGBA = (1.0, 1.0, 1.0, 1.0)


class MarkerBoard(StepOwner):
    def __init__(self, hub: EpisodeHub):
        self._hub = hub
        self._objects: list[dict[str, Any]] = []
        self._contacts: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}  # pair -> (last t, first)
        hub.observers.append(self._heard)
        self._publish(0.0)

    def _heard(self, topic: Topic, message: dict[str, Any]) -> None:
        if topic is OBJECTS:
            self._objects = list(message["objects"])
            self._publish(_seconds(message["header"]["stamp"]))
        elif topic is CONTACTS:
            t = _seconds(message["header"]["stamp"])
            new = False
            for c in message["contacts"]:
                pair = (c["agent"], c["other"])
                new |= pair not in self._contacts
                self._contacts[pair] = (t, self._contacts.get(pair, (t, c))[1])
            if new:
                self._publish(t)

    def end_step(self, step: StepContext) -> None:
        over = [pair for pair, (last, _) in self._contacts.items() if step.t - last >= CONTACT_SHOWN_S]
        if over:
            for pair in over:
                del self._contacts[pair]
            self._publish(step.t)

    def after_reset(self, reset: ResetContext) -> None:
        if self._contacts:
            self._contacts.clear()
            self._publish(reset.t)

    def _publish(self, t: float) -> None:
        stamp = header(t)["stamp"]
        markers = [_marker(stamp, "", 0, action=DELETEALL)]
        for index, o in enumerate(sorted(self._objects, key=lambda o: o["name"])):
            markers += _object_markers(stamp, index, o)
        for index, (pair, (_last, c)) in enumerate(sorted(self._contacts.items())):
            p = c["position"]
            markers.append(_marker(stamp, "contacts", index, SPHERE, (p["x"], p["y"], p["z"]),
                                   (0.4, 0.4, 0.4), CONTACT_RGBA, lifetime_s=CONTACT_SHOWN_S))
            markers.append(_marker(stamp, "contact_labels", index, TEXT_VIEW_FACING,
                                   (p["x"], p["y"], p["z"] + 0.6), (0.0, 0.0, LABEL_M), CONTACT_RGBA,
                                   text=f"{pair[0]} hit {pair[1]} at {c['relative_speed_mps']:.1f} m/s",
                                   lifetime_s=CONTACT_SHOWN_S))
        self._hub.set_latched(MARKERS, {"markers": markers})


def _object_markers(stamp: dict[str, int], index: int, o: dict[str, Any]) -> list[dict[str, Any]]:
    """An object's shape (two for a person) and its name, standing on the ground at its pose."""
    p, q, size = o["pose"]["position"], o["pose"]["orientation"], o["size_m"]
    kind = kind_of(o["uri"])
    shape = kind.shape if kind is not None else "box"
    b, g, r = MATERIALS[kind.material].bgr if kind is not None else (128, 128, 128)
    rgba = (r / 255.0, g / 255.0, b / 255.0, 1.0)
    x, y, z = p["x"], p["y"], p["z"]
    sx, sy, sz = size["x"], size["y"], size["z"]
    orientation = (q["x"], q["y"], q["z"], q["w"])
    out = []
    if shape == "box":
        out.append(_marker(stamp, "objects", index, CUBE, (x, y, z + 0.5 * sz), (sx, sy, sz), rgba,
                           orientation))
    else:
        body = sz - 2.0 * HEAD_M if shape == "person" else sz
        out.append(_marker(stamp, "objects", index, CYLINDER, (x, y, z + 0.5 * body), (sx, sx, body), rgba,
                           orientation))
        if shape == "person":
            skin_b, skin_g, skin_r = MATERIALS[MAT["skin"]].bgr
            out.append(_marker(stamp, "object_heads", index, SPHERE, (x, y, z + body + HEAD_M),
                               (2 * HEAD_M,) * 3, (skin_r / 255.0, skin_g / 255.0, skin_b / 255.0, 1.0)))
    out.append(_marker(stamp, "object_names", index, TEXT_VIEW_FACING, (x, y, z + sz + 0.4),
                       (0.0, 0.0, LABEL_M), LABEL_RGBA, text=o["name"]))
    return out


def _marker(stamp: dict[str, int], ns: str, marker_id: int, kind: int = CUBE,
            position: tuple[float, ...] = (0.0, 0.0, 0.0), scale: tuple[float, ...] = (1.0, 1.0, 1.0),
            rgba: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0),
            orientation: tuple[float, ...] = (0.0, 0.0, 0.0, 1.0), action: int = ADD, text: str = "",
            lifetime_s: float = 0.0) -> dict[str, Any]:
    """A visualization_msgs/Marker as a dict (lifetime 0: until the next message replaces it)."""
    sec = math.floor(lifetime_s)
    return {"header": {"stamp": stamp, "frame_id": WORLD_FRAME}, "ns": ns, "id": marker_id, "type": kind,
            "action": action,
            "pose": {"position": dict(zip("xyz", position)), "orientation": dict(zip("xyzw", orientation))},
            "scale": dict(zip("xyz", scale)), "color": dict(zip("rgba", rgba)),
            "lifetime": {"sec": sec, "nanosec": round((lifetime_s - sec) * 1e9)}, "text": text}


def _seconds(stamp: dict[str, int]) -> float:
    return stamp["sec"] + stamp["nanosec"] * 1e-9
