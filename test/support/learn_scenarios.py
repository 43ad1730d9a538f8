"""The scenarios the learners' tests share: the shipped gate task, and a world of two vehicles each
with a task of its own."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GATE = REPO / "scenarios" / "drive_to_the_gate.yaml"
TWO = """acres_scenario: 1
name: two_to_their_gates
seed: 11
duration_s: 3.0
pace: lockstep
agents:
  polaris: {vehicle: polaris, pose: {x: -10.0, y: -28.0}}
  maxxum: {vehicle: maxxum, pose: {x: -10.0, y: -20.0}}
criteria:
  - {reach: {agent: polaris, x: 10.0, y: -28.0}}
  - {reach: {agent: maxxum, x: 10.0, y: -20.0}}
  - {no_collision: {agent: maxxum}}
"""
