"""The fake camera's lens model inverted (camera_model.undistort_normalized): points with a known
preimage come back to it, and the inversion that lets settled points drop out gives bit for bit
what every point taking all 40 Newton steps gives."""

from __future__ import annotations

import numpy as np

from acres_sim.fake_game.simulation.camera_model import _newton_step, distort_normalized, undistort_normalized
from acres_sim.fake_game.simulation.vehicles import vehicle_hello

D = vehicle_hello("polaris").camera.d  # a strong barrel: some corner pixels have no preimage


def _pixels(camera) -> tuple[np.ndarray, np.ndarray]:
    u, v = np.meshgrid(np.arange(camera.width, dtype=np.float64), np.arange(camera.height, dtype=np.float64))
    return (u - camera.cx) / camera.fx, (v - camera.cy) / camera.fy


def test_points_with_a_known_preimage_come_back_to_it():
    rng = np.random.default_rng(7)
    x, y = rng.uniform(-0.5, 0.5, 5000), rng.uniform(-0.4, 0.4, 5000)
    xd, yd = distort_normalized(x, y, D)
    xu, yu, valid = undistort_normalized(xd, yd, D)
    assert valid.all()
    assert np.abs(xu - x).max() < 1e-12 and np.abs(yu - y).max() < 1e-12


def test_settled_points_dropping_out_changes_no_bit():
    camera = vehicle_hello("polaris").camera
    xd, yd = _pixels(camera)
    x, y = xd.copy(), yd.copy()
    for _ in range(40):  # every point, every step
        x, y = _newton_step(x, y, xd, yd, camera.d)
    xu, yu, valid = undistort_normalized(xd, yd, camera.d)
    assert np.array_equal(xu, x) and np.array_equal(yu, y)
    assert 0.8 < valid.mean() < 1.0  # the corners without a preimage are there, and only they
    for d in (D, (0.1, -0.05, 0.001, -0.002, 0.01), (0.0, 0.0, 0.0, 0.0, 0.0)):
        xd, yd = np.meshgrid(np.linspace(-0.9, 0.9, 301), np.linspace(-0.6, 0.6, 201))
        x, y = xd.copy(), yd.copy()
        for _ in range(40):
            x, y = _newton_step(x, y, xd, yd, d)
        xu, yu, _ = undistort_normalized(xd, yd, d)
        assert np.array_equal(xu, x) and np.array_equal(yu, y)
