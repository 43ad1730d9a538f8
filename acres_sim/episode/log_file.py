"""The episode log file, ROS-free: an MCAP of acres_interfaces messages (the seed's AcresEpisodeLog).

Written with the `mcap` library (by the format's authors): profile ros2; one ros2msg schema per type
with its dependencies as rosbag2 writes them; CDR messages; uncompressed chunks of about 1 MiB, each
followed by its message indexes and flushed to the OS at once (a killed writer loses the open chunk
only); a summary with statistics, chunk indexes and CRCs (chunks, data
section, summary); channel metadata offered_qos_profiles and topic_type_hash as rosbag2 writes them;
log time = publish time = the message's stamp, never decreasing; a metadata record acres_episode.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from acres_sim import topics
from acres_sim.episode import definitions
from acres_sim.episode.cdr import Codec, CdrError
from acres_sim.episode.msgdef import DefinitionError, full_text, split_full_text

SCHEMA_VERSION = "1"
METADATA_NAME = "acres_episode"
LIBRARY = "acres_sim episode log"
CHUNK_BYTES = 1 << 20
MCAP_MAGIC = b"\x89MCAP0\r\n"
_INFINITE = "    sec: 9223372036\n    nsec: 854775807"


@dataclass(frozen=True)
class Topic:
    """A topic of the log, the QoS the ROS side publishes it with (reliable, keep last) and the name
    of the game's event that carries it."""

    name: str
    type: str  # 'pkg/msg/Type'
    latched: bool  # transient local (else volatile)
    depth: int
    event: str


# What the log carries, in registration order.
EPISODE = Topic(topics.SIM_EPISODE, "acres_interfaces/msg/Episode", True, 1, "episode")
AGENTS = Topic(topics.SIM_AGENTS, "acres_interfaces/msg/Agents", True, 1, "agents")
AGENT_STATES = Topic(topics.SIM_AGENT_STATES, "acres_interfaces/msg/AgentStates", False, 120, "states")  # 1 s
CLOCK = Topic(topics.CLOCK, "rosgraph_msgs/msg/Clock", False, 10, "clock")
OBJECTS = Topic(topics.SIM_OBJECTS, "acres_interfaces/msg/WorldObjects", True, 1, "objects")
SHIFTS = Topic(topics.SIM_SHIFTS, "acres_interfaces/msg/VehicleShifts", True, 1, "shifts")
CONDITIONS = Topic(topics.SIM_CONDITIONS, "acres_interfaces/msg/Conditions", True, 1, "conditions")
FARM_EVENTS = Topic(topics.SIM_FARM_EVENTS, "acres_interfaces/msg/FarmEvents", False, 120, "farm_events")
FARM_STAMPS = Topic(topics.SIM_FARM_STAMPS, "acres_interfaces/msg/FarmStamps", False, 120, "farm_stamps")
CONTACTS = Topic(topics.SIM_CONTACTS, "acres_interfaces/msg/Contacts", False, 120, "contacts")
TASK = Topic(topics.SIM_TASK, "acres_interfaces/msg/TaskStatus", False, 120, "task")
MARKERS = Topic(topics.SIM_MARKERS, "visualization_msgs/msg/MarkerArray", True, 1, "markers")
TOPICS = (EPISODE, AGENTS, AGENT_STATES, CLOCK, OBJECTS, SHIFTS, CONDITIONS, FARM_EVENTS, FARM_STAMPS,
          CONTACTS, TASK, MARKERS)
# For viewers only (Foxglove draws the vehicles from them; a replay does not read them): the
# recorder makes them from the agents and their states.
TF = Topic(topics.TF, "tf2_msgs/msg/TFMessage", False, 100, "")
TF_STATIC = Topic(topics.TF_STATIC, "tf2_msgs/msg/TFMessage", True, 1, "")


def robot_description_topic(agent: str) -> Topic:
    return Topic(f"/{agent}/{topics.ROBOT_DESCRIPTION}", "std_msgs/msg/String", True, 1, "")


