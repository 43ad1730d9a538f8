"""The fake game's session as the application builds it: its render threads and its ground, with
each agent's stream listening on a free port."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution


def test_render_threads_per_agent_by_mode_or_as_asked():
    import os
    import threading

    from acres_sim.fake_game.cli import build_parser, config_from_args
    from acres_sim.fake_game.simulation.session import Session
    from acres_sim.fake_game.simulation.session_config import SessionConfig
    from acres_sim.fake_game.sockets.stream_server import stream_opener

    def render_threads() -> int:
        return sum(1 for t in threading.enumerate() if t.name.startswith("render-") and t.is_alive())

    cores = os.cpu_count() or 1
    two_agents = ["--ports", "0,0", "--vehicles", "polaris,maxxum", "--agents", "a,b"]
    one = ["--port", "0"]
    cases = ((two_agents, min(2, cores)), (one, 1), (one + ["--render-workers", "3"], 3),
             (one + ["--lockstep", "--control-port", "0"], min(2, cores)),
             (one + ["--realtime-factor", "0"], min(2, cores)), (one + ["--realtime-factor", "0.5"], 1))
    for argv, expected in cases:
        before = render_threads()
        config = config_from_args(build_parser().parse_args(argv))
        session = Session(config, stream_opener(config, quiet), log=quiet)
        session.open()
        try:
            assert render_threads() - before == expected, argv
        finally:
            session.stop()
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--render-workers", "-1"])
    with pytest.raises(ValueError, match="render_workers"):
        SessionConfig(agents=config_from_args(build_parser().parse_args(["--port", "0"])).agents,
                      render_workers=-1)


def quiet(line: str) -> None:
    """A session log that prints nothing."""


def test_flat_ground_option_gives_the_plane_to_every_agent():
    from acres_sim.fake_game.cli import build_parser, config_from_args
    from acres_sim.fake_game.simulation.session import Session
    from acres_sim.fake_game.sockets.stream_server import stream_opener

    flat = config_from_args(build_parser().parse_args(["--port", "0", "--flat-ground"]))
    rolling = config_from_args(build_parser().parse_args(["--port", "0"]))
    assert flat.flat_ground and not rolling.flat_ground
    for config, expect_flat in ((flat, True), (rolling, False)):
        session = Session(config, stream_opener(config, quiet), log=quiet)
        session.open()  # builds the agents' simulators and opens their ports
        try:
            sim = session.agents[0].simulator
            assert (sim.scene.terrain is None) == expect_flat
            z = [sim.truth_pose(t)[0][2] for t in (0.0, 10.0, 20.0)]
            assert (max(map(abs, z)) == 0.0) == expect_flat
        finally:
            session.stop()


def test_an_owner_added_to_the_world_is_called_at_every_point_of_the_loop():
    """A new per-step feature is a StepOwner added to the world (no line of the session changes):
    it is called before the agents move, once they moved, after the frames, and around a reset,
    with the world's lock held, and sees the step the world is at."""
    from acres_sim.fake_game.cli import build_parser, config_from_args
    from acres_sim.fake_game.simulation.fake_world import FakeWorld
    from acres_sim.fake_game.simulation.step_owner import StepOwner
    from acres_sim.fake_game.sockets.stream_server import stream_opener

    config = config_from_args(build_parser().parse_args(["--port", "0", "--lockstep", "--control-port", "0",
                                                         "--no-noise"]))
    world = FakeWorld(config, stream_opener(config, quiet), log=quiet)

    class Witness(StepOwner):
        def __init__(self):
            self.calls = []

        def begin_step(self, step):
            self.calls.append(("begin", step.step, world.session.step_count))

        def moved(self, step):
            self.calls.append(("moved", step.step, world.session.step_count))

        def end_step(self, step):
            self.calls.append(("end", step.step, world.session.step_count))

        def before_reset(self, reset):
            self.calls.append(("before_reset", reset.scope, reset.from_step, reset.step))

        def after_reset(self, reset):
            self.calls.append(("after_reset", reset.scope, reset.from_step, world.session.step_count))

    witness = Witness()
    world.session.open()
    world.session.add_owner(witness)
    world.session.run()
    try:
        assert world.session.step(2) == (2, 2 / 120)
        world.session.reset("time")
    finally:
        world.session.stop()
    assert witness.calls == [("begin", 1, 0), ("moved", 1, 0), ("end", 1, 1),
                             ("begin", 2, 1), ("moved", 2, 1), ("end", 2, 2),
                             ("before_reset", "time", 2, 0), ("after_reset", "time", 2, 0)]
