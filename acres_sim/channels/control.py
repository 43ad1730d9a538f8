"""The control channel (ROS-free): its ops, fields, error codes and checks, both ends.

Newline-delimited JSON on 127.0.0.1: one request object per line, one answer per request, in order.
The ROS side and learners use it to pause, play and step the world in lockstep, reset it, read and
place entities (an entity is an agent or a spawned object), vary the world and record or replay the
episode log.

    {"op": "step", "steps": N}  -> {"ok": true, "step": S, "time_s": T}   (after the barriers)
        "paused_only": true refuses (code incorrect_state) while the world is playing
        "summary": true adds "summary", what the request's steps did, for a reader that needs it
        once per request rather than as every step's events (a learner, a judge):
            {"step": [...], "sec": [...], "nanosec": [...]: each step's number and stamp,
             "agents": {name: {"x", "y", "z", "yaw", "vx", "crushed_m2": [one per step]}}: the
                 position (world frame), heading (rad), forward speed (body x, m/s) and the crop
                 its wheels crushed in that step (m2, acres_interfaces/FarmEvent CROP_CRUSHED),
             "contacts": [the Contacts messages of the steps that had any],
             "states": the last step's AgentStates,
             "latched": {"agents": Agents, "objects": WorldObjects}: those that changed after the
                 request's "latched_since" (a revision; default -1: both),
             "revision": the latched messages' revision now (the next request's "latched_since")}
            The judge's whole input in the answer: no watch needed, no race with one.
        A game without it answers without "summary" (a status without "step_summary" in its
        "features"): read the watch feed instead. The real game's side of it is an open question.
    {"op": "pause"} / {"op": "play"} / {"op": "status"}  -> {"ok": true, ...} (status: the step, the
        time, paused, the agents, "watchers": how many watch connections hear the episode, and
        "features": what this game has beyond the first version of the channel, of FEATURES)
    {"op": "reset", "scope": "time" | "state" | "all" | "spawned"}  -> {"ok": true, "step", "time_s"}
        "seed": N (scope all only) starts every random process anew from seed N (the sensors'
        noise, the INS errors); without it they start from the seed they had
    {"op": "entities"}  -> {"ok": true, "entities": [...]}
    {"op": "get_state", "name": E}  -> {"ok": true, "name": E, "agent": E, "position": [...], ...}
    {"op": "set_state", "name": E, "position": [x, y, z], "orientation": [x, y, z, w],
     "linear_velocity": [...], "angular_velocity": [...], "on_ground": false}  -> the new state
        (the requests' "name" may be given as "agent", as the channel first called it; "on_ground":
        an agent stands on the ground at x, y, turned by the orientation's heading, z ignored)
    {"op": "record_start", "path": F} / {"op": "record_stop"}  -> the recording's status / summary
    {"op": "replay_start", "path": F} / {"op": "replay_stop"}  -> the replay's status
    {"op": "spawnables"}  -> {"ok": true, "spawnables": [{"uri", "description", "size_m"}, ...]}
    {"op": "spawn", "uri": U, "name": N, "position": [x, y, z], "orientation": [x, y, z, w],
     "allow_renaming": false}  -> the object's state (as get_state)
    {"op": "delete", "name": N}  -> {"ok": true}
    {"op": "set_shift", "agent": A, "shift": {VehicleShift fields}}  -> {"ok": true, "shift": {...}}
    {"op": "set_conditions", "conditions": {Conditions fields}}  -> {"ok": true, "conditions": {...}}
        (fields left out keep their value)
    {"op": "episode_status"}  -> {"ok": true, "episode_id", "recording": {...}, "replay": {...}}
    {"op": "task", "status": {TaskStatus fields}}  -> {"ok": true}: a test's or a learner's view of
        an agent's task, stamped with the world time the world is at, on the watch feed (event
        "task") and in the episode log
    {"op": "republish"}  -> {"ok": true, "step": S}: the latest step's agent states out again on every
        watch feed (not logged again), for a subscriber that joined after they went out (a scenario
        run repeats them until its stack answers the start)
    With a stepping token (fake_game --stepping-token: a scenario run owns the stepping), step,
    reset, pause, play and the replay's start and stop carry "token": T or are refused (locked).
    {"op": "watch"}  -> {"ok": true}, then this connection carries events, one object per line
        ("events": [names] asks for those alone: a reader of the latched messages is not sent
        every step's states, farm events and stamps; the game does not even encode them for it):
        {"event": one of EVENTS, "body": {...}}
        (body: acres_interfaces Episode, Agents, WorldObjects, VehicleShifts, Conditions,
        FarmEvents, FarmStamps, Contacts, TaskStatus, visualization_msgs MarkerArray, AgentStates as
        dicts of their fields; the recording's and the replay's status); every step's contacts,
        farm events, stamps and states before the step's answer.
    anything else -> {"ok": false, "error": "...", "code": one of ERROR_CODES}; the connection stays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DEFAULT_CONTROL_PORT = 5700  # the control channel port the launch file and sim_control use
MAX_REQUEST_BYTES = 64 * 1024  # a longer request line is answered with bad_request and skipped
MAX_ANSWER_BYTES = 1 << 20  # far above any answer; a client buffers no more
MAX_STEPS_PER_REQUEST = 1_000_000
RESET_SCOPES = ("time", "state", "all", "spawned")

OPS = ("step", "pause", "play", "status", "reset", "entities", "spawnables", "spawn", "delete",
       "set_shift", "set_conditions", "get_state", "set_state", "record_start", "record_stop",
       "replay_start", "replay_stop", "episode_status", "task", "republish", "watch")
SUMMARY_LATCHED = ("agents", "objects")  # the latched messages a step's summary carries when changed
FEATURES = ("step_summary", "watch_events")  # a step's "summary"; a watch's "events"
STEPPING_OPS = ("step", "pause", "play", "reset", "replay_start", "replay_stop")  # the token's
EVENTS = ("episode", "agents", "objects", "shifts", "conditions", "farm_events", "farm_stamps", "contacts",
          "task", "markers", "states", "recording", "replay")

# -- error codes ----------------------------------------------------------------------------------
BAD_REQUEST = "bad_request"  # malformed or out-of-range request
NOT_FOUND = "not_found"  # no such entity
NAME_TAKEN = "name_taken"  # spawn: an entity has that name
NAME_INVALID = "name_invalid"  # spawn: not a valid entity name
NO_RESOURCE = "no_resource"  # spawn: the catalogue has no such kind
NOT_DELETABLE = "not_deletable"  # delete: an agent
OUT_OF_RANGE = "out_of_range"  # a shift or conditions outside what the world takes
INVALID_POSE = "invalid_pose"  # a pose that cannot be placed
INCORRECT_STATE = "incorrect_state"  # a paused_only step while the world plays
FILE_ERROR = "file_error"  # an episode log that cannot be written or read
ENDED = "ended"  # the session has ended
LOCKED = "locked"  # stepping without the token of the scenario run that owns it
FAILED = "failed"  # anything else
ERROR_CODES = (BAD_REQUEST, NOT_FOUND, NAME_TAKEN, NAME_INVALID, NO_RESOURCE, NOT_DELETABLE, OUT_OF_RANGE,
               INVALID_POSE, INCORRECT_STATE, FILE_ERROR, ENDED, LOCKED, FAILED)


class Refusal(Exception):
    """A request the game refuses; `code` is what the answer says."""

    code = FAILED


class BadRequest(Refusal, ValueError):
    code = BAD_REQUEST


class UnknownEntity(Refusal, LookupError):
    """A request named an entity (agent or object) the session does not have."""

    code = NOT_FOUND


class NameTaken(Refusal, ValueError):
    """A spawn request named an entity that exists (an agent or an object)."""

    code = NAME_TAKEN


class NameInvalid(Refusal, ValueError):
    code = NAME_INVALID


class UnknownResource(Refusal, LookupError):
    """A spawn request named nothing the catalogue has."""

    code = NO_RESOURCE


class NotDeletable(Refusal, ValueError):
    """A delete request named an agent: agents come with the session."""

    code = NOT_DELETABLE


class OutOfRange(Refusal, ValueError):
    """A shift or conditions outside the ranges the world takes."""

    code = OUT_OF_RANGE


class InvalidPose(Refusal, ValueError):
    """A pose that cannot be (non-finite, no rotation, off the world)."""

    code = INVALID_POSE


class NotPaused(Refusal, RuntimeError):
    """A step request that asked for a paused world found it playing."""

    code = INCORRECT_STATE


class SessionEnded(Refusal, RuntimeError):
    code = ENDED


class Locked(Refusal, RuntimeError):
    """A stepping request without the token of the scenario run that owns the stepping."""

    code = LOCKED


# -- request fields -------------------------------------------------------------------------------

def boolean(request: dict[str, Any], name: str, default: bool = False) -> bool:
    value = request.get(name, default)
    if not isinstance(value, bool):
        raise BadRequest(f"{name} must be true or false, got {value!r}")
    return value


def step_count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS_PER_REQUEST:
        raise BadRequest(f"steps must be an integer from 1 to {MAX_STEPS_PER_REQUEST}, got {value!r}")
    return value


def reset_scope(value: Any) -> str:
    if value not in RESET_SCOPES:
        raise BadRequest(f"scope must be one of {', '.join(RESET_SCOPES)}, got {value!r}")
    return str(value)


def reset_seed(scope: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 63:
        raise BadRequest(f"seed must be an integer from 0 to 2^63 - 1, got {value!r}")
    if scope != "all":
        raise BadRequest(f"a seed takes scope all (the world starts again), not {scope!r}")
    return value


def watch_events(request: dict[str, Any]) -> frozenset[str] | None:
    """The events a watch request asked for (None: every one)."""
    value = request.get("events")
    if value is None:
        return None
    if not isinstance(value, list) or not value or any(e not in EVENTS for e in value):
        raise BadRequest(f"events must be a list of some of {', '.join(EVENTS)}, got {value!r}")
    return frozenset(value)


def file_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"path must be a file name, got {value!r}")
    return value


def entity_name(request: dict[str, Any]) -> Any:
    """The entity a get_state or set_state names ("name", or "agent" as first documented)."""
    return request.get("name", request.get("agent"))


# -- poses ----------------------------------------------------------------------------------------
AGENT_HALF_EXTENT_M = 10_000.0  # an agent may be placed with |x|, |y|, |z| at most this
OBJECT_HALF_EXTENT_M = 1_000.0  # an object stands with |x|, |y|, |z| at most this (on the fake map)
MIN_QUATERNION_NORM = 1e-6  # a shorter quaternion is no rotation


def finite_vector(name: str, values: Any, size: int) -> tuple[float, ...]:
    if (not isinstance(values, (list, tuple)) or len(values) != size
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in values)):
        raise InvalidPose(f"{name} must be a list of {size} numbers, got {values!r}")
    result = tuple(float(v) for v in values)
    if not all(math.isfinite(v) for v in result):
        raise InvalidPose(f"{name} must be finite, got {result}")
    return result


def checked_pose(position: Any, orientation: Any, half_extent_m: float
                 ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(position, quaternion x, y, z, w) of a requested pose, or InvalidPose saying why not."""
    xyz = finite_vector("position", position, 3)
    if max(abs(v) for v in xyz) > half_extent_m:
        raise InvalidPose(f"position ({xyz[0]:g}, {xyz[1]:g}, {xyz[2]:g}) is off the world "
                          f"(|x|, |y|, |z| at most {half_extent_m:g} m)")
    quaternion = finite_vector("orientation", orientation, 4)
    if math.hypot(*quaternion) < MIN_QUATERNION_NORM:
        raise InvalidPose(f"orientation {quaternion} is no rotation (a zero quaternion)")
    return xyz, quaternion


