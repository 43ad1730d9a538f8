#!/usr/bin/env bash
# The one environment bootstrap behind every README command and CI.
#
# With a sourced ROS 2 distribution (ROS_DISTRO set and rclpy importable) it uses that and only
# checks for the tools the project needs. Otherwise it builds a git-ignored .venv-<distro> from the
# pinned ROS 2 wheels of PyPI for ACRES_ROS_DISTRO (jazzy, the default, or kilted), generates
# tf2_msgs, simulation_interfaces, ackermann_msgs and ds_dbw_msgs (no wheels exist) and this
# project's acres_interfaces (interfaces/acres_interfaces) with the wheels' own rosidl toolchain, and
# writes .acres_env.sh, the one file to source. A second run finds its stamp and returns in seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DISTRO="${ACRES_ROS_DISTRO:-jazzy}"
VENV="$ROOT/.venv-$DISTRO"
# ACRES_ENV_FILE: write it elsewhere (CI makes one environment while a suite runs on the other)
ENV_FILE="${ACRES_ENV_FILE:-$ROOT/.acres_env.sh}"
TOOLS="$ROOT/tools"
ROS_REQUIREMENTS="$TOOLS/requirements-ros-$DISTRO.txt"
STAMP="$VENV/.acres_bootstrap_stamp"
# The learners' extras (Ray with RLlib, stable-baselines3, torch's CPU build; several hundred MB):
# installed with ACRES_LEARN=1, and kept up to date in that environment from then on.
LEARN_REQUIREMENTS="$TOOLS/requirements-learn.txt"
LEARN_STAMP="$VENV/.acres_learn_stamp"

say() { printf 'bootstrap: %s\n' "$*"; }
die() { printf 'bootstrap: error: %s\n' "$*" >&2; exit 1; }

# --- A sourced ROS 2 distribution wins ---------------------------------------------------------
if [ -n "${ROS_DISTRO:-}" ] && python3 -c "import rclpy" >/dev/null 2>&1; then
  say "using the sourced ROS 2 $ROS_DISTRO"
  if [ -n "${ACRES_ROS_DISTRO:-}" ] && [ "$ACRES_ROS_DISTRO" != "$ROS_DISTRO" ]; then
    say "ACRES_ROS_DISTRO=$ACRES_ROS_DISTRO is not used: a sourced ROS 2 installation wins"
  fi
  missing=()
  command -v colcon >/dev/null 2>&1 || missing+=("colcon (apt install python3-colcon-common-extensions)")
  for mod in numpy pyproj simplejpeg matplotlib pytest hypothesis flake8 yaml mcap rosbags tf2_msgs \
    simulation_interfaces sensor_msgs visualization_msgs nav_msgs diagnostic_msgs ackermann_msgs; do
    python3 -c "import $mod" >/dev/null 2>&1 || missing+=("python module $mod (rosdep install --from-paths . --ignore-src -y)")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    printf 'bootstrap: error: missing from this ROS 2 installation:\n' >&2
    printf '  - %s\n' "${missing[@]}" >&2
    exit 1
  fi
  cat > "$ENV_FILE" <<EOS
# Written by tools/bootstrap.sh: the sourced ROS 2 $ROS_DISTRO is used as it is.
export ACRES_ENV_NAME="ros-$ROS_DISTRO"
if [ -z "\${ROS_DISTRO:-}" ] && [ -f "/opt/ros/$ROS_DISTRO/setup.bash" ]; then
  source "/opt/ros/$ROS_DISTRO/setup.bash"
fi
EOS
  exit 0
fi

# --- Otherwise: the self-installed environment -------------------------------------------------
case "$DISTRO" in
  jazzy|kilted) ;;
  *) die "ACRES_ROS_DISTRO=$DISTRO: the self-installed environment is jazzy or kilted" ;;
esac
PYTHON="${ACRES_PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.11 python3.12 python3.13 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON="$candidate"; break; fi
  done
