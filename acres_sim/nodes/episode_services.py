"""sim_control's episode part: the /sim/* topics from the game's episode feed (the episode, the
agents, every step's agent states, farm events and stamps, the objects, the shifts, the conditions,
the contacts, the tasks, and /sim/markers: the objects and the recent contacts for rviz2),
and the acres_interfaces services that record and replay the episode log (the world's services:
world_services.py).

The feed's events are acres_interfaces messages as dicts of their fields; they are encoded to CDR by
acres_sim.episode (the same codec the game's log is written with) and published as serialized
messages, so what a subscriber gets equals, byte for byte, what the log holds. Where acres_interfaces
does not import, sim_control goes on without all of this and says so in one WARN.
"""

from __future__ import annotations

import importlib
from typing import Any

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from acres_sim.episode.log_file import CLOCK, CODEC, TOPICS, Topic
from acres_sim.channels.control import BAD_REQUEST
from acres_sim.game.control_client import ControlClient, ControlRefused
from acres_sim.game.episode_feed import EpisodeFeed
from acres_sim.nodes.acres_services import acres_msg, acres_srv, answering
from acres_sim.stream.timing import PHYSICS_HZ


def qos(topic: Topic) -> QoSProfile:
    durability = DurabilityPolicy.TRANSIENT_LOCAL if topic.latched else DurabilityPolicy.VOLATILE
    return QoSProfile(depth=topic.depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE, durability=durability)


class EpisodeServices:
    """Publishers, the feed and the services; states_delivered(step) is what a lockstep step waits
    for after the barriers."""

    def __init__(self, node: Node, game: ControlClient, port: int, callback_group: Any):
        assert acres_msg is not None and acres_srv is not None
        self._node = node
        self._game = game
        self._log = node.get_logger()
        self._topics = {topic.event: topic for topic in TOPICS if topic is not CLOCK}  # /clock: the bridges'
        self._publishers = {
            topic.name: node.create_publisher(_message_type(topic.type), topic.name, qos(topic))
            for topic in self._topics.values()}
        self._problem = ""
        for name, kind in (("start_recording", acres_srv.StartRecording),
                           ("stop_recording", acres_srv.StopRecording),
                           ("start_replay", acres_srv.StartReplay),
                           ("stop_replay", acres_srv.StopReplay),
                           ("get_episode_status", acres_srv.GetEpisodeStatus)):
            node.create_service(kind, name, answering(self._log, name, getattr(self, name)),
                                callback_group=callback_group)
        self.feed = EpisodeFeed(port, self._on_event, self._on_problem)
        self.feed.start()

    def destroy(self) -> None:
        self.feed.stop()

    def states_delivered(self, step: int, timeout_s: float) -> bool:
        return self.feed.wait_handled(step, timeout_s)

    def forget_steps(self) -> None:
        self.feed.forget_steps()

    # -- the feed --------------------------------------------------------------------------------

    def _on_event(self, event: str, body: dict[str, Any]) -> None:
        topic = self._topics.get(event)
        if topic is not None:
            self._publishers[topic.name].publish(CODEC.encode(topic.type, body))
            if event == "episode":
                self._log.info(f"episode {body.get('episode_id', '')}"
                               + (f" (a replay of {body.get('replay_of')})" if body.get("replay_of") else ""))
        elif event == "recording":
            stopped = body.get("stopped")
            if isinstance(stopped, dict):
                line = (f"episode log {stopped.get('path')} finished: "
                        f"{stopped.get('message_count')} messages, "
                        f"{float(stopped.get('duration_s', 0.0)):.3f} s ({stopped.get('reason')})")
                if body.get("error"):
                    self._log.error(f"{line}; error: {body['error']}")
                else:
                    self._log.info(line)
        elif event == "replay":
            if body.get("ended"):
                self._log.info(f"the replay of {body.get('path')} ended at world time {body.get('end_s')} s: "
                               "the agents hold their last logged state")

    def _on_problem(self, text: str) -> None:
        if text != self._problem:
            self._problem = text
            self._log.warning(text)

    # -- services --------------------------------------------------------------------------------

    def start_recording(self, request: Any, response: Any) -> None:
        if not request.path:
            raise ControlRefused(BAD_REQUEST, "path is empty: give the file to write")
        status = self._game.record_start(request.path)
        response.message = f"recording into {status.get('path')}"
        self._log.info(response.message)

    def stop_recording(self, request: Any, response: Any) -> None:
        summary = self._game.record_stop()
        response.path = str(summary.get("path", ""))
        response.message_count = int(summary.get("message_count", 0))
        response.duration_s = float(summary.get("duration_s", 0.0))
        response.message = f"{response.path}: {response.message_count} messages, {response.duration_s:.3f} s"

    def start_replay(self, request: Any, response: Any) -> None:
        if not request.path:
            raise ControlRefused(BAD_REQUEST, "path is empty: give the episode log to replay")
        self.feed.forget_steps()  # the world goes back to the log's first step
        status = self._game.replay_start(request.path)
        response.start_s = float(status.get("start_s", 0.0))
        response.end_s = float(status.get("end_s", 0.0))
        response.steps = max(0, round((response.end_s - response.start_s) * PHYSICS_HZ))
        response.message = (f"replaying {status.get('path')} "
                            f"({response.start_s:.3f} .. {response.end_s:.3f} s)")
        self._log.info(response.message)

    def stop_replay(self, request: Any, response: Any) -> None:
        self._game.replay_stop()
        response.message = "replay stopped: the agents are simulated from where they are"

    def get_episode_status(self, request: Any, response: Any) -> None:
        status = self._game.episode_status()
        recording, replay = status.get("recording", {}), status.get("replay", {})
        response.episode_id = str(status.get("episode_id", ""))
        response.recording = bool(recording.get("recording"))
        response.record_path = str(recording.get("path", ""))
        response.record_message_count = int(recording.get("message_count", 0))
        response.record_duration_s = float(recording.get("duration_s", 0.0))
        response.replaying = bool(replay.get("replaying"))
        response.replay_path = str(replay.get("path", ""))
        response.replay_start_s = float(replay.get("start_s", 0.0))
        response.replay_end_s = float(replay.get("end_s", 0.0))
        response.replay_time_s = float(replay.get("time_s", 0.0))
        response.replay_ended = bool(replay.get("ended"))


def _message_type(name: str) -> Any:
    """The rclpy class of 'pkg/msg/Type' (acres_interfaces, visualization_msgs)."""
    package, _, kind = name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), kind)