def joint_states_topic(agent: str) -> Topic:
    return Topic(f"/{agent}/{topics.JOINT_STATES}", "sensor_msgs/msg/JointState", False, 120, "")


WORLD = (OBJECTS, SHIFTS, CONDITIONS)  # how the world was varied: a replay applies them in time


class EpisodeLogError(Exception):
    """A log that cannot be written or read: the message says which file and why."""


def ros_distro() -> str:
    """The distribution whose .msg texts the schemas carry (comments differ between them)."""
    distro = os.environ.get("ROS_DISTRO") or os.environ.get("ACRES_ROS_DISTRO", "")
    return distro if distro in definitions.DISTROS else definitions.DISTROS[0]


def texts(distro: str | None = None) -> dict[str, str]:
    merged = dict(definitions.TEXTS)
    merged.update(definitions.DISTRO_TEXTS[distro or ros_distro()])
    return merged


CODEC = Codec(texts())


def offered_qos(topic: Topic) -> str:
    """The offered_qos_profiles channel metadata, as rosbag2 (metadata version 9) serialises the
    QoS of the publishers it recorded: here the one publisher the ROS side offers the topic with."""
    durability = "transient_local" if topic.latched else "volatile"
    return (f"- history: keep_last\n  depth: {topic.depth}\n  reliability: reliable\n"
            f"  durability: {durability}\n  deadline:\n{_INFINITE}\n  lifespan:\n{_INFINITE}\n"
            f"  liveliness: automatic\n  liveliness_lease_duration:\n{_INFINITE}\n"
            f"  avoid_ros_namespace_conventions: false")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def stamp_ns(stamp: Mapping[str, int]) -> int:
    return int(stamp["sec"]) * 1_000_000_000 + int(stamp["nanosec"])


def stamp_of(seconds: float) -> dict[str, int]:
    """builtin_interfaces/Time of a world time in seconds, rounded to the nanosecond."""
    ns = round(seconds * 1e9)
    return {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}


