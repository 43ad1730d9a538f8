"""The game's episode events as Python calls (ROS-free): a watch connection to the control channel
that hands every event (episode, agents, states, recording, replay) to a callback, kept up on a
thread of its own, and the world step up to which the states were handled (what a lockstep step
waits for before it answers).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from acres_sim.channels.control import EVENTS
from acres_sim.net.lines import TOO_LONG, read_lines
from acres_sim.net.reconnect import ReconnectLoop

MAX_EVENT_BYTES = 4 << 20  # an AgentStates line of many agents stays far below

OnEvent = Callable[[str, dict[str, Any]], None]


class EpisodeFeed:
    """on_event(event, body) runs on the feed's thread, in the game's order. on_problem(text) gets a
    line about a malformed event or a lost connection (once per change)."""

    def __init__(self, port: int, on_event: OnEvent, on_problem: Callable[[str], None],
                 host: str = "127.0.0.1", events: Sequence[str] | None = None):
        self._on_event = on_event
        # the watch request: every event, or those named (a game with the watch_events feature)
        self._request = json.dumps({"op": "watch", **({} if events is None else {"events": list(events)})},
                                   separators=(",", ":")).encode() + b"\n"
        self._on_problem = on_problem
        self._handled = threading.Condition()
        self._handled_step = -1
        self._loop = ReconnectLoop(host, port, self._serve, name="episode-feed", reconnect_min_s=0.2,
                                   reconnect_max_s=2.0, on_unreachable=self._unreachable)

    @property
    def connected(self) -> bool:
        return self._loop.connected

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def wait_handled(self, step: int, timeout_s: float) -> bool:
        """Wait until the states of world step `step` (or a later one) were handled."""
        with self._handled:
            return self._handled.wait_for(lambda: self._handled_step >= step, timeout_s)

    def forget_steps(self) -> None:
        """The world clock went back (a reset): count handled steps afresh."""
        with self._handled:
            self._handled_step = -1

    def _unreachable(self, reason: str, changed: bool) -> None:
        if changed:
            self._on_problem(f"episode feed: control channel {self._loop.address} unreachable: {reason}")

    def _serve(self, sock: socket.socket) -> None:
        sock.sendall(self._request)
        first = True
        for line in read_lines(sock, self._loop.stopping, MAX_EVENT_BYTES):
            if line is TOO_LONG:
                self._on_problem(f"episode feed: an event longer than {MAX_EVENT_BYTES} bytes was skipped")
                continue
            try:
                message = json.loads(line)
            except ValueError as exc:
                self._on_problem(f"episode feed: an event is not JSON ({exc})")
                continue
            if first:
                first = False
                if not (isinstance(message, dict) and message.get("ok") is True):
                    self._on_problem(f"episode feed: the game refused to watch: {message}")
                    return
                self._loop.backoff.reset()
                continue
            event = message.get("event") if isinstance(message, dict) else None
            body = message.get("body") if isinstance(message, dict) else None
            if event not in EVENTS or not isinstance(body, dict):
                self._on_problem(f"episode feed: an unknown event was skipped: {str(message)[:200]}")
                continue
            try:
                self._on_event(event, body)
            except Exception as exc:  # noqa: BLE001 -- a bad event is reported; the feed goes on
                self._on_problem(f"episode feed: a {event} event could not be handled: {exc!r}")
            if event == "states":
                step = body.get("step")
                if isinstance(step, int):
                    with self._handled:
                        self._handled_step = max(self._handled_step, step)
                        self._handled.notify_all()
