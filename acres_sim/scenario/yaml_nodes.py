"""YAML read node by node (ROS-free): every value keeps its line, so a refusal names the file, the
line and the dotted key (`bale.yaml:14: criteria.1.stop_before.entity: ...`). The scenario file's
reader and the campaign file's are built on it; both raise ScenarioError.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from acres_sim.scenario.errors import ScenarioError


def compose(path: Path, what: str) -> yaml.Node | None:
    """The file's YAML as nodes (None: an empty file); ScenarioError when it cannot be read or is
    not YAML."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(str(path), "", f"cannot read the {what}: {exc.strerror or exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ScenarioError(f"{path}{line}", "", f"not YAML: {getattr(exc, 'problem', exc)}") from None
    return root


class NodeReader:
    """Walks the YAML nodes with their lines; every refusal names the key and where it is."""

    def __init__(self, path: str):
        self.path = path

    def where(self, node: yaml.Node) -> str:
        mark = node.start_mark
        if mark.line < 0:  # a --set value
            return str(mark.name)
        return f"{self.path}:{mark.line + 1}"

    def fail(self, node: yaml.Node, key: str, message: str) -> ScenarioError:
        return ScenarioError(self.where(node), key, message)

    def pairs(self, node: yaml.Node, key: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """A mapping's entries as (name, the key's node, the value's node), each name once."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, "must be a mapping")
        out, seen = [], set()
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else None
            full = f"{key}.{name}" if key else str(name)
            if name is None:
                raise self.fail(k, full, "a key must be a single value")
            if name in seen:
                raise self.fail(k, full, "given twice")
            seen.add(name)
            out.append((name, k, v))
        return out

    def mapping(self, node: yaml.Node, key: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()
                ) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key, f"must be a mapping of {', '.join(allowed)}")
        out: dict[str, yaml.Node] = {}
        for name, k, v in self.pairs(node, key):
            if name not in allowed:
                full = f"{key}.{name}" if key else name
                raise self.fail(k, full, f"unknown key (known here: {', '.join(allowed)})")
            out[name] = v
        for name in required:
            if name not in out:
                raise self.fail(node, f"{key}.{name}" if key else name, "missing (required)")
        return out

    def number(self, node: yaml.Node, key: str, low: float = -math.inf, high: float = math.inf) -> float:
        value = self.scalar(node, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(node, key, f"must be a finite number, got {node.value!r}")
        if not low <= value <= high:
            raise self.fail(node, key, f"{value:g} is out of range [{low:g}, {high:g}]")
        return float(value)

    def integer(self, node: yaml.Node, key: str) -> int:
        value = self.scalar(node, key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, key, f"must be an integer, got {node.value!r}")
        return value

    def text(self, node: yaml.Node, key: str) -> str:
        value = self.scalar(node, key)
        if not isinstance(value, str) or not value:
            raise self.fail(node, key, f"must be a non-empty string, got {getattr(node, 'value', node)!r}")
        return value

    def scalar(self, node: yaml.Node, key: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, key, "must be a single value")
        return self.value(node)

    @staticmethod
    def value(node: yaml.Node) -> Any:
        """Any node as the plain value YAML makes of it."""
        return yaml.safe_load(yaml.serialize(node))

    def sequence(self, node: yaml.Node, key: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, "must be a list")
        return list(node.value)