class EpisodeWriter:
    """Writes one episode log. Opening refuses an existing file (nothing earlier is overwritten);
    write() takes a message dict and its stamp (ns); close() finishes the file (safe to repeat).
    viewing: the viewers' topics of this log besides TOPICS (/tf, /tf_static, each agent's
    robot_description and joint_states)."""

    def __init__(self, path: str | os.PathLike[str], metadata: Mapping[str, str], distro: str | None = None,
                 chunk_bytes: int = CHUNK_BYTES, viewing: Sequence[Topic] = ()):
        from mcap.writer import CompressionType, Writer  # the library loads only when a log is written

        self.path = Path(path)
        try:
            self._file: BinaryIO = open(self.path, "xb")
        except OSError as exc:
            raise EpisodeLogError(f"cannot create the episode log {self.path}: {_why(exc)}") from None
        try:
            self._writer = Writer(self._file, chunk_size=chunk_bytes, compression=CompressionType.NONE,
                                  enable_crcs=True, enable_data_crcs=True)
            self._writer.start(profile="ros2", library=LIBRARY)
            all_texts = texts(distro)
            self._channels: dict[str, int] = {}
            schemas: dict[str, int] = {}
            for topic in (*TOPICS, *viewing):
                if topic.type not in schemas:
                    schemas[topic.type] = self._writer.register_schema(
                        name=topic.type, encoding="ros2msg", data=full_text(topic.type, all_texts).encode())
                schema = schemas[topic.type]
                self._channels[topic.name] = self._writer.register_channel(
                    topic=topic.name, message_encoding="cdr", schema_id=schema,
                    metadata={"offered_qos_profiles": offered_qos(topic),
                              "topic_type_hash": definitions.HASHES[topic.type]})
            self._writer.add_metadata(METADATA_NAME, {"schema_version": SCHEMA_VERSION, **metadata})
        except OSError as exc:
            self._abandon()
            raise EpisodeLogError(f"cannot write the episode log {self.path}: {_why(exc)}") from None
        self._file.flush()  # the header, schemas, channels and metadata
        self._written = self._file.tell()
        self.message_count = 0
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self._sequence = 0
        self._closed = False

    @property
    def duration_s(self) -> float:
        return 0.0 if self.first_ns is None or self.last_ns is None else (self.last_ns - self.first_ns) / 1e9

    def write(self, topic: Topic, message: Mapping[str, Any], time_ns: int) -> None:
        """Encode and add one message at log time time_ns (not before the last one)."""
        self.write_raw(topic, CODEC.encode(topic.type, message), time_ns)

    def write_raw(self, topic: Topic, data: bytes, time_ns: int) -> None:
        if self._closed:
            raise EpisodeLogError(f"the episode log {self.path} is closed")
        if self.last_ns is not None and time_ns < self.last_ns:
            raise EpisodeLogError(f"{topic.name} at {time_ns} ns is before the last message "
                                  f"({self.last_ns} ns): the log time never goes back")
        self._sequence += 1
        try:
            self._writer.add_message(self._channels[topic.name], log_time=time_ns, data=data,
                                     publish_time=time_ns, sequence=self._sequence)
            written = self._file.tell()
            if written != self._written:  # a chunk and its indexes went out: to the OS with them
                self._file.flush()
                self._written = written
        except OSError as exc:
            raise EpisodeLogError(f"writing the episode log {self.path} failed: {_why(exc)}") from None
        self.message_count += 1
        if self.first_ns is None:
            self.first_ns = time_ns
        self.last_ns = time_ns

    def close(self) -> None:
        """The last chunk, its indexes, the summary and the footer; then the file is closed."""
        if self._closed:
            return
        self._closed = True
        try:
            self._writer.finish()
            self._file.close()
        except OSError as exc:
            try:
                self._file.close()  # what it still holds cannot be written either
            except OSError:
                pass
            raise EpisodeLogError(f"finishing the episode log {self.path} failed: {_why(exc)}") from None

    def _abandon(self) -> None:
        self._closed = True
        self._file.close()


@dataclass
class LoggedStep:
    """One physics step of the log: its world time (ns), step number and every agent's state."""

    time_ns: int
    step: int
    agents: dict[str, dict[str, Any]]


@dataclass
class EpisodeLog:
    """A whole episode log read back: its metadata, the episode and agents records, every step."""

    path: Path
    metadata: dict[str, str]
    episode: dict[str, Any] | None
    agents: dict[str, Any] | None
    steps: list[LoggedStep] = field(default_factory=list)
    world: list[tuple[int, Topic, dict[str, Any]]] = field(default_factory=list)  # (ns, WORLD topic, message)
    contacts: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (ns, Contacts)
    message_counts: dict[str, int] = field(default_factory=dict)

    @property
    def agent_names(self) -> list[str]:
        return sorted({name for s in self.steps for name in s.agents})

    @property
    def start_s(self) -> float:
        return self.steps[0].time_ns / 1e9 if self.steps else 0.0

    @property
    def end_s(self) -> float:
        return self.steps[-1].time_ns / 1e9 if self.steps else 0.0


def iter_log_messages(path: str | os.PathLike[str]) -> Iterator[tuple[str, str, int, bytes]]:
    """(topic, schema name, log time ns, data) of every message in file order, chunk and data-section
    CRCs validated; stops with EpisodeLogError where the file ends early or is damaged."""
    for topic, schema, time_ns, data in _iter_messages(path):
        yield topic, schema.name if schema else "", time_ns, data


