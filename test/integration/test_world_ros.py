"""The world varied from ROS 2 over real processes (ROS_DOMAIN_ID 131): a two-agent lockstep session
(fake_game, a sim_bridge and a vehicle_bridge per agent, sim_control) in which this process, built
against the released simulation_interfaces and against acres_interfaces, spawns, moves and deletes a
bale in front of a vehicle and finds it in the cloud (through /tf_static and ground truth) and in the
image (where CameraInfo projects it), shifts the LiDAR and measures the displacement against the
flat world, changes the conditions and measures their effects, drives off the tracks and gets the
crop it crushed, records all of it and reads it back with rosbags; the vehicle reports are stamped
in world time from the Clock offset. Figures print with pytest -s."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="the world tests need rclpy")
pytest.importorskip("simulation_interfaces", reason="simulation_interfaces is not installed")
pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
pytest.importorskip("acres_interfaces.msg",
                    reason="acres_interfaces is not built (interfaces/acres_interfaces; see the README)")
pytest.importorskip("rosbags", reason="rosbags is not installed (test_depend python3-rosbags-pip)")

from acres_interfaces import srv as acres_srv  # noqa: E402
from acres_interfaces.msg import (  # noqa: E402
    Conditions,
    Contacts,
    FarmEvent,
    FarmEvents,
    FarmStamps,
    VehicleShift,
    VehicleShifts,
    WorldObjects,
)
from rosbags.highlevel import AnyReader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from simulation_interfaces import srv  # noqa: E402
from simulation_interfaces.msg import Bounds, Result, SimulatorFeatures  # noqa: E402
from geometry_msgs.msg import Pose, PoseStamped, Vector3  # noqa: E402
from simulation_interfaces.msg import EntityState  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402
from support.bridge import call_service  # noqa: E402
from support.driving import AGENTS, DEEP, LATCHED, DriveSession  # noqa: E402
from support.reference_geometry import quat_matrix  # noqa: E402

DOMAIN = 131
SPOT = (-10.0, -28.0)  # on the loop's south straight (flat ground in lockstep), facing east
FIELD = (-25.0, 0.0)  # inside the loop: crop rows running north-south


@pytest.fixture(scope="module")
def session():
    s = DriveSession(DOMAIN, lockstep=True, cached=False)
    try:
        g = s.graph
        g.subscribe(Image, "/polaris/camera/image_raw", DEEP)
        g.subscribe(CameraInfo, "/polaris/camera/camera_info", DEEP)
        for topic, kind, qos in (
                ("/sim/objects", WorldObjects, LATCHED), ("/sim/shifts", VehicleShifts, LATCHED),
                ("/sim/conditions", Conditions, LATCHED), ("/sim/farm_events", FarmEvents, DEEP),
                ("/sim/farm_stamps", FarmStamps, DEEP), ("/sim/contacts", Contacts, DEEP)):
            g.subscribe(kind, topic, qos)
        for agent in AGENTS:
            g.subscribe(Float64, f"/{agent}/sim/clock_offset", LATCHED)
        g.wait_matched(["/polaris/camera/image_raw", "/sim/objects", "/sim/farm_events"], 60)
        node = g.node
        s.world = {name: node.create_client(kind, f"/{name}") for name, kind in (
            ("get_simulator_features", srv.GetSimulatorFeatures), ("get_spawnables", srv.GetSpawnables),
            ("spawn_entity", srv.SpawnEntity), ("delete_entity", srv.DeleteEntity),
            ("get_entities", srv.GetEntities), ("get_entity_state", srv.GetEntityState),
            ("set_entity_state", srv.SetEntityState), ("set_vehicle_shift", acres_srv.SetVehicleShift),
            ("set_conditions", acres_srv.SetConditions), ("start_recording", acres_srv.StartRecording),
            ("stop_recording", acres_srv.StopRecording))}
        g.spin_until(lambda: all(c.service_is_ready() for c in s.world.values()), 60, "services")
    except BaseException:
        s.close()
        raise
    yield s
    assert s.close() == [0] * len(s.processes), s.logs()[-3000:]


def _call(s: DriveSession, service: str, **fields):
    return call_service(s.graph, s.world[service], 60.0, **fields)


def _pose(x: float, y: float, yaw: float, z: float = 0.0) -> Pose:
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    pose.orientation.z, pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return pose


def _stamped(pose: Pose, frame_id: str = "map") -> PoseStamped:
    stamped = PoseStamped()
    stamped.header.frame_id = frame_id
    stamped.pose = pose
    return stamped


def _place(s: DriveSession, agent: str, x: float, y: float, yaw: float) -> None:
    state = EntityState()
    state.header.frame_id = "map"
    state.pose = _pose(x, y, yaw)
    answer = _call(s, "set_entity_state", entity=agent, state=state)
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message


def _statics(s: DriveSession) -> dict:
    return {t.child_frame_id: t for m in s.graph.messages("/tf_static") for t in m.transforms}


def _to_base(s: DriveSession, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) of `frame` in polaris/base_footprint from the calibrated /tf_static chain."""
    statics = _statics(s)
    rotation, translation = np.eye(3), np.zeros(3)
    while frame != "polaris/base_footprint":
        tf = statics[frame]
        q, p = tf.transform.rotation, tf.transform.translation
        r = quat_matrix((q.x, q.y, q.z, q.w))
        rotation, translation = r @ rotation, r @ translation + np.array([p.x, p.y, p.z])
        frame = tf.header.frame_id
    return rotation, translation


