"""The fake_game world: vehicle Hellos, the loop, LiDAR geometry and the INS / georeference model.

The geometry checks re-derive every transform here with plain numpy (R = Rz @ Ry @ Rx written out
axis by axis), so that they do not share code with the simulator they check.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyproj import Transformer

from support.reference_geometry import mount_matrix, quat_matrix
from support.page_examples import POLARIS_HELLO_JSON
from acres_sim.stream import protocol
from acres_sim.stream.hello import encode_hello, parse_hello
from acres_sim.fake_game.world.georef import Georeference
from acres_sim.fake_game.world.materials import INTENSITY_TABLE, MAT
from acres_sim.fake_game.world.raycast import cast
from acres_sim.fake_game.world.route import DriveProfile, LoopRoute
from acres_sim.fake_game.world.scene import (
    DEFAULT_TERRAIN,
    Box,
    CullingSpheres,
    Cylinder,
    Scene,
    Sphere,
    Terrain,
    default_scene,
    horizontal_extent,
)
from acres_sim.fake_game.simulation.simulation import AgentSimulator
from acres_sim.fake_game.simulation.vehicles import VEHICLES, lidar_elevations_deg, vehicle_hello
from acres_sim.stream.protocol import INS_GEO_FIELDS, Ins
from acres_sim.stream.timing import column_firing_offsets
from acres_sim.rotations import rpy_matrix

PAGE_POLARIS_HELLO = json.loads(POLARIS_HELLO_JSON)

# ---------------------------------------------------------------------------------------------
# Independent geometry


def sensor_to_world(sim: AgentSimulator, t: float, position_flu_m, rpy_deg) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of a mount in the world from the truth pose and the Hello mount."""
    pos, q = sim.truth_pose(t)
    r_wb = quat_matrix(q)
    return r_wb @ mount_matrix(rpy_deg), pos + r_wb @ np.asarray(position_flu_m)


def yaw_of(q) -> float:
    x, y, z, w = q
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def on_ground_only(scene: Scene, xy: np.ndarray, margin: float = 0.3) -> np.ndarray:
    """Points whose horizontal position is outside every object of the scene: only ground there."""
    free = np.ones(len(xy), bool)
    if scene.crops is not None:  # the crop field's plants stand there
        c = scene.crops
        free &= ~((xy[:, 0] > c.x_min - margin) & (xy[:, 0] < c.x_max + margin)
                  & (xy[:, 1] > c.y_min - margin) & (xy[:, 1] < c.y_max + margin))
    for prim in scene.primitives:
        x0, y0, x1, y1 = horizontal_extent(prim)
        free &= ~((xy[:, 0] > x0 - margin) & (xy[:, 0] < x1 + margin)
                  & (xy[:, 1] > y0 - margin) & (xy[:, 1] < y1 + margin))
    return free


# ---------------------------------------------------------------------------------------------
# Hello


def test_polaris_hello_is_the_seed_example():
    doc = vehicle_hello("polaris").to_json_dict()
    for key, value in PAGE_POLARIS_HELLO.items():
        if isinstance(value, dict):
            for sub, expected in value.items():
                assert doc[key][sub] == expected, f"{key}.{sub}"
        else:
            assert doc[key] == value, key
    assert "R = Rz(yaw) Ry(pitch) Rx(roll)" in doc["mount_convention"]
    hello = vehicle_hello("polaris")
    assert parse_hello(encode_hello(hello)) == hello


def test_maxxum_hello_shape():
    hello = vehicle_hello("maxxum", agent="tractor1")
    assert hello.agent == "tractor1" and hello.vehicle == "maxxum"
    lidar = hello.lidar
    assert (lidar.enabled, lidar.columns, lidar.rings, lidar.azimuth_order) == (True, 180, 8, "ccw")
    assert (lidar.range_m, lidar.hz, lidar.frame_id) == (60.0, 10.0, "lidar")
    assert not hello.camera.enabled
    assert hello.ins.enabled and hello.ins.hz == 100.0 and hello.ins.position_flu_m == (0.0, 0.0, 0.0)
    assert (hello.ins.utm_zone, hello.ins.datum) == (16, "nad83_2011")
    doc = json.loads(encode_hello(hello))
    assert doc["camera"]["enabled"] is False
    assert parse_hello(encode_hello(hello)) == hello
    np.testing.assert_allclose(lidar_elevations_deg("maxxum"), np.linspace(-20.0, 10.0, 8))


def test_polaris_ring_table():
    table = lidar_elevations_deg("polaris")
    assert table.shape == (32,)
    assert np.all(np.diff(table) > 0.0)
    assert table[0] == pytest.approx(-55.0) and table[-1] == pytest.approx(15.0)


def test_flavor_and_georeference_options():
    core = vehicle_hello("polaris", flavor="core")
    assert not core.camera.enabled and core.lidar.enabled
    assert vehicle_hello("polaris", georeferenced=False).georeferenced is False
    with pytest.raises(ValueError, match="unknown vehicle"):
        vehicle_hello("combine")
    with pytest.raises(ValueError, match="unknown flavor"):
        vehicle_hello("polaris", flavor="unreal")
    with pytest.raises(ValueError):
        lidar_elevations_deg("combine")


