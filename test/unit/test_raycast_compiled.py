"""The LiDAR's compiled ray caster against the arrays it replaces (raycast.cast, the reference):
the same sweeps around the fake world's loop, every kind of primitive, two threads or one, and the
cloud's assembly with noise, wet ground and dust."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is not installed: the LiDAR casts with NumPy alone")

from acres_sim.fake_game.simulation import lidar_model  # noqa: E402
from acres_sim.fake_game.simulation.lidar_model import _sweep_poses  # noqa: E402
from acres_sim.fake_game.simulation.simulation import AgentSimulator  # noqa: E402
from acres_sim.fake_game.simulation.vehicles import vehicle_hello  # noqa: E402
from acres_sim.fake_game.world import raycast_compiled, raycast_kernels  # noqa: E402
from acres_sim.fake_game.world.conditions import Conditions  # noqa: E402
from acres_sim.fake_game.world.materials import MAT  # noqa: E402
from acres_sim.fake_game.world.raycast import Motion, RayBundle, block_groups, cast  # noqa: E402
from acres_sim.fake_game.world.scene import DEFAULT_TERRAIN, Box, Cylinder, Scene, Sphere  # noqa: E402
from acres_sim.stream.timing import column_firing_offsets  # noqa: E402


def _polaris() -> AgentSimulator:
    return AgentSimulator(vehicle_hello("polaris"), seed=42, noise=False)


def _sweep(sim: AgentSimulator, t_end: float, compiled: bool) -> np.ndarray:
    lidar = sim.hello.lidar
    times = t_end + column_firing_offsets(lidar.columns, lidar.hz)
    return sim._lidar.render_sweep(sim.scene, times, sim.lidar_pose, None, compiled=compiled)


def test_a_caster_that_fails_to_compile_leaves_the_sweeps_to_the_arrays(monkeypatch):
    """A numba that cannot compile the kernels (an older one): the first sweep says so once and
    the arrays cast it and every later one."""
    def refuse() -> None:
        raise RuntimeError("cannot compile")
    said: list[str] = []
    monkeypatch.setattr(raycast_compiled, "warm_up", refuse)
    monkeypatch.setattr(lidar_model, "_caster", lidar_model._UNSEEN)
    monkeypatch.setattr(lidar_model, "_report_compile", said.append)
    sim = _polaris()
    first, second = _sweep(sim, 4.0, True), _sweep(sim, 4.0, False)
    assert said == ["the LiDAR's compiled ray caster failed to compile (RuntimeError: cannot compile); "
                    "casting with NumPy"]
    assert np.array_equal(first, second, equal_nan=True)
    assert lidar_model.compiled_caster() is None and len(said) == 1


def test_sweeps_around_the_loop_agree_with_the_arrays():
    """Twelve Polaris sweeps on the loop (trees, posts, the shed, the crop rows, the rolling ground):
    the same returns, within 1 mm but for grazing rays, the same materials."""
    sim = _polaris()
    total = one_only = within = common = same_intensity = 0
    gaps = []
    for k in range(12):
        fast, arrays = _sweep(sim, 0.3 + 3.7 * k, True), _sweep(sim, 0.3 + 3.7 * k, False)
        hit_fast, hit_arrays = np.isfinite(fast[..., 0]), np.isfinite(arrays[..., 0])
        both = hit_fast & hit_arrays
        total += int(hit_arrays.sum())
        one_only += int((hit_fast != hit_arrays).sum())
        gap = np.linalg.norm(fast[..., :3][both] - arrays[..., :3][both], axis=1)
        gaps.append(gap)
        within += int((gap <= 1e-3).sum())
        common += int(both.sum())
        same_intensity += int((fast[..., 3][both] == arrays[..., 3][both]).sum())
    assert total > 300_000  # the sweeps saw the world
    assert one_only <= 1e-4 * total, f"{one_only} returns in one cast only, of {total}"
    assert within >= 0.995 * common, f"{common - within} of {common} common returns more than 1 mm apart"
    assert float(np.median(np.concatenate(gaps))) < 1e-5
    assert same_intensity >= 0.9999 * common


def _downward_bundle(columns: int = 90, rings: int = 24) -> tuple[RayBundle, np.ndarray]:
    """A sensor looking all round and down to -70 deg, (columns, rings, 3) directions."""
    az = np.radians(np.arange(columns) * 360.0 / columns)
    el = np.radians(np.linspace(-70.0, 5.0, rings))
    dirs = np.stack([np.cos(az)[:, None] * np.cos(el), np.sin(az)[:, None] * np.cos(el),
                     np.broadcast_to(np.sin(el), (columns, rings))], axis=-1)
    return RayBundle.build(dirs.reshape(-1, 3), block_groups(columns, rings, 10, 8), np.float32), dirs


def test_every_kind_of_primitive_is_hit_as_the_arrays_hit_it():
    """From 9 m up, every kind of primitive seen from above and the side: a turned box's walls and
    roof, a cylinder's side and cap, a sphere; the arrays cast in float64 as the reference."""
    scene = Scene((Box((6.0, -3.0, -1.0), (12.0, 3.0, 2.5), MAT["wall"], MAT["roof"], yaw_rad=0.4),
                   Cylinder(-8.0, 5.0, 2.5, -1.0, 4.0, MAT["trunk"]),
                   Sphere(-2.0, -10.0, 3.0, 2.0, MAT["foliage"]),
                   Box((-14.0, -14.0, -1.0), (-10.0, -10.0, 3.0), MAT["wall"], MAT["roof"])),
                  terrain=DEFAULT_TERRAIN)
    bundle, dirs = _downward_bundle()
    columns = dirs.shape[0]
    positions = np.tile([0.5, 0.2, 9.0], (columns, 1))
    rotations = np.tile(np.eye(3), (columns, 1, 1))
    split = raycast_compiled.SweepSplit.of(columns, dirs.shape[1], 10, 8)
    fast = raycast_compiled.cast_sweep(scene, bundle, split, positions, rotations, dirs, 100.0, 0.0, 1e-9)
    ref_bundle = RayBundle(bundle.dirs.astype(np.float64), bundle.groups, bundle.axes, bundle.radii)
    motion = Motion(np.repeat(positions.T, dirs.shape[1], axis=1), dirs.reshape(-1, 3).T.copy(), 0.0, 1e-9)
    ref = cast(scene, ref_bundle, positions[0], rotations[0], 100.0, motion=motion)
    for name in ("wall", "roof", "trunk", "foliage"):
        assert (ref.material == MAT[name]).sum() >= 20, f"the scene shows little {name}"
    prims = np.isin(ref.material, [MAT["wall"], MAT["roof"], MAT["trunk"], MAT["foliage"]])
    assert np.array_equal(fast.material[prims], ref.material[prims])
    gap = np.abs(fast.distance[prims] - ref.distance[prims])
    assert float(np.quantile(gap, 0.99)) < 1e-4 and float(gap.max()) < 2e-3


