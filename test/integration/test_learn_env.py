"""The learners' environments over real fake games (no ROS graph): Gymnasium's and
stable-baselines3-free checks of the single-agent Env, PettingZoo's parallel API test of a
two-vehicle world, the same seed and actions giving the same observations and rewards bit for bit
(two environments, each its own game), two seeds giving different sensor noise, refused actions
that send nothing, a world that dies truncating the episode with its reason, a game that does not
start or is not ready in time giving a clear error and leaving no process, no game outliving a
learner killed with SIGKILL, and an environment on a game given by its ports running as one on its
own game and leaving it running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed (the learners' extra)")

import acres_sim.learn  # noqa: E402,F401 -- registers acres_sim/Scenario-v0
from acres_sim.learn import AcresEnv, AcresParallelEnv  # noqa: E402
from acres_sim.work_dirs import remove_abandoned  # noqa: E402

from support.learn_scenarios import GATE, REPO, TWO  # noqa: E402


def _run(env, actions: list[np.ndarray], seed: int) -> tuple[list, list]:
    obs, _ = env.reset(seed=seed)
    seen, rewards = [obs], []
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(action)
        seen.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    return seen, rewards


def test_gymnasiums_checker_passes_and_the_registered_id_makes_the_env():
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("acres_sim/Scenario-v0", scenario=str(GATE), observations=["state"])
    try:
        assert isinstance(env.unwrapped, AcresEnv)
        check_env(env.unwrapped, skip_render_check=False)
        obs, info = env.reset(seed=1)
        assert obs["state"].shape == (15,) and set(info["criteria"]) == {
            "reach(polaris, x=15.0, y=-28.0, radius_m=2.0, within_s=20.0)", "no_collision(polaris)",
            "max_speed_mps(polaris, limit=6.0)"}
        assert obs["state"][3] == pytest.approx(25.0)  # the gate 25 m ahead
        moved = [env.step(np.array([0.5, 0.0], np.float32)) for _ in range(35)]
        speed = moved[-1][0]["state"][0]
        assert speed == pytest.approx(0.5 * 11.0, abs=0.5)  # half the Polaris' top speed
        assert sum(m[1] for m in moved) == pytest.approx(25.0 - moved[-1][0]["state"][5], abs=1e-4)
    finally:
        env.close()


def test_pettingzoos_parallel_api_test_passes_on_a_world_of_two_vehicles(tmp_path):
    pettingzoo_test = pytest.importorskip("pettingzoo.test", reason="pettingzoo is not installed")

    path = tmp_path / "two.yaml"
    path.write_text(TWO)
    env = AcresParallelEnv(path, observations=["state", "lidar"], game_args=["--cached"])
    try:
        assert env.possible_agents == ["polaris", "maxxum"]
        assert env.observation_space("maxxum")["lidar"].shape == (180, 8)  # the Maxxum's 8 rings
        pettingzoo_test.parallel_api_test(env, num_cycles=40)
    finally:
        env.close()


def test_the_same_seed_and_actions_give_the_same_run_and_another_seed_other_noise():
    actions = [np.array([0.6, 0.3 * np.sin(k / 3.0)], np.float32) for k in range(15)]
    first, second = (AcresEnv(GATE, observations=["state", "lidar"]) for _ in range(2))
    try:
        a_obs, a_rew = _run(first, actions, seed=5)
        b_obs, b_rew = _run(second, actions, seed=5)
        assert len(a_obs) == len(b_obs) == 16 and a_rew == b_rew
        for a, b in zip(a_obs, b_obs):
            assert a["state"].tobytes() == b["state"].tobytes()
            assert a["lidar"].tobytes() == b["lidar"].tobytes()
        c_obs, c_rew = _run(second, actions, seed=6)
        assert c_obs[0]["state"].tobytes() == a_obs[0]["state"].tobytes()  # the same start
        noise = np.abs(c_obs[0]["lidar"] - a_obs[0]["lidar"])
        print(f"\nanother seed: LiDAR ranges differ by {noise.mean() * 1000:.1f} mm on average")
        assert (noise > 0).mean() > 0.5
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("action, message", [
    (np.array([0.5, 0.0, 0.0]), "shape \\(2,\\)"), (np.array([np.nan, 0.0]), "finite numbers in \\[-1, 1\\]"),
    (np.array([1.5, 0.0]), "finite numbers in \\[-1, 1\\]"), (None, "no action for polaris")])
def test_an_action_outside_the_space_is_refused_and_nothing_is_sent(action, message):
    env = AcresParallelEnv(GATE, observations=["state"])
    try:
        env.reset(seed=0)
        before = env._session.control.request({"op": "status"})["step"]
        with pytest.raises(ValueError, match=message):
            env.step({"polaris": action} if action is not None else {})
        assert env._session.control.request({"op": "status"})["step"] == before
        env.step({"polaris": np.zeros(2, np.float32)})  # the episode goes on
    finally:
        env.close()


def test_a_scenario_without_a_task_for_an_agent_is_refused(tmp_path):
    path = tmp_path / "idle.yaml"
    path.write_text(TWO.replace("  - {reach: {agent: polaris, x: 10.0, y: -28.0}}\n", ""))
    with pytest.raises(ValueError, match="polaris has none"):
        AcresParallelEnv(path)


def test_a_recording_environment_logs_each_episode_with_its_task_status(tmp_path):
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    env = AcresEnv(GATE, observations=["state"], record=tmp_path / "logs")
    returns = []
    try:
        for seed in (4, 5):
            env.reset(seed=seed)
            for _ in range(8):
                _obs, _reward, _term, _trunc, info = env.step(np.array([0.4, 0.0], np.float32))
            returns.append(info["return"])
        env.reset(seed=6)  # finishes the second episode's log
    finally:
        env.close()
    logs = sorted((tmp_path / "logs").glob("episode_*.mcap"))
    assert [p.name.split("_seed")[0] for p in logs] == ["episode_00000", "episode_00001", "episode_00002"]
    for path, expected in zip(logs, returns):
        tasks, states, first = [], 0, None
        with AnyReader([path], default_typestore=get_typestore(Stores.EMPTY)) as reader:
            for connection, _t, raw in reader.messages():
                if connection.topic == "/sim/task":
                    tasks.append(reader.deserialize(raw, connection.msgtype))
                elif connection.topic == "/sim/agent_states":
                    states += 1
                    if first is None:
                        first = reader.deserialize(raw, connection.msgtype).agents[0].pose.position
        # the log starts where the episode does: the scenario's start, not where the last one ended
        assert (first.x, first.y) == (pytest.approx(-10.0, abs=1e-6), pytest.approx(-28.0, abs=1e-6))
        assert len(tasks) == 8 and {t.task for t in tasks} == {"drive_to_the_gate"}
        assert tasks[-1].cumulative_reward == pytest.approx(expected, abs=1e-5)  # float32 in the message
        assert sum(t.reward for t in tasks) == pytest.approx(expected, abs=1e-4)
        assert {t.state for t in tasks} == {0}  # running: 8 steps do not reach the gate
        assert states >= 8 * 12  # every physics step's states from the start on


def test_a_world_that_dies_truncates_the_episode_and_the_next_reset_starts_a_new_one():
    env = AcresEnv(GATE, observations=["state"])
    try:
        env.reset(seed=0)
        pid = env.parallel._session.game.child.proc.pid
        os.kill(pid, signal.SIGKILL)
        _obs, reward, terminated, truncated, info = env.step(np.array([0.2, 0.0], np.float32))
        assert truncated and not terminated and reward == 0.0
        assert "the game" in info["session_error"] and "fake_game.log" in info["session_error"]
        obs, _ = env.reset(seed=0)
        assert env.parallel._session.game.child.proc.pid != pid and obs["state"][5] == pytest.approx(25.0)
    finally:
        env.close()


def test_an_environment_on_a_game_given_by_its_ports_runs_as_its_own_and_leaves_the_game(tmp_path):
    from acres_sim.scenario.processes import start_fake_game

    game = start_fake_game(["polaris"], ["polaris"], 0, tmp_path, os.environ, ["--realtime-factor", "0"])
    ports = {"control_port": game.ports.control_port, "ports": list(game.ports.ports),
             "vehicle_ports": list(game.ports.vehicle_ports)}
    actions = [np.array([0.6, 0.1 * (i % 3 - 1)], np.float32) for i in range(10)]
    try:
        for given in (True, False):  # the given game, then a game of the environment's own
            env = AcresEnv(GATE, observations=["state", "lidar"], game=ports if given else None)
            try:
                seen, rewards = _run(env, actions, seed=3)
                assert (env.parallel._session.game is None) == given
            finally:
                env.close()
            if given:
                on_given = (seen, rewards)
        assert len(rewards) == len(actions) and on_given[1] == rewards  # bit for bit
        for a, b in zip(on_given[0], seen):
            assert all(np.array_equal(a[k], b[k]) for k in ("state", "lidar"))
        assert game.child.alive  # close() left the given game running

        maxxum = tmp_path / "maxxum.yaml"
        maxxum.write_text(GATE.read_text().replace("vehicle: polaris", "vehicle: maxxum"))
        port = game.ports.vehicle_ports[0]
        with pytest.raises(RuntimeError, match=f"the Vehicle Bridge on port {port} drives "
                                               "polaris \\(a polaris\\); the scenario's polaris is a maxxum"):
            AcresEnv(maxxum, observations=["state"], game=ports).reset(seed=0)
        two = tmp_path / "two.yaml"
        two.write_text(TWO)
        with pytest.raises(ValueError, match="ports has 1 ports; the scenario has 2 agents"):
            AcresParallelEnv(two, observations=["state"], game=ports)
        with pytest.raises(ValueError, match="control_port is a port number"):
            AcresEnv(GATE, game={**ports, "control_port": 0})

        env = AcresEnv(GATE, observations=["state"], game=ports, game_timeout_s=2.0)
        try:
            env.reset(seed=0)
            game.child.stop()  # the game goes away under the learner
            _obs, reward, terminated, truncated, info = env.step(np.array([0.2, 0.0], np.float32))
            assert truncated and not terminated and reward == 0.0
            assert f"the game given on control port {game.ports.control_port}" in info["session_error"]
            started = time.monotonic()
            control_port = game.ports.control_port
            with pytest.raises(RuntimeError, match=f"no game answered on control port {control_port} "
                                                   "within 2 s"):
                env.reset(seed=0)
            assert time.monotonic() - started < 10.0
        finally:
            env.close()
    finally:
        game.child.stop()


def _stat(pid: int | str) -> tuple[str, str]:
    """(state, parent pid) from /proc/PID/stat; ("", "") once the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()  # the name may hold spaces
    except OSError:
        return "", ""
    return fields[0], fields[1]


