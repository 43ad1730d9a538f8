"""sim_control's lockstep waits without ROS: barriers counted from a mark (step numbers repeat after a
TIME reset), commands awaited per agent, each wait ended by an arrival on another thread or by its
timeout with the agents still missing."""

from __future__ import annotations

import threading
import time

import pytest

from acres_sim.control.lockstep import (
    SEEN_PER_AGENT,
    BarrierWatch,
    HeldCommands,
    Lockstep,
    LockstepFailed,
    PublishersMatched,
)
from acres_sim.topics import HELD_AWAITING


def later(delay_s: float, call, *args) -> threading.Thread:
    def run() -> None:
        time.sleep(delay_s)
        call(*args)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_step_waits_for_every_agents_barrier_that_arrives_after_its_mark():
    watch = BarrierWatch(["a", "b"])
    watch.arrived("a", 12)  # before the request: does not count, although the step number matches
    since = watch.mark()
    watch.arrived("a", 12)
    assert watch.wait(12, since, timeout_s=0.05) == ["b"]
    thread = later(0.05, watch.arrived, "b", 12)
    started = time.monotonic()
    assert watch.wait(12, since, timeout_s=5.0) == []
    assert time.monotonic() - started < 4.0  # woken by the arrival, not by the timeout
    thread.join()


def test_a_barrier_of_another_step_or_from_before_the_mark_does_not_end_the_wait():
    watch = BarrierWatch(["a"])
    watch.arrived("a", 24)
    since = watch.mark()
    watch.arrived("a", 36)
    assert watch.wait(24, since, timeout_s=0.05) == ["a"]
    assert watch.wait(36, since, timeout_s=0.05) == []


def test_the_barriers_kept_per_agent_are_bounded():
    watch = BarrierWatch(["a"])
    for step in range(10 * SEEN_PER_AGENT):
        watch.arrived("a", step)
    assert len(watch._seen["a"]) == SEEN_PER_AGENT
    assert watch.wait(10 * SEEN_PER_AGENT - 1, 0, timeout_s=0.0) == []


def test_no_agents_means_nothing_to_wait_for():
    assert BarrierWatch([]).wait(1, 0, timeout_s=0.0) == []
    assert HeldCommands([]).wait(1.0, timeout_s=0.0) == [] and not HeldCommands([]).under_command()


def test_commands_are_awaited_from_every_agent_under_command_until_stamped_at_the_world_time():
    held = HeldCommands(["a", "b"])
    assert held.under_command()  # not heard of yet: waited for
    held.update("a", 0.0, "")  # not under command: never waited for
    held.update("b", 0.9, "ackermann")
    assert held.wait(1.0, timeout_s=0.05) == ["b"]  # its command is older than the world time
    thread = later(0.05, held.update, "b", 1.0, "ackermann")
    assert held.wait(1.0, timeout_s=5.0) == []
    thread.join()
    held.update("b", 0.0, HELD_AWAITING)  # after a reset: whatever the stamp, the next command
    assert held.wait(0.0, timeout_s=0.05) == ["b"]
    held.update("b", 0.0, "")
    assert not held.under_command() and held.wait(5.0, timeout_s=0.0) == []


def test_a_reset_forgets_what_the_bridges_said():
    held = HeldCommands(["a"])
    held.update("a", 3.0, "dbw")
    assert held.wait(3.0, timeout_s=0.0) == []
    held.forget()
    assert held.under_command() and held.wait(0.0, timeout_s=0.05) == ["a"]


def test_a_request_waits_until_each_barrier_has_had_a_publisher_for_a_moment():
    now = [0.0]
    counts = {"/a/sim/barrier": 0, "/a/vehicle/barrier": 1}
    matched = PublishersMatched({t: (lambda t=t: counts[t]) for t in counts}, settle_s=0.25,
                                clock=lambda: now[0], poll_s=0.0)
    assert matched.wait(matched.topics, timeout_s=0.0) == list(counts)  # one has none, one just came
    now[0] = 0.3
    assert matched.wait(matched.topics, timeout_s=0.0) == ["/a/sim/barrier"]
    counts["/a/sim/barrier"] = 1
    now[0] = 0.4
    assert matched.wait(["/a/vehicle/barrier"], timeout_s=0.0) == []  # settled since 0.0
    assert matched.wait(matched.topics, timeout_s=0.0) == ["/a/sim/barrier"]  # seen since 0.4 only
    now[0] = 0.7
    assert matched.wait(matched.topics, timeout_s=0.0) == []
    counts["/a/vehicle/barrier"] = 0  # its bridge went away: when it is back it settles again
    assert matched.wait(matched.topics, timeout_s=0.0) == ["/a/vehicle/barrier"]
    counts["/a/vehicle/barrier"] = 1
    assert matched.wait(matched.topics, timeout_s=0.0) == ["/a/vehicle/barrier"]


