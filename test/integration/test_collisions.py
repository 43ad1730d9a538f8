"""Collisions in the fake game over real sockets: a vehicle driven through its Vehicle Bridge into a
bale stops at the bale (its front on the bale's side), the contact is on the watch feed and in the
episode log, the vehicle backs away, a replay repeats the contacts; two placed vehicles moving into
each other both stop; a placement that overlaps is refused."""

from __future__ import annotations

import math
import time

import pytest
from support.fake_game import FakeGame, FeedEvents
from support.vehicle_channel import step

from acres_sim.channels.vehicle import VehicleCommand
from acres_sim.episode.log_file import read_episode
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.game.control_client import ControlClient, ControlRefused
from acres_sim.game.episode_feed import EpisodeFeed

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

EAST, WEST = (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 0.0)
POLARIS = VEHICLE_PARAMS["polaris"]
FRONT_M = POLARIS.length_m - POLARIS.rear_overhang_m  # base_footprint to the front of the body
BALE_RADIUS_M = 0.75


@pytest.fixture
def feed():
    started = []

    def start(port: int) -> FeedEvents:
        events = FeedEvents()
        f = EpisodeFeed(port, events.on_event, lambda text: None)
        f.start()
        started.append(f)
        events.wait(lambda e: e.of("objects"))
        return events

    yield start
    for f in started:
        f.stop()


def _contacts(events: FeedEvents, after_step: int = 0) -> list[dict]:
    return [c for body in events.of("contacts") if body["step"] > after_step for c in body["contacts"]]


def _stamped(bodies: list[dict]) -> list[tuple[int, list[dict]]]:
    return [(b["header"]["stamp"]["sec"] * 10**9 + b["header"]["stamp"]["nanosec"], b["contacts"])
            for b in bodies]


def test_a_driven_vehicle_stops_at_a_bale_backs_away_and_a_replay_repeats_the_contact(driven_game, feed,
                                                                                      tmp_path):
    game, control, client, recorder = driven_game()
    events = feed(control.port)
    step(control, recorder, 120)
    control.set_state("polaris", (-10.0, -28.0, 0.0), EAST)
    bale_x = -2.0
    control.spawn("bale", "round_bale", (bale_x, -28.0, 0.0), EAST)
    path = str(tmp_path / "contact.mcap")
    control.record_start(path)
    client.send(VehicleCommand(stamp_s=1.0, throttle=0.5, brake=0.0, gear="drive"))
    time.sleep(0.2)  # the bridge holds it before the step (in lockstep nothing else moves)
    step(control, recorder, 480)  # 4 s: the bale is 4.65 m ahead, reached after about 2.8 s
    events.wait(lambda e: e.of("states") and e.of("states")[-1]["step"] >= 600)  # the feed has caught up
    x = control.get_state("polaris").position[0]
    print(f"\nfront of the Polaris at {x + FRONT_M:.4f} m, the bale's side at {bale_x - BALE_RADIUS_M:.4f} m")
    assert x + FRONT_M == pytest.approx(bale_x - BALE_RADIUS_M, abs=0.01)  # at the bale, not in it
    assert abs(recorder.reports()[-1].speed_mps) < 0.05
    contacts = _contacts(events)
    assert contacts, "no contact on the watch feed"
    first = contacts[0]
    assert (first["agent"], first["other"]) == ("polaris", "bale")
    assert first["position"]["x"] == pytest.approx(bale_x - BALE_RADIUS_M, abs=1e-6)
    assert first["position"]["y"] == pytest.approx(-28.0, abs=1e-6)
    assert first["normal"]["x"] == pytest.approx(1.0)
    met = events.of("contacts")[0]["step"]
    speed_before = next(r.speed_mps for r in recorder.reports() if r.step == met - 1)
    assert speed_before > 2.0
    assert first["relative_speed_mps"] == pytest.approx(speed_before, rel=0.02)  # the speed it met it at
    game.wait_line(r"^ACRES_FAKE_GAME_CONTACT step=\d+ agent=polaris other=bale")

    events.wait(lambda e: e.of("states")[-1]["step"] >= 600)
    assert events.of("contacts")[-1]["step"] > 588  # still pushing against it in the last 0.1 s
    client.send(VehicleCommand(stamp_s=5.0, throttle=0.3, brake=0.0, gear="reverse"))
    time.sleep(0.2)
    step(control, recorder, 240)
    backed = control.get_state("polaris").position[0]
    assert backed < x - 0.5  # it backed away
    events.wait(lambda e: e.of("states")[-1]["step"] >= 840)
    assert not _contacts(events, after_step=601)  # and nothing stopped it
    summary = control.record_stop()
    assert summary["message_count"] > 0

    log = read_episode(path)
    logged = [(ns, body["contacts"]) for ns, body in log.contacts]
    fed = _stamped(events.of("contacts"))
    assert logged == fed  # every contact of the feed is in the log, as it went out

    mark = len(events.of("contacts"))
    control.replay_start(path)
    reached = step(control, recorder, 730)  # the log's 720 steps, then its last state held
    # the feed is read on its own thread: a step's contacts come before its states
    events.wait(lambda e: e.of("states")[-1]["step"] >= reached)
    assert _stamped(events.of("contacts")[mark:]) == logged
    assert control.get_state("polaris").position[0] == pytest.approx(backed, abs=1e-6)


