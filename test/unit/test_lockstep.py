"""sim_control's lockstep waits without ROS: barriers counted from a mark (step numbers repeat after a
TIME reset), commands awaited per agent, each wait ended by an arrival on another thread or by its
timeout with the agents still missing."""

from __future__ import annotations

import threading
import time

from acres_sim.control.lockstep import SEEN_PER_AGENT, BarrierWatch, HeldCommands, PublishersMatched
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
