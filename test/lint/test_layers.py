"""The folders are the layers: every import of the package, the harness, the benchmark and the
tests read from the source (ast, function-level imports too) and held against the rule of
doc/design.md's Layout. A module imports from its own folder and the folders below it, never up,
and no modules import each other in a circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The leaves import nothing of the package; channels/ holds the game's JSON channels, which both
# their ends (fake_game's servers, game/'s clients) import.
LEAVES = ("acres_sim.rotations", "acres_sim.share", "acres_sim.topics", "acres_sim.net",
          "acres_sim.cdr_encoding", "acres_sim.channels", "acres_sim.bodies", "acres_sim.heap",
          "acres_sim.work_dirs", "acres_sim.stop_signals")
# A folder (or module) -> what it may import besides itself and the leaves; the first match counts.
ALLOWED = (
    ("acres_sim.net", ()),
    ("acres_sim.stream", ()),
    ("acres_sim.game", ("acres_sim.stream",)),
    ("acres_sim.convert", ("acres_sim.stream",)),
    ("acres_sim.drive", ("acres_sim.game", "acres_sim.stream", "acres_sim.net")),
    ("acres_sim.middleware", ()),
    ("acres_sim.control", ()),
    ("acres_sim.episode", ()),
    ("acres_sim.description", ("acres_sim.episode",)),
    ("acres_sim.fake_game.world", ()),
    ("acres_sim.fake_game.simulation", ("acres_sim.fake_game.world", "acres_sim.stream",
                                        "acres_sim.episode", "acres_sim.description")),
    ("acres_sim.fake_game.sockets", ("acres_sim.fake_game.simulation", "acres_sim.stream",
                                     "acres_sim.episode")),
    ("acres_sim.fake_game", ("acres_sim.fake_game", "acres_sim.stream", "acres_sim.episode")),
    ("acres_sim.viewer", ("acres_sim.convert", "acres_sim.stream", "acres_sim.middleware",
                          "acres_sim.description")),
    # a scenario is checked against the fake world's vehicles, catalogue and ranges; a run's session
    # starts the nodes as the launch file plans them (launch_plan is ROS-free)
    ("acres_sim.scenario", ("acres_sim.fake_game", "acres_sim.episode", "acres_sim.stream",
                            "acres_sim.nodes.launch_plan")),
    # a learner's world: the scenario's, through the game's own clients (no ROS graph)
    ("acres_sim.learn", ("acres_sim.scenario", "acres_sim.fake_game", "acres_sim.game", "acres_sim.stream",
                         "acres_sim.drive")),
    # a campaign: scenario runs (the runner is started as a process, not imported); its page draws
    # the failing runs from their episode logs
    ("acres_sim.campaign", ("acres_sim.scenario", "acres_sim.episode")),
    ("acres_sim.nodes", ("acres_sim.stream", "acres_sim.convert", "acres_sim.middleware", "acres_sim.game",
                         "acres_sim.drive", "acres_sim.control", "acres_sim.fake_game", "acres_sim.episode",
                         "acres_sim.scenario", "acres_sim.description")),
    ("acres_sim", ()),  # the leaves themselves and __init__
    ("harness", ("acres_sim",)),
    ("benchmark", ("acres_sim", "harness")),
    ("launch", ("acres_sim.nodes", "acres_sim.scenario.command")),
)
ROS_FREE = ("acres_sim.net", "acres_sim.channels", "acres_sim.stream", "acres_sim.control",
            "acres_sim.convert", "acres_sim.game", "acres_sim.drive", "acres_sim.fake_game",
            "acres_sim.episode", "acres_sim.scenario", "acres_sim.description", "acres_sim.learn",
            "acres_sim.campaign")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    found = {}
    for top in ("acres_sim", "harness", "benchmark", "launch"):
        for path in sorted((REPO / top).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _imports(module: str, path: Path) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = {f"{base}.{alias.name}" for alias in node.names}
            out.update(names)
            if not names <= set(SOURCES):  # `from package import module` does not use the package itself
                out.add(base)
    return out


SOURCES = _sources()
GRAPH = {m: {i for i in _imports(m, p) if i in SOURCES and i != m} for m, p in SOURCES.items()}


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _rule(module: str) -> tuple[str, tuple[str, ...]]:
    return next((prefix, allowed) for prefix, allowed in ALLOWED if _within(module, prefix))


def test_every_source_file_has_a_layer_and_the_graph_is_read():
    assert len(SOURCES) > 60 and all(_rule(m) for m in SOURCES)
    assert "acres_sim.stream.protocol" in GRAPH["acres_sim.stream.client"]  # the reader sees imports


def test_no_import_runs_up_a_layer():
    wrong = []
    for module, imported in GRAPH.items():
        prefix, allowed = _rule(module)
        for target in imported:
            if _within(target, prefix) or any(_within(target, a) for a in (*allowed, *LEAVES)):
                continue
            wrong.append(f"{module} -> {target}")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(wrong))


def test_no_modules_import_each_other_in_a_circle():
    # Tarjan's strongly connected components; a component of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in GRAPH:
        if module not in index:
            visit(module)
    assert not circles, circles


def test_the_tests_take_shared_fixtures_from_the_harness_not_the_benchmark():
    # Only the benchmark's own tests import it; the benchmark imports nothing of the tests.
    for path in sorted((REPO / "test").rglob("*.py")):
        imported = _imports("test." + path.stem, path)
        if any(_within(i, "benchmark") for i in imported):
            assert path.name.startswith("test_bench"), f"{path.relative_to(REPO)} imports the benchmark"
    for module in SOURCES:
        assert not any(_within(i, "test") or i in ("conftest", "support") or i.startswith("support.")
                       for i in _imports(module, SOURCES[module])), module


# Modules built on an optional extra: imported only where it is installed (the learners' extras).
NEEDS_EXTRA = {"acres_sim.learn.rllib_env": "ray"}


@pytest.mark.parametrize("package", ROS_FREE)
def test_the_ros_free_folders_import_without_rclpy(package):
    import importlib.util

    modules = sorted(m for m in SOURCES if _within(m, package) and not m.endswith("__main__")
                     and (m not in NEEDS_EXTRA or importlib.util.find_spec(NEEDS_EXTRA[m]) is not None))
    assert modules
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules) \
        + "sys.exit(1 if 'rclpy' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0, modules
