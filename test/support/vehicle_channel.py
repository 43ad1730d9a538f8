"""The fake game's Vehicle Bridge as its tests drive it: a ROS-free VehicleClient whose reports and
barriers are recorded, the Clock frames' offset told to it as sim_bridge tells vehicle_bridge, and
a lockstep step that waits for its barrier."""

from __future__ import annotations

import struct
import threading
import time

import pytest
from support.fake_game import Client, FakeGame

from acres_sim.channels.vehicle import VehicleInfo, VehicleReport
from acres_sim.game.control_client import ControlClient
from acres_sim.game.vehicle_client import VehicleClient
from acres_sim.stream.protocol import FrameType


class Recorder:
    """Everything a VehicleClient hands on, in arrival order."""

    def __init__(self) -> None:
        self.info: list[VehicleInfo] = []
        self.items: list[VehicleReport | tuple[int, float]] = []
        self.cond = threading.Condition()

    def on_info(self, info: VehicleInfo) -> None:
        with self.cond:
            self.info.append(info)
            self.cond.notify_all()

    def on_report(self, report: VehicleReport) -> None:
        with self.cond:
            self.items.append(report)
            self.cond.notify_all()

    def on_barrier(self, step: int, time_s: float) -> None:
        with self.cond:
            self.items.append((step, time_s))
            self.cond.notify_all()

    def wait(self, predicate, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while not predicate(self):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; last items {self.items[-3:]}"
                self.cond.wait(left)

    def reports(self) -> list[VehicleReport]:
        with self.cond:
            return [r for r in self.items if isinstance(r, VehicleReport)]

    def barriers(self) -> list[tuple[int, float]]:
        with self.cond:
            return [b for b in self.items if isinstance(b, tuple)]


@pytest.fixture
def driven_game():
    started: list[tuple[FakeGame, ControlClient, VehicleClient, Client]] = []

    def start(lockstep: bool = True) -> tuple[FakeGame, ControlClient, VehicleClient, Recorder]:
        args = ["--port", "0", "--vehicle-ports", "0", "--cached", "--control-port", "0", "--no-noise"]
        game = FakeGame(*(args + (["--lockstep"] if lockstep else [])))
        control = ControlClient(game.control_port(), timeout_s=30.0)
        recorder = Recorder()
        client = VehicleClient(game.vehicle_port("polaris"), on_info=recorder.on_info,
                               on_report=recorder.on_report, on_barrier=recorder.on_barrier,
                               reconnect_min_s=0.05, reconnect_max_s=0.2)
        stream = Client(game.stream_port("polaris"))
        threading.Thread(target=tell_clock_offsets, args=(stream, client), daemon=True).start()
        client.start()
        started.append((game, control, client, stream))
        recorder.wait(lambda r: r.info)
        game.wait_line(r"^ACRES_VEHICLE_BRIDGE_CONNECTED agent=polaris")
        return game, control, client, recorder

    yield start
    for game, control, client, stream in started:
        client.stop()
        control.close()
        game.stop()
        stream.close()


def tell_clock_offsets(stream: Client, client: VehicleClient) -> None:
    """What the agent's sim_bridge does for its vehicle_bridge: the Clock frames' offset (header stamp
    minus payload: world minus vehicle time) to the client, which reports in world time with it."""
    while True:
        try:
            header, payload = stream.read()
        except (OSError, ConnectionError, ValueError):
            return
        if header.frame_type == FrameType.CLOCK:
            client.set_clock_offset(header.stamp - struct.unpack("<d", payload)[0])


def step(control: ControlClient, recorder: Recorder, steps: int) -> int:
    """Steps the world and waits for the step's barrier on the stream; returns the step reached."""
    done = control.step(steps)
    recorder.wait(lambda r: any(b[0] == done.step for b in r.barriers()))
    return done.step
