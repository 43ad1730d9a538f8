"""The topics of one bridge, as the benchmark's subscriber processes take them."""

from __future__ import annotations

from typing import Any


def bridge_topics(hello: Any, namespace: str = "", clock: bool = True) -> list[list[str]]:
    """[absolute topic, type name, qos kind] of every topic one bridge publishes for this Hello at
    its defaults, except the compressed image (its JPEG encoding is not what this measures)."""
    from acres_sim.convert.topic_plan import topic_plan

    spec = [["/clock", "Clock", "clock"]] if clock else []
    for topic, (type_name, kind) in topic_plan(hello, compressed=False).items():
        spec.append([topic if topic.startswith("/") else f"{namespace}/{topic}", type_name, kind])
    return spec