# ---------------------------------------------------------------------------------------------
# The loop


def test_loop_is_closed_and_agents_start_apart():
    route = LoopRoute()
    for s in (0.0, 10.0, 123.4):
        a, b = route.sample(s), route.sample(s + route.length_m)
        assert (a.x, a.y) == pytest.approx((b.x, b.y), abs=1e-9)
    hello = vehicle_hello("polaris")
    p1, _ = AgentSimulator(hello, start_offset_m=0.0).truth_pose(5.0)
    p2, _ = AgentSimulator(hello, start_offset_m=route.length_m / 2).truth_pose(5.0)
    assert np.linalg.norm(p1 - p2) > 20.0
    terrain = DEFAULT_TERRAIN
    assert p1[2] == pytest.approx(float(terrain.height(p1[0], p1[1])), abs=1e-12)  # on the ground
    assert p2[2] == pytest.approx(float(terrain.height(p2[0], p2[1])), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=-1000.0, max_value=1000.0))
def test_loop_heading_follows_the_path(s):
    route = LoopRoute()
    h = 1e-3
    a, b, mid = route.sample(s - h), route.sample(s + h), route.sample(s)
    vx, vy = (b.x - a.x) / (2 * h), (b.y - a.y) / (2 * h)
    assert math.hypot(vx, vy) == pytest.approx(1.0, abs=1e-3)  # unit speed along the arc length
    assert math.atan2(vy, vx) == pytest.approx(mid.yaw, abs=2e-3) or abs(abs(mid.yaw) - math.pi) < 2e-3
    assert abs(route.signed_distance(np.array([mid.x]), np.array([mid.y]))[0]) < 1e-9


# ---------------------------------------------------------------------------------------------
# LiDAR


def sweep_to_world(sim: AgentSimulator, t_end: float, cloud: np.ndarray) -> np.ndarray:
    """The valid returns of a motion-true sweep in the world: each column with the exact LiDAR pose
    of its own firing time (the formula of the protocol page, evaluated column by column)."""
    lidar = sim.hello.lidar
    out = []
    for c, t in enumerate(t_end + column_firing_offsets(lidar.columns, lidar.hz)):
        pts = cloud[c, :, :3].astype(np.float64)
        pts = pts[np.isfinite(pts[:, 0])]
        pose = sim.lidar_pose(float(t))
        out.append(pts @ pose.rotation.T + pose.position)
    return np.concatenate(out)


@pytest.mark.parametrize("vehicle", VEHICLES)
@pytest.mark.parametrize("t", [0.1, 14.2, 41.7])
def test_lidar_ground_returns_land_on_the_ground(vehicle, t):
    hello = vehicle_hello(vehicle)
    sim = AgentSimulator(hello, seed=7, noise=True)
    cloud = sim.lidar_points(t)
    assert cloud.shape == (hello.lidar.columns, hello.lidar.rings, 4) and cloud.dtype == np.float32
    in_world = sweep_to_world(sim, t, cloud)
    ground = on_ground_only(sim.scene, in_world[:, :2])
    assert ground.sum() > (5000 if vehicle == "polaris" else 200)
    height = sim.scene.terrain.height(in_world[:, 0], in_world[:, 1])  # the rolling ground's own formula
    assert np.abs(in_world[ground, 2] - height[ground]).max() < 0.05
    assert np.ptp(in_world[ground, 2]) > 0.3  # the ground is not flat: returns from 0.3 m apart in z
    assert (in_world[:, 2] - height > 0.3).any()  # something stands on the ground: trees, posts, the shed


def distance_to_surfaces(scene: Scene, p: np.ndarray) -> np.ndarray:
    """Distance of each world point from the nearest surface of the scene (ground included; for the
    ground the vertical distance, an upper bound of the true one)."""
    best = np.abs(p[:, 2] - scene.ground_height(p[:, 0], p[:, 1]))
    if scene.crops is not None:  # the rows: walls x = row_x(k) from the ground to height_m above it
        c = scene.crops
        k = np.round(p[:, 0] / c.spacing_m - 0.5 * c.fraction)
        above = p[:, 2] - scene.ground_height(p[:, 0], p[:, 1])
        inside = ((p[:, 1] >= c.y_min) & (p[:, 1] <= c.y_max) & (p[:, 0] >= c.x_min) & (p[:, 0] <= c.x_max)
                  & (above >= -0.01) & (above <= c.plant_height(k, p[:, 1]) + 0.01))
        best = np.where(inside, np.minimum(best, np.abs(p[:, 0] - c.row_x(k))), best)
    for prim in scene.primitives:
        if isinstance(prim, Cylinder):
            rho = np.hypot(p[:, 0] - prim.x, p[:, 1] - prim.y)
            top = prim.z0 + prim.height
            side = np.hypot(rho - prim.radius, np.maximum(0.0, np.maximum(prim.z0 - p[:, 2], p[:, 2] - top)))
            cap = np.hypot(p[:, 2] - top, np.maximum(0.0, rho - prim.radius))
            d = np.minimum(side, cap)
        elif isinstance(prim, Sphere):
            d = np.abs(np.linalg.norm(p - [prim.x, prim.y, prim.z], axis=1) - prim.radius)
        else:
            lo, hi = np.array(prim.lo), np.array(prim.hi)
            outside = np.linalg.norm(np.maximum(0.0, np.maximum(lo - p, p - hi)), axis=1)
            inside = np.minimum(p - lo, hi - p).min(axis=1)
            d = np.where(outside > 0.0, outside, np.abs(inside))
        best = np.minimum(best, d)
    return best


