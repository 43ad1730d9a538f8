"""The learners' observation kinds (acres_sim/learn/observations.py): each kind's array fits the
space it gives a vehicle's agent, before the first frame and after; a LiDAR of another ring count is
an error naming the agent, never a reshape."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="the learners' extra (gymnasium) is not installed")

from acres_sim.fake_game.simulation.vehicles import vehicle_hello  # noqa: E402
from acres_sim.learn.observations import (  # noqa: E402
    STATE_FIELDS,
    AgentView,
    observation_kinds,
    range_image,
)

STATE = {"pose": {"position": {"x": 1.0, "y": 2.0, "z": 0.0},
                  "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}},
         "speed_mps": 2.5, "yaw_rate_rad_s": 0.1, "steer_rad": -0.2,
         "wheel_contact": [True, True, False, True], "surface_class": [1, 1, 2, 1]}


def _cloud(columns: int, rings: int) -> np.ndarray:
    points = np.full((columns, rings, 4), np.nan, np.float32)
    points[: columns // 2, :, :3] = (3.0, 4.0, 0.0)  # 5 m over the first half, no return after
    return points


@pytest.mark.parametrize("vehicle", ["polaris", "maxxum"])
def test_every_kinds_array_fits_its_space_with_and_without_frames(vehicle):
    hello = vehicle_hello(vehicle)
    kinds = observation_kinds(["state", "lidar", "camera"], 180, (60, 80))
    assert [k.name for k in kinds] == ["state", "lidar", "camera"]
    spaces = {k.name: k.space(hello) for k in kinds}
    assert spaces["state"].shape == (len(STATE_FIELDS),)
    assert spaces["lidar"].shape == (180, hello.lidar.rings)
    before = AgentView("a", STATE, (11.0, 2.0), None, None)
    image = range_image(_cloud(hello.lidar.columns, hello.lidar.rings), 180)
    after = AgentView("a", STATE, (11.0, 2.0), image, np.full((60, 80, 3), 7, np.uint8))
    for view in (before, after):
        for kind in kinds:
            array = kind.array(spaces[kind.name], view)
            assert spaces[kind.name].contains(array), (kind.name, array.shape, array.dtype)
    lidar = kinds[1].array(spaces["lidar"], after)
    assert set(np.unique(lidar).tolist()) == {0.0, 5.0}  # binned nearest returns; none: 0
    state = kinds[0].array(spaces["state"], after)
    assert state[3] == pytest.approx(10.0) and state[5] == pytest.approx(10.0)  # the target 10 m ahead


def test_a_lidar_of_another_ring_count_is_an_error_naming_the_agent():
    lidar = observation_kinds(["lidar"], 180, (60, 80))[0]
    space = lidar.space(vehicle_hello("polaris"))  # 32 rings
    view = AgentView("tractor", STATE, (0.0, 0.0), range_image(_cloud(180, 8), 180), None)
    said = "tractor: the game's LiDAR gives 8 rings, the observation space 32"
    with pytest.raises(RuntimeError, match=said):
        lidar.array(space, view)


@pytest.mark.parametrize("columns", [180, 240, 700, 3600])
def test_the_range_image_holds_each_bins_nearest_return(columns):
    """Bins of 10 columns, of 7 or 8 (uneven), and more bins than columns (each its nearest column),
    against the ranges worked out bin by bin; NaN points are no return, a bin without any is 0."""
    rng = np.random.default_rng(3)
    points = rng.uniform(-60.0, 60.0, (1800, 16, 4)).astype(np.float32)
    points[rng.random((1800, 16)) < 0.6, :3] = np.nan
    points[:40, 3, :3] = np.nan  # a ring without returns over four bins and more
    image = range_image(points, columns)
    assert image.shape == (columns, 16) and image.dtype == np.float32
    ranges = np.linalg.norm(points[..., :3].astype(np.float64), axis=2)
    for b in range(columns):
        first = b * 1800 // columns
        last = max(first + 1, (b + 1) * 1800 // columns) if columns <= 1800 else first + 1
        for ring in range(16):
            seen = ranges[first:last, ring]
            expected = np.nanmin(seen) if np.isfinite(seen).any() else 0.0
            assert image[b, ring] == pytest.approx(expected, rel=1e-6), (b, ring)
    assert (image[:2, 3] == 0.0).all() and (image > 0.0).mean() > 0.35
