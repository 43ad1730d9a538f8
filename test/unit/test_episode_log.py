"""The episode log file (acres_sim/episode): the .msg definitions, the CDR codec and the MCAP writer
and reader, held to the format's rules and read back with independent readers (mcap with CRC
validation, rosbags' rosbag2 reader and CDR decoder)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acres_sim.episode import definitions
from acres_sim.episode.cdr import Codec, CdrError
from acres_sim.episode.log_file import (
    AGENT_STATES,
    AGENTS,
    CLOCK,
    CODEC,
    EPISODE,
    SCHEMA_VERSION,
    TOPICS,
    EpisodeLogError,
    EpisodeWriter,
    read_episode,
    stamp_of,
    texts,
)
from acres_sim.episode.msgdef import SEPARATOR, dependencies, full_text, parse

mcap_reader = pytest.importorskip("mcap.reader", reason="the mcap library is not installed (exec_depend)")


def agent_state(name: str, i: int) -> dict:
    """An AgentState with every field set to something other than its zero value."""
    return {
        "name": name,
        "pose": {"position": {"x": 1.0 + i, "y": -2.5 * i, "z": 0.25},
                 "orientation": {"x": 0.0, "y": 0.0, "z": 0.6, "w": 0.8}},
        "twist": {"linear": {"x": 3.0, "y": 0.01, "z": -0.02}, "angular": {"x": 0.001, "y": 0.002, "z": 0.3}},
        "wheel_contact": [True, False, True, True], "surface_class": [1, 2, 3, 4], "field_id": [0, 1, 2, 7],
        "energy": {"traction_j": 10.0 * i, "brake_j": 1.0, "rolling_j": 2.0, "drag_j": 3.0, "slip_j": 0.5,
                   "lateral_j": 0.25, "soil_j": 0.125, "ground_loss_j": 0.875},
        "heading_rad": 7.5, "speed_mps": -1.5, "yaw_rate_rad_s": 0.2, "steer_rad": -0.1, "control": 1,
    }


def states(step: int, names=("polaris", "maxxum")) -> dict:
    return {"header": {"stamp": stamp_of(step / 120.0), "frame_id": ""}, "step": step,
            "agents": [agent_state(n, step) for n in names]}


def write_log(path: Path, steps: int, chunk_bytes: int = 1 << 20) -> EpisodeWriter:
    writer = EpisodeWriter(path, {"source": "test", "agents": "polaris,maxxum"}, chunk_bytes=chunk_bytes)
    writer.write(EPISODE, {"header": {"stamp": stamp_of(0.0)}, "episode_id": "e1", "source": "test",
                           "seed": 42, "physics_step_s": 1 / 120}, 0)
    writer.write(AGENTS, {"header": {"stamp": stamp_of(0.0)}, "agents": [
        {"name": "polaris", "vehicle": "polaris", "wheelbase_m": 2.08}]}, 0)
    for step in range(steps):
        ns = round(step / 120.0 * 1e9)
        writer.write(CLOCK, {"clock": stamp_of(step / 120.0)}, ns)
        writer.write(AGENT_STATES, states(step), ns)
    writer.close()
    return writer


# -- definitions ---------------------------------------------------------------------------------

def test_the_complete_definition_is_the_root_then_each_dependency_once_in_rosbag2_s_order():
    text = full_text("acres_interfaces/msg/AgentStates", texts("jazzy"))
    parts = text.split("\n" + SEPARATOR)
    assert parts[0] == definitions.TEXTS["acres_interfaces/msg/AgentStates"]
    names = [p.split("\n", 1)[0] for p in parts[1:]]
    # depth first, each type's dependencies sorted, every type once, spelled as the texts name them
    assert names == ["MSG: acres_interfaces/AgentState", "MSG: acres_interfaces/EnergyLedger",
                     "MSG: geometry_msgs/Pose", "MSG: geometry_msgs/Point", "MSG: geometry_msgs/Quaternion",
                     "MSG: geometry_msgs/Twist", "MSG: geometry_msgs/Vector3", "MSG: std_msgs/Header",
                     "MSG: builtin_interfaces/Time"]
    assert parts[-1].split("\n", 1)[1] == texts("jazzy")["builtin_interfaces/msg/Time"]
    assert full_text("acres_interfaces/msg/AgentStates", texts("kilted")) != text  # Time's comments
    assert SEPARATOR == "=" * 80 + "\n"


def test_dependencies_are_found_as_rosbag2_finds_them():
    text = "# geometry_msgs/Pose in a comment\nuint8 A=1\nPoint[] p\nstd_msgs/Header h\nstring<=5 s\n"
    assert dependencies("pkg/msg/T", text) == ["pkg/Point", "std_msgs/Header"]
    fields = parse("pkg/msg/T", text + "float64 x 0.5\nint32[<=3] b\nbool[4] c\n").fields
    assert [(f.name, f.type, f.length) for f in fields] == [
        ("p", "pkg/msg/Point", -1), ("h", "std_msgs/msg/Header", None), ("s", "string", None),
        ("x", "float64", None), ("b", "int32", -1), ("c", "bool", 4)]


def test_every_topic_s_type_and_dependencies_have_texts_and_hashes():
    for topic in TOPICS:
        assert full_text(topic.type, texts())
        type_hash = definitions.HASHES[topic.type]
        assert type_hash.startswith("RIHS01_") and len(type_hash) == 71


# -- CDR -----------------------------------------------------------------------------------------

def test_cdr_layout_aligns_from_the_end_of_the_encapsulation_header():
    codec = Codec({"p/msg/T": "uint8 a\nfloat64 b\nstring s\nuint16[] e\nfloat64[] f\nbool[2] g\n"})
    data = codec.encode("p/msg/T", {"a": 7, "b": 1.5, "s": "hi", "e": [], "f": [2.0], "g": [True, False]})
    assert data[:4] == b"\x00\x01\x00\x00"
    body = data[4:]
    assert body[0] == 7 and body[1:8] == bytes(7) and struct.unpack_from("<d", body, 8)[0] == 1.5
    assert struct.unpack_from("<I", body, 16)[0] == 3 and body[20:23] == b"hi\x00"
    # an empty sequence: its count (aligned to 4) and no padding for elements it does not have
    assert struct.unpack_from("<I", body, 24)[0] == 0
    assert struct.unpack_from("<I", body, 28)[0] == 1 and struct.unpack_from("<d", body, 32)[0] == 2.0
    assert body[40:42] == b"\x01\x00" and len(body) == 42
    assert codec.decode("p/msg/T", data) == {"a": 7, "b": 1.5, "s": "hi", "e": [], "f": [2.0],
                                             "g": [True, False]}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=12), st.floats(allow_nan=False), st.integers(0, 255)), max_size=4),
       st.integers(0, 2**64 - 1))
def test_cdr_round_trips_any_agent_states(agents, step):
    message = states(step % 1000, names=())
    message["step"] = step
    for name, value, byte in agents:
        state = agent_state(name, 1)
        state["speed_mps"], state["control"] = value, byte
        message["agents"].append(state)
    data = CODEC.encode(AGENT_STATES.type, message)
    assert CODEC.decode(AGENT_STATES.type, data) == message
    assert CODEC.encode(AGENT_STATES.type, CODEC.decode(AGENT_STATES.type, data)) == data


def test_cdr_refuses_bytes_that_are_not_the_message():
    data = CODEC.encode(AGENT_STATES.type, states(3))
    for bad in (data[:-9], data[:30], b"\x01\x00\x00\x00" + data[4:], b"", data[:4] + b"\xff\xff\xff\x7f"):
        with pytest.raises(CdrError):
            CODEC.decode(AGENT_STATES.type, bad)


# -- the file ------------------------------------------------------------------------------------

def test_the_file_has_the_layout_rosbag2_and_the_seed_give(tmp_path):
    path = tmp_path / "e.mcap"
    write_log(path, 3000, chunk_bytes=256 * 1024)
    from mcap.records import Chunk, DataEnd, Footer, Message, MessageIndex, Metadata
    from mcap.stream_reader import StreamReader

    records = list(StreamReader(str(path), emit_chunks=True, validate_crcs=True).records)
    kinds = [type(r).__name__ for r in records]
    chunks = [r for r in records if isinstance(r, Chunk)]
    assert len(chunks) > 3 and all(c.compression == "" for c in chunks)
    assert all(c.uncompressed_crc != 0 for c in chunks)
    # every chunk but the last is about chunk_bytes, and its message indexes follow it at once
    assert all(250_000 < len(c.data) < 300_000 for c in chunks[:-1])
    for i, kind in enumerate(kinds):
        if kind == "Chunk":
            assert kinds[i + 1] == "MessageIndex"
    assert not any(isinstance(r, Message) for r in records)  # every message is in a chunk
    assert any(isinstance(r, MessageIndex) for r in records)
    assert next(r for r in records if isinstance(r, DataEnd)).data_section_crc != 0
    footer = next(r for r in records if isinstance(r, Footer))
    assert footer.summary_crc != 0 and footer.summary_start > 0
    meta = [r for r in records if isinstance(r, Metadata)]
    assert meta[0].name == "acres_episode" and meta[0].metadata["schema_version"] == SCHEMA_VERSION
    with open(path, "rb") as f:
        reader = mcap_reader.make_reader(f, validate_crcs=True)
        header, summary = reader.get_header(), reader.get_summary()
        assert header.profile == "ros2"
        assert summary.statistics.message_count == 2 + 2 * 3000
        assert len(summary.chunk_indexes) == len(chunks)
        assert {s.name: s.encoding for s in summary.schemas.values()}[AGENT_STATES.type] == "ros2msg"
        channels = {c.topic: c for c in summary.channels.values()}
        assert set(channels) == {t.name for t in TOPICS}
        for topic in TOPICS:
            channel = channels[topic.name]
            assert channel.message_encoding == "cdr"
            assert channel.metadata["topic_type_hash"] == definitions.HASHES[topic.type]
            assert "reliability: reliable" in channel.metadata["offered_qos_profiles"]
        schema = summary.schemas[channels[AGENT_STATES.name].schema_id]
        assert schema.data.decode() == full_text(AGENT_STATES.type, texts())
        times = [m.log_time for _s, _c, m in reader.iter_messages(log_time_order=False)]
        assert times == sorted(times)
        assert all(m.publish_time == m.log_time for _s, _c, m in reader.iter_messages())


def test_rosbags_reads_the_log_with_its_own_rosbag2_reader_and_cdr_decoder(tmp_path):
    pytest.importorskip("rosbags", reason="rosbags is not installed (test_depend python3-rosbags-pip)")
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    path = tmp_path / "e.mcap"
    write_log(path, 500)
    with AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        by_topic = {c.topic: c for c in reader.connections}
        assert by_topic[AGENT_STATES.name].msgtype == AGENT_STATES.type
        qos = by_topic[EPISODE.name].ext.offered_qos_profiles[0]
        assert qos.depth == 1 and qos.durability.name == "TRANSIENT_LOCAL"
        got = []
        for connection, timestamp, raw in reader.messages(connections=[by_topic[AGENT_STATES.name]]):
            msg = reader.deserialize(raw, connection.msgtype)
            got.append((timestamp, msg))
    assert len(got) == 500
    for step, (timestamp, msg) in enumerate(got):
        want = states(step)
        assert timestamp == round(step / 120.0 * 1e9) and msg.step == step
        for have, expected in zip(msg.agents, want["agents"]):
            assert have.name == expected["name"]
            assert have.pose.position.x == expected["pose"]["position"]["x"]
            assert list(have.wheel_contact) == expected["wheel_contact"]
            assert list(have.surface_class) == expected["surface_class"]
            assert list(have.field_id) == expected["field_id"]
            assert have.energy.ground_loss_j == expected["energy"]["ground_loss_j"]
            assert have.heading_rad == expected["heading_rad"] and have.control == expected["control"]


def test_the_reader_gives_back_what_was_written(tmp_path):
    path = tmp_path / "e.mcap"
    writer = write_log(path, 240)
    assert writer.message_count == 2 + 480 and writer.duration_s == pytest.approx(239 / 120)
    log = read_episode(path)
    assert log.metadata == {"schema_version": SCHEMA_VERSION, "source": "test", "agents": "polaris,maxxum"}
    assert log.episode["episode_id"] == "e1" and log.agents["agents"][0]["wheelbase_m"] == 2.08
    assert [s.step for s in log.steps] == list(range(240))
    assert log.steps[17].agents == {a["name"]: a for a in states(17)["agents"]}
    assert log.agent_names == ["maxxum", "polaris"] and log.end_s == pytest.approx(239 / 120)


def test_the_writer_refuses_what_would_lose_data(tmp_path):
    path = tmp_path / "e.mcap"
    path.write_bytes(b"keep me")
    with pytest.raises(EpisodeLogError, match="cannot create"):
        EpisodeWriter(path, {})
    assert path.read_bytes() == b"keep me"
    with pytest.raises(EpisodeLogError, match="cannot create"):
        EpisodeWriter(tmp_path / "missing" / "e.mcap", {})
    writer = EpisodeWriter(tmp_path / "t.mcap", {})
    writer.write(CLOCK, {"clock": stamp_of(1.0)}, 1_000_000_000)
    with pytest.raises(EpisodeLogError, match="never goes back"):
        writer.write(CLOCK, {"clock": stamp_of(0.5)}, 500_000_000)
    writer.close()
    writer.close()  # safe twice
    with pytest.raises(EpisodeLogError, match="closed"):
        writer.write(CLOCK, {"clock": stamp_of(2.0)}, 2_000_000_000)
    assert read_episode_error(tmp_path / "t.mcap") == "no agent states"


def read_episode_error(path: Path) -> str:
    try:
        read_episode(path)
    except EpisodeLogError as exc:
        return "no agent states" if "no agent states" in str(exc) else str(exc)
    return ""


@pytest.mark.parametrize("damage, error", [
    (lambda d: b"PK\x03\x04" + d[4:], "not an MCAP file"),
    (lambda d: d[: len(d) // 3], "truncated"),
    (lambda d: d[:-1], "truncated"),
    (lambda d: b"", "not an MCAP file"),
    (lambda d: d.replace(b"polaris", b"polarjs", 1), "CRC mismatch"),
])
def test_damaged_files_are_refused_with_what_is_wrong(tmp_path, damage, error):
    path = tmp_path / "e.mcap"
    write_log(path, 600)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(EpisodeLogError, match=error):
        read_episode(path)


def test_an_unknown_schema_version_is_refused(tmp_path):
    path = tmp_path / "e.mcap"
    writer = EpisodeWriter(path, {"schema_version": "99"})
    writer.write(AGENT_STATES, states(1), 1)
    writer.close()
    with pytest.raises(EpisodeLogError, match="schema_version '99'"):
        read_episode(path)
    with pytest.raises(EpisodeLogError, match="cannot read"):
        read_episode(tmp_path / "missing.mcap")


def test_the_hub_says_who_takes_an_event_a_watcher_that_asked_or_every_one_or_a_recording():
    from acres_sim.fake_game.simulation.episode_hub import EpisodeHub

    class Named:  # a watcher that named its events (as the control server's watch connections do)
        def __init__(self, events):
            self.events, self.got = events, []

        def wants(self, event):
            return event in self.events

        def publish(self, event, body):
            self.got.append(event)

    class Recorder:
        recording = False

    hub = EpisodeHub()
    assert not hub.wants("farm_stamps")  # nobody at all
    hub.add_listener(Named({"states"}))
    assert hub.wants("states") and not hub.wants("farm_stamps")
    hub.tap = Recorder()
    assert not hub.wants("farm_stamps")
    hub.tap.recording = True
    assert hub.wants("farm_stamps")
    hub.tap.recording = False
    every = type("Every", (), {"publish": lambda self, event, body: None})()  # names none: takes all
    hub.add_listener(every)
    assert hub.wants("farm_stamps")
