"""ROS 2 .msg definitions as data (ROS-free): fields, constants, and the complete definition text a
bag stores for a type (ros2msg: the type's text, then each dependency after a line of 80 '=' and
'MSG: pkg/Type', in the order rosbag2's LocalMessageDefinitionSource appends them)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PRIMITIVES = ("bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
              "int32", "uint32", "int64", "uint64", "string")
SEPARATOR = "=" * 80 + "\n"
# rosbag2 finds a definition's dependencies with this pattern (a type at the start of a line), and
# keeps them in a sorted set: the order of the MSG: sections follows from it.
_DEPENDENCY = re.compile(r"(?:^|\n)\s*([a-zA-Z0-9_/]+)(?:\[[^\]]*\])?\s+")
# type (a bounded string's bound dropped), array brackets, name, then a constant's value or a default
_FIELD = re.compile(r"^([a-zA-Z0-9_/]+)(?:<=\d+)?(\[(<=)?(\d*)\])?\s+([a-zA-Z0-9_]+)(\s*=.*|\s+\S.*)?$")


class DefinitionError(ValueError):
    """A .msg text this module cannot read, or a type it was not given."""


def type_key(name: str) -> str:
    """'pkg/Type' or 'pkg/msg/Type' -> 'pkg/msg/Type'."""
    parts = name.split("/")
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    if len(parts) == 3 and parts[1] == "msg":
        return name
    raise DefinitionError(f"not a message type name: {name!r}")


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # a primitive, or 'pkg/msg/Type'
    length: int | None  # None: one value; -1: a sequence; n: a fixed array of n


@dataclass(frozen=True)
class MessageDef:
    type: str  # 'pkg/msg/Type'
    fields: tuple[Field, ...]
    constants: tuple[tuple[str, str, str], ...]  # (type, name, value text)


def parse(type_name: str, text: str) -> MessageDef:
    """The fields and constants of one .msg text."""
    package = type_key(type_name).split("/")[0]
    fields: list[Field] = []
    constants: list[tuple[str, str, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _FIELD.match(line)
        if match is None:
            raise DefinitionError(f"{type_name} line {number}: cannot read {raw!r}")
        kind, bracket, bounded, size, name, value = match.groups()
        if value is not None and value.strip().startswith("="):
            constants.append((kind, name, value.strip()[1:].strip()))
            continue
        if kind not in PRIMITIVES:
            kind = type_key(kind if "/" in kind else f"{package}/{kind}")
        length = None if bracket is None else (int(size) if size and not bounded else -1)
        fields.append(Field(name, kind, length))
    return MessageDef(type_key(type_name), tuple(fields), tuple(constants))


def dependencies(type_name: str, text: str) -> list[str]:
    """The types a .msg text names, as rosbag2 spells them ('pkg/Type'), sorted as its set is."""
    package = type_key(type_name).split("/")[0]
    found = set()
    for match in _DEPENDENCY.finditer(text):
        kind = match.group(1)
        if kind in PRIMITIVES:
            continue
        found.add(kind if "/" in kind else f"{package}/{kind}")
    return sorted(found)


def full_text(root: str, texts: Mapping[str, str]) -> str:
    """The complete ros2msg definition of `root` (texts: 'pkg/msg/Type' -> .msg text), byte for byte
    as rosbag2 writes it into a bag's schema."""
    seen: set[str] = set()

    def append(name: str) -> str:
        key = type_key(name)
        if key not in texts:
            raise DefinitionError(f"no definition of {key}")
        result = texts[key]
        for dependency in dependencies(key, texts[key]):
            if dependency not in seen:
                seen.add(dependency)
                result += "\n" + SEPARATOR + "MSG: " + dependency + "\n" + append(dependency)
        return result

    return append(root)


def split_full_text(root: str, text: str) -> dict[str, str]:
    """The .msg texts ('pkg/msg/Type' -> text) of a complete ros2msg definition (full_text's form)."""
    parts = text.split("\n" + SEPARATOR)
    texts = {type_key(root): parts[0]}
    for part in parts[1:]:
        head, _, body = part.partition("\n")
        if not head.startswith("MSG: "):
            raise DefinitionError(f"{root}: a dependency's definition does not start with 'MSG: pkg/Type'")
        texts[type_key(head[len("MSG: "):].strip())] = body
    return texts
