"""Choosing and applying the Fast DDS large-data profile for the bridge's own process.

Fast DDS's built-in shared-memory segment (512 KB) is smaller than one cloud or image, so large
samples fall back to fragmented UDP and get late or lost. The shipped profile gives the bridge a
16 MB segment. Fast DDS reads FASTDDS_DEFAULT_PROFILES_FILE when the participant is created, so
this must run before rclpy.init(); that is also why it is an environment variable
(ACRES_SIM_DDS_PROFILE) and not a ROS parameter. No rclpy import here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path

PROFILE_FILE_NAME = "fastdds_large_data.xml"
OVERRIDE_VARIABLE = "ACRES_SIM_DDS_PROFILE"
FASTDDS_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"
LEGACY_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"
FAST_DDS_RMWS = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")


@dataclass(frozen=True)
class ProfileChoice:
    path: str | None  # the file this process will use (set by us or by the user), None for none
    applied: bool  # True when this module set FASTDDS_DEFAULT_PROFILES_FILE
    message: str  # one log line saying which profile is used and why


def _installed_share(share_dir: Callable[[], str] | None) -> str | None:
    try:
        if share_dir is not None:
            return share_dir()
        from ament_index_python.packages import get_package_share_directory
        return get_package_share_directory("acres_sim")
    except (ImportError, LookupError, ValueError, OSError):  # not installed, or no ament index
        return None


def shipped_profile(share_dir: Callable[[], str] | None = None) -> Path | None:
    """config/fastdds_large_data.xml of the installed package, else of the source tree."""
    candidates = []
    installed = _installed_share(share_dir)
    if installed is not None:
        candidates.append(Path(installed) / "config" / PROFILE_FILE_NAME)
    candidates.append(Path(__file__).resolve().parent.parent / "config" / PROFILE_FILE_NAME)
    for path in candidates:
        if path.is_file():
            return path
    return None


def choose_profile(environ: MutableMapping[str, str],
                   share_dir: Callable[[], str] | None = None) -> ProfileChoice:
    """What to do, without changing anything."""
    override = environ.get(OVERRIDE_VARIABLE, "").strip()
    if override.lower() == "off":
        return ProfileChoice(None, False, f"DDS profile: none ({OVERRIDE_VARIABLE}=off)")
    if override:  # an explicit file for this process wins over everything but "off"
        if not Path(override).is_file():
            return ProfileChoice(None, False, f"DDS profile: none ({OVERRIDE_VARIABLE}={override} is not "
                                              "a file; large clouds and images may arrive late)")
        return ProfileChoice(str(Path(override).resolve()), True,
                             f"DDS profile: {override} (from {OVERRIDE_VARIABLE})")
    rmw = environ.get("RMW_IMPLEMENTATION", "").strip()
    if rmw and rmw not in FAST_DDS_RMWS:
        return ProfileChoice(None, False, f"DDS profile: none (RMW_IMPLEMENTATION={rmw} is not Fast DDS)")
    for variable in (FASTDDS_VARIABLE, LEGACY_VARIABLE):
        if environ.get(variable):
            return ProfileChoice(environ[variable], False,
                                 f"DDS profile: {environ[variable]} (from {variable}, set by the user)")
    path = shipped_profile(share_dir)
    if path is None:
        return ProfileChoice(None, False, f"DDS profile: none ({PROFILE_FILE_NAME} not found; large "
                                          "clouds and images may arrive late)")
    return ProfileChoice(str(path), True, f"DDS profile: {path} (16 MB shared-memory segment for large "
                                          "messages)")


def apply_profile(environ: MutableMapping[str, str] | None = None,
                  share_dir: Callable[[], str] | None = None) -> ProfileChoice:
    """Choose, and set FASTDDS_DEFAULT_PROFILES_FILE when the choice says so. Before rclpy.init()."""
    env = os.environ if environ is None else environ
    choice = choose_profile(env, share_dir)
    if choice.applied and choice.path is not None:
        env[FASTDDS_VARIABLE] = choice.path
    return choice
