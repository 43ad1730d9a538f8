"""The fake world's collision geometry (acres_sim/bodies.py): overlap depths of boxes and cylinders,
turned boxes, heights that pass over each other, and where two bodies touch."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acres_sim.bodies import clearance, contact, depth, object_body, overlaps, vehicle_body


def _polaris(x: float, y: float, yaw: float = 0.0):
    return vehicle_body("polaris", x, y, yaw, 0.0, length_m=3.05, width_m=1.59, height_m=1.98,
                        rear_overhang_m=0.45)


def _bale(x: float, y: float):
    return object_body("bale", "cylinder", (1.5, 1.5, 1.2), x, y, 0.0, 0.0)


def test_a_vehicle_box_reaches_its_overhang_behind_the_rear_axle_and_the_rest_ahead():
    body = _polaris(10.0, 5.0, 0.0)
    xs = [c[0] for c in body.corners()]
    assert min(xs) == pytest.approx(10.0 - 0.45) and max(xs) == pytest.approx(10.0 + 2.60)
    turned = _polaris(10.0, 5.0, math.pi / 2)  # facing north: the box reaches north
    ys = [c[1] for c in turned.corners()]
    assert min(ys) == pytest.approx(5.0 - 0.45) and max(ys) == pytest.approx(5.0 + 2.60)


def test_a_bale_ahead_overlaps_by_what_the_front_reaches_into_it():
    # front at x = 2.60; bale of radius 0.75 centred at 3.2 reaches back to 2.45: 0.15 m deep
    assert depth(_polaris(0.0, 0.0), _bale(3.2, 0.0)) == pytest.approx(0.15)
    assert not overlaps(_polaris(0.0, 0.0), _bale(3.40, 0.0))  # 5 cm clear
    # off the front left corner (2.60, 0.795): that corner is what reaches into it
    assert depth(_polaris(0.0, 0.0), _bale(3.0, 1.2)) == pytest.approx(0.75 - math.hypot(0.40, 0.405))
    assert not overlaps(_polaris(0.0, 0.0), _bale(3.0, 1.6))  # 0.90 m from the corner


def test_boxes_turned_against_each_other_overlap_only_where_their_footprints_do():
    a = _polaris(0.0, 0.0, 0.0)
    square = object_body("square", "box", (2.4, 1.2, 0.9), 4.0, 0.0, 0.0, math.pi / 4)
    # the square bale turned 45 degrees reaches back to 4.0 - (1.2 + 0.6) / sqrt(2) = 2.727: clear
    assert not overlaps(a, square)
    nearer = object_body("square", "box", (2.4, 1.2, 0.9), 3.5, 0.0, 0.0, math.pi / 4)
    assert depth(a, nearer) == pytest.approx(2.60 - (3.5 - 1.8 / math.sqrt(2)), abs=1e-9)


def test_bodies_at_different_heights_do_not_meet():
    low = object_body("panel", "box", (3.0, 0.08, 1.2), 2.0, 0.0, 0.0, 0.0)
    high = object_body("panel", "box", (3.0, 0.08, 1.2), 2.0, 0.0, 2.5, 0.0)  # above the roof (1.98)
    assert overlaps(_polaris(0.0, 0.0), low)
    assert not overlaps(_polaris(0.0, 0.0), high)


def test_the_contact_is_on_the_other_bodys_surface_facing_the_vehicle():
    body, bale = _polaris(0.0, 0.0), _bale(3.2, 0.0)
    (px, py, pz), (nx, ny, nz) = contact(body, bale)
    assert (px, py) == pytest.approx((2.45, 0.0))  # the bale's side nearest the vehicle
    assert pz == pytest.approx(0.6)  # half the 1.2 m both reach
    assert (nx, ny, nz) == pytest.approx((1.0, 0.0, 0.0))
    square = object_body("square", "box", (2.4, 1.2, 0.9), 3.5, 0.0, 0.0, 0.0)
    # narrower than the vehicle: its two back corners are in the vehicle's front, between them
    (px, py, _), _n = contact(body, square)
    assert (px, py) == pytest.approx((2.30, 0.0))
    wide = object_body("panel", "box", (0.08, 3.0, 1.2), 2.62, 0.0, 0.0, 0.0)  # across the path
    (px, py, _), _n = contact(body, wide)  # the vehicle's front corners are in it: between them
    assert (px, py) == pytest.approx((2.60, 0.0))


@given(x=st.floats(-10, 10), y=st.floats(-10, 10), yaw=st.floats(-math.pi, math.pi),
       other_yaw=st.floats(-math.pi, math.pi))
def test_overlap_is_symmetric_and_a_body_far_away_never_overlaps(x, y, yaw, other_yaw):
    a = _polaris(0.0, 0.0, 0.0)
    b = object_body("square", "box", (2.4, 1.2, 0.9), x, y, 0.0, other_yaw)
    assert overlaps(a, b) == overlaps(b, a)
    assert depth(a, b) == pytest.approx(depth(b, a)) or not overlaps(a, b)
    if math.hypot(x - 1.075, y) > math.hypot(1.525, 0.795) + math.hypot(1.2, 0.6):
        assert not overlaps(a, b)
    far = _polaris(x + 100.0, y, yaw)
    assert not overlaps(a, far)


def test_clearance_is_the_gap_between_footprints_and_zero_once_they_touch():
    body = _polaris(0.0, 0.0)
    assert clearance(body, _bale(5.0, 0.0)) == pytest.approx(5.0 - 0.75 - 2.60)
    assert clearance(body, _bale(3.0, 1.2)) == 0.0  # overlapping the corner
    square = object_body("square", "box", (2.4, 1.2, 0.9), 6.0, 3.0, 0.0, 0.0)  # ahead and to the left
    # nearest points: the Polaris's front left corner (2.60, 0.795) and the bale's (4.8, 2.4)
    assert clearance(body, square) == pytest.approx(math.hypot(4.8 - 2.60, 2.4 - 0.795))
    assert clearance(square, body) == pytest.approx(clearance(body, square))
    other = _polaris(10.0, 0.0, math.pi)  # facing back: its front 2.60 m west of x = 10
    assert clearance(body, other) == pytest.approx(10.0 - 2.60 - 2.60)
