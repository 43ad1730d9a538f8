"""Fail `make test` when colcon ran no test, or fewer tests than the suite holds.

colcon decides from setup.py whether to run pytest; when it does not (an old-style tests_require
under setuptools >= 72), it falls back to unittest, finds nothing, and reports success. This check
compares the JUnit file pytest wrote under colcon with what pytest collects from test/ directly,
so a suite that silently runs nothing can never be green.

Usage: python tools/check_test_count.py <junit xml written by colcon test> [pytest -m expression]
"""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def collected_count(marks: str = "") -> int:
    """How many tests pytest collects from test/ (with the -m expression `marks` where given; 0 when
    there are none)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *(("-m", marks) if marks else ()), "test"],
        cwd=REPO, capture_output=True, text=True)
    tail = run.stdout.strip().splitlines()[-1:] or [""]
    match = re.search(r"(\d+)(?:/\d+)? tests? collected", tail[0])
    if match:
        return int(match.group(1))
    if run.returncode == 5 or "no tests collected" in tail[0]:
        return 0
    raise SystemExit(f"check_test_count: pytest could not collect the suite:\n{run.stdout[-2000:]}"
                     f"{run.stderr[-2000:]}")


def junit_count(path: Path) -> int:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    return sum(int(suite.get("tests", "0")) for suite in suites)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    junit = Path(argv[1])
    expected = collected_count(argv[2] if len(argv) == 3 else "")
    if expected == 0:
        print("check_test_count: FAILED: pytest collects no test from test/; the suite is empty",
              file=sys.stderr)
        return 1
    if not junit.is_file():
        print(f"check_test_count: FAILED: colcon test wrote no pytest results ({junit}): colcon did "
              "not run pytest (does setup.py declare extras_require={'test': ['pytest']}?)",
              file=sys.stderr)
        return 1
    ran = junit_count(junit)
    if ran < expected:
        print(f"check_test_count: FAILED: colcon test ran {ran} tests, the suite holds {expected}",
              file=sys.stderr)
        return 1
    print(f"check_test_count: colcon test ran {ran} tests, the suite holds {expected}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
