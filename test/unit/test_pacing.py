"""The lockstep rule a scenario run waits for the stack by (acres_sim/scenario/pacing.py), with the
held commands' watch it reads (acres_sim/control/lockstep.py): stacks of every pace, fed as their
commands would reach it; the start's steps in one request; and an end step that never returns left
behind (acres_sim/scenario/ending.py)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from acres_sim.control.lockstep import BarrierWatch, HeldCommands, Lockstep, PublishersMatched
from acres_sim.scenario.pacing import (
    QUIET_BOOT_S,
    QUIET_DATA_S,
    CommandRule,
    LockstepPacing,
    start_steps,
    wait_for_commands,
)

P = 0.1  # command_period_s


def ticks(n: int, first: float = 0.2) -> list[float]:
    return [round(first + k * P, 9) for k in range(n)]


def test_a_stack_that_answers_every_tick_is_waited_for_without_a_quiet_limit():
    rule = CommandRule(["a"], P)
    for t in ticks(5):
        assert rule.accept("a", t, 0.0, t) == "clock"
        rule.took("a", t, "clock")
    t = ticks(6)[-1]
    assert rule.accept("a", t - P, 100.0, t) is None  # late by however long: never stepped on
    assert rule.counts == {"clock": 5, "cadence": 0, "quiet": 0}


def test_a_5hz_timer_is_stepped_on_for_its_own_period_once_two_commands_show_it():
    rule = CommandRule(["a"], P)
    t0, t1, t2, t3, t4 = ticks(5)
    assert rule.accept("a", t0, 0.0, t0) == "clock"
    rule.took("a", t0, "clock")
    assert rule.accept("a", t0, QUIET_BOOT_S - 0.01, t1) is None  # its pace not known yet: a while
    assert rule.accept("a", t0, QUIET_BOOT_S, t1) == "quiet"
    rule.took("a", t0, "quiet")
    assert rule.accept("a", t0, 0.0, t2) is None  # two periods old: never
    rule.took("a", t2, rule.accept("a", t2, 0.0, t2))
    assert rule.cadence("a") == 2
    assert rule.accept("a", t2, 0.0, t3) == "cadence"  # at once, no quiet needed
    rule.took("a", t2, "cadence")
    assert rule.accept("a", t2, 100.0, t4) is None  # its next command is due: waited for


def test_a_stack_that_answers_its_data_is_stepped_on_after_a_short_quiet():
    """Callbacks that stamp now() answer a tick's data with the previous tick's time."""
    rule = CommandRule(["a"], P)
    t = ticks(6)
    for k in range(1, 5):
        why = rule.accept("a", t[k - 1], QUIET_BOOT_S, t[k])
        assert why == "quiet"
        rule.took("a", t[k - 1], why)
    assert rule.pace_known("a") and not rule.answers_clock("a")
    assert rule.accept("a", t[4], QUIET_DATA_S - 0.01, t[5]) is None
    assert rule.accept("a", t[4], QUIET_DATA_S, t[5]) == "quiet"


def test_a_timer_period_that_is_no_multiple_takes_the_smallest_gap():
    rule = CommandRule(["a"], P)
    for stamp in (0.2, 0.3, 0.5, 0.6, 0.8):  # a 6.7 Hz timer's ticks
        rule.took("a", stamp, "clock")
    assert rule.cadence("a") == 1  # never stepped on without waiting at a tick it may fire at


def test_the_first_tick_gives_a_5hz_timer_time_to_fire():
    assert start_steps(12, 120.0) == 24  # 0.2 s in whole periods of 0.1 s
    assert start_steps(30, 120.0) == 30  # 0.25 s periods: one
    assert start_steps(1, 120.0) == 24


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_wait_goes_on_when_the_command_comes_and_ends_on_silence():
    clock = Clock()
    held = HeldCommands(["a", "b"], clock)
    rule = CommandRule(["a", "b"], P)
    held.update("a", 0.2, "ackermann")
    held.update("b", 0.0, "")  # not under command: not waited for
    assert wait_for_commands(rule, held.snapshot, held.wait_change, 0.2, 10.0, lambda: None, "awaiting",
                             clock) == []
    # a newer command comes from another thread while the wait is under way
    timer = threading.Timer(0.05, lambda: held.update("a", 0.3, "ackermann"))
    timer.start()
    assert wait_for_commands(rule, held.snapshot, held.wait_change, 0.3, 10.0, lambda: None, "awaiting",
                             clock) == []
    timer.join()
    assert rule.counts["clock"] == 2  # the newer command, not the quiet
    # silence: the held command has not changed for the timeout (the clock runs while it waits)
    clock.t = 0.0

    def later(_version: int, _timeout: float) -> None:
        clock.t += 1.0

    assert wait_for_commands(rule, held.snapshot, later, 0.4, 3.0, lambda: None, "awaiting", clock) == ["a"]


def test_an_awaited_agent_is_waited_for_and_a_check_can_end_the_wait():
    held = HeldCommands(["a"])
    held.update("a", 5.0, "awaiting")

    def stop() -> None:
        raise KeyboardInterrupt

    rule = CommandRule(["a"], P)
    with pytest.raises(KeyboardInterrupt):
        wait_for_commands(rule, held.snapshot, held.wait_change, 0.3, 10.0, stop, "awaiting")


class RecordingGame:
    """The control client's part the pacing uses: each step request's size, the world at 120 Hz."""

    def __init__(self):
        self.requests: list[int] = []
        self.step = 0

    def step_request(self, n: int) -> SimpleNamespace:
        self.requests.append(n)
        self.step += n
        return SimpleNamespace(step=self.step, time_s=self.step / 120.0)


def test_the_start_steps_are_one_request_so_an_answer_inside_them_always_acts_after_them():
    # Between two requests a stack's answer to the states in the middle would act at once or after
    # the second request, as it happened to come; inside one it always waits for its barrier.
    game = RecordingGame()
    held = HeldCommands(["a"])
    lockstep = Lockstep(BarrierWatch([]), BarrierWatch([]), held, PublishersMatched({}), 1.0, 0.0,
                        lambda _: None, "/vehicle/barrier")
    ticked: list[float] = []
    pacing = LockstepPacing(SimpleNamespace(step=game.step_request), lockstep, lambda *_: True,
                            ticked.append, CommandRule(["a"], P), 12, 120.0, 5.0, lambda: None,
                            lambda _: "", "awaiting")
    start = pacing.begin(0.0)
    assert game.requests == [24] and ticked == [start] and start == pytest.approx(0.2)
    held.update("a", start, "ackermann")
    pacing.advance(start, 10.0)
    assert game.requests == [24, 12] and ticked[-1] == pytest.approx(0.3)


def test_an_end_step_that_never_returns_is_left_behind_and_the_end_goes_on(capsys):
    from acres_sim.scenario.ending import end_step

    never = threading.Event()
    ended = []
    assert end_step("the stuck part", never.wait, timeout_s=0.2) is False
    assert "ending the stuck part did not finish within 0.2 s" in capsys.readouterr().err
    assert end_step("the next part", lambda: ended.append(1), timeout_s=5.0) is True
    assert end_step("a failing part", lambda: 1 / 0) is True  # said, not raised
    assert "ending a failing part failed: ZeroDivisionError" in capsys.readouterr().err
    assert ended == [1]
    never.set()
