"""make demo as a newcomer runs it, without a terminal (one plain line per second): it starts
fake_game and sim_bridge, shows the data arriving, writes the snapshot PNG and exits 0, after
DEMO_SECONDS and on Ctrl-C. ROS_DOMAIN_ID 194."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest
from _bridge_support import REPO, free_port, ros_env


def _demo(tmp_path, seconds: str) -> subprocess.Popen:
    env = ros_env(194, DEMO_SECONDS=seconds, DEMO_PORT=str(free_port()),
                  DEMO_SNAPSHOT=str(tmp_path / "demo.png"))
    env["PYTHONPATH"] = str(REPO) + ":" + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "acres_sim.demo"], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _check(out: str, code: int, tmp_path) -> None:
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("demo ") and " s | /clock" in line]
    assert len(lines) >= 3, out
    # The clouds reach the demo at the rate the Hello promises (within 10 %) in some second.
    found = (re.search(r"lidar/points ([\d.]+)/10\.00 Hz", line) for line in lines)
    rates = [float(m.group(1)) for m in found if m]
    assert any(abs(rate - 10.0) <= 1.0 for rate in rates), out
    assert f"snapshot written to {tmp_path / 'demo.png'}" in out
    assert (tmp_path / "demo.png").stat().st_size > 50_000
    assert (tmp_path / "log" / "demo" / "sim_bridge.log").is_file()
    assert "Traceback" not in out


def test_demo_runs_for_demo_seconds_and_writes_the_snapshot(tmp_path):
    proc = _demo(tmp_path, "7")
    out, _ = proc.communicate(timeout=120)
    _check(out, proc.returncode, tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT])
def test_demo_until_ctrl_c_exits_0_with_the_snapshot(tmp_path, sig):
    proc = _demo(tmp_path, "0")
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if re.search(r"lidar/points (9\.5|10\.0|10\.5)/10\.00 Hz", line):
            break
    time.sleep(1.5)
    proc.send_signal(sig)
    rest, _ = proc.communicate(timeout=60)
    _check("".join(lines) + rest, proc.returncode, tmp_path)
