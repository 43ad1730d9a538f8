"""Fixtures the integration modules share (support/ holds their code)."""

from support.vehicle_channel import driven_game  # noqa: F401 -- a fixture, found by its name