def _latest_scan_in_world(s: DriveSession) -> np.ndarray:
    """The last cloud of the (held) polaris in the world: the calibrated mount, then ground truth."""
    cloud = s.graph.messages("/polaris/lidar/points")[-1]
    odom = s.odom("polaris")
    assert odom.header.stamp == cloud.header.stamp
    r_mount, t_mount = _to_base(s, cloud.header.frame_id)
    p, q = odom.pose.pose.position, odom.pose.pose.orientation
    r_body = quat_matrix((q.x, q.y, q.z, q.w))
    pts = np.frombuffer(bytes(cloud.data), "<f4").reshape(-1, 4)
    keep = np.isfinite(pts[:, 0])
    body = pts[keep, :3].astype(float) @ r_mount.T + t_mount
    return np.concatenate([body @ r_body.T + np.array([p.x, p.y, p.z]), pts[keep, 3:4]], axis=1)


def _latest(s: DriveSession, topic: str, done, what: str):
    """The latest message on a /sim topic once `done` holds for it (sim_control publishes them before
    a step answers, but nothing acknowledges them to this subscriber before the answer)."""
    s.graph.spin_until(lambda: s.graph.messages(topic) and done(s.graph.messages(topic)[-1]), 20, what)
    return s.graph.messages(topic)[-1]


def _caught_up(s: DriveSession) -> None:
    """Until the farm's topics hold the last step (the vehicle reports, acknowledged by the step's
    vehicle/barrier, say which step that is)."""
    last = s.graph.messages("/polaris/vehicle/ackermann_state")[-1].header.stamp
    for topic in ("/sim/farm_events", "/sim/farm_stamps"):
        _latest(s, topic, lambda m: m.header.stamp == last, f"{topic} of the last step")


def _on(pts: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """The returns on a round bale standing at xy (within its radius and above the ground)."""
    return (np.hypot(pts[:, 0] - xy[0], pts[:, 1] - xy[1]) < 0.85) & (pts[:, 2] > 0.05)


def _scan(s: DriveSession) -> np.ndarray:
    s.step(12)  # one LiDAR period: a scan rendered after the change
    return _latest_scan_in_world(s)


def _image(s: DriveSession) -> np.ndarray:
    msg = s.graph.messages("/polaris/camera/image_raw")[-1]
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3).astype(float)


