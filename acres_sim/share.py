"""Where the package's installed files are: the ament index's share directory of a package, and
config/<name> of acres_sim installed, else of the source tree (tests and `python3 -m` from a
checkout). A leaf: no other acres_sim import, no rclpy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

PACKAGE = "acres_sim"
SOURCE_CONFIG = Path(__file__).resolve().parent.parent / "config"

ShareLookup = Callable[[str], str]  # package name -> its share directory (ament_index_python's)


def share_of(package: str, share_dir: ShareLookup | None = None) -> Path | None:
    """The package's share directory, None where it is not installed or there is no ament index."""
    try:
        if share_dir is None:
            from ament_index_python.packages import get_package_share_directory
            share_dir = get_package_share_directory
        return Path(share_dir(package))
    except (ImportError, LookupError, ValueError, OSError):
        return None


def config_path(name: str, share_dir: ShareLookup | None = None) -> Path | None:
    """config/<name> of the installed acres_sim, else of the source tree; None if neither has it."""
    installed = share_of(PACKAGE, share_dir)
    candidates = ([installed / "config" / name] if installed is not None else []) + [SOURCE_CONFIG / name]
    return next((path for path in candidates if path.is_file()), None)
