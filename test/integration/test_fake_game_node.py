"""The rclpy node `fake_game`: parameters, a real ROS graph, a served stream, clean exit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from support.fake_game import REPO, Client

from acres_sim.stream.protocol import FrameType

from acres_sim.stream.hello import parse_hello

rclpy = pytest.importorskip("rclpy", reason="the node test needs rclpy")

DOMAIN_ID = "113"  # this module's own ROS domain (fake_game tests use 100-119)
TIMEOUT_S = 30.0


def _ros_env() -> dict[str, str]:
    return {**os.environ, "ROS_DOMAIN_ID": DOMAIN_ID, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


@pytest.fixture
def ros_context():
    saved = {k: os.environ.get(k) for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")}
    os.environ.update(ROS_DOMAIN_ID=DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.shutdown(context=context)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_node_serves_stream_and_exits_cleanly(ros_context, sig):
    proc = subprocess.Popen(
        [sys.executable, "-m", "acres_sim.nodes.fake_game", "--ros-args",
         "-p", "ports:=[0]", "-p", "vehicles:=[maxxum]", "-p", "agents:=[tractor]",
         "-p", "stats_period_s:=0.5", "-p", "seed:=3"],
        cwd=REPO, env=_ros_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
    lines: list[str] = []
    # The node writes the game's log lines through its logger (stderr), once each.
    threading.Thread(target=lambda: lines.extend(line.rstrip() for line in proc.stderr), daemon=True).start()
    try:
        deadline = time.monotonic() + TIMEOUT_S
        port = None
        while port is None:
            assert time.monotonic() < deadline and proc.poll() is None, lines
            for line in lines:
                match = re.search(r"\[fake_game\]: ACRES_SENSOR_STREAM_LISTENING agent=tractor port=(\d+)$",
                                  line)
                if match:
                    port = int(match.group(1))
            time.sleep(0.05)

        # The node is on the graph under its name.
        probe = rclpy.create_node("fake_game_probe", context=ros_context)
        try:
            while "fake_game" not in probe.get_node_names():
                assert time.monotonic() < deadline, probe.get_node_names()
                time.sleep(0.1)
        finally:
            probe.destroy_node()

        # It serves the stream of its parameters.
        client = Client(port)
        try:
            header, payload = client.read()
            hello = parse_hello(payload)
            assert header.frame_type == FrameType.HELLO
            assert (hello.agent, hello.vehicle) == ("tractor", "maxxum")
            kinds = {client.read()[0].frame_type for _ in range(20)}
            assert {FrameType.CLOCK, FrameType.INS} <= kinds
            while not any("ACRES_SENSOR_STREAM_STATS agent=tractor" in line for line in lines):
                assert time.monotonic() < deadline, lines
                time.sleep(0.05)
        finally:
            client.close()
        proc.send_signal(sig)
        code = proc.wait(timeout=TIMEOUT_S)
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.2)
    assert code == 0, lines
    assert not [line for line in lines if "Traceback" in line], lines
    assert any("ACRES_SENSOR_STREAM_STOP agent=tractor queued_mb=" in line for line in lines), lines
    # Each line once: not printed on stdout besides the logger.
    assert sum("ACRES_SENSOR_STREAM_LISTENING agent=tractor" in line for line in lines) == 1, lines
    assert "ACRES_SENSOR_STREAM" not in out
