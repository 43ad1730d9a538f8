"""How a scenario run's world moves on (ROS-free): the rule a lockstep step waits for the stack by
(CommandRule), the two pacings (LockstepPacing, RealTimePacing) and the stack's silence (Silent).

Lockstep, as a stack on `use_sim_time` sees it: the world stops at ticks command_period_s apart;
`/clock` says a tick's time only once every agent's data of the tick is delivered (the barriers),
and again every 0.1 s while the world waits, so that a timer at any rate fires there with the tick's
data in hand and a lost `/clock` stalls nothing. The world steps on from tick T once every agent
under command holds a command for T (CommandRule). A stack that runs in real time on sim time
therefore runs in lockstep unchanged, and a deterministic one gives the same run every time.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any

EPS_S = 1e-6
SLOWEST_RATE_HZ = 5.0  # the first tick comes late enough for a timer this slow to have fired
QUIET_BOOT_S = 0.5  # before an agent's pace is known: the wait for a newer command than the last tick's
QUIET_DATA_S = 0.1  # a stack that answers its data, not the clock: the quiet that ends its answers
STAMPS_KEPT = 8  # distinct stamps per agent the cadence is read from
CLOCK_KEPT = 4  # ticks remembered of how each agent's command was accepted


class Silent(Exception):
    """The stack fell silent (or its commands are refused): the run ends with exit 2."""


class CommandRule:
    """The lockstep rule, per agent under command, at tick T (period P = command_period_s):

    1. "clock": it holds a command stamped at or after T (a timer's `now()` at T, an answer stamped
       with the tick's data, a zero or unstamped command taken after the tick);
    2. "cadence": its stamps show it commands every m >= 2 ticks (a timer slower than 1/P whose
       period is a multiple of P): a command stamped after T - m P;
    3. "quiet": it holds the previous tick's command (stamped at or after T - P) and sent nothing
       newer for QUIET_BOOT_S (its pace not yet known: the first ticks of a slow timer) or, for a
       stack that answers its data rather than the clock, QUIET_DATA_S.

    A stack that answers the clock (rule 1 within its last CLOCK_KEPT ticks) is waited for without a
    quiet limit: the world never steps on a command it has not had time to send. So the world
    never advances on a command older than the stack's own period (rules 2 and 3 count how often).
    """

    def __init__(self, agents: list[str], period_s: float):
        self.period_s = period_s
        self._stamps: dict[str, deque[float]] = {a: deque(maxlen=STAMPS_KEPT) for a in agents}
        self._by_clock: dict[str, deque[bool]] = {a: deque(maxlen=CLOCK_KEPT) for a in agents}
        self.counts = {"clock": 0, "cadence": 0, "quiet": 0}

    def cadence(self, agent: str) -> int:
        """Ticks between the agent's commands as its stamps show them (1 until shown otherwise)."""
        stamps = self._stamps[agent]
        gaps = [b - a for a, b in zip(stamps, list(stamps)[1:])]
        if not gaps:
            return 1
        return max(1, round(min(gaps) / self.period_s))

    def pace_known(self, agent: str) -> bool:
        return len(self._stamps[agent]) >= 2

    def answers_clock(self, agent: str) -> bool:
        return any(self._by_clock[agent])

    def accept(self, agent: str, stamp: float, quiet_s: float, now: float) -> str | None:
        """Which rule lets a step from tick `now` go on for `agent` (None: not yet)."""
        if stamp >= now - EPS_S:
            return "clock"
        m = self.cadence(agent)
        if m > 1 and stamp > now - m * self.period_s + EPS_S:
            return "cadence"
        if stamp >= now - self.period_s - EPS_S:
            if not self.pace_known(agent):
                return "quiet" if quiet_s >= QUIET_BOOT_S else None  # a slow timer's first ticks
            if not self.answers_clock(agent) and quiet_s >= QUIET_DATA_S:
                return "quiet"  # a stack that answers its data: its answers to the tick's are in
        return None

    def took(self, agent: str, stamp: float, why: str) -> None:
        """The step went on with `agent` holding `stamp`, by rule `why`."""
        stamps = self._stamps[agent]
        if not stamps or stamp > stamps[-1] + EPS_S:
            stamps.append(stamp)
        self._by_clock[agent].append(why == "clock")
        self.counts[why] += 1


# held.snapshot(): (version, agent -> (stamp, source, when it changed) or None)
Snapshot = tuple[int, dict[str, Any]]


def wait_for_commands(rule: CommandRule, snapshot: Callable[[], Snapshot],
                      wait_change: Callable[[int, float], None], now: float, timeout_s: float,
                      check: Callable[[], None], awaiting: str,
                      clock: Callable[[], float] = time.monotonic) -> list[str]:
    """Wait until the rule accepts every agent under command at tick `now`; the agents still
    waited for after timeout_s of silence (empty: go on). check() raises to stop the wait."""
    while True:
        version, held = snapshot()
        wall = clock()
        late, accepted = [], []
        for agent, h in held.items():
            if h is None:
                late.append(agent)
                continue
            stamp, source, changed = h
            if source == "":
                continue  # not under command: nothing to wait for
            why = None if source == awaiting else rule.accept(agent, stamp, wall - changed, now)
            if why is None:
                late.append(agent)
            else:
                accepted.append((agent, stamp, why))
        if not late:
            for agent, stamp, why in accepted:
                rule.took(agent, stamp, why)
            return []
        silent = min(wall - held[a][2] if held[a] is not None else math.inf for a in late)
        if silent >= timeout_s:
            return late
        check()
        wait_change(version, min(0.05, timeout_s - silent))  # a change, or a quiet limit to look at


def start_steps(chunk: int, physics_hz: float) -> int:
    """The steps before the first tick: whole command periods, at least 1/SLOWEST_RATE_HZ of world
    time, so that a timer of that rate or faster, made before the first /clock, fires at it."""
    periods = max(1, math.ceil(physics_hz / SLOWEST_RATE_HZ / chunk - 1e-9))
    return periods * chunk


class LockstepPacing:
    """The world by ticks: the runner steps it one command period at a time, once the stack holds a
    command for the tick (CommandRule), and says each tick on /clock once its data is delivered.

    game: the control client (step, republish); lockstep: the barriers' and held commands' watch
    (acres_sim.control.lockstep.Lockstep); delivered(step, timeout_s): the step's states handled;
    tick(t): /clock says t; check(): raises to end the run; last_sent(agents): what they last sent,
    in words."""

    REPUBLISH_EVERY_S = 0.5  # the first tick's states again while the stack has not answered them
    # A tick more at the start while nothing at all is under command this long (wall) after the last:
    # long enough for a slow first answer (a loaded machine, a stack's first callbacks) to come in,
    # which a tick more would shift by a tick.
    TICK_AGAIN_AFTER_S = 5.0

    def __init__(self, game: Any, lockstep: Any, delivered: Callable[[int, float], bool],
                 tick: Callable[[float], None], rule: CommandRule, chunk: int, physics_hz: float,
                 stack_timeout_s: float, check: Callable[[], None], last_sent: Callable[[list[str]], str],
                 awaiting: str):
        self._game, self._lockstep, self._delivered, self._tick = game, lockstep, delivered, tick
        self.rule, self.chunk, self._hz = rule, chunk, physics_hz
        self._stack_timeout_s, self._check, self._last_sent = stack_timeout_s, check, last_sent
        self._awaiting = awaiting
        self.world_time_s = 0.0
        self._republished = self._ticked = time.monotonic()

    def _steps(self, steps: int, now: float, chunk: int | None = None) -> float:
        def stepped(n: int) -> tuple[int, float]:
            done = self._game.step(n)
            return done.step, done.time_s

        self._lockstep.steps(steps, chunk or self.chunk, stepped, lambda: now, delivered=self._delivered)
        self.world_time_s = float(self._lockstep.world_time_s or now)
        self._tick(self.world_time_s)
        self._ticked = time.monotonic()
        return self.world_time_s

    def begin(self, world_time_s: float) -> float:
        """The first tick, every agent standing at its start: the stack then has /clock, every
        sensor's first frame and the agents' states to answer. Returns its time (scenario time 0).
        One request: a stack's answer to the states of a command period inside it (a timer's, an
        answer to the data) then acts after it, always; between two requests it would act at once or
        after the second one, whichever came first (the runs of one file would differ)."""
        self.world_time_s = world_time_s
        steps = start_steps(self.chunk, self._hz)
        return self._steps(steps, world_time_s, chunk=steps)

    def while_starting(self, nothing_under_command: bool, may_tick: bool) -> float | None:
        """Called while the runner waits for the first commands: the first tick's states again now
        and then, and, when nothing at all is under command a while after the tick (a stack whose
        timer was made after it, or whose data came too late to be matched), another tick with every
        agent still standing. Returns the new start when the world moved on."""
        wall = time.monotonic()
        if may_tick and nothing_under_command and wall - self._ticked > self.TICK_AGAIN_AFTER_S:
            return self._steps(self.chunk, self.world_time_s)
        if wall - self._republished > self.REPUBLISH_EVERY_S:
            # a stack whose subscription was matched after the states went out gets them again
            self._game.request({"op": "republish"})
            self._republished = wall
        return None

    def started(self) -> float | None:
        """Every judged agent under command: scenario time 0 stays the first tick's."""
        return None

    def now(self) -> float:
        return self.world_time_s

    def advance(self, now: float, left_s: float) -> None:
        """The stack's commands for tick `now`, then the world to the next tick (or left_s)."""
        late = wait_for_commands(self.rule, self._lockstep.held.snapshot, self._lockstep.held.wait_change,
                                 now, self._stack_timeout_s, self._check, self._awaiting)
        if late:
            self._check()  # a process that died is why nothing came, if one did
            raise Silent(f"no command for world time {now:.3f} s from {', '.join(late)} within "
                         f"{self._stack_timeout_s:g} s (stack_timeout_s): {self._last_sent(late)}; the run "
                         "ends rather than step on a stale command")
        self._steps(min(self.chunk, max(1, round(left_s * self._hz))), now)

    def end(self) -> float:
        return self.world_time_s


class RealTimePacing:
    """The world plays; the stack's silence is watched in world time."""

    def __init__(self, game: Any, held: Any, stack_timeout_s: float, check: Callable[[], None],
                 last_sent: Callable[[list[str]], str]):
        self._game, self._held = game, held
        self._stack_timeout_s, self._check, self._last_sent = stack_timeout_s, check, last_sent

    def begin(self, world_time_s: float) -> float:
        self._game.play()
        return world_time_s

    def while_starting(self, nothing_under_command: bool, may_tick: bool) -> float | None:
        return None

    def started(self) -> float | None:
        """Every judged agent under command: scenario time 0 is now, so that a stack's start-up (its
        imports, discovery) is not driving time lost, as in lockstep."""
        return self.now()

    def now(self) -> float:
        return float(self._game.request({"op": "status"})["time_s"])

    def advance(self, now: float, left_s: float) -> None:
        stale = [a for a, stamp in self._held.stamps().items() if stamp < now - self._stack_timeout_s]
        if stale:
            self._check()
            raise Silent(f"no command from {', '.join(stale)} for {self._stack_timeout_s:g} s of world time "
                         f"(stack_timeout_s): {self._last_sent(stale)}")
        time.sleep(0.01)

    def end(self) -> float:
        self._game.pause()
        return self.now()