@pytest.mark.parametrize("t", [3.0, 20.0, 33.0])
def test_every_lidar_return_lies_on_a_surface(t):
    hello = vehicle_hello("polaris")
    sim = AgentSimulator(hello, noise=False)
    in_world = sweep_to_world(sim, t, sim.lidar_points(t))
    assert distance_to_surfaces(sim.scene, in_world).max() < 0.01
    on_objects = np.abs(in_world[:, 2] - sim.scene.ground_height(in_world[:, 0], in_world[:, 1])) > 0.05
    assert on_objects.sum() > 50  # the check covered trees, posts and the shed, not only the ground


@pytest.mark.parametrize("vehicle", VEHICLES)
def test_lidar_columns_and_rings_follow_the_hello(vehicle):
    hello = vehicle_hello(vehicle)
    cloud = AgentSimulator(hello, noise=False).lidar_points(3.0)
    columns, rings = hello.lidar.columns, hello.lidar.rings
    c, r = np.nonzero(np.isfinite(cloud[..., 0]))
    x, y, z = (cloud[c, r, i].astype(np.float64) for i in range(3))
    sign = -1.0 if hello.lidar.azimuth_order == "cw" else 1.0
    expected_az = sign * 360.0 * c / columns
    az_err = (np.degrees(np.arctan2(y, x)) - expected_az + 180.0) % 360.0 - 180.0
    assert np.abs(az_err).max() < 1e-3
    elevation = np.degrees(np.arctan2(z, np.hypot(x, y)))
    np.testing.assert_allclose(elevation, lidar_elevations_deg(vehicle)[r], atol=1e-3)
    assert len(set(r)) > rings // 2


@pytest.mark.parametrize("vehicle", VEHICLES)
def test_post_on_the_left_appears_at_its_column(vehicle):
    hello = vehicle_hello(vehicle)
    t = 2.0
    probe = AgentSimulator(hello, noise=False)
    pos, q = probe.truth_pose(t)
    r_wb = quat_matrix(q)
    post_world = pos + r_wb @ np.array([7.0, 7.0, 0.0])  # 45 deg to the left of the vehicle
    post = Cylinder(float(post_world[0]), float(post_world[1]), 0.4, 0.0, 2.5, MAT["post"])
    sim = AgentSimulator(hello, noise=False, scene=Scene((post,), probe.route))
    cloud = sim.lidar_points(t)

    r, p = sensor_to_world(sim, t, hello.lidar.position_flu_m, hello.lidar.rpy_deg)
    centre_sensor = r.T @ (np.array([post_world[0], post_world[1], 1.0]) - p)
    azimuth = math.degrees(math.atan2(centre_sensor[1], centre_sensor[0]))
    assert 45.0 < azimuth < 90.0  # left and ahead of the LiDAR
    columns = hello.lidar.columns
    if hello.lidar.azimuth_order == "cw":
        expected = round(-azimuth * columns / 360.0) % columns
        assert expected > columns // 2
    else:
        expected = round(azimuth * columns / 360.0) % columns
        assert expected < columns // 2
    hit_columns = np.nonzero((cloud[..., 3] == INTENSITY_TABLE[MAT["post"]]).any(axis=1))[0]
    assert len(hit_columns) > 0
    half_width_cols = math.degrees(math.atan2(0.4, np.linalg.norm(centre_sensor[:2]))) * columns / 360.0
    # the tilted sensor sees the vertical post a little wider at steep rings
    assert np.abs(hit_columns - expected).max() <= 1.5 * half_width_cols + 1.0
    assert abs(np.mean(hit_columns) - expected) <= 1.0


