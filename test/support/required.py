"""Imports a guard test cannot do without. Where a package may legitimately be absent (a user's
workspace without it) the test skips and says why; in CI (CI=true), which installs everything the
suite uses, a guard that skipped would guard nothing, so the absence fails the test instead."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def required(module: str, reason: str) -> ModuleType:
    """The module; absent: a skip that says `reason`, or in CI a failure."""
    if not in_ci():
        return pytest.importorskip(module, reason=reason)
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{module} must import in CI ({reason}): {exc}", pytrace=False)


def absent(reason: str) -> None:
    """Something the guard checks is not installed: skip, or in CI fail."""
    if in_ci():
        pytest.fail(f"not installed in CI: {reason}", pytrace=False)
    pytest.skip(reason)
