"""acres_sim/episode/definitions.json (generated) against the environment it runs in: every .msg text
as this distribution installs it and every type hash as rosidl computed it; interfaces/ as the one
source of acres_interfaces; and the episode codec against rclpy's own CDR for every
acres_interfaces message."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.required import required

from acres_sim.episode import definitions
from acres_sim.episode.log_file import CODEC, ros_distro, texts

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "interfaces" / "acres_interfaces"

acres_msg = required("acres_interfaces.msg", "acres_interfaces is not built in this environment "
                     "(interfaces/acres_interfaces; see the README)")


def _installed(type_name: str, suffix: str) -> Path:
    package, _, name = type_name.split("/")
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        path = Path(prefix) / "share" / package / "msg" / f"{name}{suffix}"
        if path.is_file():
            return path
    pytest.fail(f"{type_name}{suffix} is not installed under AMENT_PREFIX_PATH")


def test_the_texts_and_hashes_are_those_this_distribution_installs():
    distro = ros_distro()
    assert distro in definitions.DISTROS
    mine = texts(distro)
    assert set(mine) == set(definitions.HASHES)
    for type_name, text in mine.items():
        assert _installed(type_name, ".msg").read_text(encoding="utf-8") == text, type_name
        hashes = json.loads(_installed(type_name, ".json").read_text(encoding="utf-8"))["type_hashes"]
        assert definitions.HASHES[type_name] == next(h["hash_string"] for h in hashes
                                                     if h["type_name"] == type_name), type_name


def test_interfaces_is_the_one_source_of_acres_interfaces():
    own = {p.stem for p in (SOURCE / "msg").glob("*.msg")}
    assert own == {k.split("/")[-1] for k in definitions.TEXTS if k.startswith("acres_interfaces/")}
    for name in own:
        assert definitions.TEXTS[f"acres_interfaces/msg/{name}"] == \
            (SOURCE / "msg" / f"{name}.msg").read_text(encoding="utf-8"), name


def _filled(message, depth: int = 0):
    """Every field of a message set to something other than its zero value."""
    fields = message.get_fields_and_field_types()
    for index, (name, kind) in enumerate(fields.items()):
        value = getattr(message, name)
        seed = index + 1 + depth * 10
        if kind == "string":
            setattr(message, name, f"{name}-{seed}")
        elif kind == "boolean":
            setattr(message, name, True)
        elif kind.startswith("boolean["):
            setattr(message, name, [bool(i % 2) for i in range(len(value))])
        elif kind in ("double", "float"):
            setattr(message, name, seed + 0.5)
        elif kind.startswith(("uint", "int", "octet")) and "[" not in kind and "<" not in kind:
            setattr(message, name, seed)
        elif "[" in kind and kind.split("[")[0] in ("uint8", "uint32", "int32", "double", "float"):
            setattr(message, name, [seed + i for i in range(len(value))])
        elif kind.startswith("sequence<"):
            element = kind[len("sequence<"):-1]  # nested messages: two filled elements
            if "/" in element:
                package, cls = element.split("/")
                klass = getattr(__import__(f"{package}.msg", fromlist=[cls]), cls)
                setattr(message, name, [_filled(klass(), depth + 1), _filled(klass(), depth + 2)])
        elif "/" in kind:
            _filled(value, depth + 1)
    return message


@pytest.mark.parametrize("name", sorted(p.stem for p in (SOURCE / "msg").glob("*.msg")))
def test_the_episode_codec_and_rclpy_read_each_other(name):
    from rclpy.serialization import deserialize_message, serialize_message

    klass = getattr(acres_msg, name)
    message = _filled(klass())
    assert message != klass()
    type_name = f"acres_interfaces/msg/{name}"
    decoded = CODEC.decode(type_name, serialize_message(message))
    assert deserialize_message(CODEC.encode(type_name, decoded), klass) == message
