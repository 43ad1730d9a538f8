"""trim_heap gives a thread arena's free pages back: in a process of its own (a clean heap), a
thread allocates 80 MB in 4 KiB blocks and frees all but one in 200 (so that its arena cannot shrink
from the top by itself); the resident memory then falls by most of what was freed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution
REPO = Path(__file__).resolve().parents[2]
CHURN = """
import json, threading
from pathlib import Path
from acres_sim.heap import trim_heap

def rss_mb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

kept = []

def churn():
    blocks = [bytearray(4096) for _ in range(20000)]
    kept.extend(blocks[::200])
    blocks.clear()

thread = threading.Thread(target=churn)
thread.start()
thread.join()
before = rss_mb()
trimmed = trim_heap()
print(json.dumps({"before": before, "after": rss_mb(), "trimmed": trimmed}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists() or not sys.platform.startswith("linux"),
                    reason="resident memory is read from /proc (Linux)")
def test_trimming_returns_a_thread_arenas_free_pages():
    out = subprocess.run([sys.executable, "-c", CHURN], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    figures = json.loads(out.stdout)
    assert figures["trimmed"] is True
    assert figures["before"] - figures["after"] > 0.5 * 80 * 199 / 200, figures
