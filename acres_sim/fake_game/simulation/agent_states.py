"""What the fake world knows of each agent after a physics step, in the layout of
acres_interfaces/AgentState (a dict of its fields; ROS-free): pose and body twist from its motion,
the planar track knot, each wheel's contact, surface class and crop field from the scene, and the
energy ledger from the vehicle model's forces.

Energy (J, cumulative since the agent's reset), per step of length ds = |v| dt at the mean speed v:
traction = the drive force's work while it pushes along the motion; brake = brake force x ds;
rolling = c m g cos(grade) x ds; drag = k v^2 x ds; slip = traction x the wheels' mean slip on their
surfaces (SLIP); lateral = SCRUB x m |v yaw_rate| x ds (tyre scrub in turns); soil = the wheels' mean
sinkage resistance (SINKAGE, a share of m g) x ds. A vehicle not driven by its model (on its route,
placed) gets the forces its motion needs: m dv/dt + grade + rolling + drag, as drive when positive,
as brake when negative.
"""

from __future__ import annotations

import math
from typing import Any

from acres_sim.fake_game.simulation.vehicle_model import GRAVITY, VehicleModel, VehicleParams
from acres_sim.fake_game.world.materials import MAT
from acres_sim.fake_game.world.motion import DriveKnot
from acres_sim.fake_game.world.scene import Scene

# acres_interfaces/AgentState constants
SURFACE_UNKNOWN, SURFACE_SOIL, SURFACE_CROP, SURFACE_ROAD, SURFACE_GRASS = 0, 1, 2, 3, 4
CONTROL_ROUTE, CONTROL_DRIVEN, CONTROL_PLACED, CONTROL_REPLAY = 0, 1, 2, 3
_SURFACE_OF_MATERIAL = {MAT["soil"]: SURFACE_SOIL, MAT["crop"]: SURFACE_CROP, MAT["road"]: SURFACE_ROAD,
                        MAT["grass"]: SURFACE_GRASS}
SLIP = {SURFACE_UNKNOWN: 0.05, SURFACE_SOIL: 0.08, SURFACE_CROP: 0.10, SURFACE_ROAD: 0.02,
        SURFACE_GRASS: 0.05}
SINKAGE = {SURFACE_UNKNOWN: 0.0, SURFACE_SOIL: 0.02, SURFACE_CROP: 0.02, SURFACE_ROAD: 0.0,
           SURFACE_GRASS: 0.005}
SCRUB = 0.05
LEDGER_FIELDS = ("traction_j", "brake_j", "rolling_j", "drag_j", "slip_j", "lateral_j", "soil_j",
                 "ground_loss_j")


def wheel_points(params: VehicleParams, knot: DriveKnot) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """World x, y of the four wheels (front left, front right, rear left, rear right): base_footprint
    is the middle of the rear axle. Plain floats: every step asks for four points."""
    c, s = math.cos(knot.yaw), math.sin(knot.yaw)
    half = 0.5 * params.track_m
    wheelbase = params.wheelbase_m
    offsets = ((wheelbase, half), (wheelbase, -half), (0.0, half), (0.0, -half))
    return (tuple(knot.x + c * forward - s * left for forward, left in offsets),
            tuple(knot.y + s * forward + c * left for forward, left in offsets))


def wheel_ground(scene: Scene, params: VehicleParams, knot: DriveKnot) -> tuple[list[int], list[int]]:
    """Surface class and crop field id under each wheel."""
    cells = [scene.ground_cell(x, y) for x, y in zip(*wheel_points(params, knot))]
    return [_SURFACE_OF_MATERIAL.get(m, SURFACE_UNKNOWN) for m, _ in cells], [f for _, f in cells]


class EnergyLedger:
    """One agent's cumulative energies (see the module's docstring)."""

    def __init__(self) -> None:
        self.values = dict.fromkeys(LEDGER_FIELDS, 0.0)
        self.speed: float | None = None  # at the last step, for a motion's own forces

    def add(self, params: VehicleParams, speed: float, yaw_rate: float, grade: float, surfaces: list[int],
            dt: float, model: VehicleModel | None) -> None:
        before = speed if self.speed is None else self.speed
        self.speed = speed
        v = 0.5 * (before + speed)
        ds = abs(v) * dt
        cos_g = 1.0 / math.sqrt(1.0 + grade * grade)
        rolling = params.rolling_resistance * params.mass_kg * GRAVITY * cos_g
        drag = params.drag_n_s2_m2 * v * v
        if model is not None:
            command = model.command
            drive = model.state.direction * command.throttle * params.drive_force_n
            brake = command.brake * params.brake_force_n
        else:  # what the motion took: net force along it
            net = (params.mass_kg * (speed - before) / dt + params.mass_kg * GRAVITY * grade * cos_g
                   + math.copysign(rolling + drag, v))
            drive, brake = (net, 0.0) if net * v >= 0.0 else (0.0, abs(net))
        traction = max(0.0, drive * v * dt)
        ledger = self.values
        ledger["traction_j"] += traction
        ledger["brake_j"] += brake * ds
        ledger["rolling_j"] += rolling * ds
        ledger["drag_j"] += drag * ds
        slip = traction * sum(SLIP[s] for s in surfaces) / len(surfaces)
        lateral = SCRUB * params.mass_kg * abs(v * yaw_rate) * ds
        soil = sum(SINKAGE[s] for s in surfaces) / len(surfaces) * params.mass_kg * GRAVITY * cos_g * ds
        ledger["slip_j"] += slip
        ledger["lateral_j"] += lateral
        ledger["soil_j"] += soil
        ledger["ground_loss_j"] = ledger["slip_j"] + ledger["lateral_j"] + ledger["soil_j"]


def vector(values: Any) -> dict[str, float]:
    return {"x": float(values[0]), "y": float(values[1]), "z": float(values[2])}


def agent_state(name: str, kin: Any, knot: DriveKnot, steer_rad: float, surfaces: list[int],
                fields: list[int], ledger: EnergyLedger, control: int) -> dict[str, Any]:
    """The AgentState dict of one agent (kin: its Kinematics at the step)."""
    q = kin.quaternion
    return {
        "name": name,
        "pose": {"position": vector(kin.position),
                 "orientation": {"x": float(q[0]), "y": float(q[1]), "z": float(q[2]), "w": float(q[3])}},
        "twist": {"linear": vector(kin.velocity_body), "angular": vector(kin.angular_rate_body)},
        "wheel_contact": [True, True, True, True],  # the fake world's vehicles never leave the ground
        "surface_class": surfaces,
        "field_id": fields,
        "energy": dict(ledger.values),
        "heading_rad": knot.yaw,
        "speed_mps": knot.speed,
        "yaw_rate_rad_s": knot.yaw_rate,
        "steer_rad": float(steer_rad),
        "control": control,
    }


def knot_of(state: dict[str, Any], t: float) -> DriveKnot:
    """The track knot a logged AgentState holds (a replay draws the track through them)."""
    position = state["pose"]["position"]
    return DriveKnot(t, position["x"], position["y"], state["heading_rad"], state["speed_mps"],
                     state["yaw_rate_rad_s"])