def test_two_placed_vehicles_moving_into_each_other_both_stop_and_each_reports_the_other(feed):
    game = FakeGame("--lockstep", "--control-port", "0", "--ports", "0,0", "--vehicles", "polaris,maxxum",
                    "--no-noise", "--cached")
    control = ControlClient(game.control_port(), timeout_s=60.0)
    try:
        events = feed(control.port)
        control.step(1)
        # 10 m apart between their bodies, closing at 2 + 2 m/s: they meet after 2.5 s
        maxxum = VEHICLE_PARAMS["maxxum"]
        control.set_state("polaris", (-10.0, -28.0, 0.0), EAST, linear_velocity=(2.0, 0.0, 0.0))
        maxxum_x = -10.0 + FRONT_M + 10.0 + (maxxum.length_m - maxxum.rear_overhang_m)
        control.set_state("maxxum", (maxxum_x, -28.0, 0.0), WEST, linear_velocity=(-2.0, 0.0, 0.0))
        reached = control.step(480).step
        # the feed is read on its own thread: wait for the step's states (its contacts come before)
        events.wait(lambda e: e.of("states") and e.of("states")[-1]["step"] >= reached)
        polaris_x = control.get_state("polaris").position[0]
        maxxum_now = control.get_state("maxxum").position[0]
        gap = (maxxum_now - (maxxum.length_m - maxxum.rear_overhang_m)) - (polaris_x + FRONT_M)
        print(f"\nbodies {gap * 1000:.2f} mm apart after they met; polaris at {polaris_x:.3f} m")
        assert -1e-9 <= gap < 0.02
        assert polaris_x == pytest.approx(-5.0, abs=0.02)  # each came 5 m
        pairs = {(c["agent"], c["other"]) for c in _contacts(events)}
        assert pairs == {("polaris", "maxxum"), ("maxxum", "polaris")}
        speeds = [c["relative_speed_mps"] for c in _contacts(events)]
        assert speeds[0] == pytest.approx(4.0, abs=0.01)
        assert len(speeds) == 2  # both stopped in that step, at rest from then on
        assert control.get_state("polaris").linear_velocity == pytest.approx((0.0, 0.0, 0.0))
    finally:
        control.close()
        game.stop()


def test_a_placement_that_overlaps_a_vehicle_is_refused_and_changes_nothing(feed):
    game = FakeGame("--lockstep", "--control-port", "0", "--ports", "0,0", "--vehicles", "polaris,maxxum",
                    "--no-noise", "--cached")
    control = ControlClient(game.control_port(), timeout_s=60.0)
    try:
        control.step(1)
        control.set_state("polaris", (-10.0, -28.0, 0.0), EAST)
        control.set_state("maxxum", (10.0, -28.0, 0.0), EAST)
        control.spawn("bale", "round_bale", (-5.0, -28.0, 0.0), EAST)
        with pytest.raises(ControlRefused) as onto_bale:
            control.set_state("polaris", (-7.0, -28.0, 0.0), EAST)  # its front 0.35 m into the bale
        assert onto_bale.value.code == "invalid_pose" and "bale" in str(onto_bale.value)
        with pytest.raises(ControlRefused) as onto_maxxum:
            control.set_state("polaris", (9.0, -28.5, 0.0), EAST)
        assert onto_maxxum.value.code == "invalid_pose" and "maxxum" in str(onto_maxxum.value)
        with pytest.raises(ControlRefused) as on_vehicle:
            control.spawn("post", "marker_post", (-9.0, -28.3, 0.0), EAST)  # beside the rear axle
        assert on_vehicle.value.code == "invalid_pose" and "polaris" in str(on_vehicle.value)
        with pytest.raises(ControlRefused):
            control.set_state("bale", (10.5, -28.0, 0.0), EAST)  # moving the bale onto the Maxxum
        assert control.entities() == ["polaris", "maxxum", "bale"]
        assert control.get_state("polaris").position[:2] == pytest.approx((-10.0, -28.0))
        assert control.get_state("bale").position[:2] == pytest.approx((-5.0, -28.0))
        control.spawn("bale2", "round_bale", (-5.0, -27.0, 0.0), EAST)  # on the other bale: allowed
        assert math.isfinite(control.step(12).time_s)
    finally:
        control.close()
        game.stop()
