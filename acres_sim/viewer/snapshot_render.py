"""The snapshot picture, ROS-free: transforms between frames, clouds into the world frame, one PNG.

`snapshot` (the node) collects messages and hands plain arrays to this module, so everything here is
tested without a graph: a small transform store (the /tf_static mount tree plus the time history of
world -> base_footprint from /tf), PointCloud2 bytes -> numpy, and the matplotlib figure.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from acres_sim.bodies import vehicle_body
from acres_sim.rotations import quaternion_to_matrix, quaternion_yaw

# sensor_msgs/PointField datatypes -> numpy
BEV_HALF_SPAN_M = 75.0  # the bird's-eye view shows this far around the middle of the drive
_POINT_FIELD_DTYPES = {1: "i1", 2: "u1", 3: "<i2", 4: "<u2", 5: "<i4", 6: "<u4", 7: "<f4", 8: "<f8"}


def transform_matrix(translation: Sequence[float], quaternion: Sequence[float]) -> np.ndarray:
    """4x4 homogeneous transform child -> parent."""
    out = np.eye(4)
    out[:3, :3] = quaternion_to_matrix(quaternion)
    out[:3, 3] = translation
    return out


@dataclass
class FrameStore:
    """Static transforms (child -> parent) and a time history of world -> base transforms."""

    static: dict[str, tuple[str, np.ndarray]] = field(default_factory=dict)  # child -> (parent, T)
    world: str = "map"
    base: str = "base_footprint"
    _stamps: list[float] = field(default_factory=list)
    _poses: list[np.ndarray] = field(default_factory=list)

    def add_static(self, parent: str, child: str, transform: np.ndarray) -> None:
        self.static[child] = (parent, transform)

    def add_world_pose(self, stamp_s: float, transform: np.ndarray) -> None:
        """world -> base at stamp_s (any order; kept sorted by stamp)."""
        at = bisect.bisect(self._stamps, stamp_s)
        self._stamps.insert(at, stamp_s)
        self._poses.insert(at, transform)

    def base_in_world(self, stamp_s: float, tolerance_s: float = 0.05) -> np.ndarray | None:
        """world -> base at stamp_s: translation interpolated, rotation of the nearer epoch."""
        if not self._stamps:
            return None
        at = bisect.bisect(self._stamps, stamp_s)
        if at == 0 or at == len(self._stamps):
            nearest = 0 if at == 0 else len(self._stamps) - 1
            if abs(self._stamps[nearest] - stamp_s) > tolerance_s:
                return None
            return self._poses[nearest]
        t0, t1 = self._stamps[at - 1], self._stamps[at]
        if t1 - t0 > 2 * tolerance_s:
            return None
        a = (stamp_s - t0) / (t1 - t0) if t1 > t0 else 0.0
        out = (self._poses[at - 1] if a < 0.5 else self._poses[at]).copy()
        out[:3, 3] = (1 - a) * self._poses[at - 1][:3, 3] + a * self._poses[at][:3, 3]
        return out

    def frame_in_base(self, frame: str) -> np.ndarray | None:
        """base -> frame through the static tree (None when the frame does not hang below base)."""
        chain = np.eye(4)
        seen = set()
        while frame != self.base:
            if frame not in self.static or frame in seen:
                return None
            seen.add(frame)
            parent, transform = self.static[frame]
            chain = transform @ chain
            frame = parent
        return chain

    def lookup(self, frame: str, stamp_s: float) -> np.ndarray | None:
        """frame -> world at stamp_s, or None when it cannot be composed."""
        mount = self.frame_in_base(frame)
        pose = self.base_in_world(stamp_s)
        if mount is None or pose is None:
            return None
        return pose @ mount


def cloud_fields(data: bytes, fields: Sequence[tuple[str, int, int]], point_step: int,
                 count: int) -> np.ndarray:
    """PointCloud2 bytes -> structured array, from (name, offset, datatype) of its fields."""
    dtype = np.dtype({"names": [f[0] for f in fields], "offsets": [f[1] for f in fields],
                      "formats": [_POINT_FIELD_DTYPES[f[2]] for f in fields], "itemsize": point_step})
    return np.frombuffer(data, dtype, count)


@dataclass(frozen=True)
class Outline:
    """A footprint seen from above: a polygon (a vehicle's body, a box) or a circle (radius > 0)."""

    name: str
    points: tuple[tuple[float, float], ...]  # the polygon's corners, or the circle's centre
    radius: float = 0.0
    vehicle: bool = False


def body_from_urdf(urdf: str) -> tuple[float, float, float] | None:
    """(length, width, rear overhang behind base_link's x) of a vehicle description's body: the
    collision box of its root link (acres_sim/description/vehicle_urdf.py writes one)."""
    import xml.etree.ElementTree as ET

    try:
        robot = ET.fromstring(urdf)
    except ET.ParseError:
        return None
    box = robot.find("link/collision/geometry/box")
    origin = robot.find("link/collision/origin")
    if box is None or origin is None:
        return None
    length, width, _height = (float(v) for v in box.get("size", "0 0 0").split())
    x = float(origin.get("xyz", "0 0 0").split()[0])
    return length, width, 0.5 * length - x


def vehicle_outline(name: str, x: float, y: float, yaw: float, length: float, width: float,
                    rear_overhang: float) -> Outline:
    """A vehicle's body with base_footprint at (x, y) heading yaw (rear_overhang behind it)."""
    body = vehicle_body(name, x, y, yaw, 0.0, length, width, 0.0, rear_overhang)
    return Outline(name, tuple(body.corners()), vehicle=True)


def marker_outlines(markers: Sequence[dict]) -> list[Outline]:
    """The objects of a /sim/markers MarkerArray, each marker a dict of ns, id, type, text and
    position, orientation (x, y, z, w) and scale as tuples: the boxes and cylinders of the namespace
    "objects", named by the texts of "object_names"."""
    names = {m["id"]: m["text"] for m in markers if m["ns"] == "object_names"}
    out = []
    for m in markers:
        if m["ns"] != "objects":
            continue
        x, y = m["position"][:2]
        sx, sy = m["scale"][:2]
        q = m["orientation"]
        name = names.get(m["id"], "")
        if m["type"] == 1:  # CUBE
            yaw = quaternion_yaw(q)
            c, s = np.cos(yaw), np.sin(yaw)
            hx, hy = sx / 2, sy / 2
            corners = [(x + c * u - s * v, y + s * u + c * v)
                       for u, v in ((hx, hy), (-hx, hy), (-hx, -hy), (hx, -hy))]
            out.append(Outline(name, tuple(corners)))
        else:  # CYLINDER (and anything round)
            out.append(Outline(name, ((x, y),), radius=0.5 * sx))
    return out


@dataclass
class SnapshotData:
    """What one picture shows; the node fills it from the messages it received."""

    title: str
    image_bgr: np.ndarray | None  # (height, width, 3) uint8
    world_points: np.ndarray  # (N, 3) float32: LiDAR returns in the world frame, accumulated
    range_image: np.ndarray | None  # (columns, rings) metres, NaN where no return
    ins_track: np.ndarray  # (M, 2) x, y in the world frame
    truth_track: np.ndarray  # (K, 2)
    clouds: int = 0
    outlines: list[Outline] = field(default_factory=list)  # vehicles and objects, seen from above


def bird_eye_grid(points: np.ndarray, cell_m: float = 0.25) -> tuple[np.ndarray, tuple[float, ...]]:
    """Highest return per cell of a horizontal grid: (grid, extent for imshow)."""
    if len(points) == 0:
        return np.full((1, 1), np.nan), (0.0, 1.0, 0.0, 1.0)
    lo = np.floor(points[:, :2].min(axis=0) / cell_m) * cell_m
    hi = np.ceil(points[:, :2].max(axis=0) / cell_m) * cell_m + cell_m
    shape = np.maximum(((hi - lo) / cell_m).astype(int), 1)
    ij = np.minimum(((points[:, :2] - lo) / cell_m).astype(int), shape - 1)
    flat = ij[:, 1] * shape[0] + ij[:, 0]
    grid = np.full(shape[0] * shape[1], -np.inf)
    np.maximum.at(grid, flat, points[:, 2])
    grid[~np.isfinite(grid)] = np.nan
    return grid.reshape(shape[1], shape[0]), (lo[0], hi[0], lo[1], hi[1])


def render_png(data: SnapshotData, path: str | Path) -> Path:
    """Camera image, bird's-eye view of the accumulated clouds with both tracks, range image."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(14, 9), dpi=80)
    grid = fig.add_gridspec(2, 2, height_ratios=(3, 1.1), width_ratios=(1, 1.15))
    ax_cam, ax_bev = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    ax_range = fig.add_subplot(grid[1, :])
    fig.suptitle(data.title)

    if data.image_bgr is not None:
        ax_cam.imshow(data.image_bgr[:, :, ::-1])
        ax_cam.set_title("camera/image_raw")
    else:
        ax_cam.text(0.5, 0.5, "no camera", ha="center", va="center")
    ax_cam.axis("off")

    points = data.world_points
    if len(data.truth_track) and len(points):  # the neighbourhood of the drive, not the 160 m fringe
        centre = data.truth_track.mean(axis=0)
        points = points[(np.abs(points[:, :2] - centre) <= BEV_HALF_SPAN_M).all(axis=1)]
    heights, extent = bird_eye_grid(points)
    shown = ax_bev.imshow(heights, origin="lower", extent=extent, cmap="viridis", interpolation="nearest",
                          vmin=-0.5, vmax=8.0)
    fig.colorbar(shown, ax=ax_bev, label="height (m)", shrink=0.8)
    if len(data.truth_track):
        ax_bev.plot(data.truth_track[:, 0], data.truth_track[:, 1], "w-", lw=2.5, label="ground truth")
    if len(data.ins_track):
        ax_bev.plot(data.ins_track[:, 0], data.ins_track[:, 1], "r--", lw=1.5, label="INS")
    _draw_outlines(ax_bev, data.outlines)
    ax_bev.set_aspect("equal")
    ax_bev.set_xlabel("x east (m)")
    ax_bev.set_ylabel("y north (m)")
    ax_bev.set_title(f"{data.clouds} LiDAR clouds in the world frame (/tf, /tf_static)")
    ax_bev.legend(loc="upper right")

    if data.range_image is not None:
        ranged = ax_range.imshow(data.range_image.T, origin="lower", aspect="auto", cmap="magma_r",
                                 interpolation="nearest")
        fig.colorbar(ranged, ax=ax_range, label="range (m)")
        ax_range.set_xlabel("column")
        ax_range.set_ylabel("ring")
        ax_range.set_title("the last cloud as a range image (columns x rings)")
    else:
        ax_range.axis("off")
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


def _draw_outlines(ax, outlines: Sequence[Outline]) -> None:
    from matplotlib.patches import Circle, Polygon

    for o in outlines:
        colour = "white" if o.vehicle else "orange"
        if o.radius > 0.0:
            ax.add_patch(Circle(o.points[0], o.radius, fill=False, edgecolor=colour, lw=2))
        else:
            ax.add_patch(Polygon(o.points, closed=True, fill=False, edgecolor=colour, lw=2))
        if o.name:
            x, y = np.mean(o.points, axis=0)
            ax.annotate(o.name, (x, y), xytext=(4, 4), textcoords="offset points", color=colour, fontsize=8)
