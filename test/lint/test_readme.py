"""The README's tables against the code, so that they cannot drift: topics against the topic plan,
parameters against the declared ParamSpecs, launch arguments against the launch file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from support.page_examples import POLARIS_HELLO_JSON

from acres_sim.nodes.parameters import NODES
from acres_sim.stream.hello import parse_hello
from acres_sim.convert.topic_plan import topic_plan

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
ALWAYS = {"sim/barrier": "UInt64", "sim/clock_offset": "Float64", "/clock": "Clock",
          "/tf_static": "TFMessage", "/diagnostics": "DiagnosticArray"}


def table_after(heading: str) -> list[list[str]]:
    """The rows (cells, backticks kept) of the first table under a `## heading`."""
    section = README.split(f"\n## {heading}\n", 1)[1]
    rows, started = [], False
    for line in section.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif started:
            break
    return rows[1:]  # without the header row


def names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_topic_table_is_the_topic_plan():
    plan = topic_plan(parse_hello(POLARIS_HELLO_JSON))
    expected = {t: kind for t, (kind, _) in plan.items()} | ALWAYS
    rows = table_after("Topics")
    documented = {}
    for cells in rows:
        for name in names(cells[0]):
            documented[name.split(" ")[0]] = cells[1].split("/")[-1]
    assert set(documented) == set(expected), set(documented) ^ set(expected)
    for topic, kind in expected.items():
        assert documented[topic] == kind, \
            f"{topic}: README says {documented[topic]}, the bridge publishes {kind}"


def _readme_default(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if value == "":
        return '""'
    if isinstance(value, int) and value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value >> 20} MiB"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


@pytest.mark.parametrize("table", NODES, ids=lambda t: t.node)
def test_parameter_tables_are_the_declared_parameters(table):
    specs = {p.name: p for p in table.specs}
    seen: set[str] = set()
    for cells in table_after(f"Parameters of {table.node}"):
        row_names = names(cells[0])
        seen.update(row_names)
        defaults = [d.strip() for d in cells[1].split(",")]
        if len(defaults) == len(row_names):
            for name, default in zip(row_names, defaults):
                assert name in specs, f"README documents {name}, which {table.node} does not declare"
                if specs[name].default_from is None and specs[name].default is not None:
                    assert default == _readme_default(specs[name].default), (name, default)
    assert seen == set(specs), seen ^ set(specs)


def test_launch_argument_table_is_the_launch_file():
    tree = ast.parse((REPO / "launch" / "bridge.launch.py").read_text())
    arguments = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                     and any(getattr(t, "id", "") == "ARGUMENTS" for t in node.targets))
    declared = {}
    for item in arguments.elts:
        name, default = item.elts[0].value, item.elts[1]
        declared[name] = default.value if isinstance(default, ast.Constant) else None
    rows = {names(cells[0])[0]: cells[1] for cells in table_after("bridge.launch.py")}
    assert set(rows) == set(declared), set(rows) ^ set(declared)
    for name, default in declared.items():
        if default:  # literal defaults must read the same; computed ones (the params file) are described
            assert rows[name] == default, (name, rows[name], default)


def test_distribution_table_is_the_locks_and_the_profiles_the_bridge_applies():
    from acres_sim.middleware import dds

    rows = table_after("Quickstart: two commands")
    assert [names(row[0])[0] for row in rows] == ["jazzy", "kilted"]
    for row in rows:
        distro = names(row[0])[0]
        lock = (REPO / "tools" / f"requirements-ros-{distro}.txt").read_text()
        pins = dict(re.findall(r"^(ros-[\w-]+)==([\w.]+)$", lock, re.M))
        assert row[2] == pins["ros-rclpy"]
        fast_dds = pins.get("ros-fastrtps") or pins["ros-fastdds"]
        assert row[3] == f"{fast_dds} ({pins['ros-rmw-fastrtps-cpp']})"
        generation = int(fast_dds.split(".")[0])
        variable, name = dds.GENERATIONS[generation]
        assert names(row[4]) == [f"config/{name}", variable]