def _project(s: DriveSession, point: np.ndarray) -> tuple[float, float]:
    """Pixel of a world point through CameraInfo (plumb_bob), the calibrated /tf_static mount and
    the ground truth, written out here."""
    info = s.graph.messages("/polaris/camera/camera_info")[-1]
    odom = s.odom("polaris")
    p, q = odom.pose.pose.position, odom.pose.pose.orientation
    body = quat_matrix((q.x, q.y, q.z, q.w)).T @ (point - np.array([p.x, p.y, p.z]))
    r, t = _to_base(s, info.header.frame_id)
    x, y, z = r.T @ (body - t)
    a, b = x / z, y / z
    k1, k2, p1, p2, k3 = info.d
    r2 = a * a + b * b
    radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
    ad = a * radial + 2 * p1 * a * b + p2 * (r2 + 2 * a * a)
    bd = b * radial + p1 * (r2 + 2 * b * b) + 2 * p2 * a * b
    return info.k[0] * ad + info.k[2], info.k[4] * bd + info.k[5]


def test_a_spawned_bale_is_seen_where_it_was_put_moved_and_deleted(session):
    s = session
    features = set(_call(s, "get_simulator_features").features.features)
    F = SimulatorFeatures
    assert {F.SPAWNING, F.DELETING, F.SPAWNABLES, F.SIMULATION_RESET_SPAWNED} <= features
    spawnables = {sp.uri: sp for sp in _call(s, "get_spawnables").spawnables}
    bale = spawnables["acres://objects/round_bale"]
    assert bale.spawn_bounds.type == Bounds.TYPE_BOX
    lo, hi = bale.spawn_bounds.points
    assert (hi.x - lo.x, hi.y - lo.y, hi.z - lo.z) == pytest.approx((1.5, 1.5, 1.2))
    assert len(spawnables) >= 5
    _place(s, "polaris", *SPOT, 0.0)
    s.step(12)
    empty = _image(s)
    bale_xy = np.array([SPOT[0] + 8.0, SPOT[1] + 0.5])
    answer = _call(s, "spawn_entity", name="bale", uri="acres://objects/round_bale",
                   initial_pose=_stamped(_pose(*bale_xy, 0.0)))
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message
    assert answer.entity_name == "bale"
    assert "bale" in _call(s, "get_entities").entities
    state = _call(s, "get_entity_state", entity="bale").state
    assert (state.pose.position.x, state.pose.position.y, state.pose.position.z) == pytest.approx(
        (*bale_xy, 0.0))
    pts = _scan(s)
    near = np.hypot(pts[:, 0] - bale_xy[0], pts[:, 1] - bale_xy[1])
    on_bale = (near < 0.75 + 0.1) & (pts[:, 2] > 0.05)
    print(f"\nbale: {on_bale.sum()} points; radius {np.median(near[on_bale]):.3f} m (0.75), top "
          f"{pts[on_bale, 2].max():.3f} m (1.2)")
    assert on_bale.sum() > 30
    assert np.abs(near[on_bale] - 0.75).max() < 0.05 or (np.abs(pts[on_bale, 2] - 1.2) < 0.05).any()
    assert pts[on_bale, 2].max() < 1.2 + 0.05 and np.median(np.abs(near[on_bale] - 0.75)) < 0.03
    changed = np.abs(_image(s) - empty).max(axis=2) > 40
    u, v = _project(s, np.array([*bale_xy, 0.6]))
    rows, cols = np.nonzero(changed)
    print(f"camera: {len(rows)} pixels changed around ({np.median(cols):.0f}, {np.median(rows):.0f}); "
          f"CameraInfo projects its middle to ({u:.0f}, {v:.0f})")
    assert len(rows) > 500 and abs(np.median(cols) - u) < 15 and abs(np.median(rows) - v) < 20
    objects = _latest(s, "/sim/objects", lambda m: m.objects, "the bale on /sim/objects").objects
    assert [o.name for o in objects] == ["bale"] and objects[0].size_m.z == pytest.approx(1.2)

    moved = EntityState()
    moved.pose = _pose(bale_xy[0], bale_xy[1] + 3.0, 0.0)
    assert _call(s, "set_entity_state", entity="bale", state=moved).result.result == Result.RESULT_OK
    pts = _scan(s)
    assert _on(pts, bale_xy + (0.0, 3.0)).sum() > 20
    assert not _on(pts, bale_xy).any()

    for fields, code in (
            ({"name": "bale", "uri": "round_bale"}, srv.SpawnEntity.Response.NAME_NOT_UNIQUE),
            ({"name": "x", "uri": "acres://objects/combine"}, srv.SpawnEntity.Response.NO_RESOURCE),
            ({"name": "bad name", "uri": "round_bale"}, srv.SpawnEntity.Response.NAME_INVALID),
            ({"name": "far", "uri": "round_bale", "initial_pose": _stamped(_pose(5000.0, 0.0, 0.0))},
             srv.SpawnEntity.Response.INVALID_POSE),
            ({"name": "deep", "uri": "round_bale", "initial_pose": _stamped(_pose(0.0, 0.0, 0.0, z=-9.0))},
             srv.SpawnEntity.Response.INVALID_POSE),
            ({"name": "nan", "uri": "round_bale", "initial_pose": _stamped(_pose(math.nan, 0.0, 0.0))},
             srv.SpawnEntity.Response.INVALID_POSE),
            ({"name": "odd", "uri": "round_bale", "initial_pose": _stamped(_pose(0.0, 0.0, 0.0), "utm")},
             srv.SpawnEntity.Response.INVALID_POSE)):
        answer = _call(s, "spawn_entity", **fields)
        assert answer.result.result == code and answer.result.error_message, fields
    assert _call(s, "delete_entity", entity="polaris").result.result == Result.RESULT_OPERATION_FAILED
    assert _call(s, "delete_entity", entity="nothing").result.result == Result.RESULT_NOT_FOUND
    assert [o.name for o in s.graph.messages("/sim/objects")[-1].objects] == ["bale"]  # nothing changed

    assert _call(s, "delete_entity", entity="bale").result.result == Result.RESULT_OK
    pts = _scan(s)
    assert not _on(pts, bale_xy + (0.0, 3.0)).any()
    assert "bale" not in _call(s, "get_entities").entities


