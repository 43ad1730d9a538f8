"""colcon test runs the bale scenario against this package's node; colcon test-result --verbose
then lists each of the scenario's criteria (the JUnit file is written beside pytest's)."""

import sys
from pathlib import Path

from acres_sim.scenario.api import run_scenario

HERE = Path(__file__).resolve().parent.parent


def test_the_stopper_stops_before_the_bale(request, tmp_path):
    results = Path(request.config.option.xmlpath or tmp_path / "pytest.xml").parent
    result = run_scenario(
        HERE / "scenarios" / "bale_ahead.yaml",
        # in an installed workspace: stack="ros2 run bale_stopper stopper"
        stack=f"{sys.executable} -m bale_stopper.stopper",
        out=tmp_path / "run", junit=results / "scenario_bale_ahead.xml", timeout_s=300)
    assert result.passed, result.summary