# -- answers --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class EntityState:
    """Ground truth of an entity in the world frame (ENU) at world time time_s: an agent's
    base_footprint, or the middle of an object's footprint on the ground."""

    name: str
    step: int
    time_s: float
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]  # x, y, z, w: body -> world
    linear_velocity: tuple[float, float, float]  # world frame
    angular_velocity: tuple[float, float, float]  # world frame
    linear_acceleration: tuple[float, float, float]  # world frame, kinematic (no gravity)
    held: bool  # placed by set_state (an agent), or an object (they stand still)


def state_answer(state: EntityState) -> dict[str, Any]:
    return {"name": state.name, "agent": state.name, "step": state.step, "time_s": state.time_s,
            "position": list(state.position), "orientation": list(state.orientation),
            "linear_velocity": list(state.linear_velocity), "angular_velocity": list(state.angular_velocity),
            "linear_acceleration": list(state.linear_acceleration), "held": state.held}


def parse_state(answer: dict[str, Any]) -> EntityState:
    """A get_state, set_state or spawn answer; ValueError when it is not one."""
    try:
        return EntityState(
            name=str(answer.get("name", answer["agent"])), step=int(answer.get("step", -1)),
            time_s=float(answer["time_s"]),
            position=_floats(answer["position"], 3), orientation=_floats(answer["orientation"], 4),
            linear_velocity=_floats(answer["linear_velocity"], 3),
            angular_velocity=_floats(answer["angular_velocity"], 3),
            linear_acceleration=_floats(answer["linear_acceleration"], 3),
            held=bool(answer.get("held", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed state answer ({exc!r}): {answer}") from None


def _floats(values: Any, size: int) -> Any:
    result = tuple(float(v) for v in values)
    if len(result) != size:
        raise ValueError(f"expected {size} values, got {len(result)}")
    return result


def error_answer(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": message, "code": code}
