"""CPU cost of the fake game serving a real-time stream to a client that reads everything.

Runs `python -m acres_sim.fake_game` (real time, Polaris by default) once with full rendering and
once with --cached, reads the stream in this process, and prints the fake game's CPU time as a
percentage of one core (process CPU time / wall time, measured after a warm-up), the received
frame rates, the transport time (receive minus publish time) and the drops of its STOP line.
Goal: at most 60 % of one core for the full render of the Polaris at real time.

    python3 -m benchmark.bench_fake_game [--seconds 15] [--vehicle polaris] [--modes full,cached]
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from acres_sim.stream.protocol import HEADER_SIZE, FrameType, parse_header
from harness.workload import process_cpu_s

REPO = Path(__file__).resolve().parents[1]


class Reader(threading.Thread):
    """Reads every frame into one reusable buffer; counts frames and transport times per type."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buffer = bytearray(4 << 20)
        self.counts = {t: 0 for t in FrameType}
        self.transport_ms: dict[FrameType, list[float]] = {t: [] for t in FrameType}
        self.recording = False
        self.done = threading.Event()

    def _exact(self, count: int) -> memoryview:
        if count > len(self.buffer):
            self.buffer = bytearray(count)
        view = memoryview(self.buffer)[:count]
        got = 0
        while got < count:
            n = self.sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionError("stream closed")
            got += n
        return view

    def run(self) -> None:
        try:
            while not self.done.is_set():
                header = parse_header(self._exact(HEADER_SIZE))
                self._exact(header.payload_size)
                if self.recording:
                    kind = header.frame_type
                    self.counts[kind] += 1
                    self.transport_ms[kind].append((time.monotonic() - header.publish_time) * 1e3)
        except (OSError, ConnectionError):
            pass

    def close(self) -> None:
        self.done.set()
        self.sock.close()


def run_mode(vehicle: str, cached: bool, seconds: float, warmup_s: float) -> dict:
    args = [sys.executable, "-m", "acres_sim.fake_game", "--port", "0", "--vehicle", vehicle,
            "--realtime-factor", "1"]
    if cached:
        args.append("--cached")
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True, bufsize=1)
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.strip())
        match = re.match(r"ACRES_SENSOR_STREAM_LISTENING agent=\S+ port=(\d+)", line)
        if match:
            port = int(match.group(1))
            break
    else:
        raise RuntimeError(f"fake_game did not start: {lines}")
    threading.Thread(target=lambda: lines.extend(x.strip() for x in proc.stdout), daemon=True).start()
    reader = Reader(port)
    reader.start()
    time.sleep(warmup_s)  # scene set-up, first renders, caches
    reader.recording = True
    cpu0, wall0 = process_cpu_s(proc.pid), time.monotonic()
    time.sleep(seconds)
    cpu1, wall1 = process_cpu_s(proc.pid), time.monotonic()
    reader.recording = False
    reader.close()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    time.sleep(0.2)
    wall = wall1 - wall0
    stop = next((x for x in lines if x.startswith("ACRES_SENSOR_STREAM_STOP")), "")
    return {"cpu_pct": 100.0 * (cpu1 - cpu0) / wall, "wall": wall, "reader": reader, "stop": stop,
            "exit": proc.returncode}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--warmup-s", type=float, default=3.0)
    parser.add_argument("--vehicle", default="polaris")
    parser.add_argument("--modes", default="full,cached")
    args = parser.parse_args()
    print(f"fake_game {args.vehicle}, real time, {args.seconds:.0f} s measured after {args.warmup_s:.0f} s "
          f"warm-up, {os.cpu_count()} CPUs")
    for mode in args.modes.split(","):
        result = run_mode(args.vehicle, mode == "cached", args.seconds, args.warmup_s)
        reader: Reader = result["reader"]
        print(f"\n[{mode}] CPU {result['cpu_pct']:.1f} % of one core (goal <= 60 %), "
              f"exit code {result['exit']}")
        for kind in (FrameType.CLOCK, FrameType.INS, FrameType.LIDAR, FrameType.CAMERA):
            count = reader.counts[kind]
            if not count:
                continue
            t = np.array(reader.transport_ms[kind])
            print(f"  {kind.name.lower():7s} frames={count:5d} rate={count / result['wall']:7.2f} Hz  "
                  f"transport p50={np.percentile(t, 50):.2f} ms p99={np.percentile(t, 99):.2f} ms "
                  f"max={t.max():.2f} ms")
        print(f"  {result['stop']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
