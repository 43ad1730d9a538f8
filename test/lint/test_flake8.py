"""The style gate: flake8 over the package, its tests, launch files and tools (setup.cfg config)."""

import subprocess
import sys
from pathlib import Path

from support.required import required

REPO = Path(__file__).resolve().parents[2]


def test_flake8_is_clean():
    required("flake8", "flake8 is not installed (test_depend python3-flake8)")
    targets = [t for t in ("acres_sim", "harness", "test", "launch", "benchmark", "tools", "examples",
                           "setup.py") if (REPO / t).exists()]
    result = subprocess.run([sys.executable, "-m", "flake8", *targets], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, "flake8 findings:\n" + result.stdout + result.stderr