def test_waiting_for_publishers_ends_when_they_come():
    counts = {"/a/sim/barrier": 0}
    matched = PublishersMatched({"/a/sim/barrier": lambda: counts["/a/sim/barrier"]}, settle_s=0.05)
    thread = later(0.05, counts.__setitem__, "/a/sim/barrier", 1)
    assert matched.wait(matched.topics, timeout_s=5.0) == []
    thread.join()


class FakeBridges:
    """What the game and the bridges do for Lockstep: a step request answered with the step reached,
    and each agent's barrier of that step published (sim/barrier always, vehicle/barrier when
    the agent has a vehicle_bridge), unless told to stay silent."""

    def __init__(self, agents, vehicles=True, silent=()):
        self.step = 0
        self.requests = []
        self.barriers = BarrierWatch(agents)
        self.vehicle_barriers = BarrierWatch(agents if vehicles else [])
        self.held = HeldCommands(agents if vehicles else [])
        self.silent = set(silent)
        self.warnings = []
        counts = {f"/{a}/sim/barrier": (lambda: 1) for a in agents}
        if vehicles:
            counts.update({f"/{a}/vehicle/barrier": (lambda: 1) for a in agents})
        self.lockstep = Lockstep(self.barriers, self.vehicle_barriers, self.held,
                                 PublishersMatched(counts, settle_s=0.0), barrier_timeout_s=0.3,
                                 command_wait_s=0.2, warn=self.warnings.append,
                                 vehicle_suffix="/vehicle/barrier")
        self.agents = agents
        self.vehicles = vehicles

    def step_game(self, n):
        self.requests.append(n)
        self.step += n
        for agent in self.agents:
            if agent not in self.silent:
                self.barriers.arrived(agent, self.step)
                if self.vehicles:
                    self.vehicle_barriers.arrived(agent, self.step)
        return self.step, self.step / 120.0


def test_steps_go_in_chunks_each_waiting_for_every_agents_barriers():
    bridges = FakeBridges(["a", "b"])
    for agent in ("a", "b"):
        bridges.held.update(agent, 0.0, "")  # neither under command
    done = bridges.lockstep.steps(30, 12, bridges.step_game, lambda: 0.0)
    assert done == 30 and bridges.requests == [12, 12, 6]
    assert bridges.lockstep.world_time_s == 30 / 120.0


def test_a_missing_barrier_fails_the_step_and_names_the_agent():
    bridges = FakeBridges(["a", "b"], vehicles=False, silent={"b"})
    with pytest.raises(LockstepFailed, match=r"did 12 of 12 steps .* no sim/barrier .* from: b"):
        bridges.lockstep.steps(12, 12, bridges.step_game, lambda: 0.0)


def test_stepping_stops_between_chunks_when_asked_and_when_the_states_do_not_come():
    bridges = FakeBridges(["a"], vehicles=False)
    assert bridges.lockstep.steps(48, 12, bridges.step_game, lambda: 0.0,
                                  after_chunk=lambda done: done < 24) == 24
    with pytest.raises(LockstepFailed, match="agent states were not published"):
        bridges.lockstep.steps(12, 12, bridges.step_game, lambda: 0.0, delivered=lambda step, timeout: False)


def test_an_agent_under_command_is_waited_for_then_stepped_with_a_warning():
    bridges = FakeBridges(["a"])
    bridges.held.update("a", 0.0, "ackermann")  # under command, holding a command for world time 0
    assert bridges.lockstep.steps(12, 12, bridges.step_game, lambda: 0.0) == 12 and not bridges.warnings
    # world time is now 0.1 s: the held command (stamped 0) is stale until a newer one comes
    thread = later(0.05, bridges.held.update, "a", 0.1, "ackermann")
    assert bridges.lockstep.steps(12, 12, bridges.step_game, lambda: 0.0) == 12 and not bridges.warnings
    thread.join()
    assert bridges.lockstep.steps(12, 12, bridges.step_game, lambda: 0.0) == 12  # nothing stamped 0.2 s
    assert len(bridges.warnings) == 1 and "held for a within 0.2 s" in bridges.warnings[0]


def test_a_reset_forgets_the_held_commands_and_waits_for_every_vehicle_barrier():
    bridges = FakeBridges(["a", "b"])
    bridges.held.update("a", 5.0, "ackermann")
    forgotten = []

    def reset_game():
        for agent in ("a", "b"):
            bridges.vehicle_barriers.arrived(agent, 0)
        return 0

    bridges.lockstep.reset("all", reset_game, lambda: forgotten.append(True))
    assert forgotten == [True] and bridges.held.under_command()  # unknown again: a step waits for it
    with pytest.raises(LockstepFailed, match=r"reset \(time\), but no vehicle/barrier .* from: a, b"):
        bridges.lockstep.reset("time", lambda: 0, lambda: None)
