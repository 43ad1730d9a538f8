"""The fake world varied (ROS-free): spawned objects in the LiDAR and the camera, hardware shifts of
the sensor mounts and the actuators, the conditions' effects, the farm's marks, and the checks on
every request. Clouds are put into the world with the calibrated Hello mounts and the truth pose,
written out here with independent rotations (support.reference_geometry)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from support.reference_geometry import mount_matrix, quat_matrix
from acres_sim.channels.control import (
    InvalidPose,
    NameInvalid,
    NameTaken,
    NotDeletable,
    OutOfRange,
    UnknownResource,
)
from acres_sim.fake_game.simulation.agent_states import wheel_ground
from acres_sim.fake_game.simulation.farm_marks import CROP_CRUSHED, FarmMarks
from acres_sim.fake_game.simulation.shifts import InvalidShift, VehicleShift
from acres_sim.fake_game.simulation.simulation import AgentSimulator
from acres_sim.fake_game.simulation.vehicle_model import (
    VEHICLE_PARAMS,
    VehicleCommand,
    VehicleModel,
    VehicleState,
)
from acres_sim.fake_game.simulation.vehicles import vehicle_hello
from acres_sim.fake_game.simulation.world_changes import WorldChanges
from acres_sim.fake_game.world.conditions import CLEAR_DAY
from acres_sim.fake_game.world.farm_objects import CATALOGUE
from acres_sim.fake_game.world.motion import DriveKnot, HeldMotion
from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.raycast import RayBundle, block_groups, cast
from acres_sim.fake_game.world.scene import Box, Cylinder, Scene, Sphere, default_scene

T = 5.0  # the world time of the renders (the vehicle is held: every column sees the same pose)
SPOT = (-10.0, -25.0, 0.0)  # base_footprint of the held vehicle: on the loop's south straight, facing east


def held_sim(world: WorldChanges, vehicle: str = "polaris") -> AgentSimulator:
    sim = AgentSimulator(vehicle_hello(vehicle), seed=3, noise=False, scene=world.scene)
    x, y, _ = SPOT
    position, rotation = sim.on_ground(x, y, 0.0)
    sim.place(HeldMotion(0.0, tuple(float(v) for v in position), rotation))
    return sim


def apply(sim: AgentSimulator, world: WorldChanges, agent: str = "polaris") -> None:
    sim.scene, sim.conditions, sim.shift = world.scene, world.conditions, world.shifts[agent]


def cloud_in_world(sim: AgentSimulator, cloud: np.ndarray) -> np.ndarray:
    """(N, 3) world points of the returns, through the calibrated mount and the truth pose."""
    lidar = sim.hello.lidar
    position, q = sim.truth_pose(T)
    r_wb = quat_matrix(q)
    rotation = r_wb @ mount_matrix(lidar.rpy_deg)
    origin = position + r_wb @ np.asarray(lidar.position_flu_m)
    pts = cloud[..., :3].reshape(-1, 3).astype(np.float64)
    pts = pts[np.isfinite(pts[:, 0])]
    return pts @ rotation.T + origin


def world() -> WorldChanges:
    return WorldChanges(default_scene(), ["polaris"])


def test_a_spawned_bale_is_in_the_cloud_where_it_was_put_and_gone_once_deleted():
    changes = world()
    sim = held_sim(changes)
    before = sim.lidar_points(T)
    bale_x, bale_y = SPOT[0] + 8.0, SPOT[1] + 1.0
    placed = changes.spawn("bale", "acres://objects/round_bale", (bale_x, bale_y, 0.0), (0.0, 0.0, 0.0, 1.0))
    apply(sim, changes)
    ground = float(changes.base.ground_height(bale_x, bale_y))
    assert placed.z == pytest.approx(ground)  # stands on the terrain, whatever z was asked
    pts = cloud_in_world(sim, sim.lidar_points(T))
    radius, height = 0.75, 1.2
    near = np.hypot(pts[:, 0] - bale_x, pts[:, 1] - bale_y)
    on_bale = (near < radius + 0.05) & (pts[:, 2] > ground + 0.1)
    assert on_bale.sum() > 40
    # every point near it lies on its surface: the side at the radius or the top at its height
    side = np.abs(near[on_bale] - radius) < 0.02
    top = np.abs(pts[on_bale, 2] - (ground + height)) < 0.02
    assert (side | top).all()
    assert pts[on_bale, 2].max() <= ground + height + 0.02
    changes.delete("bale")
    apply(sim, changes)
    after = sim.lidar_points(T)
    assert np.array_equal(after, before, equal_nan=True)  # gone from the next scan, bit for bit


def test_a_turned_square_bale_is_drawn_turned():
    changes = world()
    sim = held_sim(changes)
    x, y = SPOT[0] + 7.0, SPOT[1] - 3.0
    yaw = math.radians(30.0)
    changes.spawn("square", "square_bale", (x, y, 0.0), (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)))
    apply(sim, changes)
    pts = cloud_in_world(sim, sim.lidar_points(T))
    ground = float(changes.base.ground_height(x, y))
    local = pts[:, :2] - (x, y)
    c, s = math.cos(yaw), math.sin(yaw)
    u, v = local[:, 0] * c + local[:, 1] * s, -local[:, 0] * s + local[:, 1] * c  # in the bale's axes
    above_ground = pts[:, 2] - changes.base.ground_height(pts[:, 0], pts[:, 1]) > 0.02
    inside = (np.abs(u) < 1.25) & (np.abs(v) < 0.65) & above_ground
    assert inside.sum() > 20
    # each point on a face of the 2.4 x 1.2 x 0.9 m box in its own axes
    on_face = (np.abs(np.abs(u[inside]) - 1.2) < 0.02) | (np.abs(np.abs(v[inside]) - 0.6) < 0.02) \
        | (np.abs(pts[inside, 2] - (ground + 0.9)) < 0.02)
    assert on_face.all()


def test_a_spawned_object_is_in_the_camera_where_its_projection_says():
    changes = world()
    sim = held_sim(changes)
    hello = sim.hello
    empty = sim.camera_image(T)
    x, y = SPOT[0] + 9.0, SPOT[1]
    changes.spawn("p", "person", (x, y, 0.0), (0.0, 0.0, 0.0, 1.0))
    apply(sim, changes)
    image = sim.camera_image(T)
    changed = np.abs(image.astype(int) - empty.astype(int)).max(axis=2) > 30
    # the person's middle projected with the pinhole of the Hello (it stands near the optical axis,
    # where the lens's distortion is small)
    cam = hello.camera
    position, q = sim.truth_pose(T)
    r_wb = quat_matrix(q)
    r_wc = r_wb @ mount_matrix(cam.rpy_deg)
    origin = position + r_wb @ np.asarray(cam.position_flu_m)
    middle = np.array([x, y, float(changes.base.ground_height(x, y)) + 1.0])
    flu = r_wc.T @ (middle - origin)
    u = cam.cx - cam.fx * flu[1] / flu[0]
    v = cam.cy - cam.fy * flu[2] / flu[0]
    rows, cols = np.nonzero(changed)
    assert len(rows) > 200
    assert abs(np.median(cols) - u) < 15 and abs(np.median(rows) - v) < 60


def test_a_shifted_lidar_is_displaced_by_exactly_the_shift_and_restored_bit_for_bit():
    changes = world()
    sim = held_sim(changes)
    calibrated = sim.lidar_points(T)

    def ground_gap(cloud: np.ndarray) -> float:
        pts = cloud_in_world(sim, cloud)
        gap = pts[:, 2] - sim.scene.ground_height(pts[:, 0], pts[:, 1])
        near = np.hypot(pts[:, 0] - SPOT[0], pts[:, 1] - SPOT[1]) < 15.0
        return float(np.median(gap[near & (np.abs(gap) < 0.5)]))

    assert abs(ground_gap(calibrated)) < 1e-4
    changes.set_shift("polaris", {"lidar_offset_m": {"x": 0.0, "y": 0.0, "z": 0.1}})
    apply(sim, changes)
    shifted = sim.lidar_points(T)
    # the sensor sits 0.1 m higher than its calibration says: the calibrated TF puts the ground 0.1 m low
    assert ground_gap(shifted) == pytest.approx(-0.1, abs=2e-3)
    changes.set_shift("polaris", {"lidar_rpy_deg": [0.0, 0.0, 2.0]})
    apply(sim, changes)
    turned = sim.lidar_points(T)
    # a yaw shift turns the cloud: the column that sees a thing moves by 2 deg of columns
    columns = sim.hello.lidar.columns
    assert not np.array_equal(turned, calibrated, equal_nan=True)
    ring = sim.hello.lidar.rings // 2
    best = min(range(-30, 31), key=lambda k: np.nanmean(np.abs(
        np.roll(calibrated[:, ring, 3], k) - turned[:, ring, 3])))
    assert abs(abs(best) - round(2.0 / 360.0 * columns)) <= 1
    changes.set_shift("polaris", {})
    apply(sim, changes)
    assert np.array_equal(sim.lidar_points(T), calibrated, equal_nan=True)


def test_the_actuator_shift_drifts_the_vehicle_model():
    params = VEHICLE_PARAMS["polaris"]
    straight = VehicleModel(params, VehicleState(0.0, 0.0, 0.0, speed_mps=5.0))
    drifted = VehicleModel(params, VehicleState(0.0, 0.0, 0.0, speed_mps=5.0))
    drifted.steering_offset_rad = 0.05
    weak = VehicleModel(params, VehicleState(0.0, 0.0, 0.0))
    weak.throttle_gain = 0.5
    full = VehicleModel(params, VehicleState(0.0, 0.0, 0.0))
    for _ in range(240):
        straight.step(VehicleCommand(throttle=0.2), 1 / 120)
        drifted.step(VehicleCommand(throttle=0.2), 1 / 120)
        weak.step(VehicleCommand(throttle=1.0), 1 / 120)
        full.step(VehicleCommand(throttle=1.0), 1 / 120)
    assert abs(straight.state.y) < 1e-9 and drifted.state.y > 0.5  # pulls left at a zero request
    assert drifted.state.steer_rad == pytest.approx(0.05, abs=1e-6)
    assert 0.3 < weak.state.speed_mps / full.state.speed_mps < 0.7


def lidar_stats(sim: AgentSimulator) -> tuple[int, float]:
    """The returns from the ground (within 5 cm of it) and their mean intensity."""
    cloud = sim.lidar_points(T)
    valid = np.isfinite(cloud[..., 0])
    pts = cloud_in_world(sim, cloud)
    on_ground = np.abs(pts[:, 2] - sim.scene.ground_height(pts[:, 0], pts[:, 1])) < 0.05
    return int(on_ground.sum()), float(np.mean(cloud[..., 3][valid][on_ground]))


def test_each_condition_has_its_measured_effect():
    changes = world()
    sim = held_sim(changes)
    day = sim.camera_image(T).astype(float)
    lens = day.sum(axis=2) > 0  # the pixels with a preimage (the corners are black)

    def contrast(image: np.ndarray) -> float:
        return float(image.mean(axis=2)[lens].std())

    returns, ground_intensity = lidar_stats(sim)
    changes.set_conditions({"sun_elevation_deg": -3.0})
    apply(sim, changes)
    dusk = sim.camera_image(T).astype(float)
    assert dusk.mean() < 0.4 * day.mean()
    assert lidar_stats(sim) == (returns, ground_intensity)  # the LiDAR is its own light
    changes.set_conditions({"sun_elevation_deg": 50.0, "wetness": 1.0})
    apply(sim, changes)
    wet_returns, wet_intensity = lidar_stats(sim)
    assert wet_returns == returns and wet_intensity == pytest.approx(0.4 * ground_intensity, rel=0.05)
    assert sim.camera_image(T).mean() < day.mean()
    changes.set_conditions({"wetness": 0.0, "dust": 0.6})
    apply(sim, changes)
    dusty = sim.camera_image(T).astype(float)
    assert contrast(dusty) < 0.6 * contrast(day)
    dust_returns, _ = lidar_stats(sim)
    assert dust_returns < 0.8 * returns
    cloud = sim.lidar_points(T)
    echo = cloud[..., 3] == 4.0  # back from the dust itself: short
    assert echo.sum() > 1000 and np.median(np.linalg.norm(cloud[echo][:, :3], axis=1)) < 15.0
    assert np.array_equal(cloud, sim.lidar_points(T), equal_nan=True)  # the same stamp: the same dust
    changes.set_conditions({"dust": 0.0, "fog": 1.0})
    apply(sim, changes)
    assert contrast(sim.camera_image(T).astype(float)) < 0.6 * contrast(day)
    assert lidar_stats(sim)[0] < 0.8 * returns
    changes.set_conditions(dict(vars(CLEAR_DAY)))
    apply(sim, changes)
    assert np.array_equal(sim.camera_image(T), day.astype(np.uint8))


def test_wheels_crush_crop_off_the_track_and_none_on_it():
    scene = default_scene()
    params = VEHICLE_PARAMS["maxxum"]
    marks = FarmMarks()

    def drive(x0: float, y0: float, yaw: float, steps: int = 60) -> tuple[float, list[dict]]:
        crushed, stamps = 0.0, []
        marks.forget()
        for k in range(steps):
            d = 3.0 * k / 120
            knot = DriveKnot(k / 120, x0 + d * math.cos(yaw), y0 + d * math.sin(yaw), yaw, 3.0, 0.0)
            surfaces, fields = wheel_ground(scene, params, knot)
            marks.observe(scene, "a", "maxxum", params, knot, 0.0, 0.0, surfaces, fields)
            events, step_stamps = marks.take({"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""})
            crushed += sum(e["value"] for e in events["events"] if e["kind"] == CROP_CRUSHED)
            stamps += step_stamps["stamps"]
        return crushed, stamps

    route = scene.route
    on_track, stamps = drive(-20.0, -route.half_y_m, 0.0)  # along the south straight, on the gravel
    assert on_track == 0.0
    assert len(stamps) == 4 * 59 and {s["wheel"] for s in stamps} == {0, 1, 2, 3}
    assert all(s["pressure_pa"] > 0 and s["tyre_diameter_m"] == 1.6 and s["crushed_m2"] == 0.0
               for s in stamps)
    across, stamps = drive(-10.0, 0.0, 0.0)  # across the rows of the field inside the loop
    travelled = 3.0 * 59 / 120
    assert across == pytest.approx(4 * travelled * 0.54 * scene.row_plant_fraction, rel=0.2)
    assert all(s["sinkage_m"] > 0.0 for s in stamps)  # soft ground: the wheels sink
    marks.stamping = False  # nobody takes the footprints: none made, the crop crushed the same
    unstamped, none = drive(-10.0, 0.0, 0.0)
    assert none == [] and unstamped == across


def test_requests_that_cannot_be_are_refused_and_change_nothing():
    changes = world()
    scene = changes.scene
    q = (0.0, 0.0, 0.0, 1.0)
    for name, uri, position, orientation, error in (
            ("b", "acres://objects/tractor", (0.0, 0.0, 0.0), q, UnknownResource),
            ("polaris", "round_bale", (0.0, 0.0, 0.0), q, NameTaken),
            ("1bad", "round_bale", (0.0, 0.0, 0.0), q, NameInvalid),
            ("b", "round_bale", (5000.0, 0.0, 0.0), q, InvalidPose),
            ("b", "round_bale", (0.0, 0.0, -5.0), q, InvalidPose),
            ("b", "round_bale", (0.0, math.nan, 0.0), q, InvalidPose),
            ("b", "round_bale", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0), InvalidPose)):
        with pytest.raises(error):
            changes.spawn(name, uri, position, orientation)
    assert changes.objects == {} and changes.scene is scene
    changes.spawn("b", "round_bale", (0.0, 0.0, 0.0), q)
    with pytest.raises(NameTaken):
        changes.spawn("b", "square_bale", (3.0, 0.0, 0.0), q)
    assert changes.spawn("b", "square_bale", (3.0, 0.0, 0.0), q, allow_renaming=True).name == "b_1"
    with pytest.raises(NotDeletable):
        changes.delete("polaris")
    for values in ({"lidar_offset_m": [0.0, 0.0, 0.9]}, {"camera_rpy_deg": [math.nan, 0, 0]},
                   {"throttle_gain": 0.0}, {"steering_offset_rad": 1.0}, {"tyres": 1}):
        with pytest.raises(InvalidShift):
            changes.set_shift("polaris", values)
    with pytest.raises(LookupError):
        changes.set_shift("nobody", {})
    assert changes.shifts["polaris"] == VehicleShift()
    for values in ({"wetness": 1.5}, {"sun_elevation_deg": math.inf}, {"dust": "lots"}, {"rain": 1.0}):
        with pytest.raises(OutOfRange):
            changes.set_conditions(values)
    assert changes.conditions == CLEAR_DAY


def test_the_catalogue_sizes_are_the_drawn_sizes():
    for kind in CATALOGUE:
        changes = world()
        placed = changes.spawn("o", kind.uri, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
        tops = [p.z0 + p.height if isinstance(p, Cylinder) else p.z + p.radius if isinstance(p, Sphere)
                else p.hi[2] for p in placed.primitives()]
        top = max(tops)
        assert top - placed.z == pytest.approx(kind.size_m[2])


def test_a_box_turned_a_quarter_is_the_axis_aligned_box_with_its_sides_swapped():
    rng = np.random.default_rng(1)
    dirs = rng.normal(size=(4000, 3))
    dirs[:, 0] = np.abs(dirs[:, 0]) + 1.0
    bundle = RayBundle.build(dirs, block_groups(40, 100, 8, 10), np.float32)
    aligned = Box((10.0, -1.0, 0.0), (12.0, 3.0, 2.0), MAT["wall"], MAT["roof"])
    turned = Box((9.0, 0.0, 0.0), (13.0, 2.0, 2.0), MAT["wall"], MAT["roof"], yaw_rad=math.pi / 2)
    sun = np.array([0.3, 0.2, 0.9])
    hits = [cast(Scene((box,)), bundle, np.array([0.0, 0.5, 1.0]), np.eye(3), 100.0, sun=sun)
            for box in (aligned, turned)]
    on_box = hits[0].distance < 50.0
    assert on_box.sum() > 500
    assert np.array_equal(np.isfinite(hits[0].distance), np.isfinite(hits[1].distance))
    assert np.abs(hits[0].distance - hits[1].distance)[on_box].max() < 1e-4
    assert np.array_equal(hits[0].material, hits[1].material)  # the roof on top, walls around
    assert np.abs(hits[0].sun_cos - hits[1].sun_cos).max() < 1e-5  # the same faces, the same normals