def _ground_z(pts: np.ndarray) -> float:
    """Median height of the returns within 12 m that are near the flat ground (z = 0)."""
    spot = np.array(SPOT)
    near = (np.hypot(pts[:, 0] - spot[0], pts[:, 1] - spot[1]) < 12.0) & (np.abs(pts[:, 2]) < 0.3)
    return float(np.median(pts[near, 2]))


def test_a_shifted_lidar_is_displaced_by_the_shift_and_restored(session):
    s = session
    _place(s, "polaris", *SPOT, 0.0)
    calibrated = _ground_z(_scan(s))
    up = VehicleShift(agent="polaris", lidar_offset_m=Vector3(z=0.1))
    answer = _call(s, "set_vehicle_shift", shift=up)
    assert answer.success, answer.message
    shifted = _ground_z(_scan(s))
    latched = _latest(s, "/sim/shifts", lambda m: any(sh.lidar_offset_m.z for sh in m.shifts), "the shift")
    shifts = {sh.agent: sh for sh in latched.shifts}
    assert shifts["polaris"].lidar_offset_m.z == 0.1 and shifts["maxxum"].throttle_gain == 1.0
    print(f"\nLiDAR shifted 0.1 m up: the ground through the calibrated TF at {shifted * 1e3:.1f} mm "
          f"(calibrated {calibrated * 1e3:.1f} mm)")
    assert abs(calibrated) < 0.003 and shifted - calibrated == pytest.approx(-0.1, abs=0.003)
    for bad in (VehicleShift(agent="polaris", lidar_offset_m=Vector3(x=5.0)), VehicleShift(agent="ghost"),
                VehicleShift(agent="polaris", throttle_gain=0.0),
                VehicleShift(agent="polaris", steering_offset_rad=math.nan)):
        answer = _call(s, "set_vehicle_shift", shift=bad)
        assert not answer.success and answer.message, bad
    assert _call(s, "set_vehicle_shift", shift=VehicleShift(agent="polaris")).success
    assert abs(_ground_z(_scan(s)) - calibrated) < 1e-4


