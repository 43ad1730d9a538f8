"""The Fast DDS profile of the package's own processes (the bridges, sim_control, the scenario
runner): which file, and whether it took.

Fast DDS's built-in shared-memory segment (512 KB) is smaller than one cloud or image, so large
samples fall back to fragmented UDP and get late or lost; a reliable writer's default heartbeat
period (3 s) makes sim/barrier wait that long for acknowledgements; and a process that joins a
running graph often learns of a participant only at that participant's next periodic announcement
(3 s by default: a stack started beside a running session was seen 0.5-2.7 s late in about half the
tries). The shipped profile gives a 16 MB segment, a 2 ms heartbeat and an announcement every 0.5 s.

The two Fast DDS generations need different files and variables:
- Fast DDS 2.x (ROS 2 Jazzy) reads FASTRTPS_DEFAULT_PROFILES_FILE and spells the writer and
  reader times heartbeatPeriod / heartbeatResponseDelay: config/fastrtps_large_data.xml;
- Fast DDS 3.x (Kilted and later) reads FASTDDS_DEFAULT_PROFILES_FILE (its rmw also reads the
  FASTRTPS_ one, with a deprecation warning) and spells them heartbeat_period /
  heartbeat_response_delay: config/fastdds_large_data.xml.
Each rejects the other's file whole, and setting both variables on 3.x loads both files (errors),
so the generation is read before rclpy.init() from the package the RMW is built on.

Fast DDS reads the variable when the participant is created, so choosing runs before rclpy.init()
(that is also why the override, ACRES_SIM_DDS_PROFILE, is an environment variable and not a ROS
parameter), and checking runs after the first node exists: the size of the shared-memory segment
the process mapped is what is in force, whatever was asked for. No rclpy import here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from acres_sim.share import ShareLookup, config_path, share_of

OVERRIDE_VARIABLE = "ACRES_SIM_DDS_PROFILE"
FASTDDS_VARIABLE = "FASTDDS_DEFAULT_PROFILES_FILE"  # Fast DDS 3.x
LEGACY_VARIABLE = "FASTRTPS_DEFAULT_PROFILES_FILE"  # Fast DDS 2.x
FAST_DDS_RMWS = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")
# Fast DDS generation -> (the variable it reads, the shipped file spelled for it)
GENERATIONS = {
    2: (LEGACY_VARIABLE, "fastrtps_large_data.xml"),
    3: (FASTDDS_VARIABLE, "fastdds_large_data.xml"),
}
# When the generation cannot be read (no ament index): the current one.
DEFAULT_GENERATION = 3
# The shipped segment; a mapped segment at least this large means a large-data profile is in force.
LARGE_SEGMENT_BYTES = 16 * 1024 * 1024
# A participant's segments are /dev/shm/fastrtps_<16 hex> (2.x) or fastdds_<16 hex> (3.x); the
# port files beside them (fastdds_port7000) are not segments.
_SEGMENT = re.compile(r"^/dev/shm/fast(?:rtps|dds)_[0-9a-f]{16}$")
_LIBRARY = re.compile(r"/lib(fastrtps|fastdds)\.so\.(\d+(?:\.\d+)*)$")


def fast_dds_generation(share_dir: ShareLookup | None = None) -> int | None:
    """2 or 3: the Fast DDS that rmw_fastrtps is built on, from its package.xml; None if unknown."""
    share = share_of("rmw_fastrtps_shared_cpp", share_dir)
    try:
        manifest = (share / "package.xml").read_text() if share is not None else ""
    except OSError:
        return None
    if re.search(r"<(?:build_)?depend>\s*fastdds\s*</", manifest):
        return 3
    if re.search(r"<(?:build_)?depend>\s*fastrtps\s*</", manifest):
        return 2
    return None


def shipped_profile(generation: int = DEFAULT_GENERATION,
                    share_dir: ShareLookup | None = None) -> Path | None:
    """The shipped file for that Fast DDS generation."""
    return config_path(GENERATIONS[generation][1], share_dir)


@dataclass(frozen=True)
class ProfileChoice:
    path: str | None  # the file this process will use (set by us or by the user), None for none
    variable: str | None  # the variable that names it
    applied: bool  # True when this module set `variable`
    generation: int | None  # Fast DDS 2 or 3 as read from the RMW, None when unknown or not Fast DDS
    reason: str  # why this file (or none), for the log line
    fast_dds: bool = True  # False when the RMW is not Fast DDS: nothing to check

    def environment(self) -> dict[str, str]:
        """The variable to give a child process so that it loads the same file (e.g. a learner)."""
        return {self.variable: self.path} if self.path and self.variable else {}


def choose_profile(environ: MutableMapping[str, str], share_dir: ShareLookup | None = None) -> ProfileChoice:
    """What to do, without changing anything."""
    rmw = environ.get("RMW_IMPLEMENTATION", "").strip()
    if rmw and rmw not in FAST_DDS_RMWS:
        return ProfileChoice(None, None, False, None, f"RMW_IMPLEMENTATION={rmw} is not Fast DDS",
                             fast_dds=False)
    generation = fast_dds_generation(share_dir)
    variable, shipped_name = GENERATIONS[generation or DEFAULT_GENERATION]
    override = environ.get(OVERRIDE_VARIABLE, "").strip()
    if override.lower() == "off":
        return ProfileChoice(None, None, False, generation, f"{OVERRIDE_VARIABLE}=off")
    if override:  # an explicit file for this process wins over everything but "off"
        if not Path(override).is_file():
            return ProfileChoice(None, None, False, generation,
                                 f"{OVERRIDE_VARIABLE}={override} is not a file")
        return ProfileChoice(str(Path(override).resolve()), variable, True, generation,
                             f"from {OVERRIDE_VARIABLE}")
    for users in (FASTDDS_VARIABLE, LEGACY_VARIABLE):
        if environ.get(users):
            return ProfileChoice(environ[users], users, False, generation, f"from {users}, set by the user")
    path = config_path(shipped_name, share_dir)
    if path is None:
        return ProfileChoice(None, None, False, generation, f"{shipped_name} not found")
    return ProfileChoice(str(path), variable, True, generation, "shipped with acres_sim")


def apply_profile(environ: MutableMapping[str, str] | None = None,
                  share_dir: ShareLookup | None = None) -> ProfileChoice:
    """Choose, and set the generation's variable when the choice says so. Before rclpy.init()."""
    env = os.environ if environ is None else environ
    choice = choose_profile(env, share_dir)
    if choice.applied and choice.path is not None and choice.variable is not None:
        env[choice.variable] = choice.path
    return choice