def test_no_return_is_nan_with_zero_intensity():
    hello = vehicle_hello("maxxum")
    empty = Scene((), LoopRoute())
    sim = AgentSimulator(hello, noise=True, scene=empty)
    t = 9.0
    cloud = sim.lidar_points(t)
    nan = np.isnan(cloud[..., 0])
    assert np.array_equal(nan, np.isnan(cloud[..., 1])) and np.array_equal(nan, np.isnan(cloud[..., 2]))
    assert np.all(cloud[..., 3][nan] == 0.0)
    assert np.all(cloud[..., 3][~nan] > 0.0)
    # with only the ground plane, a beam returns exactly when it meets the ground within range
    r, p = sensor_to_world(sim, t, hello.lidar.position_flu_m, hello.lidar.rpy_deg)
    az = np.radians(360.0 * np.arange(hello.lidar.columns) / hello.lidar.columns)  # ccw
    el = np.radians(lidar_elevations_deg("maxxum"))
    beams = np.stack([np.cos(el)[None, :] * np.cos(az)[:, None], np.cos(el)[None, :] * np.sin(az)[:, None],
                      np.broadcast_to(np.sin(el)[None, :], (len(az), len(el)))], axis=-1)
    dz = (beams @ r.T)[..., 2]
    with np.errstate(divide="ignore"):
        ground_range = np.where(dz < 0.0, -p[2] / dz, np.inf)
    clear = np.abs(ground_range - hello.lidar.range_m) > 0.5  # away from the range limit
    assert np.array_equal(nan[clear], ground_range[clear] > hello.lidar.range_m)
    assert nan.any() and (~nan).any()


def test_lidar_and_camera_are_reproducible():
    hello = vehicle_hello("polaris")
    a, b = AgentSimulator(hello, seed=3), AgentSimulator(hello, seed=3)
    assert a.lidar_points(1.0).tobytes() == b.lidar_points(1.0).tobytes()
    assert a.lidar_points(1.0).tobytes() != AgentSimulator(hello, seed=4).lidar_points(1.0).tobytes()


# ---------------------------------------------------------------------------------------------
# INS and georeference


def _curve_time(sim: AgentSimulator) -> float:
    """A time at which the vehicle is in the middle of the first corner."""
    route = sim.route
    s = route.straight_x / 2 + 0.25 * math.pi * route.corner_radius_m
    return s / route.speed_mps


def test_ins_without_noise_is_the_truth():
    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    for t in (0.0, 1.0, _curve_time(sim), 50.0):
        v = sim.ins_values(t)
        pos, q = sim.truth_pose(t)
        assert np.array_equal(v[Ins.EnuX:Ins.EnuZ + 1], pos)
        assert np.array_equal(v[Ins.TruthEnuX:Ins.TruthEnuZ + 1], pos)
        assert np.array_equal(v[Ins.EnuQx:Ins.EnuQw + 1], q)
        assert np.array_equal(v[Ins.TruthQx:Ins.TruthQw + 1], q)
        # the route is driven at 3 m/s over the ground's plan; up and down the slopes a little more
        assert v[Ins.TruthSpeed] == pytest.approx(sim.route.speed_mps, rel=1e-2)
        assert v[Ins.VelX] == v[Ins.TruthSpeed] and abs(v[Ins.VelY]) < 0.01 and abs(v[Ins.VelZ]) < 0.01
        assert v[Ins.AccelZ] == pytest.approx(9.81, abs=0.6)  # plus the bumps' vertical acceleration
        assert v[Ins.FixStatus] == 2.0 and v[Ins.UtmZone] == 16.0


def test_ins_on_flat_ground_turns_with_the_loop():
    flat = AgentSimulator(vehicle_hello("polaris"), noise=False, scene=default_scene(terrain=None))
    v = flat.ins_values(_curve_time(flat))
    speed, radius = flat.route.speed_mps, flat.route.corner_radius_m
    assert v[Ins.GyroZ] == pytest.approx(speed / radius, rel=1e-6)
    assert abs(v[Ins.GyroX]) < 1e-9 and abs(v[Ins.GyroY]) < 1e-9
    assert v[Ins.AccelY] == pytest.approx(speed * speed / radius, rel=1e-4)  # centripetal, to the left
    assert v[Ins.AccelX] == pytest.approx(0.0, abs=1e-4)
    assert v[Ins.AccelZ] == pytest.approx(9.81, abs=1e-6)
    assert v[Ins.EnuZ] == 0.0 and v[Ins.VelX] == pytest.approx(speed, rel=1e-6)


def test_ins_series_is_reproducible_from_the_seed():
    hello = vehicle_hello("polaris")
    times = np.arange(300) / 100.0

    def series(seed: int, agent: str = "polaris") -> bytes:
        sim = AgentSimulator(vehicle_hello("polaris", agent=agent), seed=seed)
        return b"".join(protocol.encode_ins(sim.ins_values(t)) for t in times)

    first = series(42)
    assert first == series(42)
    assert first != series(43)
    assert first != series(42, agent="polaris2")
    values = np.frombuffer(first, "<f8").reshape(-1, 40)
    err = values[:, Ins.EnuX:Ins.EnuZ + 1] - values[:, Ins.TruthEnuX:Ins.TruthEnuZ + 1]
    assert 0.0 < np.abs(err).max() < 0.2
    assert np.all(values[:, Ins.CovE:Ins.CovU + 1] > 0.0)
    # attitude errors are small rotations: within a degree of the truth, but not the truth
    q_ins, q_truth = values[:, Ins.EnuQx:Ins.EnuQw + 1], values[:, Ins.TruthQx:Ins.TruthQw + 1]
    cos_half = np.abs(np.sum(q_ins * q_truth, axis=1))
    assert cos_half.min() > math.cos(math.radians(0.5)) and cos_half.min() < 1.0
    with pytest.raises(ValueError, match="increasing"):
        sim = AgentSimulator(hello)
        sim.ins_values(1.0)
        sim.ins_values(0.5)