def _iter_messages(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any, int, bytes]]:
    """(topic, its Schema record or None, log time ns, data), as iter_log_messages."""
    from mcap.exceptions import McapError
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import CRCValidationError, StreamReader

    channels: dict[int, Channel] = {}
    schemas: dict[int, Schema] = {}
    try:
        for record in StreamReader(str(path), validate_crcs=True).records:
            if isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message):
                channel = channels.get(record.channel_id)
                if channel is None:
                    raise EpisodeLogError(f"{path}: a message on unknown channel {record.channel_id}")
                schema = schemas.get(channel.schema_id)
                yield channel.topic, schema, record.log_time, record.data
    except CRCValidationError as exc:
        raise EpisodeLogError(f"{path}: CRC mismatch ({exc})") from None
    except (McapError, EOFError, ValueError, OSError) as exc:
        raise EpisodeLogError(f"{path}: not a complete MCAP file ({type(exc).__name__}: {exc})") from None


def read_episode(path: str | os.PathLike[str]) -> EpisodeLog:
    """Reads and checks a whole episode log (for replay and tests)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(len(MCAP_MAGIC))
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size >= len(MCAP_MAGIC):
                f.seek(size - len(MCAP_MAGIC))
                tail = f.read()
            else:
                tail = b""
    except OSError as exc:
        raise EpisodeLogError(f"cannot read the episode log {path}: {_why(exc)}") from None
    if head != MCAP_MAGIC:
        raise EpisodeLogError(f"{path} is not an MCAP file")
    if tail != MCAP_MAGIC:
        raise EpisodeLogError(f"{path} is truncated (no closing magic: the recording did not finish)")
    metadata = _metadata(path)
    version = metadata.get("schema_version")
    if version != SCHEMA_VERSION:
        raise EpisodeLogError(f"{path}: episode log schema_version {version!r}, this version reads "
                              f"{SCHEMA_VERSION!r}")
    log = EpisodeLog(path=path, metadata=metadata, episode=None, agents=None)
    by_topic = {t.name: t for t in TOPICS}
    codecs: dict[int, Codec] = {}  # by schema id: each message is read as the file defines it
    for topic_name, schema, time_ns, data in _iter_messages(path):
        log.message_counts[topic_name] = log.message_counts.get(topic_name, 0) + 1
        topic = by_topic.get(topic_name)
        if topic is None:
            continue  # a topic this version does not know: readers skip it
        if schema is None or schema.name != topic.type:
            raise EpisodeLogError(f"{path}: {topic_name} has schema {schema.name if schema else None}, "
                                  f"expected {topic.type}")
        try:
            codec = codecs.get(schema.id)
            if codec is None:
                codec = codecs[schema.id] = _file_codec(schema.name, schema.data)
            message = codec.decode(topic.type, data)
        except (CdrError, DefinitionError, UnicodeDecodeError) as exc:
            raise EpisodeLogError(f"{path}: {exc}") from None
        if topic is EPISODE:
            log.episode = message
        elif topic is AGENTS:
            log.agents = message
        elif topic is AGENT_STATES:
            log.steps.append(LoggedStep(time_ns, int(message["step"]),
                                        {a["name"]: a for a in message["agents"]}))
        elif topic in WORLD:
            log.world.append((time_ns, topic, message))
        elif topic is CONTACTS:
            log.contacts.append((time_ns, message))
    if not log.steps:
        raise EpisodeLogError(f"{path}: no agent states in the log")
    return log


def _file_codec(root: str, schema: bytes) -> Codec:
    """A codec of the definition a log carries (a log of an earlier version has the fields it had)."""
    return Codec(split_full_text(root, schema.decode("utf-8")))


def _metadata(path: Path) -> dict[str, str]:
    from mcap.exceptions import McapError
    from mcap.reader import make_reader

    try:
        with open(path, "rb") as f:
            for record in make_reader(f).iter_metadata():
                if record.name == METADATA_NAME:
                    return dict(record.metadata)
    except (McapError, EOFError, ValueError, OSError) as exc:
        raise EpisodeLogError(f"{path}: cannot read its summary ({type(exc).__name__}: {exc})") from None
    raise EpisodeLogError(f"{path}: no {METADATA_NAME} metadata record (not an episode log)")
