"""make demo as a newcomer runs it, without a terminal (one plain line per second): it starts
fake_game and sim_bridge, shows the data arriving, writes the snapshot PNG and exits 0, after
DEMO_SECONDS of data and on Ctrl-C. Rates are machine-dependent and left to make bench.
ROS_DOMAIN_ID 194."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest
from support.bridge import REPO, free_port, ros_env


def _demo(tmp_path, seconds: str) -> subprocess.Popen:
    env = ros_env(194, DEMO_SECONDS=seconds, DEMO_PORT=str(free_port()),
                  DEMO_SNAPSHOT=str(tmp_path / "demo.png"))
    env["PYTHONPATH"] = str(REPO) + ":" + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "acres_sim.viewer.demo"], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _check(out: str, code: int, tmp_path) -> None:
    """What the demo shows, not how fast this machine is: rows for the data topics whose message
    counts grow once the stream is there, the snapshot, the logs."""
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("demo ") and " | /clock " in line]
    assert len(lines) >= 3, out
    row = re.compile(r"(\S+) (\d+) msgs [\d.]+/\S+ Hz")
    counts = [{topic: int(n) for topic, n in row.findall(line)} for line in lines]
    assert all(set(c) == {"/clock", "lidar/points", "camera/image_raw", "ins/odom"} for c in counts), out
    last = counts[-1]
    assert last["lidar/points"] > 0 and last["camera/image_raw"] > 0 and last["ins/odom"] > 0, out
    clouds = [c["lidar/points"] for c in counts]
    assert clouds == sorted(clouds) and clouds[-1] > clouds[0], out  # the counts grow
    assert f"snapshot written to {tmp_path / 'demo.png'}" in out
    assert (tmp_path / "demo.png").stat().st_size > 50_000
    assert (tmp_path / "log" / "demo" / "sim_bridge.log").is_file()
    assert "Traceback" not in out


def test_demo_runs_for_demo_seconds_of_data_and_writes_the_snapshot(tmp_path):
    proc = _demo(tmp_path, "4")
    out, _ = proc.communicate(timeout=240)
    _check(out, proc.returncode, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT])
def test_demo_until_ctrl_c_exits_0_with_the_snapshot(tmp_path, sig):
    proc = _demo(tmp_path, "0")
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 180
    with_data = 0
    while time.monotonic() < deadline and with_data < 3:  # three lines once the clouds arrive
        line = proc.stdout.readline()
        lines.append(line)
        if re.search(r"lidar/points [1-9]\d* msgs", line):
            with_data += 1
    proc.send_signal(sig)
    rest, _ = proc.communicate(timeout=60)
    _check("".join(lines) + rest, proc.returncode, tmp_path)
