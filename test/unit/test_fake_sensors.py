"""The fake_game camera: image format and projection through the Hello's pinhole + plumb_bob model.

The expected pixel of a point is computed here from scratch (mount R = Rz @ Ry @ Rx, the FLU ->
optical axes, OpenCV's plumb_bob distortion), independently of the renderer.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.scene import Cylinder, Scene
from acres_sim.fake_game.simulation.simulation import AgentSimulator
from acres_sim.fake_game.simulation.vehicles import vehicle_hello


def rpy_to_matrix(rpy_deg) -> np.ndarray:
    roll, pitch, yaw = (math.radians(v) for v in rpy_deg)
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch),
                              math.cos(yaw), math.sin(yaw))
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def quaternion_matrix(q) -> np.ndarray:
    """Rotation of a unit quaternion (x, y, z, w): the vehicle rolls and pitches on the terrain."""
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def project(sim: AgentSimulator, t: float, point_world: np.ndarray) -> tuple[float, float]:
    """Pixel (u, v) of a world point: truth pose, Hello mount, optical axes, plumb_bob, K."""
    cam = sim.hello.camera
    pos, q = sim.truth_pose(t)
    r_wb = quaternion_matrix(q)
    r_wc = r_wb @ rpy_to_matrix(cam.rpy_deg)
    p_c = pos + r_wb @ np.array(cam.position_flu_m)
    c = r_wc.T @ (point_world - p_c)  # camera frame, FLU
    x_o, y_o, z_o = -c[1], -c[2], c[0]  # optical: x right, y down, z forward
    assert z_o > 0.0
    x, y = x_o / z_o, y_o / z_o
    k1, k2, p1, p2, k3 = cam.d
    r2 = x * x + y * y
    radial = 1 + k1 * r2 + k2 * r2 ** 2 + k3 * r2 ** 3
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return cam.fx * xd + cam.cx, cam.fy * yd + cam.cy


@pytest.fixture(scope="module")
def polaris():
    return vehicle_hello("polaris")


def test_image_format_and_content(polaris):
    sim = AgentSimulator(polaris, seed=5)
    image = sim.camera_image(0.5)
    assert image.shape == (512, 896, 3) and image.dtype == np.uint8 and image.flags.c_contiguous
    top, bottom = image[5, 448].astype(int), image[500, 448].astype(int)
    assert top[0] > top[2]  # sky: more blue than red (bgr)
    assert not np.array_equal(top, bottom)
    assert np.array_equal(image, AgentSimulator(polaris, seed=5).camera_image(0.5))
    assert not np.array_equal(image, sim.camera_image(3.0))
    # the corners of this strongly barrel-distorted lens have no preimage: black
    assert np.all(image[0, 0] == 0) and np.all(image[-1, -1] == 0)


def test_camera_disabled_raises():
    sim = AgentSimulator(vehicle_hello("maxxum"))
    with pytest.raises(ValueError, match="no camera"):
        sim.camera_image(0.0)
    core = AgentSimulator(vehicle_hello("polaris", flavor="core"))
    with pytest.raises(ValueError, match="no camera"):
        core.camera_image(0.0)


@pytest.mark.parametrize("ahead_left", [(14.0, 0.6), (10.0, 4.5), (12.0, -3.5)])
def test_post_projects_where_the_camera_model_says(polaris, ahead_left):
    t = 1.5
    probe = AgentSimulator(polaris, noise=False)
    pos, q = probe.truth_pose(t)
    base = pos + quaternion_matrix(q) @ np.array([ahead_left[0], ahead_left[1], 0.0])
    terrain = probe.scene.terrain  # on the rolling ground, as the vehicle that looks at it
    base[2] = float(terrain.height(base[0], base[1]))
    post = Cylinder(float(base[0]), float(base[1]), 0.12, base[2] - 0.3, 3.3, MAT["post"])
    empty = Scene((), probe.route, terrain=terrain)
    with_post = Scene((post,), probe.route, terrain=terrain)
    plain = AgentSimulator(polaris, noise=False, scene=empty).camera_image(t)
    image = AgentSimulator(polaris, noise=False, scene=with_post).camera_image(t)
    changed = np.any(plain != image, axis=2)
    assert changed.any()
    for height in (0.6, 1.2):
        u, v = project(probe, t, np.array([base[0], base[1], base[2] + height]))
        assert 0 <= u < 896 and 0 <= v < 512
        row_i, col_i = round(float(v)), round(float(u))
        row = changed[row_i]
        cols = np.flatnonzero(row)
        assert len(cols) > 0, f"nothing drawn on row {v:.1f}"
        assert abs(cols.mean() - u) < 1.5, f"post drawn at {cols.mean():.1f}, model says {u:.1f}"
        b, g, r = image[row_i, col_i].astype(int)
        assert r > g > b  # the orange of the post


def test_ins_epochs_nobody_read_leave_the_later_ones_as_if_each_had_been_read(polaris):
    """Without a stream client the game only advances the INS's error model (skip_ins): a client
    that connects later gets the epochs one connected all along got."""
    read, skipped = (AgentSimulator(polaris, seed=7) for _ in range(2))
    times = [k / 100.0 for k in range(1, 60)]
    for t in times[:40]:
        read.ins_values(t)
        skipped.skip_ins(t)
    later = [(read.ins_values(t), skipped.ins_values(t)) for t in times[40:]]
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in later)
    noisy = AgentSimulator(polaris, seed=7)
    assert not np.array_equal(noisy.ins_values(times[40]), later[0][0], equal_nan=True)  # the model moves on