fi
[ -n "$PYTHON" ] || die "no python3 found: install Python 3.10 to 3.13 (apt install python3 python3-venv)"
"$PYTHON" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 13)))' \
  || die "$PYTHON is $("$PYTHON" -V 2>&1); the ROS 2 wheels need Python 3.10 to 3.13 (set ACRES_PYTHON)"
command -v cmake >/dev/null 2>&1 || die "cmake is needed to generate the interfaces: apt install cmake g++"
command -v c++ >/dev/null 2>&1 || die "a C++ compiler is needed to generate the interfaces: apt install g++"

wanted="$(cat "$TOOLS/bootstrap.sh" "$TOOLS/c_typesupport_only.cmake" "$ROS_REQUIREMENTS" "$TOOLS/requirements-py.txt" \
  "$TOOLS"/tf2_msgs/package.xml "$TOOLS"/tf2_msgs/CMakeLists.txt "$TOOLS"/tf2_msgs/msg/* \
  "$TOOLS"/simulation_interfaces/package.xml "$TOOLS"/simulation_interfaces/CMakeLists.txt \
  "$TOOLS"/simulation_interfaces/{msg,srv,action}/* \
  "$TOOLS"/ackermann_msgs/package.xml "$TOOLS"/ackermann_msgs/CMakeLists.txt "$TOOLS"/ackermann_msgs/msg/* \
  "$TOOLS"/ds_dbw_msgs/package.xml "$TOOLS"/ds_dbw_msgs/CMakeLists.txt "$TOOLS"/ds_dbw_msgs/msg/*.msg \
  "$TOOLS"/ds_dbw_msgs/msg/fields/* \
  "$ROOT"/interfaces/acres_interfaces/package.xml "$ROOT"/interfaces/acres_interfaces/CMakeLists.txt \
  "$ROOT"/interfaces/acres_interfaces/{msg,srv}/* \
  | sha256sum | cut -d' ' -f1) $("$PYTHON" -V 2>&1)"

# The interface packages no wheel provides, generated into one workspace (their C side only:
# tools/c_typesupport_only.cmake).
INTERFACES=(tf2_msgs simulation_interfaces ackermann_msgs ds_dbw_msgs acres_interfaces)
IFACE_INSTALL="$VENV/interfaces_ws/install"
IFACE_CHECK="import tf2_msgs.msg, simulation_interfaces.srv, simulation_interfaces.action, ackermann_msgs.msg, ds_dbw_msgs.msg, acres_interfaces.msg, acres_interfaces.srv"
write_env_file() {
  cat > "$ENV_FILE" <<EOS
# Written by tools/bootstrap.sh: the self-installed ROS 2 ${DISTRO^} environment ($PY_TAG).
export ACRES_ENV_NAME="venv-$DISTRO"
export ACRES_ROS_DISTRO="$DISTRO"  # what ROS_DISTRO says in a sourced ROS 2 installation
source "$VENV/bin/activate"
export AMENT_PREFIX_PATH="$VENV\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}"
export RMW_IMPLEMENTATION="\${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
source "$IFACE_INSTALL/local_setup.bash"
EOS
}
learn_extras() {
  { [ "${ACRES_LEARN:-0}" = 1 ] || [ -f "$LEARN_STAMP" ]; } || return 0
  local want
  want="$(sha256sum "$LEARN_REQUIREMENTS" "$TOOLS/requirements-py.txt" | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$LEARN_STAMP" 2>/dev/null)" = "$want" ] \
     && "$VENV/bin/python" -c "import ray, stable_baselines3, torch" >/dev/null 2>&1; then
    return 0
  fi
  say "installing the learners' extras (Ray, RLlib, stable-baselines3, torch): a minute or two"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$LEARN_REQUIREMENTS" -c "$TOOLS/requirements-py.txt" \
    2> >(grep -v "^WARNING: Location '.*' is ignored" >&2) \
    || die "pip install of the learners' extras failed (see above)"
  "$VENV/bin/python" -c "import ray, ray.rllib, stable_baselines3, torch" \
    || die "the learners' extras do not import"
  echo "$want" > "$LEARN_STAMP"
}
PY_TAG="$("$PYTHON" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')"
# Up to date: only the env file is written again, so that switching ACRES_ROS_DISTRO back and forth
# costs seconds once each environment exists.
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$wanted" ] && [ -f "$IFACE_INSTALL/local_setup.bash" ]; then
  write_env_file
  if bash -c "source '$ENV_FILE' && python -c 'import rclpy, numpy, pyproj; $IFACE_CHECK'" >/dev/null 2>&1; then
    say "ROS 2 ${DISTRO^} environment up to date ($VENV)"
    learn_extras
    exit 0
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $("$PYTHON" -V 2>&1)"
  "$PYTHON" -m venv "$VENV" || die "could not create a venv: apt install python3-venv"