@contextmanager
def profile_while_joining(environ: MutableMapping[str, str] | None = None,
                          share_dir: ShareLookup | None = None) -> Iterator[ProfileChoice]:
    """apply_profile() for the participant made inside the block (Fast DDS reads the file then), the
    environment as it was once out of it: the processes this one starts later (a user's stack)
    keep their own middleware settings."""
    env = os.environ if environ is None else environ
    saved = {name: env.get(name) for name in (FASTDDS_VARIABLE, LEGACY_VARIABLE)}
    try:
        yield apply_profile(env, share_dir)
    finally:
        for name, value in saved.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value


def shipped_environment(share_dir: ShareLookup | None = None) -> dict[str, str]:
    """The variable and shipped file that make another process (a learner, a subscriber) load the
    profile spelled for this machine's Fast DDS."""
    return choose_profile({}, share_dir).environment()


@dataclass(frozen=True)
class InForce:
    """What the process's Fast DDS really runs with, read from its memory map."""
    segment_bytes: int  # the largest shared-memory segment mapped, 0 for none
    library: str | None  # e.g. "Fast DDS 2.14.5" (libfastrtps.so.2.14.5), None when not loaded

    @property
    def large_data(self) -> bool:
        return self.segment_bytes >= LARGE_SEGMENT_BYTES


def read_in_force(maps_lines: Iterable[str] | None = None) -> InForce:
    """The shared-memory segments and the Fast DDS library in this process's /proc/self/maps."""
    if maps_lines is None:
        try:
            with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
                maps_lines = maps.readlines()
        except OSError:
            maps_lines = []
    sizes: dict[str, int] = {}
    library = None
    for line in maps_lines:
        fields = line.split(maxsplit=5)
        if len(fields) < 6:
            continue
        path = fields[5].strip()
        if _SEGMENT.match(path):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            sizes[path] = sizes.get(path, 0) + end - start
        elif library is None and (found := _LIBRARY.search(path)):
            library = f"Fast DDS {found.group(2)}"
    return InForce(max(sizes.values(), default=0), library)


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def report(choice: ProfileChoice, in_force: InForce) -> tuple[bool, str]:
    """(ok, the one log line): what is in force, and when it is not the large-data profile, what
    is lost and how to fix it. Never claims more than `in_force` shows."""
    if not choice.fast_dds:
        return True, f"DDS profile: none ({choice.reason})"
    if in_force.library is None:
        return True, (f"DDS profile: {choice.path or 'none'} ({choice.reason}); Fast DDS is not loaded, "
                      "nothing to check")
    asked = (f"{choice.path} ({choice.reason}, through {choice.variable})" if choice.path
             else f"none ({choice.reason})")
    if in_force.large_data:
        return True, (f"DDS profile in force: {asked}; {in_force.library} mapped a "
                      f"{_mb(in_force.segment_bytes)} shared-memory segment for large messages")
    fix_variable, fix_name = GENERATIONS[choice.generation or DEFAULT_GENERATION]
    if choice.path and choice.generation == 2 and choice.variable == FASTDDS_VARIABLE:
        why = f"{in_force.library} does not read {choice.variable}"
    elif choice.path:
        why = f"{in_force.library} rejected or overrode it (see its XMLPARSER errors above)"
    else:
        why = "no profile"
    return False, (f"DDS profile NOT in force: asked {asked}, but {in_force.library} mapped "
                   f"{_mb(in_force.segment_bytes) + ' of' if in_force.segment_bytes else 'no'} shared memory "
                   f"({why}). Lost: clouds and images go out as fragmented UDP (late, some lost), "
                   f"barriers may wait up to 3 s for periodic heartbeats, and a process that joins later "
                   f"may be found up to 3 s late. Fix: unset {FASTDDS_VARIABLE}, "
                   f"{LEGACY_VARIABLE} and {OVERRIDE_VARIABLE} so that acres_sim applies its own profile, "
                   f"or point {fix_variable} at acres_sim's config/{fix_name}")