def test_lat_lon_project_to_the_utm_values():
    to_utm = Transformer.from_crs("EPSG:6318", "EPSG:6345", always_xy=True)  # NAD83(2011) / UTM 16N
    sim = AgentSimulator(vehicle_hello("polaris"), seed=11)
    geo = Georeference()
    for t in np.arange(0.0, 90.0, 7.3):
        v = sim.ins_values(float(t))
        e, n = to_utm.transform(v[Ins.Lon], v[Ins.Lat])
        assert abs(e - v[Ins.UtmE]) < 1e-3 and abs(n - v[Ins.UtmN]) < 1e-3
        assert v[Ins.Height] == pytest.approx(geo.origin_height_m + v[Ins.EnuZ], abs=1e-9)
        assert v[Ins.UtmH] == v[Ins.Height]
        assert 40.46 < v[Ins.Lat] < 40.48 and -87.01 < v[Ins.Lon] < -86.98


@settings(max_examples=50, deadline=None)
@given(st.floats(-500.0, 500.0), st.floats(-500.0, 500.0), st.floats(-5.0, 20.0))
def test_world_geodetic_round_trip(x, y, z):
    geo = Georeference()
    lat, lon, h = geo.world_to_geodetic(x, y, z)
    back = geo.geodetic_to_world(lat, lon, h)
    assert back == pytest.approx((x, y, z), abs=1e-6)


def test_seed_example_fix_is_consistent_with_our_utm():
    # the protocol page's INS example: lat lon 40.4703010 -86.9948318 -> utm 500438.112 4479958.172
    e, n = Georeference().geodetic_to_utm(40.4703010, -86.9948318)
    assert e == pytest.approx(500438.112, abs=0.01) and n == pytest.approx(4479958.172, abs=0.01)


def test_utm_attitude_agrees_with_utm_positions():
    """Driving along the body x axis moves the UTM position along the heading that UtmQ gives."""
    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    geo = Georeference()
    for t in (0.0, _curve_time(sim), 30.0, 70.0):
        v = sim.ins_values(t)
        heading_world = quat_matrix(v[Ins.EnuQx:Ins.EnuQw + 1])[:, 0]
        ahead = v[Ins.EnuX:Ins.EnuZ + 1] + 20.0 * heading_world
        f0 = geo.fix(*v[Ins.EnuX:Ins.EnuZ + 1])
        f1 = geo.fix(*ahead)
        utm_track = math.atan2(f1.utm_n - f0.utm_n, f1.utm_e - f0.utm_e)
        assert f0.utm_e == pytest.approx(v[Ins.UtmE], abs=1e-6)
        utm_yaw = yaw_of(v[Ins.UtmQx:Ins.UtmQw + 1])
        assert (utm_yaw - utm_track + math.pi) % (2 * math.pi) - math.pi == pytest.approx(0.0, abs=2e-6)
        rotation = v[Ins.GridRotationDeg]
        assert 0.01 < rotation < 0.1  # map grid (Indiana West) north is east of UTM north here
        enu_yaw = yaw_of(v[Ins.EnuQx:Ins.EnuQw + 1])
        diff = math.degrees((enu_yaw - utm_yaw + math.pi) % (2 * math.pi) - math.pi)
        assert diff == pytest.approx(rotation, abs=1e-9)


def test_without_georeference_the_geo_fields_are_nan():
    sim = AgentSimulator(vehicle_hello("maxxum", georeferenced=False), seed=1)
    for t in (0.0, 0.01, 0.03):
        v = sim.ins_values(t)
        geo = list(INS_GEO_FIELDS)
        assert np.all(np.isnan(v[geo]))
        assert v[Ins.FixStatus] == -1.0
        others = [i for i in range(protocol.INS_FIELDS) if i not in geo]
        assert np.all(np.isfinite(v[others]))


# ---------------------------------------------------------------------------------------------
# Terrain and the drive: roll, pitch and z follow the ground; one stop per lap


def _ground_normal(terrain: Terrain, x: float, y: float, h: float = 1e-3) -> np.ndarray:
    """The ground's normal from the height alone, by central differences (not the model's slope)."""
    gx = (terrain.height(x + h, y) - terrain.height(x - h, y)) / (2 * h)
    gy = (terrain.height(x, y + h) - terrain.height(x, y - h)) / (2 * h)
    n = np.array([-gx, -gy, 1.0])
    return n / np.linalg.norm(n)


