"""test/unit/test_convert.py once more with ROS_PYTHON_CHECK_FIELDS=1, in a process of its own (the
generated message classes read the variable when they are imported): every field value passes the
type and range checks of the generated classes, and array fields stay unshared even when the setters
store the given object as is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_converter_messages_pass_the_generated_field_checks():
    env = dict(os.environ, ROS_PYTHON_CHECK_FIELDS="1")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                             str(REPO / "test" / "unit" / "test_convert.py")],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout.splitlines()[-1]