fi
say "installing the pinned ROS 2 ${DISTRO^} wheels and tools (first run: a minute or two)"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip \
  2> >(grep -v "^WARNING: Location '.*' is ignored" >&2) || die "pip could not upgrade itself: is PyPI reachable?"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  -r "$ROS_REQUIREMENTS" -r "$TOOLS/requirements-py.txt" \
  2> >(grep -v "^WARNING: Location '.*' is ignored" >&2) \
  || die "pip install failed (see above); check the network and rerun make"

# The wheels' exported CMake files name the include and site-packages paths of the machine that
# built them; point them at this venv's Python so that rosidl can generate interfaces.
PY_INCLUDE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
PY_SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
grep -rlE '/opt/python/cp3[0-9]+-cp3[0-9]+/(include|lib)/' "$VENV/share" 2>/dev/null \
  | xargs -r sed -i -E \
      -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#$PY_INCLUDE#g" \
      -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages#$PY_SITE#g" \
  || true  # nothing left to rewrite on a second run

if ! (set +u; export AMENT_PREFIX_PATH="$VENV"; source "$VENV/bin/activate" \
      && { [ ! -f "$IFACE_INSTALL/local_setup.bash" ] || source "$IFACE_INSTALL/local_setup.bash"; } \
      && python -c "$IFACE_CHECK" >/dev/null 2>&1) \
   || [ "$(cat "$STAMP" 2>/dev/null)" != "$wanted" ]; then
  say "generating ${INTERFACES[*]} with the rosidl toolchain of the wheels"
  ws="$VENV/interfaces_ws"
  rm -rf "$ws" "$VENV/tf2_msgs_ws"
  mkdir -p "$ws/src"
  for pkg in "${INTERFACES[@]}"; do
    if [ -d "$TOOLS/$pkg" ]; then cp -r "$TOOLS/$pkg" "$ws/src/$pkg"; else cp -r "$ROOT/interfaces/$pkg" "$ws/src/$pkg"; fi
  done
  (
    source "$VENV/bin/activate"
    export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    cd "$ws"
    colcon --log-base "$ws/log" build --base-paths src --build-base build --install-base install \
      --event-handlers console_cohesion- --cmake-args -DBUILD_TESTING=OFF \
      "-DPython3_EXECUTABLE=$VENV/bin/python" "-DCMAKE_PROJECT_INCLUDE=$TOOLS/c_typesupport_only.cmake" \
      >"$ws/build.log" 2>&1
  ) || { tail -n 40 "$ws/build.log" >&2; die "interface generation failed (log: $ws/build.log)"; }
fi

write_env_file

env_check="$(bash -c "source '$ENV_FILE' && python -c 'import rclpy, tf2_msgs.msg, simulation_interfaces.srv, simulation_interfaces.action, ackermann_msgs.msg, ds_dbw_msgs.msg, acres_interfaces.msg, acres_interfaces.srv, sensor_msgs.msg, visualization_msgs.msg, nav_msgs.msg, rosgraph_msgs.msg, diagnostic_msgs.msg, numpy, pyproj, simplejpeg, matplotlib, rich, mcap, rosbags, yourdfpy, gymnasium, pettingzoo, pytest, hypothesis, flake8; print(\"ok\")'" 2>&1 | tail -n 3)"
[ "$env_check" = "ok" ] || die "the new environment does not import: $env_check"
echo "$wanted" > "$STAMP"
learn_extras
say "ROS 2 ${DISTRO^} environment ready: source $ENV_FILE"