def test_ins_roll_and_pitch_match_the_terrain_slope():
    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    terrain = sim.scene.terrain
    rolls, pitches = [], []
    for t in np.arange(0.0, sim.drive.period_s, 0.5):
        v = sim.ins_values(float(t))
        r = quat_matrix(v[Ins.EnuQx:Ins.EnuQw + 1])
        x, y, z = v[Ins.EnuX:Ins.EnuZ + 1]
        assert z == pytest.approx(float(terrain.height(x, y)), abs=1e-9)  # on the ground
        normal = _ground_normal(terrain, x, y)
        assert np.linalg.norm(r[:, 2] - normal) < 1e-6  # body up = the ground's normal
        # roll and pitch are the slope across and along the heading
        heading = np.array([r[0, 0], r[1, 0], 0.0]) / np.hypot(r[0, 0], r[1, 0])
        left = np.array([-heading[1], heading[0], 0.0])
        slope_along = -(normal[:2] @ heading[:2]) / normal[2]
        slope_across = -(normal[:2] @ left[:2]) / normal[2]
        pitch = -math.asin(r[2, 0])
        roll = math.atan2(r[2, 1], r[2, 2])
        assert pitch == pytest.approx(-math.atan(slope_along), abs=1e-6)  # nose up = pitch < 0 (FLU)
        assert roll == pytest.approx(math.atan(slope_across * math.cos(pitch)), abs=1e-3)
        rolls.append(math.degrees(roll))
        pitches.append(math.degrees(pitch))
    # a few degrees of both along the lap, as the issue asks (not a flat loop)
    assert 1.0 < max(np.abs(rolls)) < 8.0 and 1.0 < max(np.abs(pitches)) < 8.0


def test_specific_force_and_rates_agree_with_the_truth_trajectory():
    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    g = np.array([0.0, 0.0, 9.81])
    h = 0.01  # ten times the simulator's own difference step: an independent check
    for t in (7.3, 21.0, 35.5, 66.6, 88.8):
        v = sim.ins_values(t)
        p = [sim.truth_pose(t + k * h)[0] for k in (-1, 0, 1)]
        accel_world = (p[2] - 2 * p[1] + p[0]) / (h * h)
        r0 = quat_matrix(sim.truth_pose(t)[1])
        expected = r0.T @ (accel_world + g)
        np.testing.assert_allclose(v[Ins.AccelX:Ins.AccelZ + 1], expected, atol=0.02)
        r1 = quat_matrix(sim.truth_pose(t + h)[1])
        rm = quat_matrix(sim.truth_pose(t - h)[1])
        w = r0.T @ (r1 - rm) / (2 * h)
        omega = 0.5 * np.array([w[2, 1] - w[1, 2], w[0, 2] - w[2, 0], w[1, 0] - w[0, 1]])
        np.testing.assert_allclose(v[Ins.GyroX:Ins.GyroZ + 1], omega, atol=2e-3)
        velocity_world = (p[2] - p[0]) / (2 * h)
        np.testing.assert_allclose(v[Ins.VelX:Ins.VelZ + 1], r0.T @ velocity_world, atol=1e-3)


def test_the_kinematics_are_the_central_differences_of_the_pose():
    """The kinematics (worked out in plain floats) against the same central differences taken with
    the pose's matrices, on the route, along a driven track that turns and held still."""
    from acres_sim.fake_game.world.motion import DriveKnot, DrivenMotion, HeldMotion
    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    track = DrivenMotion(DriveKnot(0.0, 5.0, -28.0, 0.2, 0.0, 0.0))
    knot = track.knot_at(0.0)
    for step in range(1, 241):
        speed, rate = min(5.0, 0.05 * step), 0.4 if step > 100 else 0.0
        knot = DriveKnot(step / 120.0, knot.x + speed * math.cos(knot.yaw) / 120.0,
                         knot.y + speed * math.sin(knot.yaw) / 120.0, knot.yaw + rate / 120.0, speed, rate)
        track.add(knot)
    dt = 1e-3
    for motion, times in ((sim.motion, (3.3, 21.0, 47.9)), (track, (0.5, 1.0, 1.7)),
                          (HeldMotion(9.0, (1.0, -28.0, 0.4), rpy_matrix(0.02, -0.01, 0.7)), (12.0,))):
        sim.place(motion)
        for t in times:
            kin = sim.kinematics(t, dt)
            held = isinstance(motion, HeldMotion)
            (p0, r0), (p1, r1), (pm, rm) = (motion.pose(s) if held else sim.on_ground(*sim.planar(s))
                                            for s in (t, t + dt, t - dt))
            w = r0.T @ (r1 - rm) / (2.0 * dt)
            omega = 0.5 * np.array([w[2, 1] - w[1, 2], w[0, 2] - w[2, 0], w[1, 0] - w[0, 1]])
            np.testing.assert_allclose(kin.position, p0, rtol=0, atol=1e-12)
            np.testing.assert_allclose(kin.rotation, r0, rtol=0, atol=1e-15)
            np.testing.assert_allclose(quat_matrix(kin.quaternion), r0, rtol=0, atol=1e-12)
            np.testing.assert_allclose(kin.velocity_body, r0.T @ (p1 - pm) / (2.0 * dt), rtol=0, atol=1e-9)
            np.testing.assert_allclose(kin.acceleration_body, r0.T @ (p1 - 2.0 * p0 + pm) / dt ** 2,
                                       rtol=0, atol=1e-6)
            np.testing.assert_allclose(kin.angular_rate_body, omega, rtol=0, atol=1e-9)
            assert kin.speed == kin.velocity_body[0]
            if isinstance(motion, DrivenMotion) and t > 1.0:
                assert abs(kin.angular_rate_body[2]) > 0.3 and kin.speed > 4.0  # it turns as it drives
    assert not sim.kinematics(12.0).angular_rate_body.any()  # held: exactly still


