"""sim_control's world services (acres_interfaces): a vehicle's hardware shift and the conditions,
set through the control channel; the game publishes the change on /sim/shifts and /sim/conditions."""

from __future__ import annotations

from typing import Any

from rclpy.node import Node

from acres_sim.channels.control import BAD_REQUEST
from acres_sim.game.control_client import ControlClient, ControlRefused
from acres_sim.nodes.acres_services import acres_srv, answering

CONDITION_FIELDS = ("sun_elevation_deg", "sun_azimuth_deg", "wetness", "dust", "fog")
SHIFT_VECTORS = ("camera_offset_m", "camera_rpy_deg", "lidar_offset_m", "lidar_rpy_deg")


class WorldServices:
    def __init__(self, node: Node, game: ControlClient, callback_group: Any):
        assert acres_srv is not None
        self._game = game
        self._log = node.get_logger()
        for name, kind in (("set_vehicle_shift", acres_srv.SetVehicleShift),
                           ("set_conditions", acres_srv.SetConditions)):
            node.create_service(kind, name, answering(self._log, name, getattr(self, name)),
                                callback_group=callback_group)

    def set_vehicle_shift(self, request: Any, response: Any) -> None:
        shift = request.shift
        if not shift.agent:
            raise ControlRefused(BAD_REQUEST, "shift.agent is empty: name the agent to shift")
        fields: dict[str, Any] = {name: _vector(getattr(shift, name)) for name in SHIFT_VECTORS}
        fields.update(steering_offset_rad=shift.steering_offset_rad, throttle_gain=shift.throttle_gain,
                      brake_gain=shift.brake_gain)
        self._game.set_shift(shift.agent, fields)
        shifted = (any(fields[name] != [0.0, 0.0, 0.0] for name in SHIFT_VECTORS)
                   or fields["steering_offset_rad"]
                   or fields["throttle_gain"] != 1.0 or fields["brake_gain"] != 1.0)
        response.message = f"{shift.agent} {'shifted' if shifted else 'calibrated'}"
        self._log.info(f"set_vehicle_shift: {response.message}")

    def set_conditions(self, request: Any, response: Any) -> None:
        c = request.conditions
        now = self._game.set_conditions({name: float(getattr(c, name)) for name in CONDITION_FIELDS})
        response.message = ", ".join(f"{k} {v:g}" for k, v in now.items() if k != "header")
        self._log.info(f"set_conditions: {response.message}")


def _vector(v: Any) -> list[float]:
    return [float(v.x), float(v.y), float(v.z)]
