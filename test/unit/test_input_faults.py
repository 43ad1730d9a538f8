"""The vehicle_bridge's count of inputs applied at a limit and refused (acres_sim/drive/input_faults.py)."""

from acres_sim.drive.driver import Limited, Refused
from acres_sim.drive.input_faults import MAX_KINDS, InputFaults


def test_limits_and_refusals_are_counted_and_said_once_a_period():
    faults = InputFaults()
    steer = Limited("steering_angle", 0.84, 0.593412, "rad")
    first = faults.limited("vehicle/ackermann_cmd", [steer], 7.7)
    assert first == ("vehicle/ackermann_cmd beyond the vehicle's limits at world time 7.700 s: "
                     "steering_angle 0.84 rad applied as 0.593412 rad")
    assert faults.limited("vehicle/ackermann_cmd", [steer], 7.8) is None  # within 2 s: counted only
    assert faults.refused("cmd_vel", Refused("linear.x is nan", "linear.x not finite")) == \
        "cmd_vel refused: linear.x is nan"
    faulty, message, values = faults.summary()
    assert faulty and message == "2 inputs applied at a limit, 1 refused"
    assert values == [("saturated: vehicle/ackermann_cmd steering_angle", 2),
                      ("refused: cmd_vel linear.x not finite", 1)]


def test_the_refusal_kinds_counted_stay_bounded_whatever_comes():
    faults = InputFaults()
    for k in range(10 * MAX_KINDS):
        faults.refused("vehicle/gear/cmd", Refused(f"gear {k}", f"gear {k}"))
    assert len(faults.summary()[2]) == MAX_KINDS
    assert InputFaults().summary() == (False, "every input within the vehicle's limits", [])
