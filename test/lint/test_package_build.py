"""The package as colcon sees it: `colcon test` must pick pytest and find the whole suite.

colcon reads setup.py through its own package identification and augmentation, then asks each
Python testing step whether it matches. These tests run that same code on this repository, so a
setup.py that colcon would test with unittest (and run nothing) fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.required import required

REPO = Path(__file__).resolve().parents[2]

colcon_identification = required("colcon_core.package_identification",
                                 "colcon-core is not installed (colcon test needs it)")
colcon_augmentation = required("colcon_core.package_augmentation", "colcon-core is not installed")
required("colcon_ros", "colcon-ros is not installed (needed for ament_python packages)")

from colcon_core.task.python import get_setup_data  # noqa: E402
from colcon_core.task.python.test.pytest import PytestPythonTestingStep  # noqa: E402


def _setup_data_as_colcon_reads_it() -> dict:
    desc = colcon_identification.identify(
        colcon_identification.get_package_identification_extensions(), str(REPO))
    assert desc is not None and desc.name == "acres_sim"
    assert desc.type == "ros.ament_python"
    extensions = colcon_augmentation.get_package_augmentation_extensions()
    # Only the extensions that read package.xml and setup.py; the others need colcon's arguments.
    chosen = {k: v for k, v in extensions.items() if k in ("ros", "ros_ament_python", "python_setup_py")}
    colcon_augmentation.augment_packages({desc}, augmentation_extensions=chosen)
    return get_setup_data(desc, dict(os.environ))


def test_colcon_selects_pytest_for_colcon_test():
    data = _setup_data_as_colcon_reads_it()
    assert PytestPythonTestingStep().match(None, dict(os.environ), data), (
        "colcon would not run pytest: setup.py must declare extras_require={'test': ['pytest']}")


def test_setup_py_has_no_unknown_options_for_this_setuptools():
    run = subprocess.run([sys.executable, "setup.py", "--name"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "acres_sim"
    assert "Unknown distribution option" not in run.stderr, run.stderr


def test_pytest_collects_the_suite_colcon_would_run():
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "test"], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    ids = [line for line in run.stdout.splitlines() if "::" in line]
    modules = {line.split("::")[0] for line in ids}
    # The ROS-free modules always contribute (others may skip where rclpy or launch is absent).
    on_disk = {p.relative_to(REPO).as_posix() for p in (REPO / "test").rglob("test_*.py")}
    assert modules <= on_disk
    # Every kind is collected: unit/, integration/ and lint/.
    assert {"test/unit/test_protocol.py", "test/integration/test_stream.py",
            "test/lint/test_package_build.py"} <= modules
    assert {m.split("/")[1] for m in on_disk} == {"unit", "integration", "lint"}
    assert len(ids) > 200


def test_the_licence_file_is_the_licence_package_xml_and_setup_py_declare():
    import xml.etree.ElementTree as ET

    declared = ET.parse(REPO / "package.xml").getroot().findtext("license")
    assert declared == "Apache-2.0"
    assert f'license="{declared}"' in (REPO / "setup.py").read_text()
    words = (REPO / "LICENSE").read_text().split()
    assert words[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in " ".join(words)


def test_every_config_launch_and_scenario_file_is_installed():
    """setup.py's data_files, as colcon reads them, hold every file users open from share/ (the
    Foxglove layout and the rviz config among them)."""
    data_files = _setup_data_as_colcon_reads_it()["data_files"]
    installed = {str(Path(f)) for _, files in data_files for f in files}
    shipped = {str(p.relative_to(REPO)) for folder in ("config", "launch", "scenarios")
               for p in (REPO / folder).iterdir() if p.is_file()}
    assert shipped <= installed, sorted(shipped - installed)
