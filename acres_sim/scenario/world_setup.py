"""The world as a scenario file says, through the game's control channel (ROS-free): for the
scenario runner and the learners' environments alike."""

from __future__ import annotations

import time
from typing import Any

from acres_sim.scenario.model import Scenario

PARKING_M = 5000.0  # where the agents wait while the world is put together (off the map)


def wait_for_game(game: Any, timeout_s: float) -> dict[str, Any]:
    """The game's status once its control channel answers (it may still be opening it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return game.request({"op": "status"})
        except Exception:  # noqa: BLE001 -- the game is still opening its channel
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def prepare_world(game: Any, s: Scenario) -> None:
    """Between two steps: the conditions, the shifts, the objects, then every agent standing on the
    ground at its start."""
    if s.conditions:
        game.set_conditions(s.conditions)
    for agent, shift in s.shifts.items():
        game.set_shift(agent, shift)
    # Every agent out of the way first (an object may stand where an agent's route starts, an
    # agent where another's does), then the objects, then each agent at its start.
    for index, a in enumerate(s.agents):
        game.set_state(a.name, (PARKING_M, PARKING_M + 10.0 * index, 0.0), (0.0, 0.0, 0.0, 1.0))
    for o in s.objects:
        game.spawn(o.name, o.uri, (o.pose.x, o.pose.y, 0.0), o.pose.quaternion())
    for a in s.agents:
        game.set_state(a.name, (a.pose.x, a.pose.y, 0.0), a.pose.quaternion(), on_ground=True)
