"""`--set key=value` (ROS-free): one key of a scenario's YAML changed for one run, in the node tree
before the checks, so that an override is checked like the file and a refusal names the --set.

Dotted keys address the YAML: a mapping's key, a list item by its `name` (objects) or its index
(criteria, events): `conditions.dust=0.5`, `objects.bale1.pose.x=4`, `agents.polaris.pose.yaw_deg=90`,
`criteria.0.reach.within_s=12`. The value is read as YAML (a number, a string, a list); a key the file
lacks is added, with the mappings above it that it lacks (conditions.dust in a file without
conditions); a list item must exist.
"""

from __future__ import annotations

import yaml

from acres_sim.scenario.errors import ScenarioError


def apply_override(root: yaml.MappingNode, override: str) -> None:
    """One `key=value` into the document (see the module's docstring)."""
    key, sep, value = override.partition("=")
    where = f"--set {override}"
    if not sep or not key:
        raise ScenarioError(where, "", "give it as key=value, e.g. conditions.dust=0.5")
    try:
        new = yaml.compose(value, Loader=yaml.SafeLoader) or yaml.ScalarNode("tag:yaml.org,2002:null", "")
    except yaml.YAMLError as exc:
        raise ScenarioError(where, key, f"the value is not YAML: {exc}") from None
    _mark_all(new, where)
    parts = key.split(".")
    node: yaml.Node = root
    for depth_, part in enumerate(parts):
        last = depth_ == len(parts) - 1
        if isinstance(node, yaml.MappingNode):
            found = next((pair for pair in node.value if pair[0].value == part), None)
            if last:
                if found is None:
                    added = yaml.ScalarNode("tag:yaml.org,2002:str", part)
                    _mark_all(added, where)
                    node.value.append((added, new))
                else:
                    node.value[node.value.index(found)] = (found[0], new)
                return
            if found is None:  # a section the file leaves out (conditions, shifts): made for the key
                found = (yaml.ScalarNode("tag:yaml.org,2002:str", part),
                         yaml.MappingNode("tag:yaml.org,2002:map", []))
                _mark_all(found[0], where)
                _mark_all(found[1], where)
                node.value.append(found)
            node = found[1]
        elif isinstance(node, yaml.SequenceNode):
            index = _item(node, part)
            if index is None:
                within = '.'.join(parts[:depth_]) or 'the file'
                raise ScenarioError(where, key, f"no item {part!r} in {within} "
                                    "(an index, or an object's name)")
            if last:
                node.value[index] = new
                return
            node = node.value[index]
        else:
            raise ScenarioError(where, key, f"{'.'.join(parts[:depth_])} is a value, not a mapping or list")


def _item(node: yaml.SequenceNode, part: str) -> int | None:
    if part.isdigit():
        return int(part) if int(part) < len(node.value) else None
    for i, item in enumerate(node.value):
        if isinstance(item, yaml.MappingNode):
            for k, v in item.value:
                if k.value == "name" and getattr(v, "value", None) == part:
                    return i
    return None


def _mark_all(node: yaml.Node, where: str) -> None:
    node.start_mark = yaml.Mark(where, 0, -1, 0, None, None)
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            _mark_all(k, where)
            _mark_all(v, where)
    elif isinstance(node, yaml.SequenceNode):
        for v in node.value:
            _mark_all(v, where)
