"""The held fake game's physics steps/s in 12-step requests on its control channel, by what is attached:
nothing, a watch feed of every event, a watch of the latched events alone (a summarised learner's),
the Polaris's sensor stream (cached renders: the world and the frames, not the render), and the
stream with full renders. A reader drains each attachment as fast as it comes; the figures are the
best of two runs of each, taken in turns.

    python3 -m benchmark.bench_game_rate [--seconds 4]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

STEPS_PER_REQUEST = 12
ATTACHED = ("nothing", "feed", "latched_feed", "stream_cached", "stream_full")
_STEP = b'{"op":"step","steps":12}\n'


def _drain(sock: socket.socket) -> None:
    buffer = bytearray(1 << 20)
    try:
        while sock.recv_into(buffer):
            pass
    except OSError:
        pass


def _attach(what: str, stream_port: int, control_port: int) -> socket.socket | None:
    if what == "nothing":
        return None
    port = stream_port if what.startswith("stream") else control_port
    sock = socket.create_connection(("127.0.0.1", port))
    if what == "feed":
        sock.sendall(b'{"op":"watch"}\n')
    elif what == "latched_feed":
        sock.sendall(b'{"op":"watch","events":["episode","agents","objects"]}\n')
    threading.Thread(target=_drain, args=(sock,), daemon=True).start()
    return sock


def game_rate(what: str, seconds: float) -> float:
    """Physics steps/s of a fresh held game with `what` attached."""
    args = [sys.executable, "-m", "acres_sim.fake_game", "--port", "0", "--vehicle", "polaris", "--lockstep",
            "--control-port", "0", *(() if what == "stream_full" else ("--cached",))]
    game = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ))
    try:
        assert game.stdout is not None
        stream_port = control_port = 0
        for line in game.stdout:
            if m := re.match(r"ACRES_SENSOR_STREAM_LISTENING agent=\S+ port=(\d+)", line):
                stream_port = int(m.group(1))
            if m := re.match(r"ACRES_SIM_CONTROL_LISTENING port=(\d+)", line):
                control_port = int(m.group(1))
                break
        threading.Thread(target=lambda: [None for _ in game.stdout], daemon=True).start()
        attached = _attach(what, stream_port, control_port)
        control = socket.create_connection(("127.0.0.1", control_port))
        control.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        answers = control.makefile("rb")
        if what.startswith("stream"):  # until the game accepted the client: frames are made for it
            while b'"connected":true' not in (control.sendall(b'{"op":"status"}\n') or answers.readline()):
                time.sleep(0.02)
        for _ in range(30):  # warm-up: the cache filled, the first renders done
            control.sendall(_STEP)
            answers.readline()
        requests, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            control.sendall(_STEP)
            answers.readline()
            requests += 1
        rate = requests * STEPS_PER_REQUEST / (time.perf_counter() - started)
        control.close()
        if attached is not None:
            attached.close()
        return rate
    finally:
        game.terminate()
        game.wait(timeout=30)


def measure_game_rate(seconds: float = 4.0) -> dict[str, float]:
    best = dict.fromkeys(ATTACHED, 0.0)
    for _ in range(2):
        for what in ATTACHED:
            best[what] = max(best[what], game_rate(what, seconds))
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=4.0)
    for what, rate in measure_game_rate(p.parse_args().seconds).items():
        print(f"{what:13s} {rate:7.0f} physics steps/s")


if __name__ == "__main__":
    main()