def _live_children() -> set[int]:
    """This process's children that have not ended (zombies excluded)."""
    mine = str(os.getpid())
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            state, parent = _stat(proc.name)
            if parent == mine and state not in ("", "Z"):
                found.add(int(proc.name))
    return found


def test_a_game_that_does_not_start_is_a_clear_error_and_leaves_no_process():
    from acres_sim.scenario.processes import SessionFailed

    before = _live_children()
    env = AcresEnv(GATE, observations=["state"], game_args=["--no-such-option"])
    try:
        started = time.monotonic()
        with pytest.raises(SessionFailed, match=r"fake_game ended \(exit 2\) before it was ready: .*"
                                                r"unrecognized arguments: --no-such-option"):
            env.reset(seed=0)
        assert time.monotonic() - started < 60.0
        assert _live_children() - before == set()
    finally:
        env.close()


def test_a_game_not_ready_within_its_limit_is_stopped_with_a_clear_error(tmp_path):
    from acres_sim.scenario.processes import SessionFailed, start_fake_game

    before = _live_children()
    started = time.monotonic()
    with pytest.raises(SessionFailed, match=r"^fake_game was not ready within 0.05 s$"):
        start_fake_game(["polaris", "maxxum"], ["polaris", "maxxum"], 0, tmp_path, os.environ,
                        timeout_s=0.05)
    assert time.monotonic() - started < 20.0  # stopped with SIGINT, not waited for
    assert _live_children() - before == set()
    assert (tmp_path / "fake_game.log").exists()


def test_no_game_outlives_a_learner_killed_with_sigkill(tmp_path):
    script = ("import sys, time, acres_sim.learn as L\n"
              f"env = L.AcresEnv({str(GATE)!r}, observations=['state'])\n"
              "env.reset(seed=0)\n"
              "session = env.parallel._session\n"
              "print(session.game.child.proc.pid, session.dir, flush=True)\n"
              "time.sleep(600)\n")
    learner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        game_text, directory = learner.stdout.readline().split()
        game = int(game_text)
        os.kill(learner.pid, signal.SIGKILL)
        learner.wait(10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _stat(game)[0] not in ("", "Z"):
            time.sleep(0.1)
        state = _stat(game)[0]
        assert state in ("", "Z"), f"the game {game} outlived its learner: state {state}"
        # its directory stays until the next session's maker finds its lock free
        assert Path(directory).is_dir()
        assert Path(directory) in remove_abandoned("acres_learn_", young_s=0.0)
    finally:
        if learner.poll() is None:
            learner.kill()
