"""The control channel as one description (acres_sim.channels.control) held against the fake game
over a real socket: every refusal the game can send arrives with a code the client knows, each op
the channel lists is answered, the requests' first name for an entity ("agent") keeps working, and
the connection goes on after each refusal."""

from __future__ import annotations

import json
import socket

import pytest
from support.fake_game import FakeGame

from acres_sim.channels import control as channel
from acres_sim.game.control_client import ControlClient, ControlRefused

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution


@pytest.fixture(scope="module")
def game():
    g = FakeGame("--lockstep", "--control-port", "0", "--ports", "0", "--vehicles", "polaris", "--no-noise")
    client = ControlClient(g.control_port(), timeout_s=60.0)
    yield g, client
    client.close()
    if g.proc.poll() is None:
        g.stop()


def _raw(port: int, request: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=30.0) as sock:
        sock.sendall(json.dumps(request).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = sock.recv(65536)
            assert chunk, "the game closed the connection"
            answer += chunk
    return json.loads(answer)


def test_every_refusal_class_has_a_code_of_the_channel():
    refusals = [cls for cls in vars(channel).values()
                if isinstance(cls, type) and issubclass(cls, channel.Refusal)]
    assert len(refusals) >= 10
    assert {cls.code for cls in refusals} <= set(channel.ERROR_CODES)
    assert len(set(channel.ERROR_CODES)) == len(channel.ERROR_CODES)


def test_every_refusal_the_game_sends_has_a_code_the_client_knows(game, tmp_path):
    g, client = game
    bad_log = tmp_path / "not_a_log.mcap"
    bad_log.write_bytes(b"not an mcap file")
    cases = {
        channel.BAD_REQUEST: {"op": "step", "steps": 0},
        channel.NOT_FOUND: {"op": "get_state", "name": "ghost"},
        channel.INVALID_POSE: {"op": "set_state", "name": "polaris", "position": [0, 0, 0],
                               "orientation": [0, 0, 0, 0]},
        channel.NO_RESOURCE: {"op": "spawn", "uri": "acres://objects/tractor", "position": [0, 0, 0]},
        channel.NAME_TAKEN: {"op": "spawn", "uri": "acres://objects/round_bale", "name": "polaris",
                             "position": [0, 0, 0]},
        channel.NAME_INVALID: {"op": "spawn", "uri": "acres://objects/round_bale", "name": "1bale",
                               "position": [0, 0, 0]},
        channel.NOT_DELETABLE: {"op": "delete", "name": "polaris"},
        channel.OUT_OF_RANGE: {"op": "set_conditions", "conditions": {"dust": 7.0}},
        channel.FILE_ERROR: {"op": "replay_start", "path": str(bad_log)},
    }
    for code, request in cases.items():
        answer = _raw(g.control_port(), request)
        assert answer["ok"] is False and answer["code"] == code, (request, answer)
        with pytest.raises(ControlRefused) as refused:
            client.request(request)
        assert refused.value.code == code  # the client keeps the code it was sent
    client.play()
    try:
        answer = _raw(g.control_port(), {"op": "step", "steps": 1, "paused_only": True})
        assert answer["code"] == channel.INCORRECT_STATE
    finally:
        client.pause()
    assert client.step(1).step >= 1  # the channel goes on
    for request, why in (({"op": "reset", "scope": "all", "seed": -1}, "seed must be an integer"),
                         ({"op": "reset", "scope": "all", "seed": 1.5}, "seed must be an integer"),
                         ({"op": "reset", "scope": "time", "seed": 3}, "a seed takes scope all")):
        answer = _raw(g.control_port(), request)
        assert answer["code"] == channel.BAD_REQUEST and why in answer["error"], answer
    assert client.reset("all", seed=12345).step == 0


def test_each_op_is_answered_and_an_unknown_one_lists_them(game):
    g, _client = game
    answer = _raw(g.control_port(), {"op": "warp"})
    assert answer["code"] == channel.BAD_REQUEST
    for op in channel.OPS:
        assert op in answer["error"]
    for op in ("status", "entities", "spawnables", "episode_status"):
        assert _raw(g.control_port(), {"op": op})["ok"] is True


def test_an_entity_is_named_by_name_or_by_its_first_field_agent(game):
    g, client = game
    by_name = _raw(g.control_port(), {"op": "get_state", "name": "polaris"})
    by_agent = _raw(g.control_port(), {"op": "get_state", "agent": "polaris"})
    assert by_name["name"] == by_name["agent"] == by_agent["name"] == "polaris"
    assert by_name["position"] == by_agent["position"]
    state = client.set_state("polaris", (1.0, 2.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    assert state.name == "polaris" and state.held and state.position == (1.0, 2.0, 0.0)


def test_one_pose_check_with_its_limits_named():
    position, quaternion = channel.checked_pose([1, 2, 3], [0, 0, 0, 2], channel.OBJECT_HALF_EXTENT_M)
    assert position == (1.0, 2.0, 3.0) and quaternion == (0.0, 0.0, 0.0, 2.0)
    with pytest.raises(channel.InvalidPose, match="at most 1000 m"):
        channel.checked_pose([1001, 0, 0], [0, 0, 0, 1], channel.OBJECT_HALF_EXTENT_M)
    assert channel.checked_pose([1001, 0, 0], [0, 0, 0, 1], channel.AGENT_HALF_EXTENT_M)[0][0] == 1001.0
    for position, orientation, message in (([0, 0], [0, 0, 0, 1], "list of 3"),
                                           ([0, float("nan"), 0], [0, 0, 0, 1], "finite"),
                                           ([0, 0, 0], [0, 0, 0, 1e-9], "no rotation"),
                                           ([0, True, 0], [0, 0, 0, 1], "list of 3")):
        with pytest.raises(channel.InvalidPose, match=message):
            channel.checked_pose(position, orientation, channel.AGENT_HALF_EXTENT_M)
