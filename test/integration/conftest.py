"""Fixtures the integration modules share (support/ holds their code)."""

from support.ray_nodes import keep_ray_on_loopback
from support.ray_nodes import two_ray_nodes  # noqa: F401 -- a fixture, found by its name
from support.vehicle_channel import driven_game  # noqa: F401 -- a fixture, found by its name

keep_ray_on_loopback()
