"""What a scenario that cannot run raises (ROS-free)."""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario that cannot run: `where` is 'FILE:LINE' (or the --set that gave the value), `key`
    the dotted key."""

    def __init__(self, where: str, key: str, message: str):
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")
        self.where, self.key, self.reason = where, key, message