def test_vehicle_stops_once_per_lap_on_level_ground_and_starts_again():
    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    period = sim.drive.period_s
    times = np.arange(0.0, 2 * period, 0.05)
    speeds = np.array([sim.kinematics(float(t)).speed for t in times])
    standing = speeds == 0.0
    starts = np.flatnonzero(standing[1:] & ~standing[:-1])
    assert len(starts) == 2  # once per lap
    assert times[starts[1]] - times[starts[0]] == pytest.approx(period, abs=0.1)
    stand_s = standing.sum() * 0.05 / 2
    assert 3.0 <= stand_s <= 6.0  # a few seconds
    assert speeds.max() == pytest.approx(sim.route.speed_mps, rel=1e-2)
    # slows down and speeds up smoothly: no jump in speed between 50 ms samples
    assert np.abs(np.diff(speeds)).max() < 0.05
    t_rest = float(times[starts[0] + 1 + int(1.0 / 0.05)])  # a second into the stand
    v = sim.ins_values(t_rest)
    assert np.all(v[Ins.GyroX:Ins.GyroZ + 1] == 0.0) and np.all(v[Ins.VelX:Ins.VelZ + 1] == 0.0)
    assert v[Ins.AccelZ] == pytest.approx(9.81, abs=0.005)  # the most level spot of the lap
    assert np.hypot(v[Ins.AccelX], v[Ins.AccelY]) < 0.1
    assert v[Ins.TruthSpeed] == 0.0
    # braking shows as a negative forward specific force
    braking = float(times[starts[0]] - 2.0)
    fresh = AgentSimulator(vehicle_hello("polaris"), noise=False)
    assert fresh.ins_values(braking)[Ins.AccelX] < -0.4


def test_drive_profile_is_continuous_and_periodic():
    drive = DriveProfile(speed=3.0, lap_m=270.0, stop_at_m=100.0, stand_s=4.0, accel=0.6)
    times = np.arange(0.0, 3 * drive.period_s, 0.01)
    states = np.array([drive.state(float(t)) for t in times])
    distance, speed = states[:, 0], states[:, 1]
    assert np.all(np.diff(distance) >= 0.0)
    assert np.abs(np.diff(distance) - 0.01 * speed[:-1]).max() < 0.01 * 0.6 * 0.01 + 1e-9
    assert drive.state(drive.period_s)[0] == pytest.approx(270.0)  # one lap per period
    assert drive.state(drive.period_s + 1.0)[0] == pytest.approx(270.0 + drive.state(1.0)[0])
    with pytest.raises(ValueError, match="no room"):
        DriveProfile(speed=3.0, lap_m=270.0, stop_at_m=2.0)


def test_crop_rows_are_plants_with_height():
    # From the track's north side the LiDAR sees the north field's rows as walls of foliage up to
    # 0.9 m above the rolling ground, and the ground between them along the rows.
    hello = vehicle_hello("polaris")
    sim = AgentSimulator(hello, noise=False)
    crops = sim.scene.crops
    t = 45.0
    assert sim.truth_pose(t)[0][1] > 20.0  # on the north straight
    in_world = sweep_to_world(sim, t, sim.lidar_points(t))
    height = in_world[:, 2] - sim.scene.ground_height(in_world[:, 0], in_world[:, 1])
    field = ((in_world[:, 1] > crops.y_min) & (in_world[:, 1] < crops.y_max)
             & (np.abs(in_world[:, 0]) < crops.x_max))
    on_plants = field & (height > 0.02) & (height < 2.0)  # (a tree's crown overhangs the field)
    assert on_plants.sum() > 1000
    k = np.round(in_world[on_plants, 0] / crops.spacing_m - 0.5 * crops.fraction)
    assert np.abs(in_world[on_plants, 0] - crops.row_x(k)).max() < 1e-3  # on a row's wall
    # below the plants' tops, which differ from row to row and along each row
    tops = crops.plant_height(k, in_world[on_plants, 1])
    assert np.all(height[on_plants] <= tops + 1e-3) and tops.max() <= crops.height_m
    assert np.ptp(tops) > 0.2
    assert len(np.unique(k)) > 20  # many rows, not one wall
    assert (field & (np.abs(height) < 0.02)).sum() > 200  # the ground between the rows
    # the returns carry the crop's reflectivity
    cloud = sim.lidar_points(t)
    assert (cloud[..., 3] == INTENSITY_TABLE[MAT["crop"]]).sum() >= on_plants.sum()


