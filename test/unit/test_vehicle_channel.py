"""acres_sim.channels.vehicle without a socket: the Vehicle Bridge's messages parsed into typed
records, and everything else refused with a message that says what was wrong."""

from __future__ import annotations

import math

import pytest

from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.game.vehicle_time import VehicleTime
from acres_sim.channels.vehicle import (
    VehicleCommand,
    VehicleProtocolError,
    parse_info,
    parse_report,
)

REPORT = {"type": "report", "step": 12, "vehicle_time_s": 1234.6, "driven": True,
          "command_stamp_s": 0.05, "steer_rad": 0.1, "steer_request_rad": 0.2, "throttle": 0.3, "brake": 0.0,
          "direction": -1, "gear": "reverse", "speed_mps": -1.5, "yaw_rate": -0.07,
          "wheel_speeds_rad_s": [-4.4, -4.6, -4.5, -4.5], "rpm": 950.0}


def test_a_report_becomes_a_typed_record():
    report = parse_report(REPORT)
    assert (report.step, report.vehicle_time_s, report.driven) == (12, 1234.6, True)
    assert report.command_stamp_s == 0.05
    assert math.isnan(report.time_s)  # world time: known once the Clock offset is
    assert report.direction == -1 and report.gear == "reverse" and report.speed_mps == -1.5
    assert report.wheel_speeds_rad_s == (-4.4, -4.6, -4.5, -4.5)
    assert parse_report({**REPORT, "command_stamp_s": None}).command_stamp_s is None


@pytest.mark.parametrize("change,message", [
    ({"speed_mps": math.nan}, "speed_mps must be a finite number"),
    ({"step": "twelve"}, "step must be a finite number"),
    ({"gear": "warp"}, "gear 'warp'"),
    ({"wheel_speeds_rad_s": [1.0, 2.0]}, "4 numbers"),
    ({"wheel_speeds_rad_s": [1.0, 2.0, 3.0, True]}, "finite number"),
    ({"throttle": None}, "throttle must be a finite number"),
    ({"vehicle_time_s": None}, "vehicle_time_s must be a finite number"),
])
def test_a_bad_report_is_refused_saying_what(change, message):
    with pytest.raises(VehicleProtocolError, match=message):
        parse_report({**REPORT, **change})


def test_the_hello_gives_the_vehicle_parameters_the_game_model_has():
    params = VEHICLE_PARAMS["maxxum"].as_dict()
    info = parse_info({"type": "hello", "agent": "m", "vehicle": "maxxum", "physics_hz": 120,
                       "params": params})
    assert info.wheelbase_m == params["wheelbase_m"] and info.steering_ratio == params["steering_ratio"]
    assert info.max_steer_rad == params["max_steer_rad"] and info.max_reverse_mps == params["max_reverse_mps"]
    with pytest.raises(VehicleProtocolError, match="hello without params"):
        parse_info({"type": "hello", "physics_hz": 120})
    with pytest.raises(VehicleProtocolError, match="wheelbase_m"):
        parse_info({"physics_hz": 120, "params": {**params, "wheelbase_m": "long"}})


@pytest.mark.parametrize("fields,message", [
    ({"throttle": 1.2}, "throttle must be 0..1"), ({"brake": -1.0}, "brake must be 0..1"),
    ({"steer_request_rad": math.inf}, "finite"), ({"gear": "sport"}, "gear must be one of"),
])
def test_a_command_out_of_range_is_not_sent(fields, message):
    good = {"stamp_s": 0.0, "steer_request_rad": 0.0, "throttle": 0.0, "brake": 0.0, "gear": "drive"}
    with pytest.raises(ValueError, match=message):
        VehicleCommand(**{**good, **fields})


def test_vehicle_time_is_world_time_with_the_clock_offset_and_by_the_step_before_it():
    time = VehicleTime()
    with pytest.raises(ValueError, match="hello"):
        time.world_time(0, 1234.5)
    time.physics_hz = 120.0
    assert time.world_time(12, 1234.6) == 0.1 and time.by_step == 1  # no Clock frame yet
    time.offset_s = -1234.5
    for step in (13, 240, 12001):
        world = time.world_time(step, step / 120 + 1234.5)
        assert round(world * 1e9) == round(step * 1e9 / 120)  # the step's stamp, to the nanosecond
    assert time.converted == 3 and time.disagreement_s == 0.0
    time.world_time(14, 14 / 120 + 1234.5 + 0.25)  # a vehicle clock that slipped
    assert time.disagreement_s == pytest.approx(0.25)