def test_the_sweeps_poses_are_interpolated_as_the_arrays_interpolate_them():
    """Each column's pose between the knots, in a corner of the loop where the vehicle turns, and
    the slack the culling takes from them."""
    sim = _polaris()
    lidar = sim.hello.lidar
    times = 21.0 + column_firing_offsets(lidar.columns, lidar.hz)
    positions, rotations = _sweep_poses(times, sim.lidar_pose, 19)
    fast_positions, fast_rotations = _sweep_poses(times, sim.lidar_pose, 19, kernels=raycast_kernels)
    assert np.allclose(fast_positions, positions, rtol=0.0, atol=1e-12)
    assert np.allclose(fast_rotations, rotations, rtol=0.0, atol=1e-12)
    slack_m, slack_rad = raycast_kernels.sweep_slack(fast_positions, fast_rotations, lidar.columns // 2)
    mid = rotations[lidar.columns // 2]
    turns = [math.acos(min(1.0, (np.trace(r.T @ mid) - 1.0) / 2.0)) for r in rotations]
    assert 0.0 < slack_rad == pytest.approx(max(turns), abs=1e-7)
    spread = np.linalg.norm(positions - positions[lidar.columns // 2], axis=1)
    assert slack_m == pytest.approx(float(spread.max()))


def test_two_threads_cast_what_one_thread_casts():
    sim = _polaris()
    model, lidar = sim._lidar, sim.hello.lidar
    times = 14.2 + column_firing_offsets(lidar.columns, lidar.hz)
    positions, rotations = _sweep_poses(times, sim.lidar_pose, 19)
    args = (positions, rotations, model.dirs, lidar.range_m, 0.05, 0.01)
    split = raycast_compiled.SweepSplit.of(lidar.columns, lidar.rings, *model._block)
    halves = raycast_compiled.cast_sweep(sim.scene, model.bundle, split, *args)
    whole = raycast_compiled.cast_sweep(sim.scene, model.bundle, raycast_compiled.SweepSplit(0, 0), *args)
    assert split.column not in (0, lidar.columns)
    assert np.array_equal(halves.distance, whole.distance)
    assert np.array_equal(halves.material, whole.material)


@pytest.mark.parametrize("conditions", [Conditions(), Conditions(wetness=0.8, dust=0.5, fog=0.2)],
                         ids=["clear", "wet_dusty"])
def test_the_compiled_cloud_is_assembled_as_the_arrays_assemble_it(conditions):
    """Range noise, wet ground and the dust's draws: bit for bit, from the same hits and seeds."""
    sim = _polaris()
    model, lidar = sim._lidar, sim.hello.lidar
    times = 9.0 + column_firing_offsets(lidar.columns, lidar.hz)
    positions, rotations = _sweep_poses(times, sim.lidar_pose, 19)
    split = raycast_compiled.SweepSplit.of(lidar.columns, lidar.rings, *model._block)
    hits = raycast_compiled.cast_sweep(sim.scene, model.bundle, split, positions, rotations,
                                       model.dirs, lidar.range_m, 0.05, 0.01)
    clouds = []
    for compiled in (True, False):
        rng, air = np.random.default_rng(5), np.random.default_rng(6)
        clouds.append(model._points(hits, rng, conditions, air, raycast_kernels if compiled else None))
    assert np.isnan(clouds[0][..., 0]).any() and not math.isnan(float(np.nanmax(clouds[0][..., 3])))
    assert np.array_equal(clouds[0], clouds[1], equal_nan=True)