def test_each_condition_has_its_effect(session):
    s = session
    _place(s, "polaris", *SPOT, 0.0)
    pts = _scan(s)
    day = _image(s)
    lens = day.sum(axis=2) > 0

    def ground(p: np.ndarray) -> np.ndarray:
        return p[(np.abs(p[:, 2]) < 0.05) & (np.hypot(p[:, 0] - SPOT[0], p[:, 1] - SPOT[1]) < 30.0)]

    def contrast(image: np.ndarray) -> float:
        return float(image.mean(axis=2)[lens].std())

    results = {"day": (day.mean(), contrast(day), len(ground(pts)), ground(pts)[:, 3].mean())}
    for name, fields in (("dusk", {"sun_elevation_deg": -3.0}), ("wet", {"wetness": 1.0}),
                         ("dust", {"dust": 0.6}), ("fog", {"fog": 1.0})):
        answer = _call(s, "set_conditions", conditions=Conditions(**fields))
        assert answer.success, answer.message
        pts = _scan(s)
        image = _image(s)
        results[name] = (image.mean(), contrast(image), len(ground(pts)), ground(pts)[:, 3].mean())

        def applied(m, f=fields) -> bool:
            return all(getattr(m, k) == pytest.approx(v) for k, v in f.items())
        _latest(s, "/sim/conditions", applied, f"{name} on /sim/conditions")
    print("\n" + "\n".join(f"{k:5s}: image mean {m:6.1f}, contrast {c:5.1f}, ground returns {n:6d}, "
                           f"intensity {i:5.1f}" for k, (m, c, n, i) in results.items()))
    day_mean, day_contrast, day_returns, day_intensity = results["day"]
    assert results["dusk"][0] < 0.4 * day_mean  # the LiDAR is its own light: the same but for its noise
    assert results["dusk"][2] == pytest.approx(day_returns, rel=0.01)
    assert results["dusk"][3] == pytest.approx(day_intensity, rel=0.01)
    assert results["wet"][3] == pytest.approx(0.4 * day_intensity, rel=0.05) and results["wet"][0] < day_mean
    assert results["dust"][1] < 0.6 * day_contrast and results["dust"][2] < 0.8 * day_returns
    assert results["fog"][1] < 0.6 * day_contrast and results["fog"][2] < 0.8 * day_returns
    answer = _call(s, "set_conditions", conditions=Conditions(wetness=2.0))
    assert not answer.success and "wetness" in answer.message
    assert _call(s, "set_conditions", conditions=Conditions()).success
    _latest(s, "/sim/conditions", lambda m: m.fog == 0.0 and m.sun_elevation_deg == 50.0, "a clear day again")


def test_crop_crushed_off_the_tracks_none_on_them_all_in_the_log(session, tmp_path):
    s = session
    path = str(tmp_path / "farm.mcap")
    assert _call(s, "start_recording", path=path).success
    _place(s, "polaris", *FIELD, 0.0)  # in the field inside the loop, across the rows
    s.step(1)
    _caught_up(s)
    mark = len(s.graph.messages("/sim/farm_events"))
    for _ in range(15):
        s.send_ackermann("polaris", 0.0, 3.0)
        s.graph.spin_for(0.05)
        s.step(12)
    _caught_up(s)
    events = [e for m in s.graph.messages("/sim/farm_events")[mark:] for e in m.events]
    crushed = {a: sum(e.value for e in events if e.agent == a and e.kind == FarmEvent.CROP_CRUSHED)
               for a in AGENTS}
    stamps = [st for m in s.graph.messages("/sim/farm_stamps")[mark:] for st in m.stamps]
    print(f"\ncrop crushed in 1.5 s: polaris (across the rows) {crushed['polaris']:.3f} m2, maxxum (on its "
          f"track) {crushed['maxxum']:.3f} m2; {len(stamps)} wheel stamps")
    assert crushed["polaris"] > 0.2 and crushed["maxxum"] == 0.0
    assert {st.agent for st in stamps} == set(AGENTS) and all(st.pressure_pa > 0 for st in stamps)
    s.release("polaris")
    assert _call(s, "stop_recording").success

    typestore = get_typestore(Stores.EMPTY)
    counts: dict[str, int] = {}
    crushed_logged = 0.0
    with AnyReader([Path(path)], default_typestore=typestore) as reader:
        for connection, _t, raw in reader.messages():
            counts[connection.topic] = counts.get(connection.topic, 0) + 1
            if connection.topic == "/sim/farm_events":
                msg = reader.deserialize(raw, connection.msgtype)
                crushed_logged += sum(e.value for e in msg.events if e.agent == "polaris" and e.kind == 0)
    assert {"/sim/objects", "/sim/shifts", "/sim/conditions", "/sim/farm_events",
            "/sim/farm_stamps"} <= set(counts)
    assert crushed_logged == pytest.approx(crushed["polaris"], rel=1e-9)


