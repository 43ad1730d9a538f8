"""acres_sim.drive without ROS: what each input means for the vehicle, who drives, the watchdogs,
and the speed controller closed around the fake game's own vehicle model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from acres_sim.drive.driver import (
    BRAKE_CMD_NAMES,
    DBW_TIMEOUT_S,
    GEAR_DRIVE,
    GEAR_REVERSE,
    PEDAL_CMD_PERCENT,
    STEER_CMD_ANGLE,
    STEER_CMD_CURVATURE,
    STEER_CMD_PERCENT,
    STEER_CMD_TORQUE,
    HeldCommand,
    Ignored,
    Refused,
    Unsupported,
    VehicleDriver,
    ros_stamp,
)
from acres_sim.drive.modes import DriveState, Event, Mode, transition
from acres_sim.topics import HELD_AWAITING
from acres_sim.drive.speed_control import feedforward_pedal
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS, VehicleModel, VehicleState
from acres_sim.channels.vehicle import VehicleCommand, VehicleInfo, VehicleReport

P = VEHICLE_PARAMS["polaris"]
INFO = VehicleInfo("polaris", "polaris", 120, P.wheelbase_m, P.track_m, P.wheel_radius_m, P.max_steer_rad,
                   P.steering_ratio, P.max_speed_mps, P.max_reverse_mps, model=P.as_dict())


def report(t: float, speed: float = 0.0, steer: float = 0.0, gear: str = "drive", driven: bool = True,
           step: int | None = None, reset: str | None = None) -> VehicleReport:
    return VehicleReport(step if step is not None else round(t * 120), t, driven, None, steer, steer, 0.0,
                         0.0, -1 if gear == "reverse" else 1, gear, speed, 0.0, (0.0,) * 4, 900.0, reset)


def driver(t: float = 1.0, **kw) -> VehicleDriver:
    d = VehicleDriver(INFO, 0.5, 1.0, 0.5)
    d.on_report(report(t, **kw))
    return d


def test_nothing_is_forwarded_before_a_source_drives():
    d = driver()
    assert d.source is None and d.command() is None


def test_drive_by_wire_moves_nothing_until_enabled_and_then_maps_each_command():
    d = driver()
    with pytest.raises(Ignored, match="drive-by-wire is disabled"):
        d.throttle_cmd(None, PEDAL_CMD_PERCENT, 30.0, True)
    assert d.enable() and d.source == "dbw"
    d.steering_cmd(None, STEER_CMD_ANGLE, 150.0, 0.0, True)  # steering-wheel degrees
    d.throttle_cmd(None, PEDAL_CMD_PERCENT, 30.0, True)
    d.brake_cmd(None, PEDAL_CMD_PERCENT, 0.0, True)
    command = d.command()
    assert command.steer_request_rad == pytest.approx(math.radians(150.0) / P.steering_ratio)
    assert (command.throttle, command.brake, command.gear) == (pytest.approx(0.3), 0.0, "drive")
    d.steering_cmd(None, STEER_CMD_CURVATURE, 0.1, 0.0, True)
    assert d.command().steer_request_rad == pytest.approx(math.atan(0.1 * P.wheelbase_m))
    d.steering_cmd(None, STEER_CMD_PERCENT, -50.0, 0.0, True)
    assert d.command().steer_request_rad == pytest.approx(-0.5 * P.max_steer_rad)
    d.gear_cmd(None, GEAR_REVERSE)
    assert d.command().gear == "reverse"


@pytest.mark.parametrize("call,error,message", [
    (lambda d: d.steering_cmd(None, STEER_CMD_TORQUE, 1.0, 0.0, True), Unsupported,
     "CMD_TORQUE is not served"),
    (lambda d: d.steering_cmd(None, 99, 1.0, 0.0, True), Refused, "cmd_type 99"),
    (lambda d: d.steering_cmd(None, STEER_CMD_ANGLE, math.nan, 0.0, True), Refused, "steering cmd is nan"),
    (lambda d: d.throttle_cmd(None, PEDAL_CMD_PERCENT, math.inf, True), Refused, "throttle cmd is inf"),
    (lambda d: d.ackermann_cmd(None, math.nan, 0.0, 1.0, 0.0), Refused, "steering_angle is nan"),
    (lambda d: d.twist_cmd(None, 1.0, -math.inf), Refused, "angular.z is -inf"),
    (lambda d: d.brake_cmd(None, 8, 1.0, True), Unsupported, f"brake {BRAKE_CMD_NAMES[8]} is not served"),
    (lambda d: d.gear_cmd(None, 6), Unsupported, "gear MANUAL"),
    (lambda d: d.gear_cmd(None, 42), Refused, "gear 42"),
])
def test_bad_or_unserved_drive_by_wire_commands_are_refused_saying_what(call, error, message):
    d = driver()
    d.enable()
    d.throttle_cmd(None, PEDAL_CMD_PERCENT, 20.0, True)
    before = d.command()
    with pytest.raises(error, match=message):
        call(d)
    assert d.command() == before  # nothing changed


def test_finite_values_beyond_the_limits_are_applied_at_the_limit_and_said():
    """As drive-by-wire does: a command beyond what the vehicle can is applied at its limit, never
    dropped; what was asked and what is applied are both kept."""
    d = driver()
    d.ackermann_cmd(None, 0.84, 0.0, 50.0, 0.0)
    limited = d.take_limited()
    assert [(x.field, x.requested, x.applied) for x in limited] == [
        ("steering_angle", 0.84, P.max_steer_rad), ("speed", 50.0, P.max_speed_mps)]
    assert "steering_angle 0.84 rad applied as" in str(limited[0])
    assert d.requested_steer_rad == 0.84 and d.take_limited() == []
    command = d.command()
    assert command.steer_request_rad == pytest.approx(P.max_steer_rad) and command.throttle > 0.0
    d.twist_cmd(None, -20.0, 5.0)  # faster than reverse allows, a yaw rate beyond the steering
    fields = {x.field: x for x in d.take_limited()}
    assert fields["linear.x"].applied == -P.max_reverse_mps
    assert fields["angular.z"].applied == pytest.approx(  # the tightest turn at that speed, backwards
        math.tan(P.max_steer_rad) * P.max_reverse_mps / P.wheelbase_m)
    d.enable()
    d.steering_cmd(None, STEER_CMD_ANGLE, -1000.0, 0.0, True)
    d.throttle_cmd(None, PEDAL_CMD_PERCENT, 101.0, True)
    assert [x.field for x in d.take_limited()] == ["steering cmd", "throttle cmd"]
    command = d.command()
    assert command.steer_request_rad == pytest.approx(-P.max_steer_rad) and command.throttle == 1.0
    d.steering_cmd(None, STEER_CMD_CURVATURE, 5.0, 0.0, True)  # a 0.2 m radius
    assert d.command().steer_request_rad == pytest.approx(P.max_steer_rad)


def test_a_drive_by_wire_subsystem_times_out_after_100_ms_of_world_time_and_releases():
    d = driver(1.0)
    d.enable()
    d.throttle_cmd(None, PEDAL_CMD_PERCENT, 40.0, True)
    d.on_report(report(1.0 + DBW_TIMEOUT_S))
    assert d.throttle.engaged and not d.throttle.timeout
    d.on_report(report(1.0 + DBW_TIMEOUT_S + 1 / 120))
    assert d.throttle.timeout and not d.throttle.engaged
    assert d.command().throttle == 0.0
    d.throttle_cmd(None, PEDAL_CMD_PERCENT, 40.0, True)  # a fresh command engages it again
    assert not d.throttle.timeout and d.command().throttle == pytest.approx(0.4)


def test_the_held_stamp_of_drive_by_wire_is_the_oldest_engaged_subsystems():
    d = driver(1.0)
    d.enable()
    d.throttle_cmd(1.0, PEDAL_CMD_PERCENT, 10.0, True)
    d.on_report(report(1.05))
    d.steering_cmd(None, STEER_CMD_ANGLE, 0.0, 0.0, True)  # zero stamp: its arrival, 1.05
    assert d.held() == HeldCommand(1.0, "dbw")
    d.throttle_cmd(1.05, PEDAL_CMD_PERCENT, 10.0, True)
    assert d.held() == HeldCommand(1.05, "dbw") and d.command().stamp_s == 1.05
    assert d.held(game_stamp_s=1.04).stamp_s == 1.04  # what the game says it holds wins


def test_one_source_at_a_time():
    d = driver()
    d.ackermann_cmd(None, 0.1, 0.0, 2.0, 0.0)
    assert d.source == "ackermann"
    d.twist_cmd(None, 2.0, 0.0)
    assert d.source == "cmd_vel"  # the latest of the two
    d.enable()
    assert d.source == "dbw"
    with pytest.raises(Ignored, match="drive-by-wire is enabled"):
        d.ackermann_cmd(None, 0.1, 0.0, 2.0, 0.0)
    d.disable()
    assert d.source is None and d.mode is Mode.RELEASED and d.held().source == ""  # not under command
    released = d.command()
    assert (released.throttle, released.brake) == (0.0, 1.0)  # braking to a stop
    d.ackermann_cmd(None, 0.1, 0.0, 2.0, 0.0)
    assert d.source == "ackermann" and d.mode is Mode.ACKERMANN


def test_twist_becomes_the_bicycle_models_road_wheel_angle_clamped():
    d = driver(speed=2.0)
    d.twist_cmd(None, 2.0, 0.5)
    assert d.command().steer_request_rad == pytest.approx(math.atan(P.wheelbase_m * 0.5 / 2.0))
    d.twist_cmd(None, 1.0, 3.0)  # far tighter than the vehicle turns: its limit, not angular.z
    assert d.command().steer_request_rad == pytest.approx(P.max_steer_rad)
    d.twist_cmd(None, 0.0, 0.3)  # no speed to turn with: the angle is held
    assert d.command().steer_request_rad == pytest.approx(P.max_steer_rad)


def test_the_ackermann_watchdog_releases_throttle_and_brakes_steering_held():
    d = driver(1.0, speed=3.0)
    d.ackermann_cmd(None, 0.2, 0.0, 3.0, 0.0)
    d.on_report(report(1.5, speed=3.0, steer=0.2))
    assert d.command().brake == 0.0
    d.on_report(report(1.5 + 1 / 120, speed=3.0, steer=0.2))
    command = d.command()
    assert (command.throttle, command.brake, command.steer_request_rad) == (0.0, 1.0, 0.2)


def test_a_reset_under_the_vehicle_ends_every_source():
    d = driver(5.0)
    d.enable()
    d.on_report(report(5.1, driven=True))
    assert d.on_report(report(0.0, driven=False))
    assert d.source is None and not d.dbw_enabled and d.command() is None


def test_a_reset_before_any_step_ran_still_ends_the_source():
    d = driver(0.0, driven=False)
    d.ackermann_cmd(None, 0.0, 0.0, 2.0, 0.0)  # forwarded, but the world was reset before a step
    assert d.on_report(report(0.0, driven=False, reset="all"))
    assert d.source is None and d.mode is Mode.AWAITING and d.held() == HeldCommand(0.0, HELD_AWAITING)


def test_a_time_reset_keeps_the_source_and_awaits_the_next_command():
    d = driver(5.0, speed=3.0)
    d.ackermann_cmd(None, 0.1, 0.0, 3.0, 0.0)
    assert d.on_report(report(0.0, speed=3.0))  # the clock went back, the vehicle goes on
    assert d.source == "ackermann" and d.state.stale and d.held() == HeldCommand(0.0, HELD_AWAITING)
    assert not d.on_report(report(0.4, speed=3.0))
    assert d.command().brake < 1.0  # the watchdog counts from 0: not timed out at 0.4 s
    d.ackermann_cmd(None, 0.1, 0.0, 3.0, 0.0)
    assert not d.state.stale and d.held() == HeldCommand(0.4, "ackermann")


def test_a_change_of_direction_stops_first():
    d = driver(speed=2.0)
    d.ackermann_cmd(None, 0.0, 0.0, -1.0, 0.0)
    command = d.command()
    assert (command.throttle, command.brake, command.gear) == (0.0, 1.0, "reverse")


def test_ros_stamps():
    assert ros_stamp(0, 0) is None and ros_stamp(2, 500_000_000) == 2.5


def closed_loop(target: float, hold_steps: int, grade: float) -> np.ndarray:
    """The speed controller against the fake game's vehicle model, commands held hold_steps."""
    d = VehicleDriver(INFO, 0.5, 1.0, 0.5)
    model = VehicleModel(P, VehicleState(0.0, 0.0, 0.0))
    speeds, command = [], None
    for step in range(1, 120 * 8):
        s = model.state
        d.on_report(report(step / 120, speed=s.speed_mps, steer=s.steer_rad, gear=s.gear))
        if command is None or step % hold_steps == 0:
            d.ackermann_cmd(None, 0.0, 0.0, target, 0.0)
            c = d.command()
            command = VehicleCommand(c.steer_request_rad, c.throttle, c.brake, c.gear)
        speeds.append(model.step(command, 1 / 120, grade).speed_mps)
    return np.array(speeds)


