"""A step request's summary (the control channel's "summary"), the watch that asks for some events,
and the learners' session reading one answer per step instead of every step's events: a real fake
game, real sockets.
"""

from __future__ import annotations

import json
import math
import socket
from pathlib import Path

import numpy as np
import pytest

from acres_sim.game.control_client import ControlClient
from acres_sim.game.episode_feed import EpisodeFeed
from acres_sim.learn import AcresParallelEnv
from acres_sim.learn.session import LearnerSession
from acres_sim.scenario.judge import Judge
from acres_sim.scenario.scenario_file import load
from acres_sim.scenario.scripted import WaypointDriver, scripted_commands
from acres_sim.stream.timing import PHYSICS_HZ
from support.fake_game import FakeGame, FeedEvents
from support.learn_scenarios import GATE, REPO

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

SCENARIOS = sorted((REPO / "scenarios").glob("*.yaml"))


@pytest.fixture
def game():
    g = FakeGame("--port", "0", "--vehicle", "polaris", "--lockstep", "--control-port", "0")
    client = ControlClient(g.control_port())
    yield g, client
    client.close()
    g.stop()


def test_a_summary_covers_each_step_of_its_request_and_ends_with_its_states(game):
    _g, control = game
    assert {"step_summary", "watch_events"} <= control.features()
    control.step(5)
    done = control.step(12, summary=True)
    s = done.summary
    assert s["step"] == list(range(6, 18)) and done.step == 17
    times = [sec + ns * 1e-9 for sec, ns in zip(s["sec"], s["nanosec"])]
    assert times == pytest.approx([k / PHYSICS_HZ for k in range(6, 18)], abs=1e-9)
    trace = s["agents"]["polaris"]
    assert all(len(trace[f]) == 12 for f in ("x", "y", "z", "yaw", "vx", "crushed_m2"))
    last = s["states"]["agents"][0]
    assert s["states"]["step"] == 17
    assert (trace["x"][-1], trace["y"][-1]) == (last["pose"]["position"]["x"], last["pose"]["position"]["y"])
    assert trace["vx"][-1] == last["twist"]["linear"]["x"]
    assert math.hypot(trace["x"][-1] - trace["x"][0], trace["y"][-1] - trace["y"][0]) > 0.1  # on its route
    assert control.step(3).summary is None  # not asked: not sent
    # the judge's latched messages: all at first, then only those that changed
    assert {"agents", "objects"} <= set(s["latched"])
    assert s["latched"]["agents"]["agents"][0]["name"] == "polaris"
    assert control.step(2, summary=True).summary["latched"] == {}
    control.spawn("bale9", "round_bale", (30.0, 30.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    latched = control.step(2, summary=True).summary["latched"]
    assert set(latched) == {"objects"} and [o["name"] for o in latched["objects"]["objects"]] == ["bale9"]


def test_a_watch_gets_only_the_events_it_asked_for_and_a_bad_list_is_refused(game):
    g, control = game
    some, every = FeedEvents(), FeedEvents()
    feeds = [EpisodeFeed(g.control_port(), some.on_event, some.problems.append, events=["agents"]),
             EpisodeFeed(g.control_port(), every.on_event, every.problems.append)]
    for feed in feeds:
        feed.start()
    try:
        every.wait(lambda f: f.of("agents"))
        some.wait(lambda f: f.of("agents"))
        control.step(24)
        every.wait(lambda f: any(b["step"] == 24 for b in f.of("states")))
        assert {e for e, _ in some.items} == {"agents"} and some.problems == []
        assert {"states", "farm_events", "farm_stamps"} <= {e for e, _ in every.items}
        assert control.request({"op": "status"})["watchers"] == 2
    finally:
        for feed in feeds:
            feed.stop()
    with socket.create_connection(("127.0.0.1", g.control_port())) as sock:
        lines = sock.makefile("rb")
        sock.sendall(b'{"op": "watch", "events": ["states", "weather"]}\n')
        answer = json.loads(lines.readline())
        assert answer["code"] == "bad_request" and "weather" in answer["error"]
        sock.sendall(b'{"op": "status"}\n')  # the connection still answers
        assert json.loads(lines.readline())["ok"] is True


def _drive(session: LearnerSession, scenario, k: int) -> None:
    """Every agent without waypoints weaving forward, the scripted ones along their waypoints."""
    dt = session.command_steps / PHYSICS_HZ
    drivers = {a.name: WaypointDriver(a.waypoints, a.speed_mps, session.infos[a.name].wheelbase_m,
                                      session.infos[a.name].max_steer_rad)
               for a in scenario.agents if a.waypoints}
    for a in scenario.agents:
        if not a.waypoints:
            info = session.infos[a.name]
            steer = 0.8 * info.max_steer_rad * math.sin(k / 6.0)
            session.command(a.name, 0.5 * info.max_speed_mps, steer, dt)
    for name, (steer, speed) in scripted_commands(drivers, session.states).items():
        session.command(name, speed, steer, dt)


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_judge_reads_a_summary_as_it_reads_every_step(path: Path):
    """One world: the session's judge from the step requests' summaries, a second judge from a
    watch of every step's events; the same verdicts, values and decision times, the same tallies."""
    scenario = load(path)
    session = LearnerSession(scenario, ["state"], 180, None)
    assert session.summarised
    per_step = Judge(scenario, math.inf, lambda status: None)
    feed = EpisodeFeed(session.control.port, per_step.on_event, lambda text: None)
    try:
        feed.start()
        assert feed.wait_handled(round(session.reset(seed=5) * PHYSICS_HZ), 30.0)
        per_step.start_s = session.judge.start_s
        per_step.take_tally()
        tallies: dict[str, list] = {"summary": [], "feed": []}
        for k in range(round(scenario.duration_s / scenario.command_period_s)):
            _drive(session, scenario, k)
            assert feed.wait_handled(round(session.step(session.command_steps) * PHYSICS_HZ), 30.0)
            tallies["summary"].append({a: (session.contacts[a], session.crushed[a]) for a in session.agents})
            counted = per_step.take_tally()
            tallies["feed"].append({a: counted.get(a, (0, 0.0)) for a in session.agents})

        def verdicts(judge: Judge) -> list:
            return [(c.name, c.verdict.passed, c.verdict.value, c.verdict.decided_at_s, c.verdict.detail)
                    for c in judge.criteria]
        assert verdicts(session.judge) == verdicts(per_step)  # those decided during the run, the values
        assert tallies["summary"] == tallies["feed"]
        assert session.judge.steps == per_step.steps > 0
        session.judge.finish()
        per_step.finish()
        assert verdicts(session.judge) == verdicts(per_step)
    finally:
        feed.stop()
        session.close()


def test_an_environment_on_a_game_without_summaries_reads_the_feed_and_runs_the_same(monkeypatch):
    def run() -> list:
        env = AcresParallelEnv(GATE, observations=["state"])
        try:
            observations, _ = env.reset(seed=2)
            out = [observations["polaris"]["state"].tolist()]
            for k in range(40):
                action = np.array([0.5, 0.7 * math.sin(k / 5.0)], np.float32)
                o, r, te, tr, info = env.step({"polaris": action})
                out.append((o["polaris"]["state"].tolist(), r["polaris"], info["polaris"]["criteria"],
                            info["polaris"]["reward_terms"]))
                if te["polaris"] or tr["polaris"]:
                    break
            return out, env._session.summarised
        finally:
            env.close()

    summarised, used = run()
    assert used
    monkeypatch.setattr(ControlClient, "features", lambda self: frozenset())  # a game of the first version
    per_step, used = run()
    assert not used
    assert summarised == per_step
