#!/usr/bin/env python3
"""Writes acres_sim/episode/definitions.json (read by definitions.py): the .msg texts of the episode
log's types and their dependencies as each ROS 2 distribution installs them, and their RIHS01 type hashes.

The fake game writes the episode log without ROS, so it carries these texts (as the game carries its
generated schema header). Run after changing interfaces/acres_interfaces, with each distribution's
install prefixes (those holding the generated acres_interfaces and tf2_msgs included), e.g.:
    J=.venv-jazzy K=.venv-kilted I=interfaces_ws/install
    python3 tools/episode_definitions.py jazzy=$J:$J/$I/acres_interfaces:$J/$I/tf2_msgs \
      kilted=$K:$K/$I/acres_interfaces:$K/$I/tf2_msgs
test/lint/test_episode_definitions.py holds the file to the environment it runs in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "interfaces" / "acres_interfaces" / "msg"
OUTPUT = REPO / "acres_sim" / "episode" / "definitions.json"
# The released types the episode log's messages use, its /clock and its viewers' topics (/tf,
# /tf_static, robot_description, joint_states, /sim/markers), with their dependencies.
RELEASED = ("builtin_interfaces/msg/Time", "builtin_interfaces/msg/Duration", "std_msgs/msg/Header",
            "std_msgs/msg/String", "std_msgs/msg/ColorRGBA", "geometry_msgs/msg/Point",
            "geometry_msgs/msg/Pose", "geometry_msgs/msg/Quaternion", "geometry_msgs/msg/Twist",
            "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Transform", "geometry_msgs/msg/TransformStamped",
            "rosgraph_msgs/msg/Clock", "tf2_msgs/msg/TFMessage", "sensor_msgs/msg/JointState",
            "sensor_msgs/msg/CompressedImage", "visualization_msgs/msg/Marker",
            "visualization_msgs/msg/MarkerArray", "visualization_msgs/msg/MeshFile",
            "visualization_msgs/msg/UVCoordinate")


def own_types() -> list[str]:
    return sorted(f"acres_interfaces/msg/{p.stem}" for p in SOURCE.glob("*.msg"))


def read(prefixes: list[Path], type_name: str, suffix: str) -> str:
    package, _, name = type_name.split("/")
    for prefix in prefixes:
        path = prefix / "share" / package / "msg" / f"{name}{suffix}"
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise SystemExit(f"{type_name}{suffix} not found under {', '.join(map(str, prefixes))}")


def collect(prefixes: list[Path]) -> tuple[dict[str, str], dict[str, str]]:
    texts, hashes = {}, {}
    for type_name in (*RELEASED, *own_types()):
        texts[type_name] = read(prefixes, type_name, ".msg")
        entries = json.loads(read(prefixes, type_name, ".json"))["type_hashes"]
        hashes[type_name] = next(e["hash_string"] for e in entries if e["type_name"] == type_name)
    for type_name in own_types():  # the installed text is the source's
        if texts[type_name] != (SOURCE / (type_name.split("/")[-1] + ".msg")).read_text(encoding="utf-8"):
            raise SystemExit(f"{type_name}: the installed text differs from interfaces/: rebuild it")
    return texts, hashes


def render(per_distro: dict[str, tuple[dict[str, str], dict[str, str]]]) -> str:
    distros = sorted(per_distro)
    first = per_distro[distros[0]]
    common = {k: v for k, v in first[0].items() if all(per_distro[d][0][k] == v for d in distros)}
    differing = {d: {k: v for k, v in per_distro[d][0].items() if k not in common} for d in distros}
    for d in distros:
        if per_distro[d][1] != first[1]:
            raise SystemExit(f"type hashes differ between {distros[0]} and {d}")
    data = {"distros": distros, "texts": common, "distro_texts": differing, "hashes": first[1]}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("distro", nargs="+", help="DISTRO=PREFIX[:PREFIX...]: install prefixes with share/")
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args()
    per_distro = {}
    for item in args.distro:
        name, _, paths = item.partition("=")
        per_distro[name] = collect([Path(p) for p in paths.split(":") if p])
    text = render(per_distro)
    if args.check:
        same = OUTPUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUTPUT} differs: run without --check")
        return 0 if same else 1
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
