"""The vehicles' descriptions without a graph: each URDF read by an independent URDF library against
the vehicle model's dimensions, the Ackermann steering and the wheels' rates against the turn's
geometry, the source the joints follow, the marker board's objects and contacts, and what the
episode log's viewers get (/tf, /tf_static, joint_states)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

from acres_sim.description.episode_views import VehicleViews
from acres_sim.description.joint_sources import AGENT_STATES, GROUND_TRUTH, VEHICLE_REPORTS, JointSources
from acres_sim.description.vehicle_urdf import VehicleGeometry, vehicle_urdf
from acres_sim.description.wheel_joints import WheelJoints, ackermann_angles, joint_transforms, wheel_speeds
from acres_sim.episode.log_file import CONTACTS, MARKERS, OBJECTS
from acres_sim.fake_game.simulation.episode_hub import EpisodeHub
from acres_sim.fake_game.simulation.marker_board import CONTACT_SHOWN_S, MarkerBoard
from acres_sim.fake_game.simulation.step_owner import StepContext
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.fake_game.simulation.vehicles import VEHICLES, vehicle_geometry
from acres_sim.fake_game.world.farm_objects import KINDS, WorldObject
from acres_sim.fake_game.world.materials import MATERIALS


@pytest.mark.parametrize("vehicle", VEHICLES)
def test_the_urdf_read_by_yourdfpy_has_the_vehicle_models_dimensions(vehicle):
    yourdfpy = pytest.importorskip("yourdfpy",
                                   reason="yourdfpy (an independent URDF reader) is not installed")
    g, p = vehicle_geometry(vehicle), VEHICLE_PARAMS[vehicle]
    robot = yourdfpy.URDF.load(io.StringIO(vehicle_urdf(g, "a1/", "a1")))
    assert robot.robot.name == "a1" and robot.base_link == "a1/base_link"
    assert len(robot.link_map) == 7 and len(robot.joint_map) == 6
    assert robot.actuated_joint_names == ["a1/front_left_steering_joint", "a1/front_left_wheel_joint",
                                          "a1/front_right_steering_joint", "a1/front_right_wheel_joint",
                                          "a1/rear_left_wheel_joint", "a1/rear_right_wheel_joint"]
    origin = np.array(g.body_origin_flu_m)
    centres = {w: robot.get_transform(f"a1/{w}_wheel_link", "a1/base_link")[:3, 3] + origin
               for w in ("front_left", "front_right", "rear_left", "rear_right")}
    half = 0.5 * p.track_m
    assert centres["rear_left"] == pytest.approx((0.0, half, p.wheel_radius_m))
    assert centres["rear_right"] == pytest.approx((0.0, -half, p.wheel_radius_m))
    assert centres["front_left"] == pytest.approx((p.wheelbase_m, half, p.wheel_radius_m))
    assert centres["front_right"] == pytest.approx((p.wheelbase_m, -half, p.wheel_radius_m))
    wheel = robot.link_map["a1/rear_left_wheel_link"].visuals[0].geometry.cylinder
    assert wheel.radius == pytest.approx(p.wheel_radius_m)
    box = robot.link_map["a1/base_link"].collisions[0]
    assert tuple(box.geometry.box.size) == pytest.approx((p.length_m, p.width_m, p.height_m))
    # the collision box spans rear_overhang_m behind the rear axle to the front, ground to roof
    assert box.origin[:3, 3] + origin == pytest.approx(
        (0.5 * p.length_m - p.rear_overhang_m, 0.0, 0.5 * p.height_m))
    # steering turns the wheel about z; the wheel's axle is y: a turned, rolled wheel stays on its centre
    robot.update_cfg({"a1/front_left_steering_joint": 0.4, "a1/front_left_wheel_joint": 2.0})
    turned = robot.get_transform("a1/front_left_wheel_link", "a1/base_link")
    assert turned[:3, 3] + origin == pytest.approx(centres["front_left"])
    axle = turned[:3, :3] @ (0.0, 1.0, 0.0)
    assert axle == pytest.approx((-math.sin(0.4), math.cos(0.4), 0.0))


def test_a_geometry_without_positive_dimensions_is_refused():
    info = {"vehicle": "x", "wheelbase_m": 2.0, "track_m": 0.0, "wheel_radius_m": 0.3, "length_m": 3.0,
            "width_m": 1.5, "height_m": 2.0, "rear_overhang_m": 0.4,
            "body_origin_flu_m": {"x": 1, "y": 0, "z": 0}}
    with pytest.raises(ValueError, match="track_m=0.0"):
        VehicleGeometry.from_agent_info(info)


@pytest.mark.parametrize("angle", [-0.6, -0.2, 0.05, 0.3, 0.59])
def test_both_front_wheels_point_about_the_turns_centre_on_the_rear_axle(angle):
    g = vehicle_geometry("polaris")
    left, right = ackermann_angles(g, angle)
    radius = g.wheelbase_m / math.tan(angle)  # the rear axle's middle to the centre, + left
    for y, a in ((0.5 * g.track_m, left), (-0.5 * g.track_m, right)):
        # the wheel's axle line from (L, y) along (-sin a, cos a) meets x = 0 at the turn's centre
        s = g.wheelbase_m / math.sin(a)
        assert y + s * math.cos(a) == pytest.approx(radius)
    assert (abs(left) > abs(right)) == (angle > 0)  # the inner wheel turns more


def test_the_wheels_roll_at_their_distance_from_the_turns_centre():
    g = vehicle_geometry("maxxum")
    assert wheel_speeds(g, 2.5, 0.0) == pytest.approx([2.5] * 4)
    speeds = wheel_speeds(g, 2.0, 0.35)
    radius = g.wheelbase_m / math.tan(0.35)
    yaw_rate = 2.0 / radius
    for (x, y), v in zip(((g.wheelbase_m, 0.5 * g.track_m), (g.wheelbase_m, -0.5 * g.track_m),
                          (0.0, 0.5 * g.track_m), (0.0, -0.5 * g.track_m)), speeds):
        assert v == pytest.approx(yaw_rate * math.hypot(x, radius - y))
    assert 0.5 * (speeds[2] + speeds[3]) == pytest.approx(2.0)
    assert wheel_speeds(g, -1.0, 0.35) == pytest.approx([-v / 2.0 for v in speeds])  # backing up


def test_the_joints_advance_by_rate_times_the_time_and_restart_without_a_jump():
    g = vehicle_geometry("polaris")
    joints = WheelJoints(g, "p/")
    first = joints.update(10.0, 3.0, 0.0)
    assert first.positions == [0.0] * 6
    assert first.velocities[2:] == pytest.approx([3.0 / g.wheel_radius_m] * 4)
    second = joints.update(10.5, 3.0, 0.0)
    assert second.positions[4] == pytest.approx(math.remainder(0.5 * 3.0 / g.wheel_radius_m, math.tau))
    joints.restart()
    assert joints.update(99.0, 3.0, 0.0).positions == second.positions  # a new clock: no spin over the gap
    assert joints.update(50.0, 3.0, 0.0).positions == second.positions  # time went back: the same
    moved = joint_transforms(g, "p/", joints.update(50.1, 3.0, 0.2))
    parents = {child: parent for parent, child, _xyz, _q in moved}
    assert parents["p/front_left_wheel_link"] == "p/front_left_steering_link"
    assert parents["p/rear_right_wheel_link"] == "p/base_link"


def test_the_joints_follow_the_best_source_that_keeps_up_in_world_time():
    sources = JointSources(timeout_s=1.0)
    assert sources.take(GROUND_TRUTH, 0.0) == (True, True)
    assert sources.take(GROUND_TRUTH, 0.1) == (True, False)
    assert sources.take(VEHICLE_REPORTS, 0.2) == (True, True)
    assert sources.take(GROUND_TRUTH, 0.3) == (False, False)
    assert sources.take(AGENT_STATES, 0.4) == (True, True)
    # a lockstep world: every source waits alike, however long in wall time; they keep their order
    for t in (0.5, 0.6, 0.7):
        assert sources.take(VEHICLE_REPORTS, t) == (False, False)
        assert sources.take(AGENT_STATES, t) == (True, False)
    assert sources.take(VEHICLE_REPORTS, 1.7) == (False, False)  # the states 1.0 s behind: still on
    assert sources.take(VEHICLE_REPORTS, 1.8) == (True, True)  # 1.1 s behind: the reports now
    assert sources.take(AGENT_STATES, 0.0) == (True, True)  # a reset: time went back, the best again


def _header(t: float) -> dict:
    sec = math.floor(t)
    return {"stamp": {"sec": sec, "nanosec": round((t - sec) * 1e9)}, "frame_id": "map"}


def _objects(hub: EpisodeHub, t: float, *placed: WorldObject) -> None:
    hub.set_latched(OBJECTS, {"header": _header(t), "objects": [o.message() for o in placed]})


def _contact(hub: EpisodeHub, t: float, other: str) -> None:
    hub.message(CONTACTS, {"header": _header(t), "step": round(t * 120), "contacts": [
        {"agent": "polaris", "other": other, "position": {"x": 1.0, "y": 2.0, "z": 0.5},
         "relative_speed_mps": 2.26}]})


def test_the_marker_board_draws_each_object_in_its_shape_and_colour_standing_on_the_ground():
    hub = EpisodeHub()
    MarkerBoard(hub)
    assert [m["action"] for m in hub.latched[MARKERS]["markers"]] == [3]  # an empty world: DELETEALL only
    bale = WorldObject("bale1", KINDS["round_bale"], 5.0, -3.0, 0.25, 0.0)
    panel = WorldObject("panel", KINDS["fence_panel"], 1.0, 1.0, 0.1, 0.5)
    person = WorldObject("anna", KINDS["person"], -4.0, 2.0, 0.0, 0.0)
    _objects(hub, 2.0, bale, panel, person)
    markers = hub.latched[MARKERS]["markers"]
    assert markers[0]["action"] == 3
    shapes = {(m["ns"], m["id"]): m for m in markers[1:]}
    by_name = {m["text"]: m["id"] for m in markers if m["ns"] == "object_names"}
    cylinder = shapes[("objects", by_name["bale1"])]
    assert cylinder["type"] == 3 and cylinder["scale"] == {"x": 1.5, "y": 1.5, "z": 1.2}
    assert cylinder["pose"]["position"] == {"x": 5.0, "y": -3.0, "z": pytest.approx(0.25 + 0.6)}
    b, g, r = MATERIALS[KINDS["round_bale"].material].bgr
    assert cylinder["color"] == pytest.approx({"r": r / 255, "g": g / 255, "b": b / 255, "a": 1.0})
    box = shapes[("objects", by_name["panel"])]
    assert box["type"] == 1 and box["pose"]["orientation"]["z"] == pytest.approx(math.sin(0.25))
    head = shapes[("object_heads", by_name["anna"])]
    assert head["type"] == 2 and head["pose"]["position"]["z"] == pytest.approx(1.75 - 0.12)
    assert all(m["header"]["frame_id"] == "map" and m["header"]["stamp"] == {"sec": 2, "nanosec": 0}
               for m in markers)


def test_a_contact_is_drawn_until_its_time_is_over_and_a_lasting_one_sends_nothing_new():
    hub = EpisodeHub()
    board = MarkerBoard(hub)
    sent = []
    hub.observers.append(lambda topic, message: sent.append(message) if topic is MARKERS else None)
    _contact(hub, 10.0, "bale1")
    assert [m["ns"] for m in sent[-1]["markers"]] == ["", "contacts", "contact_labels"]
    assert sent[-1]["markers"][2]["text"] == "polaris hit bale1 at 2.3 m/s"
    assert sent[-1]["markers"][1]["lifetime"] == {"sec": 3, "nanosec": 0}
    _contact(hub, 11.0, "bale1")  # the same pair goes on touching
    assert len(sent) == 1
    board.end_step(StepContext(step=1560, t=11.0 + CONTACT_SHOWN_S - 0.01))
    assert len(sent) == 1
    board.end_step(StepContext(step=1561, t=11.0 + CONTACT_SHOWN_S))
    assert len(sent) == 2 and [m["ns"] for m in sent[-1]["markers"]] == [""]


def test_the_logs_viewers_get_the_tf_tree_and_the_joints_of_every_agent():
    infos = []
    for name, vehicle in (("polaris", "polaris"), ("tractor", "maxxum")):
        g = vehicle_geometry(vehicle)
        o = g.body_origin_flu_m
        infos.append({"name": name, "vehicle": vehicle, "wheelbase_m": g.wheelbase_m, "track_m": g.track_m,
                      "wheel_radius_m": g.wheel_radius_m, "length_m": g.length_m, "width_m": g.width_m,
                      "height_m": g.height_m, "rear_overhang_m": g.rear_overhang_m,
                      "body_origin_flu_m": {"x": o[0], "y": o[1], "z": o[2]}})
    views = VehicleViews(infos)
    assert [t.name for t in views.topics] == ["/tf", "/tf_static", "/polaris/robot_description",
                                              "/tractor/robot_description", "/polaris/joint_states",
                                              "/tractor/joint_states"]
    latched = dict((topic.name, message) for topic, message in views.latched({"sec": 1, "nanosec": 0}))
    statics = latched["/tf_static"]["transforms"]
    assert [(t["header"]["frame_id"], t["child_frame_id"]) for t in statics] == [
        ("polaris/base_footprint", "polaris/base_link"), ("tractor/base_footprint", "tractor/base_link")]
    assert "tractor/front_left_wheel_joint" in latched["/tractor/robot_description"]["data"]
    pose = {"position": {"x": 3.0, "y": 4.0, "z": 0.1},
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}
    states = {"header": {"stamp": {"sec": 2, "nanosec": 0}}, "agents": [
        {"name": "polaris", "pose": pose, "speed_mps": 1.0, "steer_rad": 0.1},
        {"name": "tractor", "pose": pose, "speed_mps": 0.0, "steer_rad": 0.0}]}
    assert views.step({**states, "step": 241}) == []  # between the 30 Hz steps
    out = dict((topic.name, message) for topic, message in views.step({**states, "step": 240}))
    children = [t["child_frame_id"] for t in out["/tf"]["transforms"]]
    assert len(children) == 14 and children[0] == "polaris/base_footprint"
    assert out["/polaris/joint_states"]["position"][:2] == pytest.approx(
        ackermann_angles(vehicle_geometry("polaris"), 0.1))
    # one agent: no prefix, as the launch names its frames
    alone = VehicleViews(infos[:1]).latched({"sec": 1, "nanosec": 0})
    assert alone[0][1]["transforms"][0]["child_frame_id"] == "base_link"


def test_the_foxglove_layout_draws_the_logs_vehicles_and_markers():
    import json
    from pathlib import Path

    layout = json.loads((Path(__file__).resolve().parents[2] / "config" / "foxglove_layout.json").read_text())
    panels = layout["configById"]
    scene = panels["3D!acres"]
    urdfs = [layer for layer in scene["layers"].values() if layer["layerId"] == "foxglove.Urdf"]
    g = vehicle_geometry("polaris")
    info = {"wheelbase_m": g.wheelbase_m, "track_m": g.track_m, "wheel_radius_m": g.wheel_radius_m,
            "length_m": g.length_m, "width_m": g.width_m, "height_m": g.height_m,
            "rear_overhang_m": g.rear_overhang_m, "body_origin_flu_m": {"x": 1.0, "y": 0.0, "z": 0.5}}
    logged = {t.name for t in VehicleViews([{**info, "name": n, "vehicle": "polaris"}
                                            for n in ("polaris", "maxxum")]).topics}
    assert {(u["sourceType"], u["topic"]) for u in urdfs} == {
        ("topic", "/polaris/robot_description"), ("topic", "/maxxum/robot_description")}
    assert {u["topic"] for u in urdfs} <= logged and MARKERS.name in scene["topics"]
    # every panel the layout places is configured, and every configured panel is placed
    placed, todo = set(), [layout["layout"]]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            placed.add(node)
        else:
            todo += [node["first"], node["second"]]
    assert placed == set(panels)