@pytest.mark.parametrize("hold_steps", [1, 12])
@pytest.mark.parametrize("grade", [0.0, 0.08])
def test_the_speed_controller_reaches_its_target_without_much_overshoot(hold_steps, grade):
    speeds = closed_loop(4.0, hold_steps, grade)
    assert speeds.max() < 4.0 + 0.15
    assert np.abs(speeds[-120:] - 4.0).max() < 0.03  # the integral takes up the grade


def test_feedforward_holds_a_speed_on_the_level():
    pedal = feedforward_pedal(P.as_dict(), 4.0, 0.0)
    model = VehicleModel(P, VehicleState(0.0, 0.0, 0.0, speed_mps=4.0))
    for _ in range(120):
        model.step(VehicleCommand(0.0, pedal, 0.0, "drive"), 1 / 120)
    assert model.state.speed_mps == pytest.approx(4.0, abs=1e-6)
    assert feedforward_pedal({}, 4.0, 0.0) == 0.0  # without the game's numbers: PI alone
    assert GEAR_DRIVE == 4


# The state machine on its own: every event from every state, against the rules of who drives.
@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("stale", [False, True])
def test_every_transition_follows_the_rules_of_who_drives(mode, stale):
    state = DriveState(mode, stale)
    driving = mode in (Mode.DBW, Mode.ACKERMANN, Mode.CMD_VEL)
    under_command = driving or mode is Mode.AWAITING
    assert transition(state, Event.ENABLE) == (state if mode is Mode.DBW else DriveState(Mode.DBW))
    assert transition(state, Event.DISABLE) == (
        DriveState(Mode.RELEASED) if driving else DriveState(Mode.ROUTE) if mode is Mode.AWAITING else state)
    for event, source in ((Event.DBW_COMMAND, Mode.DBW), (Event.ACKERMANN, Mode.ACKERMANN),
                          (Event.CMD_VEL, Mode.CMD_VEL)):
        assert transition(state, event) == DriveState(source)  # a fresh command: nothing stale
    back = DriveState(Mode.AWAITING if under_command else Mode.ROUTE)
    assert transition(state, Event.BACK_ON_ROUTE) == back
    for event in (Event.CLOCK_BACK, Event.RESET_IN_PLACE):
        assert transition(state, event) == DriveState(mode, stale=driving)


def test_disable_after_a_reset_ends_being_awaited_without_a_release():
    d = driver(0.0, driven=False)
    d.ackermann_cmd(None, 0.0, 0.0, 2.0, 0.0)
    d.on_report(report(0.0, driven=False, reset="all"))
    assert d.held().source == HELD_AWAITING
    assert not d.disable()  # nothing drove: nothing to brake
    assert d.mode is Mode.ROUTE and d.held() == HeldCommand(0.0, "") and d.command() is None
