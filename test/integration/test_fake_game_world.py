"""The fake game's world varied over real sockets (the control channel's ControlClient, the watch
feed sim_control uses, a stream client): spawned objects in the agents' clouds, the changes on the
feed and in the episode log, replayed at their time, resets, and every refusal with the channel
going on."""

from __future__ import annotations

import numpy as np
import pytest
from support.fake_game import Client, FakeGame, FeedEvents, wait_streams_connected

from acres_sim.episode.log_file import CONDITIONS, OBJECTS, SHIFTS, read_episode
from acres_sim.game.control_client import ControlClient, ControlRefused
from acres_sim.game.episode_feed import EpisodeFeed
from acres_sim.stream.protocol import FrameType

AGENTS = ("polaris", "maxxum")


@pytest.fixture
def game():
    started = []

    def start(*extra: str):
        g = FakeGame("--lockstep", "--control-port", "0", "--ports", "0,0", "--vehicles", ",".join(AGENTS),
                     "--no-noise", *extra)
        control = ControlClient(g.control_port(), timeout_s=60.0)
        events = FeedEvents()
        feed = EpisodeFeed(control.port, events.on_event, lambda text: None)
        feed.start()
        started.append((g, control, feed))
        events.wait(lambda e: e.of("conditions") and e.of("objects") and e.of("shifts"))
        return g, control, events

    yield start
    for g, control, feed in started:
        feed.stop()
        control.close()
        if g.proc.poll() is None:
            g.stop()


def _stamp_ns(message: dict) -> int:
    return message["header"]["stamp"]["sec"] * 10**9 + message["header"]["stamp"]["nanosec"]


def test_changes_reach_the_feed_and_the_log_and_a_replay_applies_them_at_their_time(game, tmp_path):
    path = str(tmp_path / "world.mcap")
    g, control, events = game("--episode-log", path)
    control.step(12)
    placed = control.spawn("bale", "acres://objects/round_bale", (10.0, -28.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    assert placed.name == "bale" and placed.position[2] == pytest.approx(0.0, abs=2.0)
    control.set_conditions({"dust": 0.25})
    control.step(12)
    control.set_shift("maxxum", {"lidar_offset_m": [0.0, 0.0, 0.05], "throttle_gain": 0.8})
    control.step(12)
    control.delete("bale")
    control.step(12)
    assert control.record_stop()["message_count"] > 0
    log = read_episode(path)
    changes = [(ns, topic) for ns, topic, _m in log.world]
    # as they were at the start, then at 0.1 s the bale and the dust, at 0.2 s the shift, at 0.3 s no bale
    assert changes == [(0, OBJECTS), (0, SHIFTS), (0, CONDITIONS), (10**8, OBJECTS), (10**8, CONDITIONS),
                       (2 * 10**8, SHIFTS), (3 * 10**8, OBJECTS)]
    assert [o["name"] for o in log.world[3][2]["objects"]] == ["bale"]
    assert log.world[4][2]["dust"] == pytest.approx(0.25)
    logged_shift = next(s for s in log.world[5][2]["shifts"] if s["agent"] == "maxxum")
    assert logged_shift["lidar_offset_m"]["z"] == 0.05 and logged_shift["throttle_gain"] == 0.8

    mark = len(events.items)
    control.replay_start(path)
    events.wait(lambda e: e.of("episode")[-1]["replay_of"] == path)
    # the replay starts as launched, then the log's first changes
    assert control.entities() == list(AGENTS)
    control.step(48)
    events.wait(lambda e: any(ev == "states" and b["step"] == 48 for ev, b in e.items[mark:]))
    replayed = [(e, _stamp_ns(b)) for e, b in events.items[mark:] if e in ("objects", "shifts", "conditions")]
    assert (OBJECTS.event, 10**8) in replayed and (CONDITIONS.event, 10**8) in replayed
    assert (SHIFTS.event, 2 * 10**8) in replayed and (OBJECTS.event, 3 * 10**8) in replayed
    assert events.of("conditions")[-1]["dust"] == pytest.approx(0.25)
    control.reset("all")  # as launched: a clear day, calibrated, no objects
    events.wait(lambda e: e.of("conditions")[-1]["dust"] == 0.0)
    assert all(s["throttle_gain"] == 1.0 for s in events.of("shifts")[-1]["shifts"])


def _next_scan(client: Client) -> np.ndarray:
    while True:
        header, payload = client.read()
        if header.frame_type == FrameType.LIDAR:
            return np.frombuffer(bytes(payload), "<f4").reshape(-1, 4)


def test_a_spawned_object_is_in_every_agents_next_scan_and_reset_spawned_removes_it(game):
    g, control, events = game()
    clients = {a: Client(g.stream_port(a)) for a in AGENTS}
    wait_streams_connected(control)
    control.step(1)
    for k, a in enumerate(AGENTS):  # held, facing east, 20 m apart
        control.set_state(a, (-20.0 + 20.0 * k, -28.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    control.step(12)
    empty = {a: _next_scan(clients[a]) for a in AGENTS}
    for k, a in enumerate(AGENTS):  # a bale 3 m to each agent's left
        control.spawn(f"bale_{a}", "round_bale", (-20.0 + 20.0 * k, -25.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    control.step(12)
    for a in AGENTS:
        scan = _next_scan(clients[a])
        changed = ~np.isclose(scan, empty[a], equal_nan=True).all(axis=1) & np.isfinite(scan[:, 0])
        across = np.hypot(scan[:, 0], scan[:, 1])
        own = changed & (across < 6.0)  # its own bale (3 m left of the rear axle), not the other's
        print(f"\n{a}: {own.sum()} returns on its bale, {np.median(across[own]):.2f} m from the LiDAR")
        assert own.sum() > 10 and np.all(scan[changed, 3] == 95.0)  # the bales' straw
        assert np.all(scan[own, 1] > 1.5)  # on the left
    assert control.entities() == [*AGENTS, "bale_polaris", "bale_maxxum"]
    with pytest.raises(ControlRefused) as taken:
        control.spawn("bale_polaris", "marker_post", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    assert taken.value.code == "name_taken"
    for request, code in (({"op": "spawn", "uri": "barn", "position": [0, 0, 0]}, "no_resource"),
                          ({"op": "spawn", "uri": "person", "name": "x y", "position": [0, 0, 0]},
                           "name_invalid"),
                          ({"op": "spawn", "uri": "person", "position": [0, 0, 1e9]}, "invalid_pose"),
                          ({"op": "delete", "name": "polaris"}, "not_deletable"),
                          ({"op": "delete", "name": "nobody"}, "not_found"),
                          ({"op": "set_shift", "agent": "polaris", "shift": {"brake_gain": 9}},
                           "out_of_range"),
                          ({"op": "set_shift", "agent": "ghost", "shift": {}}, "not_found"),
                          ({"op": "set_conditions", "conditions": {"fog": -1}}, "out_of_range")):
        with pytest.raises(ControlRefused) as refused:
            control.request(request)
        assert refused.value.code == code, request
    control.reset("spawned")
    assert control.entities() == list(AGENTS)
    events.wait(lambda e: e.of("objects")[-1]["objects"] == [])  # the feed is asynchronous
    control.step(12)
    for a in AGENTS:
        assert np.array_equal(_next_scan(clients[a]), empty[a], equal_nan=True)  # gone, bit for bit
        clients[a].close()