def test_driven_into_a_bale_the_vehicle_stops_at_it_and_the_contact_is_on_sim_contacts_and_in_the_log(
        session, tmp_path):
    s = session
    path = str(tmp_path / "contact.mcap")
    _place(s, "polaris", *SPOT, 0.0)
    s.step(1)
    bale_x = SPOT[0] + 7.0  # 3.65 m ahead of the Polaris's front (2.60 m ahead of base_footprint)
    answer = _call(s, "spawn_entity", name="stop_bale", uri="acres://objects/round_bale",
                   initial_pose=_stamped(_pose(bale_x, SPOT[1], 0.0)))
    assert answer.result.result == Result.RESULT_OK, answer.result.error_message
    assert _call(s, "start_recording", path=path).success
    mark = len(s.graph.messages("/sim/contacts"))
    for _ in range(40):  # 4 s asking for 3 m/s
        s.send_ackermann("polaris", 0.0, 3.0)
        s.graph.spin_for(0.05)
        s.step(12)
    _caught_up(s)
    s.graph.spin_until(lambda: len(s.graph.messages("/sim/contacts")) > mark, 20, "a contact")
    contacts = [(m.step, c) for m in s.graph.messages("/sim/contacts")[mark:] for c in m.contacts]
    state = _call(s, "get_entity_state", entity="polaris").state
    front = state.pose.position.x + 2.60
    first = contacts[0][1]
    print(f"\nfront of the Polaris at {front:.4f} m, the bale's side at {bale_x - 0.75:.4f} m; first contact "
          f"at ({first.position.x:.3f}, {first.position.y:.3f}), {first.relative_speed_mps:.2f} m/s; "
          f"{len(contacts)} contacts")
    assert (first.agent, first.other) == ("polaris", "stop_bale")
    assert (first.position.x, first.position.y) == pytest.approx((bale_x - 0.75, SPOT[1]), abs=1e-6)
    assert first.relative_speed_mps > 1.0
    assert front == pytest.approx(bale_x - 0.75, abs=0.01)  # stopped at the bale, not in it
    s.release("polaris")
    assert _call(s, "stop_recording").success
    assert _call(s, "delete_entity", entity="stop_bale").result.result == Result.RESULT_OK

    logged = []
    with AnyReader([Path(path)], default_typestore=get_typestore(Stores.EMPTY)) as reader:
        for connection, _t, raw in reader.messages():
            if connection.topic == "/sim/contacts":
                msg = reader.deserialize(raw, connection.msgtype)
                logged += [(msg.step, c.agent, c.other, c.position.x) for c in msg.contacts]

    def published() -> list:
        return [(m.step, c.agent, c.other, c.position.x) for m in s.graph.messages("/sim/contacts")[mark:]
                for c in m.contacts]
    s.graph.spin_until(lambda: len(published()) >= len(logged), 20, "every logged contact on /sim/contacts")
    assert logged == published()


def test_vehicle_reports_are_stamped_in_world_time_from_the_clock_offset(session):
    s = session
    offsets = {a: s.graph.messages(f"/{a}/sim/clock_offset")[-1].data for a in AGENTS}
    assert offsets == {"polaris": -1234.5, "maxxum": -1334.5}  # each agent's own vehicle clock
    s.step(12)
    _caught_up(s)
    states = s.graph.messages("/polaris/vehicle/ackermann_state")[-12:]
    steps = s.graph.messages("/sim/farm_events")[-12:]  # one a physics step, stamped with its world time
    assert [m.header.stamp for m in states] == [m.header.stamp for m in steps]
    for state in states:
        ns = state.header.stamp.sec * 10**9 + state.header.stamp.nanosec
        step = round(ns * 120 / 1e9)
        assert ns == round(step * 1e9 / 120)  # a physics step's world time, to the nanosecond
