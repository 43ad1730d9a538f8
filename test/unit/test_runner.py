"""The runner's bridge from the ROS-free clients' logging calls to an rclpy logger: %-formatting
only with arguments, as logging does, so that a peer's text with a '%' in it is logged as it is."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="the runner is rclpy's side")
from acres_sim.nodes.runner import RosLogging  # noqa: E402


class Lines:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))

    def error(self, text: str) -> None:
        self.lines.append(("error", text))


def test_a_message_is_formatted_with_its_arguments_only():
    sink = Lines()
    log = RosLogging(sink)
    log.info("sensor stream %s disconnected: %s", "127.0.0.1:5601", "reset")
    log.warning("the Vehicle Bridge refused a command: throttle 150 %d out of range")
    try:
        raise ValueError("100 % bad")
    except ValueError:
        log.exception("handling %s frame %d failed", "lidar", 7)
    assert sink.lines == [
        ("info", "sensor stream 127.0.0.1:5601 disconnected: reset"),
        ("warning", "the Vehicle Bridge refused a command: throttle 150 %d out of range"),
        ("error", "handling lidar frame 7 failed: ValueError: 100 % bad")]