@pytest.mark.parametrize("t", [1.0, 30.0, 62.0, 85.0])
def test_culling_drops_only_rays_that_miss(t):
    """Cast with the primitives' culling spheres and with spheres so big that every ray is
    intersected with every primitive: the same hits, to the bit, for the LiDAR and the camera."""
    import dataclasses

    from acres_sim.fake_game.simulation.camera_model import CameraModel
    from acres_sim.fake_game.world.conditions import CLEAR_DAY

    sim = AgentSimulator(vehicle_hello("polaris"), noise=False)
    scene = sim.scene
    spheres = scene.culling_spheres
    everything = dataclasses.replace(scene)
    everything.__dict__["culling_spheres"] = CullingSpheres(
        spheres.centres, spheres.radii + 1e4, spheres.first)
    cam = sim.hello.camera
    camera = CameraModel(cam)
    pose = sim.camera_pose(t)
    lidar = sim.lidar_pose(t)
    object_hits = 0
    for bundle, p, sun in ((camera.bundle, pose, CLEAR_DAY.sun), (sim._lidar.bundle, lidar, None)):
        culled, full = (cast(s, bundle, p.position, p.rotation, 200.0, sun=sun)
                        for s in (scene, everything))
        assert np.array_equal(culled.distance, full.distance)
        assert np.array_equal(culled.material, full.material)
        objects = [MAT[m] for m in ("trunk", "foliage", "wall", "roof", "post")]
        object_hits += int(np.isin(full.material, objects).sum())
    assert object_hits > 100  # the sensors see objects there, so culling had work to do


_coord = st.floats(-25.0, 25.0)


@st.composite
def _primitive(draw):
    kind = draw(st.sampled_from(("cylinder", "sphere", "box")))
    x, y = draw(_coord), draw(_coord)
    if kind == "cylinder":
        return Cylinder(x, y, draw(st.floats(0.05, 2.0)), draw(st.floats(-1.0, 2.0)),
                        draw(st.floats(0.2, 8.0)), MAT["trunk"])
    if kind == "sphere":
        return Sphere(x, y, draw(st.floats(-1.0, 6.0)), draw(st.floats(0.1, 4.0)), MAT["foliage"])
    size = [draw(st.floats(0.2, 10.0)) for _ in range(3)]
    lo = (x, y, draw(st.floats(-1.0, 2.0)))
    return Box(lo, tuple(a + s for a, s in zip(lo, size)), MAT["wall"], MAT["roof"])


@settings(max_examples=40, deadline=None)
@given(st.lists(_primitive(), min_size=1, max_size=5), _coord, _coord, st.floats(0.3, 5.0),
       st.floats(-math.pi, math.pi), st.floats(-0.5, 0.5))
def test_culling_is_exact_for_any_scene_and_origin(prims, ox, oy, oz, yaw, pitch):
    """Random primitives round a sensor anywhere (inside a primitive's spheres too): culled and
    unculled casts agree to the bit."""
    import dataclasses

    from acres_sim.fake_game.simulation.lidar_model import LidarModel

    lidar = LidarModel(vehicle_hello("polaris").lidar, lidar_elevations_deg("polaris"))
    scene = Scene(tuple(prims), terrain=DEFAULT_TERRAIN)
    spheres = scene.culling_spheres
    everything = dataclasses.replace(scene)
    everything.__dict__["culling_spheres"] = CullingSpheres(
        spheres.centres, spheres.radii + 1e4, spheres.first)
    origin = np.array([ox, oy, oz + float(scene.ground_height(ox, oy))])
    rotation = rpy_matrix(0.0, pitch, yaw)
    culled, full = (cast(s, lidar.bundle, origin, rotation, 60.0) for s in (scene, everything))
    assert np.array_equal(culled.distance, full.distance)
    assert np.array_equal(culled.material, full.material)


def test_the_ground_of_one_point_is_the_vectorised_grounds_bit_for_bit():
    """Scene.ground_cell (plain floats, a vehicle's wheels at every step) against ground_cells
    (numpy, the renders): the same material and field everywhere, across the road's, the fields'
    and the rows' edges."""
    from acres_sim.fake_game.world.scene import default_scene

    scene = default_scene()
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-90.0, 90.0, 20000), np.repeat([0.0, 37.0, -41.2], 200)])
    y = np.concatenate([rng.uniform(-60.0, 90.0, 20000), np.linspace(30.0, 42.0, 600)])
    route = scene.route
    edges = [route.half_y_m + d for d in (-2.5, 2.5)] + [scene.north_field_y_m]
    x = np.concatenate([x, np.linspace(-5.0, 5.0, 300)])
    y = np.concatenate([y, np.repeat(edges, 100)])
    materials, fields = scene.ground_cells(x, y)
    one_by_one = [scene.ground_cell(float(a), float(b)) for a, b in zip(x, y)]
    assert [m for m, _ in one_by_one] == materials.tolist()
    assert [f for _, f in one_by_one] == fields.tolist()
    assert set(materials.tolist()) >= {MAT["road"], MAT["grass"], MAT["crop"], MAT["soil"]}
    distances = route.signed_distance(x, y)
    assert [route.signed_distance_at(float(a), float(b)) for a, b in zip(x, y)] == distances.tolist()
