"""The documented example of a user's package (examples/bale_stopper: a node that stops for what its
LiDAR sees, and a test that runs the bale scenario against it) built and tested with colcon in a
workspace of its own, as its users would: `colcon test` runs the scenario, `colcon test-result`
reads one test case per criterion, all passed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.required import required

REPO = Path(__file__).resolve().parents[2]
DOMAIN = 75
# the example's own test interrupts its run after 300 s, which then ends within 120 s
COLCON_TIMEOUT_S = 600


def test_colcon_test_runs_the_example_packages_scenario_and_reads_its_criteria(tmp_path):
    required("colcon_core", "colcon is not installed (it comes with a ROS 2 installation)")
    pytest.importorskip("ackermann_msgs", reason="ackermann_msgs is not installed")
    shutil.copytree(REPO / "examples" / "bale_stopper", tmp_path / "src" / "bale_stopper")
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])))
    # The output goes to a file, so that a build or a run that does not end still shows how far it got.
    output = tmp_path / "colcon_output.txt"
    with open(output, "w") as out:
        build = subprocess.Popen("colcon build --base-paths src && . install/local_setup.sh && "
                                 "colcon test --base-paths src --event-handlers console_direct+",
                                 shell=True, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        try:
            build.wait(COLCON_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(build.pid, signal.SIGKILL)
            build.wait()
    said = output.read_text(errors="replace")
    print(said[-4000:])
    assert build.returncode == 0, f"colcon build and test (exit {build.returncode}): ...{said[-6000:]}"
    result = subprocess.run(["colcon", "test-result", "--verbose"], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
    assert "4 tests, 0 errors, 0 failures, 0 skipped" in result.stdout, result.stdout
    junit = tmp_path / "build" / "bale_stopper" / "scenario_bale_ahead.xml"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert [case.get("name") for case in suite.findall("testcase")] == [
        "no_collision(polaris)", "stop_before(polaris, entity=bale1, min_distance_m=2.0)",
        "max_speed_mps(polaris, limit=5.0)"]
