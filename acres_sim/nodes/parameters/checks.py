"""The parameter scheme every node shares: per node a table (name, default, description) that the
node declares, its config/<file>.yaml documents and the README lists, and the checks that turn the
values into the node's configuration, with one clear line for a value it refuses. No rclpy: the
checks are tested without a graph; the runner declares the tables (acres_sim.nodes.runner).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


PORT = (1, 65535)
PORT_OR_ZERO = (0, 65535)  # 0: a free port the kernel picks (or: none)
NON_NEGATIVE = (0.0, math.inf)  # positive-only values take 0 here too; their check refuses it
UINT32_MAX = 0xFFFFFFFF


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str
    # The name of a parameter declared before this one whose value is the default (a default that
    # depends on another value). Config files leave such a parameter out unless they set it, and one
    # whose default is None (not set) too.
    default_from: str | None = None
    # The inclusive range the descriptor advertises (ros2 param describe) and rclpy holds a value of
    # the default's type to; the node's check below refuses the rest with its own message.
    range: tuple[float, float] | None = None


@dataclass(frozen=True)
class NodeParameters:
    """One node's parameter table and the file in config/ that documents it."""

    node: str
    config_file: str
    specs: tuple[ParamSpec, ...]

    @property
    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.specs}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.specs)


class ParameterError(ValueError):
    """A parameter value a node refuses; the message is one line for the user."""


def check_number(name: str, value: Any, integer: bool = False) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(f"parameter {name} must be a number, got {value!r}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise ParameterError(f"parameter {name} must be an integer, got {value!r}")
        return int(value)
    if not math.isfinite(value):
        raise ParameterError(f"parameter {name} must be finite, got {value!r}")
    return float(value)


def check_string(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ParameterError(f"parameter {name} must be a string, got {value!r}")
    return value


def check_boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"parameter {name} must be true or false, got {value!r}")
    return value


def check_integer_in(name: str, value: Any, low: int, high: int | None = None) -> int:
    number = int(check_number(name, value, integer=True))
    if number < low or (high is not None and number > high):
        bound = f"{low}..{high}" if high is not None else f"at least {low}"
        raise ParameterError(f"parameter {name} must be {bound}, got {number}")
    return number


def range_of(table: NodeParameters, name: str) -> tuple[int, int]:
    """An integer parameter's range, as its table advertises it."""
    low, high = next(spec.range for spec in table.specs if spec.name == name and spec.range is not None)
    return int(low), int(high)


def check_port(name: str, value: Any, allow_zero: bool = False) -> int:
    return check_integer_in(name, value, 0 if allow_zero else 1, 65535)


def check_positive(name: str, value: Any) -> float:
    number = float(check_number(name, value))
    if not number > 0:
        raise ParameterError(f"parameter {name} must be positive, got {number}")
    return number


def check_names(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v and not any(c.isspace() for c in v)
                                         for v in value) or not value or len(set(value)) < len(value):
        raise ParameterError(f"parameter {name} must be distinct non-empty names, got {value!r}")
    return tuple(value)
